// Checks of solver options (OptionSet, solver.h) shared by the families'
// validate hooks (internal). Messages start with the option's full name and
// end with the value, formatted as Python's "{:g}" does, so that Python and
// the C++ io component report the same text: "solver.optimizer.base_lr must
// be > 0, got 0".
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "evokit/fitness.h"
#include "evokit/optimizer.h"
#include "evokit/solver.h"

namespace evokit::detail {

// "%g" of value: 6 significant digits, "inf", "nan".
inline std::string format_g(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

[[noreturn]] inline void fail(const std::string& name, const std::string& what) {
  throw std::invalid_argument("solver." + name + " " + what);
}

inline void positive(const OptionSet& o, const std::string& name) {
  const double v = o.real(name);
  if (!(std::isfinite(v) && v > 0)) fail(name, "must be > 0, got " + format_g(v));
}

inline void non_negative(const OptionSet& o, const std::string& name) {
  const double v = o.real(name);
  if (!(std::isfinite(v) && v >= 0)) fail(name, "must be >= 0, got " + format_g(v));
}

inline void unit_interval(const OptionSet& o, const std::string& name) {
  const double v = o.real(name);
  if (!(v >= 0.0 && v < 1.0)) fail(name, "must be in [0, 1), got " + format_g(v));
}

inline void at_least(const OptionSet& o, const std::string& name, std::int64_t low) {
  const std::int64_t v = o.integer(name);
  if (v < low) fail(name, "must be >= " + std::to_string(low) + ", got " + std::to_string(v));
}

// The checks every family shares (the optimizer section is checked for all
// families, though only Gaussian sampling uses it).
void validate_common_options(const OptionSet& o);

OptimizerOptions optimizer_options(const OptionSet& o);
FitnessShaping fitness_shaping(const OptionSet& o);

}  // namespace evokit::detail
