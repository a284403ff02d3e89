// Online sampling in C++ (EvoKit's "Example for Online Products"): load a
// model and its solver, clone one sampling agent per sample, evaluate each
// perturbation on CartPole-v1 in OpenMP threads, and log the samples. Two
// ways to run it:
//
//   evokit_online_sampling --warehouse W --log L --num-samples N [--seed S] [--threads T]
//
// the newest iteration of a model warehouse; one SampleRecord per sample is
// appended to the sampling log, for `evokit update --warehouse W --log L`;
//
//   evokit_online_sampling --model_dir D --config_path C --log_path L
//                          [--num-samples N] [--seed S] [--threads T]
//
// PARL EvoKit's online_sampling program: load_config(C),
// load_inference_model(D), load_solver(D) (no init_solver), and the log L
// written as PARL writes it (raw_log.h), for evokit_offline_update.
// --num-samples defaults to the config's solver.population_size.
//
// --seed names this sampler (SampleRecord.sampler_id and the agents'
// sampling stream): samplers that run at the same iteration need distinct
// seeds. Keys and episodes are pure functions of (config, iteration, seed,
// sample): the episode of sample i (of pair i when the solver's members
// are mirrored pairs, Solver::mirrored_pairs)
// starts where gymnasium's reset(seed=...) starts with the seed `evokit
// sample` gives it (evokit/episode_seeds.h), so the samples, keys and
// rewards are those of `evokit sample --seed S --num-samples N` at the same
// iteration, and a run gives the same log bytes (but the time) for any
// --threads.
//
// Any sampling family the config names works the same way (the agent never
// asks which): Gaussian sampling, CMA-ES, the GA. For CMA and the GA the
// samples are the members of the current generation, handed out in turn;
// give --num-samples at least solver.population_size (with GA elite
// re-evaluation, enough rewards per candidate) so that one update can use
// them.
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "cartpole.h"
#include "cli.h"
#include "evokit/episode_seeds.h"
#include "evokit/io/io.h"
#include "raw_log.h"

namespace {

constexpr char kProg[] = "evokit_online_sampling";
constexpr char kUsage[] =
    "usage: evokit_online_sampling --warehouse W --log L --num-samples N [--seed S] "
    "[--threads T]\n"
    "       evokit_online_sampling --model_dir D --config_path C --log_path L "
    "[--num-samples N] [--seed S] [--threads T]";

struct Samples {
  std::vector<evokit::proto::SamplingInfo> infos;
  std::vector<evokit_demo::Episode> episodes;
};

// `num_samples` samples of `agent`'s solver for sampler `seed`: one clone
// per sample, each taking the member the solver draws for it, then one
// CartPole-v1 episode each on `threads` threads.
Samples sample(evokit::io::ESAgent& agent, std::size_t num_samples, std::uint64_t seed,
               int threads) {
  const bool pairs = agent.core().solver().mirrored_pairs();
  if (pairs && num_samples % 2 != 0) {
    throw std::invalid_argument("--num-samples must be even with mirrored pairs, got " +
                                std::to_string(num_samples));
  }
  if (agent.obs_size() != evokit_demo::CartPole::kObsDim ||
      agent.graph().output_shape(1) !=
          std::vector<std::size_t>{1, evokit_demo::CartPole::kNumActions}) {
    throw std::invalid_argument(agent.model().source() +
                                ": not a CartPole-v1 policy (expected 4 observations in, "
                                "2 action scores out)");
  }
  // The draws run in clone order, before the episodes: a family that hands
  // a generation's members out in turn (CMA, the GA) then gives every run
  // the same members for the same samples, as Gaussian sampling (whose keys
  // depend on the clone) does anyway.
  agent.set_sampling_stream(seed);
  std::vector<evokit::io::ESAgent> clones;
  Samples out;
  out.infos.resize(num_samples);
  out.episodes.resize(num_samples);
  clones.reserve(num_samples);
  for (std::size_t i = 0; i < num_samples; ++i) {
    clones.push_back(agent.clone());
    clones.back().add_noise(&out.infos[i]);
  }
  const auto k = static_cast<std::uint64_t>(agent.model_iter_id());
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto n = static_cast<std::ptrdiff_t>(num_samples);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    try {  // no exception may leave the parallel region
      const auto s = static_cast<std::size_t>(i);
      const evokit::io::ESAgent& clone = clones[s];
      evokit_demo::CartPole env(0);
      const std::uint64_t episode =
          evokit::episode_seed(seed, k, pairs ? s / 2 : s, evokit::kSamplerEpisodeTag, 0);
      out.episodes[s] = evokit_demo::run_episode(
          env, episode, [&clone](const std::vector<float>& obs) { return clone.predict(obs); });
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

void report(const Samples& samples, std::int64_t k, int threads, const std::string& log_path,
            const char* verb) {
  double sum = 0.0, best = 0.0;
  std::int64_t steps = 0;
  const std::size_t n = samples.episodes.size();
  for (std::size_t i = 0; i < n; ++i) {
    const evokit_demo::Episode& e = samples.episodes[i];
    sum += e.total_reward;
    best = i == 0 ? e.total_reward : std::max(best, e.total_reward);
    steps += e.steps;
  }
  std::printf("sampled %zu at iteration %lld: reward mean %.2f max %.2f, %lld env steps "
              "(%d threads); %s %s\n",
              n, static_cast<long long>(k), sum / static_cast<double>(n), best,
              static_cast<long long>(steps), threads, verb, log_path.c_str());
}

// PARL's program: config, model and solver from files, the raw log.
int run_model_dir(const evokit_demo::Args& args, std::uint64_t seed, int threads) {
  evokit::io::ESAgent agent;
  agent.load_config(args.str("config_path"));
  agent.load_inference_model(args.str("model_dir"));
  agent.load_solver(args.str("model_dir"));
  const auto num_samples = static_cast<std::size_t>(
      args.integer("num-samples", agent.config().solver().population_size(), 1, 1 << 20));
  const Samples samples = sample(agent, num_samples, seed, threads);
  evokit_demo::RawSamples raw;
  raw.infos = samples.infos;
  for (const evokit_demo::Episode& e : samples.episodes) {
    raw.rewards.push_back(static_cast<float>(e.total_reward));
  }
  const std::string log_path = args.str("log_path");
  evokit_demo::write_raw_log(log_path, raw);
  report(samples, agent.model_iter_id(), threads, log_path, "wrote");
  return 0;
}

int run(const evokit_demo::Args& args) {
  const auto seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0));
  const int threads = static_cast<int>(args.integer("threads", omp_get_max_threads(), 1, 1024));
  if (args.has("model_dir")) {
    if (args.has("warehouse") || args.has("log")) {
      throw evokit_demo::UsageError("--model_dir takes --config_path and --log_path, not "
                                    "--warehouse or --log");
    }
    return run_model_dir(args, seed, threads);
  }
  const std::string warehouse_path = args.str("warehouse");
  const std::string log_path = args.str("log");
  if (!args.has("num-samples")) throw evokit_demo::UsageError("--num-samples is required");
  const auto num_samples = static_cast<std::size_t>(args.integer("num-samples", 0, 1, 1 << 20));

  // The newest iteration: config (from its solver.pb), model, solver state,
  // each file read once and verified.
  const evokit::io::Warehouse warehouse(warehouse_path);
  const evokit::io::Iteration iteration = warehouse.iteration();
  const std::int64_t k = iteration.k;
  evokit::io::ESAgent agent(iteration);
  // What `evokit update` checks records against.
  const std::string& config_fingerprint = iteration.config_fingerprint;
  const std::string& model_fingerprint = iteration.params_fingerprint;

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

  const Samples samples = sample(agent, num_samples, seed, threads);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<evokit::proto::SampleRecord> records(num_samples);
  for (std::size_t i = 0; i < num_samples; ++i) {
    evokit::proto::SampleRecord& r = records[i];
    *r.mutable_info() = samples.infos[i];
    r.set_reward(samples.episodes[i].total_reward);
    r.set_config_fingerprint(config_fingerprint);
    r.set_model_fingerprint(model_fingerprint);
    r.set_sampler_id(seed);
    r.set_env_steps(samples.episodes[i].steps);
    r.set_time(now);
    r.set_sample_index(i);
  }
  evokit::io::LogWriter(log_path).append(records);
  report(samples, k, threads, log_path, "appended to");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(argc, argv, kProg, kUsage,
                                   {"warehouse", "log", "num-samples", "seed", "threads",
                                    "model_dir", "config_path", "log_path"},
                                   run);
}
