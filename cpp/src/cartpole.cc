// CartPole natively (see cartpole.h).
//
// Determinism. An episode is computed on one thread from its own seed, by
// run_episodes (rollout.h), so lengths are the same for any num_threads.
#include "evokit/cartpole.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/rollout.h"
#include "messages.h"
#include "parallel.h"

namespace evokit {

namespace {

// ---- numpy's SeedSequence (numpy/random/bit_generator.pyx) -------------------
constexpr std::uint32_t kInitA = 0x43b0d7e5u;
constexpr std::uint32_t kMultA = 0x931e8875u;
constexpr std::uint32_t kInitB = 0x8b51f9ddu;
constexpr std::uint32_t kMultB = 0x58f38dedu;
constexpr std::uint32_t kMixMultL = 0xca01f9ddu;
constexpr std::uint32_t kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr std::size_t kPoolSize = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) noexcept {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) noexcept {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// ---- numpy's PCG64 (numpy/random/src/pcg64/pcg64.h), XSL-RR output ------------
using u128 = unsigned __int128;
constexpr u128 kPcgMult = (static_cast<u128>(2549297995355413924ull) << 64) |
                          static_cast<u128>(4865540595714422341ull);

struct Pcg64 {
  u128 state = 0, inc = 0;

  Pcg64(u128 init_state, u128 init_seq) noexcept {
    inc = (init_seq << 1u) | 1u;
    step();
    state += init_state;
    step();
  }
  void step() noexcept { state = state * kPcgMult + inc; }
  std::uint64_t next() noexcept {
    step();
    const auto hi = static_cast<std::uint64_t>(state >> 64u);
    const auto lo = static_cast<std::uint64_t>(state);
    const auto rot = static_cast<unsigned>(state >> 122u);
    const std::uint64_t v = hi ^ lo;
    return (v >> rot) | (v << ((-rot) & 63u));
  }
  // Generator.random(): 53 random bits in [0, 1).
  double next_double() noexcept { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// ---- CartPoleEnv's constants ------------------------------------------------------
constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart;
constexpr double kLength = 0.5;
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
constexpr double kXThreshold = 2.4;
// 12 * 2 * math.pi / 360, evaluated left to right as Python does.
const double kThetaThreshold = 12 * 2 * M_PI / 360;

bool step_unchecked(CartPoleState& s, int action) noexcept {
  const double force = action == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(s.theta);
  const double sintheta = std::sin(s.theta);
  const double temp = (force + kPoleMassLength * (s.theta_dot * s.theta_dot) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  s.x = s.x + kTau * s.x_dot;
  s.x_dot = s.x_dot + kTau * xacc;
  s.theta = s.theta + kTau * s.theta_dot;
  s.theta_dot = s.theta_dot + kTau * thetaacc;
  return s.x < -kXThreshold || s.x > kXThreshold || s.theta < -kThetaThreshold ||
         s.theta > kThetaThreshold;
}

}  // namespace

namespace detail {

std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) noexcept {
  // The seed as little-endian 32-bit words (0 is one word), pool of 4.
  std::uint32_t entropy[2] = {static_cast<std::uint32_t>(seed),
                              static_cast<std::uint32_t>(seed >> 32)};
  const std::size_t n_entropy = (seed >> 32) != 0 ? 2 : 1;
  std::uint32_t pool[kPoolSize];
  std::uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = hashmix(i < n_entropy ? entropy[i] : 0u, hash_const);
  }
  for (std::size_t src = 0; src < kPoolSize; ++src) {
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
    }
  }
  // generate_state(4, uint64): 8 words cycling over the pool, paired low/high.
  std::uint32_t words[8];
  std::uint32_t h = kInitB;
  for (std::size_t i = 0; i < 8; ++i) {
    std::uint32_t v = pool[i % kPoolSize];
    v ^= h;
    h *= kMultB;
    v *= h;
    v ^= v >> kXShift;
    words[i] = v;
  }
  std::array<std::uint64_t, 4> out{};
  for (std::size_t i = 0; i < 4; ++i) {
    out[i] = static_cast<std::uint64_t>(words[2 * i]) |
             (static_cast<std::uint64_t>(words[2 * i + 1]) << 32);
  }
  return out;
}

}  // namespace detail

CartPoleState cartpole_reset(std::uint64_t seed) noexcept {
  const std::array<std::uint64_t, 4> s = detail::seed_sequence_state(seed);
  Pcg64 rng((static_cast<u128>(s[0]) << 64) | s[1], (static_cast<u128>(s[2]) << 64) | s[3]);
  // Generator.uniform(low, high): low + (high - low) * random().
  const double low = -0.05, range = 0.05 - -0.05;
  CartPoleState state;
  state.x = low + range * rng.next_double();
  state.x_dot = low + range * rng.next_double();
  state.theta = low + range * rng.next_double();
  state.theta_dot = low + range * rng.next_double();
  return state;
}

bool cartpole_step(CartPoleState& state, int action) {
  if (action != 0 && action != 1) {
    throw std::invalid_argument("CartPole action must be 0 or 1, got " + std::to_string(action));
  }
  return step_unchecked(state, action);
}

std::array<float, 4> cartpole_observation(const CartPoleState& s) noexcept {
  return {static_cast<float>(s.x), static_cast<float>(s.x_dot), static_cast<float>(s.theta),
          static_cast<float>(s.theta_dot)};
}

void cartpole_rollouts(const PolicyGraph& graph, const Population& population,
                       const std::size_t* members, const std::uint64_t* seeds,
                       std::size_t num_episodes, int max_steps, std::int64_t* lengths,
                       int num_threads) {
  if (graph.obs_size() != 4) {
    throw std::invalid_argument("CartPole gives 4 observation values, the policy takes " +
                                std::to_string(graph.obs_size()));
  }
  const PolicyGraph::Plan plan =
      prepare_rollouts(graph, population, members, num_episodes, max_steps, num_threads);
  if (plan.output_size() != 2) {
    throw std::invalid_argument("CartPole has 2 actions, the policy outputs " +
                                std::to_string(plan.output_size()) + " values");
  }
  if (num_episodes == 0) return;
  detail::require_non_null(seeds, "seeds");
  detail::require_non_null(lengths, "lengths");
  // Threads only where the work pays for waking them (counting one step per
  // episode: a 4-16-2 policy's whole generation is a fraction of a
  // millisecond on one thread). Which thread runs an episode never changes
  // its result.
  const std::size_t p = graph.num_params();
  const int threads = detail::team_size(
      num_episodes, detail::useful_threads(num_episodes * std::max<std::size_t>(p, 1), num_threads));
  run_episodes(graph, plan, population, members, num_episodes, threads,
               [&](std::size_t e, EpisodePolicy& policy, int) {
                 CartPoleState state = cartpole_reset(seeds[e]);
                 std::int64_t steps = 0;
                 float out[2];
                 while (steps < max_steps) {
                   const std::array<float, 4> obs = cartpole_observation(state);
                   policy.act(obs.data(), out);
                   ++steps;
                   // np.argmax: the first largest score, a NaN counting as the largest.
                   const bool right = out[1] > out[0] || (std::isnan(out[1]) && !std::isnan(out[0]));
                   if (step_unchecked(state, right ? 1 : 0)) break;
                 }
                 lengths[e] = steps;
               });
}

}  // namespace evokit
