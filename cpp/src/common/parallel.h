// OpenMP helpers shared by the core's sources (internal).
#pragma once

#include <algorithm>
#include <cstddef>

#include "evokit/errors.h"

namespace evokit::detail {

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// How many threads to use for `work_items` items: at least one, never more
// than there are items or than requested.
inline int team_size(std::size_t work_items, int num_threads) {
  const auto wanted = static_cast<std::size_t>(std::max(num_threads, 1));
  return static_cast<int>(std::max<std::size_t>(1, std::min(work_items, wanted)));
}

// Threads worth waking for `work` parameter reads, at most num_threads: one
// per kMinWorkPerThread reads (a few tens of microseconds), at least one.
// Waking a thread costs microseconds on an idle machine and whole scheduler
// time slices on a busy one, so small calls stay on the calling thread.
constexpr std::size_t kMinWorkPerThread = std::size_t{1} << 18;
inline int useful_threads(std::size_t work, int num_threads) {
  return static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(work / kMinWorkPerThread, 1),
                                                static_cast<std::size_t>(std::max(num_threads, 1))));
}

// body(item) for item in [0, count) on `threads` threads, static schedule.
// Each item runs on exactly one thread and the split of work into items never
// depends on `threads`. The first exception thrown by a body is rethrown here,
// after the parallel region has ended (on one thread: at once, the later items
// not run).
template <class Body>
void parallel_items(std::size_t count, int threads, const Body& body) {
  if (threads <= 1) {  // no OpenMP region at all: entering one costs microseconds
    for (std::size_t item = 0; item < count; ++item) body(item);
    return;
  }
  ExceptionCollector errors;
  const auto n = static_cast<std::ptrdiff_t>(count);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::ptrdiff_t item = 0; item < n; ++item) {
    errors.run([&] { body(static_cast<std::size_t>(item)); });
  }
  errors.rethrow_if_any();
}

}  // namespace evokit::detail
