// Online sampling in C++ for the Python offline update (EvoKit's "Example for
// Online Products"): load the newest iteration of a model warehouse, clone
// one sampling agent per sample, evaluate each perturbation on the C++
// CartPole-v1 in OpenMP threads, and append one SampleRecord per sample to
// the sampling log, for `evokit update --warehouse W --log L`.
//
//   evokit_online_sampling --warehouse W --log L --num-samples N [--seed S] [--threads T]
//
// --seed names this sampler (SampleRecord.sampler_id and the agents'
// sampling stream): samplers that run at the same iteration need distinct
// seeds. Keys and episodes are pure functions of (config, iteration, seed,
// sample), so a run gives the same log bytes (but the time) for any --threads.
//
// Any sampling family the warehouse's config names works the same way (the
// agent never asks which): Gaussian sampling, CMA-ES, the GA. For CMA and the
// GA the samples are the members of the current generation, handed out in
// turn; give --num-samples at least solver.population_size (with GA elite
// re-evaluation, enough rewards per candidate) so that one update can use
// them.
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "cartpole.h"
#include "cli.h"
#include "evokit/io/io.h"
#include "evokit/philox.h"

namespace {

constexpr char kProg[] = "evokit_online_sampling";
constexpr char kUsage[] =
    "usage: evokit_online_sampling --warehouse W --log L --num-samples N [--seed S] "
    "[--threads T]";

// The seed of the episode of sample `pair` (the antithetic pair, or the
// sample): a pure function of the sampler, the iteration and the pair, so
// both members of a pair meet the same start state.
std::uint64_t episode_seed(std::uint64_t sampler, std::int64_t iteration, std::uint64_t pair) {
  return evokit::hash_draw(sampler, static_cast<std::uint64_t>(iteration), pair, 0x5EED);
}

int run(int argc, char** argv) {
  using evokit_demo::Args;
  const Args args(argc, argv, {"warehouse", "log", "num-samples", "seed", "threads"});
  if (args.help()) {
    std::cout << kUsage << "\n";
    return 0;
  }
  const std::string warehouse_path = args.str("warehouse");
  const std::string log_path = args.str("log");
  if (!args.has("num-samples")) throw evokit_demo::UsageError("--num-samples is required");
  const auto num_samples = static_cast<std::size_t>(args.integer("num-samples", 0, 1, 1 << 20));
  const auto seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0));
  const int threads = static_cast<int>(args.integer("threads", omp_get_max_threads(), 1, 1024));

  // The newest iteration: config (from its solver.pb), model, solver state.
  const evokit::io::Warehouse warehouse(warehouse_path);
  const std::int64_t k = warehouse.latest();
  evokit::io::ESAgent agent = warehouse.load_agent(k);
  // Copied, never computed: what `evokit update` checks records against.
  const std::string config_fingerprint = warehouse.config_fingerprint();
  const std::string model_fingerprint = warehouse.model_fingerprint(k);

  const bool antithetic = agent.config().solver().antithetic();
  if (antithetic && num_samples % 2 != 0) {
    throw std::invalid_argument("--num-samples must be even with antithetic sampling, got " +
                                std::to_string(num_samples));
  }
  if (agent.obs_size() != evokit_demo::CartPole::kObsDim ||
      agent.graph().output_shape(1) !=
          std::vector<std::size_t>{1, evokit_demo::CartPole::kNumActions}) {
    throw std::invalid_argument(agent.model().source() +
                                ": not a CartPole-v1 policy (expected 4 observations in, "
                                "2 action scores out)");
  }
  // The same sampler at the same iteration would draw the same samples again.
  if (std::filesystem::exists(log_path)) {
    for (const auto& r : evokit::io::read_log(log_path).records) {
      if (r.record.sampler_id() == seed && r.record.info().model_iter_id() == k) {
        throw std::invalid_argument(log_path + " already holds samples of sampler " +
                                    std::to_string(seed) + " at iteration " + std::to_string(k) +
                                    "; give this sampler another --seed");
      }
    }
  }

  // One clone per sample, each taking the member the solver draws for it.
  // The draws run in clone order, before the episodes: a family that hands
  // a generation's members out in turn (CMA, the GA) then gives every run
  // the same members for the same samples, as Gaussian sampling (whose keys
  // depend on the clone) does anyway.
  agent.set_sampling_stream(seed);
  std::vector<evokit::io::ESAgent> clones;
  std::vector<evokit::proto::SamplingInfo> infos(num_samples);
  clones.reserve(num_samples);
  for (std::size_t i = 0; i < num_samples; ++i) {
    clones.push_back(agent.clone());
    clones.back().add_noise(&infos[i]);
  }

  std::vector<evokit_demo::Episode> episodes(num_samples);
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto n = static_cast<std::ptrdiff_t>(num_samples);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    try {  // no exception may leave the parallel region
      const auto s = static_cast<std::size_t>(i);
      const evokit::io::ESAgent& clone = clones[s];
      evokit_demo::CartPole env(episode_seed(seed, k, antithetic ? s / 2 : s));
      episodes[s] = evokit_demo::run_episode(
          env, [&clone](const std::vector<float>& obs) { return clone.predict(obs); });
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);

  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<evokit::proto::SampleRecord> records(num_samples);
  double sum = 0.0, best = 0.0;
  std::int64_t steps = 0;
  for (std::size_t i = 0; i < num_samples; ++i) {
    evokit::proto::SampleRecord& r = records[i];
    *r.mutable_info() = infos[i];
    r.set_reward(episodes[i].total_reward);
    r.set_config_fingerprint(config_fingerprint);
    r.set_model_fingerprint(model_fingerprint);
    r.set_sampler_id(seed);
    r.set_env_steps(episodes[i].steps);
    r.set_time(now);
    sum += episodes[i].total_reward;
    best = i == 0 ? episodes[i].total_reward : std::max(best, episodes[i].total_reward);
    steps += episodes[i].steps;
  }
  evokit::io::LogWriter(log_path).append(records);

  std::printf("sampled %zu at iteration %lld: reward mean %.2f max %.2f, %lld env steps "
              "(%d threads); appended to %s\n",
              num_samples, static_cast<long long>(k), sum / static_cast<double>(num_samples), best,
              static_cast<long long>(steps), threads, log_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_main(kProg, kUsage, [&] { return run(argc, argv); });
}
