// The thread-safety contract of io::ESAgent and its clones (es_agent.h,
// "Threads"): several threads predicting on distinct clones, on the same
// clones, and on the original, with a parameter pool large enough for every
// clone and with one far too small (every predict of a perturbed clone then
// materialises its parameters again, and a buffer another thread reads is
// never taken), get exactly the bits of a serial run; add_noise on distinct
// clones runs concurrently; an update between two such phases gives the
// clones the new centre.
#include "evokit/io/es_agent.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "io_test_util.h"

namespace evokit::io {
namespace {

using evokit::testing::RandomVector;
using evokit::testing::SameBits;
using testing::data_path;

constexpr std::size_t kClones = 24;
constexpr std::size_t kObs = 6;  // observations per clone, one predict each

ESAgent LoadAgent() {
  ESAgent agent;
  agent.load_config(data_path("adam.prototxt"));
  agent.load_inference_model(data_path("iter1"));
  agent.init_solver();
  agent.load_solver(data_path("iter1"));
  return agent;
}

// Observation j of the test, for a 4-observation model.
std::vector<float> Obs(std::size_t j) {
  return RandomVector(4, static_cast<std::uint32_t>(100 + j));
}

// out[c][j]: clone c's predict of observation j, computed serially.
std::vector<std::vector<std::vector<float>>> Serial(const std::vector<ESAgent>& clones) {
  std::vector<std::vector<std::vector<float>>> out(clones.size());
  for (std::size_t c = 0; c < clones.size(); ++c) {
    for (std::size_t j = 0; j < kObs; ++j) out[c].push_back(clones[c].predict(Obs(j)));
  }
  return out;
}

// Runs body(t) on `threads` threads at once and joins them.
template <class Body>
void OnThreads(int threads, const Body& body) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // start together
      body(t);
    });
  }
  for (std::thread& th : pool) th.join();
}

// Every (clone, observation) predicted by `threads` threads: with `shared`,
// every thread predicts on every clone (in an order shifted by the thread),
// so threads meet on the same clones; else thread t serves clones t, t +
// threads, ... only. Returns the mismatches against `want`.
int ConcurrentMismatches(const std::vector<ESAgent>& clones,
                         const std::vector<std::vector<std::vector<float>>>& want, int threads,
                         bool shared, int rounds) {
  std::atomic<int> mismatches{0};
  OnThreads(threads, [&](int t) {
    const std::size_t n = clones.size();
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t c = shared ? (i + static_cast<std::size_t>(t) * 7) % n : i;
        if (!shared && c % static_cast<std::size_t>(threads) != static_cast<std::size_t>(t)) {
          continue;
        }
        const std::size_t j = (i + static_cast<std::size_t>(r)) % kObs;
        if (!SameBits(clones[c].predict(Obs(j)), want[c][j])) mismatches.fetch_add(1);
      }
    }
  });
  return mismatches.load();
}

TEST(IoESAgentThreads, DistinctClonesPredictConcurrentlyLikeSerial) {
  for (const bool small_pool : {false, true}) {
    SCOPED_TRACE(small_pool ? "a pool of 2 buffers for 24 clones" : "the default pool");
    ESAgent agent = LoadAgent();
    if (small_pool) agent.core().set_params_pool_bytes(2 * agent.num_params() * sizeof(float));
    std::vector<ESAgent> clones;
    for (std::size_t c = 0; c < kClones; ++c) clones.push_back(agent.clone());
    for (ESAgent& clone : clones) clone.add_noise();
    const auto want = Serial(clones);
    // Distinct clones per thread, then all threads on all clones.
    EXPECT_EQ(ConcurrentMismatches(clones, want, 4, /*shared=*/false, 3), 0);
    EXPECT_EQ(ConcurrentMismatches(clones, want, 4, /*shared=*/true, 3), 0);
    EXPECT_EQ(agent.core().param_buffer_capacity(),
              small_pool ? 2u : kDefaultParamsPoolBytes / (58 * 4));
    // Leases end with each predict: a small pool is back at its capacity
    // once a clone next needs a buffer.
    if (small_pool) {
      clones[0].predict(Obs(0));
      EXPECT_LE(agent.core().num_param_buffers(), 2u);
    }
  }
}

TEST(IoESAgentThreads, AddNoiseOnDistinctClonesAndPredictOnTheOriginalRunConcurrently) {
  ESAgent agent = LoadAgent();  // serially, the reference
  agent.set_sampling_stream(3);
  std::vector<ESAgent> serial_clones, clones;
  for (std::size_t c = 0; c < kClones; ++c) serial_clones.push_back(agent.clone());
  ESAgent again = LoadAgent();  // the same agent, its clones' noise drawn by threads
  again.set_sampling_stream(3);
  for (std::size_t c = 0; c < kClones; ++c) clones.push_back(again.clone());
  std::vector<proto::SamplingInfo> serial_infos(kClones), infos(kClones);
  for (std::size_t c = 0; c < kClones; ++c) serial_infos[c] = serial_clones[c].add_noise();
  const auto want = Serial(serial_clones);
  const std::vector<float> centre_want = again.predict(Obs(0));
  std::atomic<int> centre_mismatches{0};
  OnThreads(4, [&](int t) {
    for (std::size_t c = static_cast<std::size_t>(t); c < kClones; c += 4) {
      infos[c] = clones[c].add_noise();
      if (!SameBits(again.predict(Obs(0)), centre_want)) centre_mismatches.fetch_add(1);
    }
  });
  EXPECT_EQ(centre_mismatches.load(), 0);
  for (std::size_t c = 0; c < kClones; ++c) {
    EXPECT_EQ(infos[c].SerializeAsString(), serial_infos[c].SerializeAsString()) << "clone " << c;
  }
  EXPECT_EQ(ConcurrentMismatches(clones, want, 4, /*shared=*/false, 2), 0);
}

TEST(IoESAgentThreads, AnUpdateBetweenTwoPhasesGivesEveryCloneTheNewCentre) {
  ESAgent agent = LoadAgent();
  agent.core().set_params_pool_bytes(3 * agent.num_params() * sizeof(float));
  std::vector<ESAgent> clones;
  std::vector<proto::SamplingInfo> infos;
  for (std::size_t c = 0; c < 4; ++c) {
    clones.push_back(agent.clone());
    infos.push_back(clones.back().add_noise());
  }
  const auto want = Serial(clones);
  EXPECT_EQ(ConcurrentMismatches(clones, want, 2, /*shared=*/true, 2), 0);
  agent.update(infos, std::vector<double>{1.0, 2.0, 3.0, 4.0});  // no thread predicts now
  std::vector<std::vector<std::vector<float>>> centre(4);
  for (std::size_t c = 0; c < 4; ++c) {
    for (std::size_t j = 0; j < kObs; ++j) centre[c].push_back(agent.predict(Obs(j)));
  }
  EXPECT_EQ(ConcurrentMismatches(clones, centre, 2, /*shared=*/true, 2), 0);
}

}  // namespace
}  // namespace evokit::io
