// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC'11), and hash_draw on top of it, which
// draws sampling keys. The noise itself is in noise.h.
//
// Everything here is a pure function of its arguments: no global state.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace evokit {

using PhiloxCounter = std::array<std::uint32_t, 4>;
using PhiloxKey = std::array<std::uint32_t, 2>;

// Ten rounds of Philox4x32 on one 128-bit counter.
PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) noexcept;

// A 64-bit value that is a pure function of (seed, a, b, c): Philox on the
// counter {lo32(a), lo32(b), lo32(c), kKeyDrawTag} with the key derived from
// seed, the first two output words joined. Used to draw sampling keys.
std::uint64_t hash_draw(std::uint64_t seed, std::uint64_t a, std::uint64_t b,
                        std::uint64_t c) noexcept;

}  // namespace evokit
