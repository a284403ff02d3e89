#include "pybind11.h"

namespace evokit::bindings {

std::size_t to_size(std::int64_t value, const char* name) {
  if (value < 0) {
    throw std::invalid_argument(std::string(name) + " must be >= 0, got " + std::to_string(value));
  }
  return static_cast<std::size_t>(value);
}

GeneticAlgorithmOptions ga_options(std::int64_t population_size, std::int64_t truncation_size,
                                   std::int64_t num_elites, float mutation_power, float init_sigma,
                                   std::int64_t elite_candidates, std::int64_t elite_evaluations,
                                   std::uint64_t seed, int num_threads) {
  GeneticAlgorithmOptions o;
  o.population_size = to_size(population_size, "population_size");
  o.truncation_size = to_size(truncation_size, "truncation_size");
  o.num_elites = to_size(num_elites, "num_elites");
  o.mutation_power = mutation_power;
  o.init_sigma = init_sigma;
  o.elite_candidates = to_size(elite_candidates, "elite_candidates");
  o.elite_evaluations = to_size(elite_evaluations, "elite_evaluations");
  o.seed = seed;
  o.num_threads = num_threads;
  return o;
}

py::array_t<float> readonly_view(const float* data, std::size_t n, py::handle owner) {
  py::array_t<float> view({static_cast<py::ssize_t>(n)}, {sizeof(float)}, data, owner);
  view.attr("setflags")(py::arg("write") = false);
  return view;
}

std::vector<std::size_t> episode_members(const Int64In& members) {
  if (members.ndim() != 1) {
    const std::string shape = py::str(members.attr("shape"));
    throw std::invalid_argument("members must be a 1-D array, got shape " + shape);
  }
  std::vector<std::size_t> out(static_cast<std::size_t>(members.shape(0)));
  for (std::size_t e = 0; e < out.size(); ++e) {
    const std::int64_t m = members.data()[e];
    if (m < 0) {
      throw std::out_of_range("episode " + std::to_string(e) + ": member " + std::to_string(m) +
                              " is negative");
    }
    out[e] = static_cast<std::size_t>(m);
  }
  return out;
}

void require_length(const py::array& a, py::ssize_t expected, const char* what) {
  if (a.ndim() != 1 || a.shape(0) != expected) {
    const std::string shape = py::str(a.attr("shape"));
    throw std::invalid_argument(std::string(what) + " must have shape (" + std::to_string(expected) +
                                ",), got " + shape);
  }
}

py::array_t<float> require_out(const py::object& out, py::ssize_t expected, const char* what) {
  if (!py::isinstance<py::array_t<float>>(out) ||
      !(py::array(out).flags() & py::array::c_style) || !py::array(out).writeable()) {
    throw std::invalid_argument(std::string(what) +
                                " must be a writable C-contiguous float32 NumPy array");
  }
  auto arr = py::reinterpret_borrow<py::array_t<float>>(out);
  require_length(arr, expected, what);
  return arr;
}

}  // namespace evokit::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "EvoKit's C++ core: counter-based Gaussian noise, fitness shaping, ES gradient, optimizers";
  m.attr("__version__") = EVOKIT_VERSION;
  evokit::bindings::bind_sampler(m);
  evokit::bindings::bind_fitness(m);
  evokit::bindings::bind_optimizer(m);
  evokit::bindings::bind_agent(m);
  evokit::bindings::bind_policy(m);
  evokit::bindings::bind_envs(m);
  evokit::bindings::bind_cma(m);
  evokit::bindings::bind_ga(m);
  evokit::bindings::bind_solver(m);
  evokit::bindings::bind_distribution(m);
  evokit::bindings::bind_log(m);
  evokit::bindings::bind_mujoco(m);
  evokit::bindings::bind_formats(m);
}
