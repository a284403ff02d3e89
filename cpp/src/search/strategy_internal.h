// What the strategy solver's files (strategy_solver.cc, cma_solver.cc,
// ga_solver.cc, distribution.cc) share (internal).
#pragma once

#include <string>
#include <vector>

#include "evokit/solver.h"

namespace evokit::detail {

// Seed lists in a SolverState: the keys flattened under `name`, their
// lengths under name + ".lengths", their iterations under name +
// ".iterations"; get_infos checks the layout (std::invalid_argument).
void put_infos(SolverState& state, const std::string& name, const std::vector<SamplingInfo>& infos);
std::vector<SamplingInfo> get_infos(const SolverState& state, const std::string& name);

// The option checks every strategy family shares: no mirrored pairs, at
// least two members.
void validate_strategy_options(const OptionSet& o);

}  // namespace evokit::detail
