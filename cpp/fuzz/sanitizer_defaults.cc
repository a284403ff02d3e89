// Linked into every target of a sanitizer build (-DEVOKIT_FUZZ=ON): what
// the sanitizers' runtime reads before the environment's *SAN_OPTIONS.

extern "C" {

// LLVM's OpenMP runtime keeps the thread descriptors of a team it shrinks
// (a test that runs 1, 2, then 4 threads) where LeakSanitizer cannot see
// them: 4,320 bytes in 3 blocks reported as leaked from libomp.so, never
// from EvoKit.
const char* __lsan_default_suppressions() { return "leak:libomp.so\n"; }

}  // extern "C"
