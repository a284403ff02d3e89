// Error handling shared by the core: no exception may leave an OpenMP region.
#pragma once

#include <exception>
#include <mutex>

namespace evokit::detail {

// Captures the first exception thrown inside a parallel region so it can be
// rethrown after the region ends:
//
//   ExceptionCollector errors;
//   #pragma omp parallel for
//   for (...) { errors.run([&] { work(i); }); }
//   errors.rethrow_if_any();
class ExceptionCollector {
 public:
  template <class F>
  void run(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
    }
  }
  void rethrow_if_any() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace evokit::detail
