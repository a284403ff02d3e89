// What a service pays to serve many clones: predict calls per second of the
// unperturbed model and of perturbed clones (one clone per thread, or many
// clones round-robin), on 1..T threads, one observation per call and a batch;
// the memory N clones cost; and where a predict's time goes (the forward
// pass, compiling its plan, materialising a clone's parameters, the lease).
// bench/service_predict.py builds and runs it for two MLPs and writes
// bench/results/service_predict.md beside onnxruntime's figures.
//
//   evokit_service_bench --model M.onnx --config C.prototxt [--clones 256]
//       [--threads 1,2] [--batch 32] [--seconds 1.0] [--full-pool 1] [--rounds 3]
//
// Prints one JSON object. Every case runs its threads for --seconds of wall
// time after a warm-up, once per round (--rounds rounds, one after another);
// "calls_per_s" is the median round's predict calls (each of `batch`
// observations) of all threads together per wall second, with the rounds'
// extremes; "calls_per_cpu_s" the median of the calls per CPU second the
// threads used. The breakdown's times are CPU microseconds per call, the
// median of --rounds measurements. Thread t of T serves the
// clones c with c % T == t (its own clones). --full-pool 1 adds the
// round-robin cases with a parameter pool that holds every clone's
// parameters (set_params_pool_bytes), when the default pool does not.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "evokit/gaussian_solver.h"
#include "evokit/io/io.h"
#include "evokit/policy_graph.h"
#include "evokit/strategy_solver.h"

namespace {

constexpr char kProg[] = "evokit_service_bench";
constexpr char kUsage[] =
    "usage: evokit_service_bench --model M.onnx --config C.prototxt [--clones N] "
    "[--threads 1,2] [--batch B] [--seconds S] [--full-pool 0|1] [--rounds R]";

using Clock = std::chrono::steady_clock;

// Resident set size (VmRSS) in bytes.
std::int64_t rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// Bytes the heap has handed out (glibc: small chunks plus mmapped ones).
std::int64_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<std::int64_t>(m.uordblks + m.hblkhd);
}

std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

// Observations: 64 fixed pseudo-random ones per thread, cycled.
std::vector<std::vector<float>> observations(std::size_t obs_size, std::size_t batch, int thread) {
  std::vector<std::vector<float>> out(64, std::vector<float>(obs_size * batch));
  std::uint64_t s = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(thread + 1);
  for (auto& obs : out) {
    for (float& v : obs) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      v = static_cast<float>(static_cast<std::int64_t>(s >> 40) % 2001 - 1000) / 1000.0f;
    }
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Rate {
  double per_s = 0;      // calls per wall second, all threads together
  double per_cpu_s = 0;  // calls per CPU second of the threads (per core busy)
};

// Runs body(t, i) on `threads` threads for `seconds` (after a warm-up of a
// tenth of that), i counting each thread's calls.
Rate measure(int threads, double seconds, const std::function<void(int, std::size_t)>& body) {
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::size_t> calls(static_cast<std::size_t>(threads), 0);
  std::vector<double> elapsed(static_cast<std::size_t>(threads), 0.0);
  std::vector<double> cpu(static_cast<std::size_t>(threads), 0.0);
  std::vector<std::thread> pool;
  std::atomic<bool> go{false};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const Clock::time_point warm_end =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(seconds / 10));
      std::size_t i = 0;
      while (Clock::now() < warm_end) body(t, i++);  // warm-up
      started.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      const Clock::time_point t0 = Clock::now();
      const double c0 = thread_cpu_seconds();
      std::size_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        body(t, i++);
        ++n;
      }
      elapsed[static_cast<std::size_t>(t)] =
          std::chrono::duration<double>(Clock::now() - t0).count();
      cpu[static_cast<std::size_t>(t)] = thread_cpu_seconds() - c0;
      calls[static_cast<std::size_t>(t)] = n;
    });
  }
  while (started.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go.store(true);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& th : pool) th.join();
  Rate rate;
  double all_calls = 0, all_cpu = 0;
  for (std::size_t t = 0; t < calls.size(); ++t) {
    rate.per_s += static_cast<double>(calls[t]) / elapsed[t];
    all_calls += static_cast<double>(calls[t]);
    all_cpu += cpu[t];
  }
  rate.per_cpu_s = all_cpu > 0 ? all_calls / all_cpu : 0;
  return rate;
}

int repeats = 3;  // --rounds

// CPU microseconds per call of body() on this thread, over `seconds` (CPU
// time, so that other processes on the machine do not inflate it): the
// median of `repeats` measurements.
double per_call_us(double seconds, const std::function<void()>& body) {
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    us.push_back(1e6 / measure(1, seconds, [&](int, std::size_t) { body(); }).per_cpu_s);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

struct Json {
  std::ostringstream out;
  bool first = true;
  void key(const std::string& k) {
    out << (first ? "" : ", ") << "\"" << k << "\": ";
    first = false;
  }
  void num(const std::string& k, double v) {
    key(k);
    out << v;
  }
  void str(const std::string& k, const std::string& v) {
    key(k);
    out << "\"" << v << "\"";
  }
};

int run(const evokit_demo::Args& args) {
  const std::string model_path = args.str("model");
  const std::string config_path = args.str("config");
  const auto num_clones = static_cast<std::size_t>(args.integer("clones", 256, 1, 1 << 20));
  const std::vector<int> thread_counts =
      int_list(args.has("threads") ? args.str("threads") : "1,2");
  const auto batch = static_cast<std::size_t>(args.integer("batch", 32, 1, 1 << 16));
  const double seconds = args.real("seconds", 1.0);
  const bool full_pool = args.integer("full-pool", 1, 0, 1) != 0;
  repeats = static_cast<int>(args.integer("rounds", 3, 1, 100));
  for (const int t : thread_counts) {
    if (t < 1 || t > 8) throw evokit_demo::UsageError("--threads: each count must be in [1, 8]");
  }

  Json doc;
  doc.out.precision(10);
  const std::int64_t heap_start = heap_bytes(), rss_start = rss_bytes();
  evokit::io::ESAgent agent;
  agent.load_config(config_path);
  agent.load_inference_model(model_path);
  agent.init_solver();
  const std::size_t num_params = agent.num_params();
  const std::size_t obs_size = agent.obs_size();
  const evokit::PolicyGraph& graph = agent.graph();
  doc.str("model", model_path);
  doc.num("num_params", static_cast<double>(num_params));
  doc.num("obs_size", static_cast<double>(obs_size));
  doc.num("clones", static_cast<double>(num_clones));
  doc.num("batch", static_cast<double>(batch));
  doc.num("seconds", seconds);
  doc.num("pool_capacity", static_cast<double>(agent.core().param_buffer_capacity()));
  doc.num("agent_heap_bytes", static_cast<double>(heap_bytes() - heap_start));
  doc.num("agent_rss_bytes", static_cast<double>(rss_bytes() - rss_start));

  // ---- memory: N clones, their noise, their parameters materialised ----
  const std::int64_t heap0 = heap_bytes(), rss0 = rss_bytes();
  std::vector<evokit::io::ESAgent> clones;
  clones.reserve(num_clones);
  for (std::size_t c = 0; c < num_clones; ++c) clones.push_back(agent.clone());
  for (auto& clone : clones) clone.add_noise();
  const std::int64_t heap1 = heap_bytes(), rss1 = rss_bytes();
  const std::vector<float> obs1(obs_size, 0.1f);
  for (auto& clone : clones) clone.predict(obs1);
  const std::int64_t heap2 = heap_bytes(), rss2 = rss_bytes();
  const auto n = static_cast<double>(num_clones);
  doc.num("clone_heap_bytes_noise", static_cast<double>(heap1 - heap0) / n);
  doc.num("clone_rss_bytes_noise", static_cast<double>(rss1 - rss0) / n);
  doc.num("clone_heap_bytes_predicted", static_cast<double>(heap2 - heap0) / n);
  doc.num("clone_rss_bytes_predicted", static_cast<double>(rss2 - rss0) / n);
  doc.num("pool_buffers", static_cast<double>(agent.core().num_param_buffers()));
  doc.num("sizeof_io_agent", static_cast<double>(sizeof(evokit::io::ESAgent)));
  const bool all_fit = agent.core().param_buffer_capacity() >= num_clones;

  // ---- predict throughput ----
  // Every case runs once per round, the rounds one after another (so that a
  // burst of other work on the machine hits one round, not one case); the
  // median round is reported, with the extremes.
  std::vector<std::string> order;
  std::map<std::string, std::vector<Rate>> rates;
  std::map<std::string, std::pair<int, std::size_t>> shape;
  const auto record = [&](const std::string& name, int threads, std::size_t b, Rate rate) {
    const std::string key = name + "|" + std::to_string(threads) + "|" + std::to_string(b);
    if (rates.count(key) == 0) order.push_back(key);
    rates[key].push_back(rate);
    shape[key] = {threads, b};
    std::fprintf(stderr, "%-50s threads %d batch %4zu: %12.1f calls/s, %12.1f per CPU s\n",
                 name.c_str(), threads, b, rate.per_s, rate.per_cpu_s);
  };
  // One perturbed clone per thread (its parameters stay in the pool).
  std::vector<evokit::io::ESAgent> own;
  for (int t = 0; t < 8; ++t) {
    own.push_back(agent.clone());
    own.back().add_noise();
  }
  for (int round = 0; round < repeats; ++round) {
    for (const std::size_t b : {std::size_t{1}, batch}) {
      std::vector<std::vector<std::vector<float>>> obs;
      for (int t = 0; t < 8; ++t) obs.push_back(observations(obs_size, b, t));
      for (const int threads : thread_counts) {
        record("unperturbed", threads, b, measure(threads, seconds, [&](int t, std::size_t i) {
                 agent.predict(obs[t][i % 64], b);
               }));
        record("perturbed, 1 clone per thread", threads, b,
               measure(threads, seconds, [&](int t, std::size_t i) {
                 own[static_cast<std::size_t>(t)].predict(obs[t][i % 64], b);
               }));
        const auto round_robin = [&](int t, std::size_t i) {
          // thread t's clones: c = t, t + threads, ...
          const std::size_t mine =
              (num_clones - static_cast<std::size_t>(t) + threads - 1) / threads;
          const std::size_t c = static_cast<std::size_t>(t) + (i % mine) * threads;
          clones[c].predict(obs[t][i % 64], b);
        };
        record(all_fit ? "perturbed, N clones round-robin (pool holds all)"
                       : "perturbed, N clones round-robin (default pool: " +
                             std::to_string(agent.core().param_buffer_capacity()) + " buffers)",
               threads, b, measure(threads, seconds, round_robin));
        if (!all_fit && full_pool) {
          agent.core().set_params_pool_bytes(num_clones * num_params * sizeof(float));
          for (auto& clone : clones) clone.predict(obs[0][0], b);  // every clone materialised
          record("perturbed, N clones round-robin (pool holds all)", threads, b,
                 measure(threads, seconds, round_robin));
          agent.core().set_params_pool_bytes(evokit::kDefaultParamsPoolBytes);
        }
      }
    }
  }
  std::ostringstream cases;
  cases.precision(10);
  for (std::size_t k = 0; k < order.size(); ++k) {
    std::vector<Rate> r = rates[order[k]];
    std::sort(r.begin(), r.end(), [](const Rate& a, const Rate& b) { return a.per_s < b.per_s; });
    std::vector<double> cpu;
    for (const Rate& x : r) cpu.push_back(x.per_cpu_s);
    std::sort(cpu.begin(), cpu.end());
    const auto [threads, b] = shape[order[k]];
    const Rate& mid = r[r.size() / 2];
    cases << (k == 0 ? "" : ",\n  ") << "{\"case\": \"" << order[k].substr(0, order[k].find('|'))
          << "\", \"threads\": " << threads << ", \"batch\": " << b
          << ", \"calls_per_s\": " << mid.per_s << ", \"calls_per_s_min\": " << r.front().per_s
          << ", \"calls_per_s_max\": " << r.back().per_s
          << ", \"calls_per_cpu_s\": " << cpu[cpu.size() / 2]
          << ", \"obs_per_s\": " << mid.per_s * static_cast<double>(b)
          << ", \"rounds\": " << r.size() << "}";
  }

  // ---- where a predict's time goes (1 thread) ----
  Json parts;
  parts.out.precision(10);
  const std::vector<float>& centre = agent.core().center();
  for (const std::size_t b : {std::size_t{1}, batch}) {
    const std::vector<std::vector<float>> obs = observations(obs_size, b, 0);
    const std::string s = "_b" + std::to_string(b);
    std::size_t i = 0;
    parts.num("predict_unperturbed_us" + s,
              per_call_us(seconds, [&] { agent.predict(obs[i++ % 64], b); }));
    parts.num("graph_run_us" + s, per_call_us(seconds, [&] {
                graph.run(obs[i++ % 64].data(), b, centre.data(), centre.size());
              }));
    parts.num("compile_plan_us" + s, per_call_us(seconds, [&] { graph.compile(b); }));
    const evokit::PolicyGraph::Plan plan = graph.compile(b);
    std::vector<float> workspace(plan.workspace_size()), out(plan.output_size());
    parts.num("execute_us" + s, per_call_us(seconds, [&] {
                graph.execute(plan, obs[i++ % 64].data(),
                              evokit::ParamView{centre.data(), nullptr, 0.0f}, workspace.data(),
                              out.data());
              }));
    // A perturbed forward pass read through a view (centre + scale * noise
    // from the cached table, computed in the kernels): what Population runs.
    const auto* strategy = dynamic_cast<const evokit::StrategySolver*>(&agent.core().solver());
    const auto* gaussian =
        strategy != nullptr ? dynamic_cast<const evokit::GaussianStrategy*>(&strategy->strategy())
                            : nullptr;
    if (gaussian != nullptr && gaussian->sampler().cached()) {
      const evokit::SamplingInfo info = own[0].core().sampling_info();
      const float* noise = gaussian->sampler().table()->data() + info.key[0];
      const float scale = (info.mirrored ? -1.0f : 1.0f) * gaussian->sampler().sigma();
      parts.num("execute_view_us" + s, per_call_us(seconds, [&] {
                  graph.execute(plan, obs[i++ % 64].data(),
                                evokit::ParamView{centre.data(), noise, scale}, workspace.data(),
                                out.data());
                }));
    }
  }
  const evokit::SamplingInfo info = own[0].core().sampling_info();
  std::vector<float> buffer(num_params);
  parts.num("rebuild_us", per_call_us(seconds, [&] {
              agent.core().solver().rebuild(info, buffer.data(), 1);
            }));
  parts.num("lease_materialised_us", per_call_us(seconds, [&] {
              const auto lease = own[0].core().lease_params();
              (void)lease;
            }));
  // The lease of a clone whose buffer another clone took: a rebuild each time.
  std::size_t k = 0;
  agent.core().set_params_pool_bytes(0);  // one buffer for all
  parts.num("lease_rebuild_us", per_call_us(seconds, [&] {
              const auto lease = own[k++ % 2].core().lease_params();
              (void)lease;
            }));
  agent.core().set_params_pool_bytes(evokit::kDefaultParamsPoolBytes);

  std::printf("{%s, \"breakdown\": {%s},\n \"cases\": [\n  %s]}\n", doc.out.str().c_str(),
              parts.out.str().c_str(), cases.str().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(
      argc, argv, kProg, kUsage,
      {"model", "config", "clones", "threads", "batch", "seconds", "full-pool", "rounds"}, run);
}
