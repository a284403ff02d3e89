// libFuzzer harness: solver states (solver.pb) through
// evokit::io::ESAgent::load_solver_state, into an agent of each sampling
// family (the first byte picks Gaussian, CMA or GA; the rest is the file),
// then one member drawn and one prediction made from the loaded state. The
// model is cartpole_h8.onnx.
#include <string>
#include <vector>

#include "evokit/io/es_agent.h"
#include "fuzz_util.h"

namespace {

// The configs make_seeds.py made the seeds with: the families whose state
// differs.
const char* const kConfigs[] = {"/cpp/io/tests/data/adam.prototxt",
                                "/configs/cartpole_cma.prototxt",
                                "/configs/cartpole_ga.prototxt"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t family = data[0] % 3;
  evokit::proto::SolverState state;
  if (!state.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  evokit::io::ESAgent agent;
  agent.load_config(std::string(EVOKIT_SOURCE_DIR) + kConfigs[family]);
  agent.load_inference_model(std::string(EVOKIT_SOURCE_DIR) +
                             "/cpp/io/tests/data/cartpole_h8.onnx");
  agent.init_solver();
  evokit::fuzz::refused_or_read([&] {
    agent.load_solver_state(state, "fuzz.pb");
    evokit::io::ESAgent clone = agent.clone();
    clone.add_noise();
    clone.predict(std::vector<float>(clone.obs_size(), 0.5f));
  });
  return 0;
}
