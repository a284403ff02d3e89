// libFuzzer harness: the core's readers of untrusted text and bytes
// (cpp/include/evokit/formats), each on the input as a whole:
//  - formats::model_fingerprint over the ONNX wire format (any bytes), and
//    with the initializers it finds as parameters;
//  - formats::read_onnx_layout and onnx_policy_graph (any bytes: a layout
//    read is translated, and the graph, when built, run on one observation);
//  - formats::ParamPattern: the first line as a pattern, the rest as a name
//    (a pattern it compiles must match in time linear in the name);
//  - the config text: check_literals, field_tokens, detect_layout.
#include <string>
#include <vector>

#include "evokit/formats/config.h"
#include "evokit/formats/fingerprint.h"
#include "evokit/formats/onnx_model.h"
#include "evokit/formats/param_pattern.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = evokit::fuzz::as_string(data, size);
  evokit::fuzz::refused_or_read([&] {
    const std::string a = evokit::formats::model_fingerprint(bytes, {}, "fuzz.onnx");
    if (a.size() != 64) evokit::fuzz::broken("a fingerprint is not 64 hex characters");
  });
  evokit::fuzz::refused_or_read([&] {
    const evokit::formats::OnnxLayout layout = evokit::formats::read_onnx_layout(bytes, ".*", "fuzz.onnx");
    const evokit::PolicyGraph g = evokit::formats::onnx_policy_graph(bytes, layout);
    if (g.num_params() != layout.parameters.size()) evokit::fuzz::broken("the graph's params differ from the layout's");
    if (g.obs_size() <= 4096 && g.state_size() <= 4096) {
      const std::vector<float> obs(g.obs_size(), 0.5f);
      std::vector<float> state(g.state_size(), 0.0f);
      (void)g.run(obs.data(), 1, layout.parameters.data(), layout.parameters.size(), state.data());
    }
  });
  const std::size_t newline = bytes.find('\n');
  const std::string pattern = bytes.substr(0, newline);
  const std::string name = newline == std::string::npos ? std::string() : bytes.substr(newline + 1);
  evokit::fuzz::refused_or_read([&] {
    const evokit::formats::ParamPattern p(pattern);
    p.matches(name);
    p.matches(pattern);
  });
  evokit::fuzz::refused_or_read([&] {
    (void)evokit::formats::check_literals(bytes);
    (void)evokit::formats::field_tokens(bytes);
    std::optional<evokit::formats::ConfigProblem> problem;
    (void)evokit::formats::detect_layout(bytes, &problem);
    (void)evokit::formats::field_at(bytes, size / 2);
  });
  return 0;
}
