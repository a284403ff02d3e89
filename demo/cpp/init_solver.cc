// PARL EvoKit's init_solver program ("Example for Online Products") on
// EvoKit's C++ io API: build the solver the config describes for the model
// in a model directory and save it there, once, before the first online
// sampling (evokit_online_sampling --model_dir) and offline update
// (evokit_offline_update).
//
//   evokit_init_solver --model_dir D --config_path C
//
// D holds model.onnx (e.g. from `evokit init-model`); D/solver.pb is written.
#include <cstdio>
#include <string>

#include "cli.h"
#include "evokit/io/io.h"

namespace {

constexpr char kProg[] = "evokit_init_solver";
constexpr char kUsage[] = "usage: evokit_init_solver --model_dir D --config_path C";

int run(const evokit_demo::Args& args) {
  const std::string model_dir = args.str("model_dir");
  evokit::io::ESAgent agent;
  agent.load_config(args.str("config_path"));
  agent.load_inference_model(model_dir);
  agent.init_solver();
  std::printf("wrote %s\n", agent.save_solver(model_dir).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(argc, argv, kProg, kUsage,
                                   {"model_dir", "config_path"},
                                   run);
}
