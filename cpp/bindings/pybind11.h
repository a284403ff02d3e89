// The one pybind11 include of the bindings, with the helpers they share.
//
// The bindings are thin: convert and validate arguments with the GIL held,
// release it, call the C++ core. C++ std::invalid_argument becomes ValueError
// and std::out_of_range becomes IndexError (pybind11's standard translation);
// any other std::exception, e.g. std::logic_error, becomes RuntimeError with
// its message.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <evokit/env.h>
#include <evokit/fitness.h>
#include <evokit/ga.h>
#include <evokit/solver.h>

namespace evokit::bindings {

namespace py = pybind11;

// Input arrays: float32, C-contiguous; other dtypes are converted (a copy).
using FloatIn = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Int64In = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using DoubleIn = py::array_t<double, py::array::c_style | py::array::forcecast>;

// A count argument: ValueError naming `name` unless value >= 0.
std::size_t to_size(std::int64_t value, const char* name);

// The elements of a 1-D input array, copied; ValueError naming `what` otherwise.
template <typename T>
std::vector<T> to_vector(const py::array_t<T, py::array::c_style | py::array::forcecast>& a,
                         const char* what) {
  if (a.ndim() != 1) {
    const std::string shape = py::str(a.attr("shape"));
    throw std::invalid_argument(std::string(what) + " must be a 1-D array, got shape " + shape);
  }
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

// The member index of each episode of a rollout call: a 1-D array of
// non-negative integers (ValueError for another shape, IndexError naming the
// episode for a negative index; the core checks the upper bound).
std::vector<std::size_t> episode_members(const Int64In& members);

// A native environment's spec as a dict (name, entry_point, defaults,
// obs_size, action_size, discrete, obs_float32, state_size, seeded_reset).
py::dict env_spec_dict(const EnvSpec& spec);

// A 1-D input of exactly `expected` elements, or ValueError naming `what`.
void require_length(const py::array& a, py::ssize_t expected, const char* what);

// An output array the caller owns and that we write in place: it must already
// be float32, C-contiguous, writable and of `expected` elements (never copied,
// so that the caller sees the result).
py::array_t<float> require_out(const py::object& out, py::ssize_t expected, const char* what);

// A read-only NumPy view of n floats at `data` (no copy); `owner` keeps the
// storage alive.
py::array_t<float> readonly_view(const float* data, std::size_t n, py::handle owner);

// GeneticAlgorithmOptions from Python arguments; counts must be >= 0
// (ValueError naming the argument); the GA validates the rest.
GeneticAlgorithmOptions ga_options(std::int64_t population_size, std::int64_t truncation_size,
                                   std::int64_t num_elites, float mutation_power, float init_sigma,
                                   std::int64_t elite_candidates, std::int64_t elite_evaluations,
                                   std::uint64_t seed, int num_threads);

// "centered_rank", "z_score" or "raw", else ValueError naming the accepted values.
FitnessShaping parse_fitness_shaping(const std::string& method);

void bind_sampler(py::module_& m);
void bind_fitness(py::module_& m);
void bind_optimizer(py::module_& m);
void bind_agent(py::module_& m);
void bind_policy(py::module_& m);
void bind_envs(py::module_& m);
void bind_cma(py::module_& m);
void bind_ga(py::module_& m);
void bind_solver(py::module_& m);
void bind_distribution(py::module_& m);
// A Python dict (str -> bool, int, float or str) as solver options.
OptionSet to_option_set(const py::dict& options);
void bind_log(py::module_& m);
void bind_mujoco(py::module_& m);
void bind_formats(py::module_& m);

}  // namespace evokit::bindings
