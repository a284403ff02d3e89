// What CMABase's two halves (cma_base.cc: ask; cma_tell.cc: tell) share.
// Internal to the core.
#pragma once

#include <cstddef>

namespace evokit::detail {

// std::invalid_argument "solutions[i][j] must be finite, got v" for the
// first non-finite entry of the count x n solutions x.
void require_finite_solutions(const double* x, std::size_t count, std::size_t n);

}  // namespace evokit::detail
