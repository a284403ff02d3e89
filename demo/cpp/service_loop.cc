// A service loop: the newest iteration of a model warehouse served from a
// pool of perturbed clones by N threads. Each request (a synthetic
// observation) is answered by one clone's predict; a clone accumulates the
// reward of its requests (the first output, a stand-in for the feedback a
// product would log), and after --episode-steps requests its sample is
// complete: a SampleRecord (its noise, the reward, the fingerprints `evokit
// update` checks) is queued, and the clone takes new noise. Each thread
// appends its queued records every --append-every records to the current
// sampling log (io::LogWriter: one write under an exclusive flock, whole or
// not at all); every --records-per-log records the log rotates to the next
// file, LOG_DIR/service_log_<n>. `evokit update --warehouse W --log F`
// consumes any of them.
//
//   evokit_service_loop --warehouse W --log-dir D [--clones 64] [--threads 2]
//       [--requests 200000] [--episode-steps 100] [--records-per-log 1000]
//       [--append-every 16] [--seed 0] [--fsync 1]
//
// Threads own their clones (thread t serves clones t, t + T, ...: a session
// stays with its worker), so no lock is taken per request: predict on
// distinct clones runs concurrently (io::ESAgent's contract, es_agent.h),
// and add_noise on a clone runs in the thread that owns it. The records and
// rotation share one mutex, taken once per append. Prints the requests per
// second and where the threads' time went (predict, add_noise, appending).
// With Gaussian sampling (whose keys depend on the clone, not on the order of
// the draws) the records are a pure function of (iteration, seed, --clones,
// --threads, --episode-steps, --requests) but their time; their order in
// the logs is not.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "evokit/io/io.h"

namespace {

constexpr char kProg[] = "evokit_service_loop";
constexpr char kUsage[] =
    "usage: evokit_service_loop --warehouse W --log-dir D [--clones N] [--threads T] "
    "[--requests R] [--episode-steps S] [--records-per-log K] [--append-every B] [--seed S] "
    "[--fsync 0|1]";

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The logs: records go to LOG_DIR/service_log_<n>, K per file.
class RotatingLog {
 public:
  RotatingLog(std::string dir, std::int64_t records_per_log, bool fsync)
      : dir_(std::move(dir)), per_log_(records_per_log), fsync_(fsync) {
    std::filesystem::create_directories(dir_);
  }

  // Appends `records` in order: each file's share is one LogWriter append
  // (whole or not at all); a full file is closed and the next one opened.
  void append(const std::vector<evokit::proto::SampleRecord>& records) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t i = 0;
    while (i < records.size()) {
      if (!writer_ || in_file_ == per_log_) open_next();
      const auto room = static_cast<std::size_t>(per_log_ - in_file_);
      const std::size_t take = std::min(room, records.size() - i);
      writer_->append(std::vector<evokit::proto::SampleRecord>(
          records.begin() + static_cast<std::ptrdiff_t>(i),
          records.begin() + static_cast<std::ptrdiff_t>(i + take)));
      in_file_ += static_cast<std::int64_t>(take);
      total_ += static_cast<std::int64_t>(take);
      i += take;
    }
  }

  std::int64_t files() const { return files_; }
  std::int64_t total() const { return total_; }

 private:
  void open_next() {
    char name[32];
    std::snprintf(name, sizeof name, "service_log_%05lld", static_cast<long long>(files_));
    writer_ = std::make_unique<evokit::io::LogWriter>(dir_ + "/" + name, fsync_);
    ++files_;
    in_file_ = 0;
  }

  std::string dir_;
  std::int64_t per_log_;
  bool fsync_;
  std::mutex mutex_;
  std::unique_ptr<evokit::io::LogWriter> writer_;
  std::int64_t in_file_ = 0, files_ = 0, total_ = 0;
};

struct ThreadStats {
  std::int64_t requests = 0, records = 0;
  double predict_s = 0, add_noise_s = 0, append_s = 0, wall_s = 0;
};

int run(const evokit_demo::Args& args) {
  const std::string warehouse_path = args.str("warehouse");
  const std::string log_dir = args.str("log-dir");
  const auto num_clones = static_cast<std::size_t>(args.integer("clones", 64, 1, 1 << 20));
  const int threads = static_cast<int>(args.integer("threads", 2, 1, 1024));
  const std::int64_t requests = args.integer("requests", 200000, 1);
  const std::int64_t episode_steps = args.integer("episode-steps", 100, 1);
  const std::int64_t per_log = args.integer("records-per-log", 1000, 1);
  const auto append_every = static_cast<std::size_t>(args.integer("append-every", 16, 1, 1 << 20));
  const auto seed = static_cast<std::uint64_t>(args.integer("seed", 0, 0));
  const bool fsync = args.integer("fsync", 1, 0, 1) != 0;
  if (num_clones < static_cast<std::size_t>(threads)) {
    throw evokit_demo::UsageError(
        "--clones must be at least --threads (each thread serves its own)");
  }

  const evokit::io::Warehouse warehouse(warehouse_path);
  const evokit::io::Iteration iteration = warehouse.iteration();
  evokit::io::ESAgent agent(iteration);
  agent.set_sampling_stream(seed);
  std::vector<evokit::io::ESAgent> clones;
  std::vector<evokit::proto::SamplingInfo> infos(num_clones);
  clones.reserve(num_clones);
  for (std::size_t c = 0; c < num_clones; ++c) {
    clones.push_back(agent.clone());
    infos[c] = clones.back().add_noise();
  }
  const std::size_t obs_size = agent.obs_size();
  RotatingLog log(log_dir, per_log, fsync);
  std::atomic<std::int64_t> next_sample{0};
  std::vector<ThreadStats> stats(static_cast<std::size_t>(threads));
  std::exception_ptr error;
  std::mutex error_mutex;

  const Clock::time_point t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        ThreadStats& st = stats[static_cast<std::size_t>(t)];
        const Clock::time_point start = Clock::now();
        // This thread's clones and its share of the requests.
        std::vector<std::size_t> mine;
        for (std::size_t c = static_cast<std::size_t>(t); c < num_clones;
             c += static_cast<std::size_t>(threads)) {
          mine.push_back(c);
        }
        const std::int64_t share = requests / threads + (t < requests % threads ? 1 : 0);
        std::vector<double> reward(mine.size(), 0.0);
        std::vector<std::int64_t> steps(mine.size(), 0);
        std::vector<evokit::proto::SampleRecord> queued;
        std::vector<float> obs(obs_size);
        std::uint64_t rng = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(t);
        const auto flush = [&] {
          if (queued.empty()) return;
          const Clock::time_point a = Clock::now();
          log.append(queued);
          st.append_s += seconds_since(a);
          queued.clear();
        };
        for (std::int64_t r = 0; r < share; ++r) {
          const std::size_t slot = static_cast<std::size_t>(r) % mine.size();
          evokit::io::ESAgent& clone = clones[mine[slot]];
          for (float& v : obs) {  // a synthetic request
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            v = static_cast<float>(static_cast<std::int64_t>(rng >> 40) % 2001 - 1000) / 1000.0f;
          }
          const Clock::time_point p = Clock::now();
          const std::vector<float> out = clone.predict(obs);
          st.predict_s += seconds_since(p);
          reward[slot] += out[0];
          ++st.requests;
          if (++steps[slot] < episode_steps) continue;
          // The clone's sample is complete: queue its record, draw new noise.
          evokit::proto::SampleRecord record;
          *record.mutable_info() = infos[mine[slot]];
          record.set_reward(reward[slot]);
          record.set_config_fingerprint(iteration.config_fingerprint);
          record.set_model_fingerprint(iteration.params_fingerprint);
          record.set_sampler_id(seed);
          record.set_env_steps(steps[slot]);
          record.set_time(std::chrono::duration<double>(
                              std::chrono::system_clock::now().time_since_epoch()).count());
          record.set_sample_index(static_cast<std::uint64_t>(next_sample.fetch_add(1)));
          queued.push_back(std::move(record));
          ++st.records;
          reward[slot] = 0.0;
          steps[slot] = 0;
          const Clock::time_point a = Clock::now();
          infos[mine[slot]] = clone.add_noise();
          st.add_noise_s += seconds_since(a);
          if (queued.size() >= append_every) flush();
        }
        flush();
        st.wall_s = seconds_since(start);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  const double wall = seconds_since(t0);
  if (error) std::rethrow_exception(error);

  ThreadStats sum;
  for (const ThreadStats& st : stats) {
    sum.requests += st.requests;
    sum.records += st.records;
    sum.predict_s += st.predict_s;
    sum.add_noise_s += st.add_noise_s;
    sum.append_s += st.append_s;
    sum.wall_s += st.wall_s;
  }
  const double busy = sum.wall_s > 0 ? sum.wall_s : 1.0;
  std::printf("served %lld requests at iteration %lld with %zu clones on %d threads in %.3f s: "
              "%.0f requests/s\n",
              static_cast<long long>(sum.requests), static_cast<long long>(iteration.k), num_clones,
              threads, wall, static_cast<double>(sum.requests) / wall);
  std::printf("%lld records in %lld log files under %s (%lld per file)\n",
              static_cast<long long>(log.total()), static_cast<long long>(log.files()),
              log_dir.c_str(), static_cast<long long>(per_log));
  std::printf("thread time: predict %.1f %%, add_noise %.1f %%, log appends %.1f %%, "
              "the rest (requests, records) %.1f %%\n",
              100 * sum.predict_s / busy, 100 * sum.add_noise_s / busy, 100 * sum.append_s / busy,
              100 * (busy - sum.predict_s - sum.add_noise_s - sum.append_s) / busy);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return evokit_demo::run_program(argc, argv, kProg, kUsage,
                                   {"warehouse", "log-dir", "clones", "threads", "requests",
                                    "episode-steps", "records-per-log", "append-every", "seed",
                                    "fsync"},
                                   run);
}
