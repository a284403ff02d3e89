// Population: the forward pass of a whole ES population in one call (STL +
// OpenMP).
//
// Member i has its own parameters and its own observation obs[i]; one call
// computes every member's output, threaded over members. The members'
// parameters are never materialised:
//
//   - perturbed members: centre + sign_i * sigma * eps(key_i). PolicyGraph's
//     kernels read every weight as centre[j] + scale * eps[j] on the fly
//     (ParamView), with eps read in place from the sampler's cached table;
//     memory holds the centre once and the table once, whatever N is.
//     Uncached samplers: the noise of each distinct key is generated once,
//     when the Population is made (antithetic pairs share it), and read from
//     there on every call: regenerating it per call would cost more than the
//     forward pass itself, and a lockstep rollout makes hundreds of calls.
//   - explicit members: row i of a [N, num_params] matrix.
//
// Results. The bits of member i are those of PolicyGraph::run on the
// materialised vector GaussianSampler::perturb(centre, key_i, sign_i) gives
// (the kernels round base + scale * eps exactly as perturb does, and sum in
// the same order). Each member is computed by one thread, in its own
// workspace, so results are bit-identical for any num_threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "evokit/gaussian_sampler.h"
#include "evokit/policy_graph.h"

namespace evokit {

class Population {
 public:
  // Perturbed members: member i is centre + signs[i] * sigma * eps(keys[i]).
  // signs[i] is +1, -1, or 0 for the centre itself (keys[i] is then not
  // used). Throws std::invalid_argument for size mismatches (centre vs
  // sampler.num_params(), keys vs signs) or a bad sign, std::out_of_range
  // (naming the member) for a key outside the sampler's range. The table of a
  // cached sampler is shared, not copied, and stays alive with the
  // Population.
  Population(const GaussianSampler& sampler, std::vector<float> centre,
             std::vector<std::int64_t> keys, std::vector<float> signs, int num_threads = 1);

  // Explicit members: num_members rows of num_params values, row-major.
  // Throws std::invalid_argument unless params.size() == num_members *
  // num_params.
  Population(std::vector<float> params, std::size_t num_members, std::size_t num_params);

  // Views point into this object: moving keeps them valid, copying would not.
  Population(const Population&) = delete;
  Population& operator=(const Population&) = delete;
  Population(Population&&) noexcept = default;
  Population& operator=(Population&&) noexcept = default;

  std::size_t size() const noexcept { return members_.size(); }
  std::size_t num_params() const noexcept { return num_params_; }
  // Member i's parameters (std::out_of_range for i >= size()).
  const ParamView& member(std::size_t i) const;
  const std::vector<ParamView>& members() const noexcept { return members_; }
  // out = member i's parameters as the forward pass reads them (num_params
  // floats; std::out_of_range for i >= size()).
  void copy_member(std::size_t i, float* out) const;
  // out = every member's parameters, row by row (size() x num_params).
  void copy_rows(float* out) const;

 private:
  std::size_t num_params_ = 0;
  std::vector<float> centre_;                 // perturbed members
  std::vector<float> storage_;                // explicit rows, or uncached noise
  std::shared_ptr<const NoiseTable> table_;   // cached noise, read in place
  std::vector<ParamView> members_;
};

// The outputs of `graph` for num_members members: member i reads
// obs[i * graph.obs_size(), ...) (one observation, batch 1) and the
// parameters members[i], and writes out[i * out_size, ...) where out_size is
// the size of graph.output_shape(1). Members with active != nullptr and
// active[i] == 0 are skipped and their rows left as they are (a lockstep
// rollout masks out the members whose episode has ended). Threaded with
// OpenMP over the active members, bit-identical for any num_threads. A
// recurrent graph reads member i's state from state[i * graph.state_size(),
// ...) and writes its next state there (inactive members' rows are left as
// they are); a caller zeroes a row to start that member's episode. Throws
// std::invalid_argument for null pointers (state too, for a recurrent
// graph), num_members == 0, num_threads < 1 or a graph without input or
// output; a ParamView must cover graph.num_params() values.
void run_population(const PolicyGraph& graph, const float* obs, std::size_t num_members,
                    const ParamView* members, float* out, const unsigned char* active = nullptr,
                    int num_threads = 1, float* state = nullptr);

// The same over a Population; throws std::invalid_argument unless
// population.num_params() == graph.num_params().
void run_population(const PolicyGraph& graph, const Population& population, const float* obs,
                    float* out, const unsigned char* active = nullptr, int num_threads = 1,
                    float* state = nullptr);

namespace detail {
// Throws std::invalid_argument unless population.num_params() ==
// graph.num_params() (the message gives both).
void require_matching_params(const PolicyGraph& graph, const Population& population);
}  // namespace detail

}  // namespace evokit
