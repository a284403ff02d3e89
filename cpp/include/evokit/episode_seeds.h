// Episode seeds: the environment seeds a sample is evaluated with, a pure
// function of (seed, generation, index, tag, episode), so a run repeats and
// resumes bit for bit, in any process and in either language (Python's
// evokit.evaluation.seeds calls this through evokit._core).
#pragma once

#include <cstdint>

#include "evokit/philox.h"

namespace evokit {

// The tags that keep the episode seeds of different uses apart.
inline constexpr std::uint64_t kSampleEpisodeTag = 0;   // evokit.train: the population's samples
inline constexpr std::uint64_t kEvalEpisodeTag = 1;     // evokit.train: the centre's evaluations
inline constexpr std::uint64_t kSamplerEpisodeTag = 2;  // `evokit sample`, the online sampler

// The seed of episode `episode` of sample `index` (with antithetic sampling
// the pair, so both members of a pair meet the same start) of generation
// `generation` (the online sampler: the model iteration), for `tag`'s use;
// below 2^31, a valid seed for gymnasium's reset(seed=...).
inline std::uint64_t episode_seed(std::uint64_t seed, std::uint64_t generation,
                                  std::uint64_t index, std::uint64_t tag,
                                  std::uint64_t episode) noexcept {
  return hash_draw(seed, generation, index, tag * 1000003 + episode) & 0x7FFFFFFFu;
}

}  // namespace evokit
