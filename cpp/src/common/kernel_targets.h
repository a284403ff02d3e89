// Instruction-set clones for the core's elementwise hot loops (internal).
//
// A function marked EVOKIT_KERNEL_TARGETS is compiled for SSE2, AVX2 and
// AVX-512 (GCC's target_clones) and the loader picks the best one the CPU
// has. The loops so marked vectorise across independent elements only and
// nothing is contracted into FMA (-ffp-contract=off), so every instruction
// set gives the same bits.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define EVOKIT_KERNEL_TARGETS __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define EVOKIT_KERNEL_TARGETS
#endif
