// What CMABase's two halves (cma_base.cc: ask; cma_tell.cc: tell) share.
// Internal to the core.
#pragma once

#include <cstddef>

namespace evokit::detail {

// std::invalid_argument "solutions[i][j] must be finite, got v" for the
// first non-finite entry of the count x n solutions x.
void require_finite_solutions(const double* x, std::size_t count, std::size_t n);

// The bound transformation of a continuous coordinate with bounds lo < hi
// (either may be infinite): pycma's default BoundTransform, the linear-
// quadratic transformation of cma.transformations
// (BoxConstraintsLinQuadTransformation, margin_width2). With the margins
// al = min((hi - lo) / 2, max(|lo|, 1) / 20) and au likewise, it is the
// identity on [lo + al, hi - au], the parabola lo + (v - (lo - al))^2 / (4 al)
// on [lo - al, lo + al] (and its mirror image beyond), touching lo with
// slope 0 at v = lo - al, likewise at hi, and periodic with period
// 2 (hi - lo + al + au); with one finite bound, mirrored at lo - al (or
// hi + au). C^1 and monotone on [lo - al, hi + au]: a bound is reached over
// a flat stretch, so an optimum on it is found without the step size
// shrinking to the precision asked.
double into_bounds(double v, double lo, double hi) noexcept;

}  // namespace evokit::detail
