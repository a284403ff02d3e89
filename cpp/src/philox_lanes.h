// Philox4x32-10 over many counters at once (internal; see philox.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace evokit::detail {

// Counters per call.
constexpr std::size_t kLanes = 64;

// Philox4x32-10 of the kLanes counters {lo32(base + l), hi32(base + l), c2,
// c3} under the key {k0, k1}: words w0[l] .. w3[l]. Integer arithmetic only,
// so every implementation gives the same bits.
struct PhiloxLanes {
  alignas(64) std::uint32_t w0[kLanes];
  alignas(64) std::uint32_t w1[kLanes];
  alignas(64) std::uint32_t w2[kLanes];
  alignas(64) std::uint32_t w3[kLanes];
};

using PhiloxLanesFn = void (*)(std::uint64_t base, std::uint32_t c2, std::uint32_t c3,
                               std::uint32_t k0, std::uint32_t k1, PhiloxLanes& out) noexcept;

// The implementations this CPU can run, named, best first; the portable one
// is always last. fill_gaussian uses the first.
std::vector<std::pair<std::string, PhiloxLanesFn>> philox_lanes_implementations();

}  // namespace evokit::detail
