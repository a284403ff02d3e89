// libFuzzer harness: ONNX models through evokit::io::OnnxModel (parse, the
// ONNX checker, parameters, the native graph) and, for a model it accepts
// with a modest observation, one forward pass of two observations.
#include <string>
#include <vector>

#include "evokit/io/onnx_model.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = evokit::fuzz::as_string(data, size);
  evokit::fuzz::refused_or_read([&] {
    const evokit::io::OnnxModel model = evokit::io::OnnxModel::from_bytes(bytes, ".*", "fuzz.onnx");
    const evokit::PolicyGraph graph = model.graph();
    if (graph.num_params() != model.num_params()) evokit::fuzz::broken("num_params differ");
    // The observation's size is the caller's to provide: keep it modest.
    if (graph.obs_size() > 4096) return;
    const std::vector<float> obs(2 * graph.obs_size(), 0.5f);
    const std::vector<float> out =
        graph.run(obs.data(), 2, model.parameters().data(), model.parameters().size());
    std::size_t expected = 1;
    for (std::size_t d : graph.output_shape(2)) expected *= d;
    if (out.size() != expected) evokit::fuzz::broken("output size differs from output_shape");
  });
  return 0;
}
