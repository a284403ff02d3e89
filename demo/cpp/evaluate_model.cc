// The mean return of a policy on the C++ CartPole-v1: the newest model of a
// warehouse, or a model file (or a directory holding model.onnx).
//
//   evokit_evaluate_model --warehouse W [--episodes E] [--seed S] [--min-return R]
//   evokit_evaluate_model --model M     [--episodes E] [--seed S] [--min-return R]
//
// Prints the model_iter_id (the solver's step count: from the warehouse, or
// from a solver.pb beside the model) and the mean, min and max return. Exits
// 1 if --min-return is given and the mean is below it. With --warehouse,
// `--save DIR` also writes the loaded agent's model.onnx and solver.pb to DIR
// (fingerprints computed in C++; Python's load_solver reads them).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cartpole.h"
#include "cli.h"
#include "evokit/io/io.h"

namespace {

constexpr char kProg[] = "evokit_evaluate_model";
constexpr char kUsage[] =
    "usage: evokit_evaluate_model (--warehouse W [--save DIR] | --model M) [--episodes E] "
    "[--seed S] [--min-return R]";

int run(const evokit_demo::Args& args) {
  namespace fs = std::filesystem;
  if (args.has("warehouse") == args.has("model")) {
    throw evokit_demo::UsageError("give exactly one of --warehouse and --model");
  }
  if (args.has("save") && !args.has("warehouse")) {
    throw evokit_demo::UsageError("--save needs --warehouse (a solver to save)");
  }
  const std::int64_t episodes = args.integer("episodes", 20, 1, 100000);
  const auto seed = static_cast<std::uint64_t>(args.integer("seed", 10000, 0));

  evokit::io::ESAgent agent;
  std::string what, iteration = "unknown (no solver.pb beside the model)";
  if (args.has("warehouse")) {
    const evokit::io::Warehouse warehouse(args.str("warehouse"));
    const std::int64_t k = warehouse.latest();
    agent = warehouse.load_agent(k);
    what = warehouse.path() + " iteration " + std::to_string(k);
    iteration = std::to_string(agent.model_iter_id());
    if (args.has("save")) {
      agent.save_inference_model(args.str("save"));
      std::printf("wrote %s\n", agent.save_solver(args.str("save")).c_str());
    }
  } else {
    const std::string model = args.str("model");
    agent.load_inference_model(model);
    what = agent.model().source();
    const fs::path solver = fs::path(what).parent_path() / evokit::io::kSolverFile;
    if (fs::exists(solver)) {
      iteration = std::to_string(evokit::io::read_solver_state(solver.string()).steps());
    }
  }

  double sum = 0.0, low = 0.0, high = 0.0;
  for (std::int64_t e = 0; e < episodes; ++e) {
    evokit_demo::CartPole env(seed + static_cast<std::uint64_t>(e));
    const evokit_demo::Episode ep = evokit_demo::run_episode(
        env, [&agent](const std::vector<float>& obs) { return agent.predict(obs); });
    sum += ep.total_reward;
    low = e == 0 ? ep.total_reward : std::min(low, ep.total_reward);
    high = e == 0 ? ep.total_reward : std::max(high, ep.total_reward);
  }
  const double mean = sum / static_cast<double>(episodes);
  std::printf("%s: model_iter_id %s\n", what.c_str(), iteration.c_str());
  std::printf("mean return %.2f over %lld episodes of the C++ CartPole-v1 (min %.0f, max %.0f)\n",
              mean, static_cast<long long>(episodes), low, high);
  if (args.has("min-return") && mean < args.real("min-return", 0.0)) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(argc, argv, kProg, kUsage,
                                   {"warehouse", "model", "episodes", "seed", "min-return", "save"},
                                   run);
}
