// numpy's default generator, bit for bit: Generator(PCG64(SeedSequence(s)))
// for a non-negative integer seed, which gymnasium.utils.seeding.np_random(s)
// builds and every env.reset(seed=s) draws from. This file implements
// SeedSequence (numpy/random/bit_generator.pyx), PCG64's XSL-RR output
// (numpy/random/src/pcg64/pcg64.h), Generator.random and Generator.uniform.
#pragma once

#include <array>
#include <cstdint>

namespace evokit {

class NumpyGenerator {
 public:
  // np.random.default_rng(seed) for seed >= 0.
  explicit NumpyGenerator(std::uint64_t seed) noexcept;

  // The next raw 64-bit output of PCG64.
  std::uint64_t next_uint64() noexcept;
  // Generator.random(): 53 random bits in [0, 1).
  double random() noexcept;
  // One value of Generator.uniform(low, high): low + (high - low) * random(),
  // the range computed first, as numpy does for arrays and scalars alike.
  double uniform(double low, double high) noexcept { return low + (high - low) * random(); }

 private:
  // PCG64's 128-bit state and increment (a GCC / Clang extension type).
  __extension__ typedef unsigned __int128 Word;
  Word state_ = 0, inc_ = 0;
  void advance() noexcept;
};

namespace detail {
// numpy's SeedSequence(seed).generate_state(4, uint64) for a non-negative
// integer seed: the PCG64 seed words.
std::array<std::uint64_t, 4> seed_sequence_state(std::uint64_t seed) noexcept;
}  // namespace detail

}  // namespace evokit
