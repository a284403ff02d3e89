// PARL EvoKit's offline_update program ("Example for Online Products") on
// EvoKit's C++ io API: load the model and the solver of a model directory
// (load_config, load_inference_model, load_solver: no init_solver), read
// the log evokit_online_sampling --model_dir wrote (raw_log.h), update, and
// save the new model and solver into another directory.
//
//   evokit_offline_update --model_dir D --updated_model_dir U --config_path C --log_path L
//
// U is created if missing; U/model.onnx and U/solver.pb are written.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli.h"
#include "evokit/io/io.h"
#include "raw_log.h"

namespace {

constexpr char kProg[] = "evokit_offline_update";
constexpr char kUsage[] =
    "usage: evokit_offline_update --model_dir D --updated_model_dir U --config_path C "
    "--log_path L";

int run(const evokit_demo::Args& args) {
  const std::string model_dir = args.str("model_dir");
  const std::string updated_model_dir = args.str("updated_model_dir");
  const std::string log_path = args.str("log_path");
  evokit::io::ESAgent agent;
  agent.load_config(args.str("config_path"));
  agent.load_inference_model(model_dir);
  agent.load_solver(model_dir);
  const std::int64_t k = agent.model_iter_id();

  const evokit_demo::RawSamples samples = evokit_demo::read_raw_log(log_path);
  agent.update(samples.infos, samples.rewards);

  std::filesystem::create_directories(updated_model_dir);
  agent.save_inference_model(updated_model_dir);
  agent.save_solver(updated_model_dir);
  std::printf("update %lld -> %lld: used %zu samples of %s; wrote %s\n",
              static_cast<long long>(k), static_cast<long long>(agent.model_iter_id()),
              samples.infos.size(), log_path.c_str(), updated_model_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(argc, argv, kProg, kUsage,
                                   {"model_dir", "updated_model_dir", "config_path", "log_path"},
                                   run);
}
