// The Solver interface and its one adapter StrategySolver over every
// family's strategy (solver.h, strategy_solver.h, gaussian_solver.h), the
// solver state and the option set.
#include <evokit/cma_es.h>
#include <evokit/ga.h>
#include <evokit/gaussian_solver.h>
#include <evokit/population.h>
#include <evokit/solver.h>
#include <evokit/strategy_solver.h>

#include <optional>

#include "pybind11.h"

namespace evokit::bindings {

OptionSet to_option_set(const py::dict& options) {
  OptionSet out;
  for (const auto& item : options) {
    const std::string name = py::str(item.first);
    const py::handle value = item.second;
    if (py::isinstance<py::bool_>(value)) {
      out.set(name, value.cast<bool>());
    } else if (py::isinstance<py::int_>(value)) {
      out.set(name, value.cast<std::int64_t>());
    } else if (py::isinstance<py::float_>(value)) {
      out.set(name, value.cast<double>());
    } else if (py::isinstance<py::str>(value)) {
      out.set(name, value.cast<std::string>());
    } else {
      throw py::type_error("solver option '" + name + "' must be a bool, int, float or str, got " +
                           std::string(py::str(py::type::of(value).attr("__name__"))));
    }
  }
  return out;
}

namespace {

template <class T>
py::dict arrays_to_dict(const std::map<std::string, std::vector<T>>& arrays) {
  py::dict out;
  for (const auto& [name, values] : arrays) {
    out[py::str(name)] = py::array_t<T>(static_cast<py::ssize_t>(values.size()), values.data());
  }
  return out;
}

template <class T>
std::map<std::string, std::vector<T>> dict_to_arrays(const py::dict& d, const char* what) {
  std::map<std::string, std::vector<T>> out;
  for (const auto& item : d) {
    const std::string name = py::str(item.first);
    const auto arr = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(item.second);
    if (!arr || arr.ndim() != 1) {
      throw std::invalid_argument(std::string(what) + "['" + name + "'] must be a 1-D array");
    }
    out[name] = std::vector<T>(arr.data(), arr.data() + arr.size());
  }
  return out;
}

std::vector<const SamplingInfo*> member_pointers(const std::vector<std::optional<SamplingInfo>>& m) {
  std::vector<const SamplingInfo*> out(m.size(), nullptr);
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i]) out[i] = &*m[i];
  }
  return out;
}

// The strategy a StrategySolver runs as S, or AttributeError `name` (the
// solver runs another family).
template <class S>
S& strategy_of(StrategySolver& solver, const char* name) {
  if (dynamic_cast<const S*>(&solver.strategy()) == nullptr) {
    throw py::attribute_error("a " + solver.kind() + " solver has no '" + name + "'");
  }
  return solver.strategy<S>();
}

}  // namespace

void bind_solver(py::module_& m) {
  py::class_<SolverState>(
      m, "SolverState",
      "A solver's full state, protobuf-free: named float32, float64 and int64 arrays (what "
      "solver.pb stores as typed NamedVectors).")
      .def(py::init([](std::string family, std::int64_t model_iter_id, int noise_version,
                       const py::dict& floats, const py::dict& doubles, const py::dict& ints) {
             SolverState s;
             s.family = std::move(family);
             s.model_iter_id = model_iter_id;
             s.noise_version = noise_version;
             s.floats = dict_to_arrays<float>(floats, "floats");
             s.doubles = dict_to_arrays<double>(doubles, "doubles");
             s.ints = dict_to_arrays<std::int64_t>(ints, "ints");
             return s;
           }),
           py::arg("family"), py::arg("model_iter_id") = 0, py::arg("noise_version") = 0,
           py::arg("floats") = py::dict(), py::arg("doubles") = py::dict(),
           py::arg("ints") = py::dict())
      .def_readwrite("family", &SolverState::family)
      .def_readwrite("model_iter_id", &SolverState::model_iter_id)
      .def_readwrite("noise_version", &SolverState::noise_version)
      .def_property_readonly("floats", [](const SolverState& s) { return arrays_to_dict(s.floats); },
                             "name -> float32 array (a copy)")
      .def_property_readonly("doubles", [](const SolverState& s) { return arrays_to_dict(s.doubles); },
                             "name -> float64 array (a copy)")
      .def_property_readonly("ints", [](const SolverState& s) { return arrays_to_dict(s.ints); },
                             "name -> int64 array (a copy)");

  py::class_<Solver>(
      m, "Solver",
      "One sampling family (Gaussian, CMA-ES, GA): draws members, rebuilds them from their "
      "SamplingInfo, tells rewards, and saves / loads its full state.")
      .def_property_readonly("family", &Solver::family)
      .def_property_readonly("num_params", &Solver::num_params)
      .def_property_readonly(
          "center",
          [](py::object self) {
            const std::vector<float>& c = self.cast<const Solver&>().center();
            return readonly_view(c.data(), c.size(), self);
          },
          "Read-only view (no copy) of the centre; it sees every update.")
      .def_property_readonly("model_iter_id", &Solver::model_iter_id, "Updates so far.")
      .def("draw", &Solver::draw, py::arg("clone"), py::arg("stream") = 0,
           py::call_guard<py::gil_scoped_release>(),
           "The next member for sampling agent `clone` (advances its draw counter).")
      .def("check_member", &Solver::check_member, py::arg("info"),
           py::call_guard<py::gil_scoped_release>(),
           "Raises unless `info` can be rebuilt at the current iteration.")
      .def(
          "rebuild",
          [](const Solver& self, const SamplingInfo& info, const py::object& out, int num_threads) {
            py::array_t<float> arr =
                out.is_none() ? py::array_t<float>(static_cast<py::ssize_t>(self.num_params()))
                              : require_out(out, static_cast<py::ssize_t>(self.num_params()), "out");
            float* ptr = arr.mutable_data();
            {
              py::gil_scoped_release release;
              self.rebuild(info, ptr, num_threads);
            }
            return arr;
          },
          py::arg("info"), py::arg("out") = py::none(), py::arg("num_threads") = 1,
          "The parameters of member `info` (written to `out` when given).")
      .def(
          "population",
          [](const Solver& self, const std::vector<std::optional<SamplingInfo>>& members,
             int num_threads) {
            const auto pointers = member_pointers(members);
            py::gil_scoped_release release;
            return self.population(pointers, num_threads);
          },
          py::arg("members"), py::arg("num_threads") = 1,
          "A Population of these members for batched forward passes (None = the centre).")
      .def(
          "shortfall",
          [](const Solver& self, const std::vector<SamplingInfo>& infos,
             const std::vector<double>& rewards) -> std::optional<std::string> {
            std::string s = self.shortfall(infos, rewards);
            if (s.empty()) return std::nullopt;
            return s;
          },
          py::arg("infos"), py::arg("rewards"),
          "Why these samples are not yet enough for an update (None when they are).")
      .def_property_readonly("corrects_older_samples", &Solver::corrects_older_samples,
                             "Whether samples of older iterations can be told (with the "
                             "centres of their iterations as history).")
      .def_property_readonly("mirrored_pairs", &Solver::mirrored_pairs,
                             "Whether members 2p and 2p + 1 are a mirrored pair (one noise, opposite "
                             "signs), evaluated on the same episodes.")
      .def("save", &Solver::save, "The full state (draw counters included).")
      .def("load", &Solver::load, py::arg("state"),
           "Restore a state from save(); checks everything before changing anything.")
      .def("sampling_state", &Solver::sampling_state,
           "What a replica needs to rebuild members (e.g. an evaluation worker).")
      .def("load_sampling_state", &Solver::load_sampling_state, py::arg("state"));

  py::class_<StrategySolver, Solver>(
      m, "StrategySolver",
      "Every family: an ask/tell strategy (OpenAI-ES / ARS drawing members on demand, CMA-ES, the "
      "GA, a distribution strategy handing out generations).")
      .def_property_readonly("kind", &StrategySolver::kind)
      .def_property_readonly("draws", &StrategySolver::draws,
                             "Members handed out in the current generation (0 for a family that "
                             "draws members on demand: clone_draws).")
      .def(
          "clone_draws",
          [](StrategySolver& self, int clone) {
            return strategy_of<GaussianStrategy>(self, "clone_draws").draws(clone);
          },
          py::arg("clone"),
          "Clone `clone`'s draw count (GAUSSIAN_SAMPLING / ARS_SAMPLING: members drawn on "
          "demand).")
      .def_property_readonly(
          "sampler",
          [](StrategySolver& self) -> const GaussianSampler& {
            return strategy_of<GaussianStrategy>(self, "sampler").sampler();
          },
          py::return_value_policy::reference_internal,
          "The Gaussian sampler of a GAUSSIAN_SAMPLING / ARS_SAMPLING solver.")
      .def_property_readonly(
          "optimizer",
          [](StrategySolver& self) -> Optimizer& {
            return strategy_of<GaussianStrategy>(self, "optimizer").optimizer();
          },
          py::return_value_policy::reference_internal,
          "The optimizer of a GAUSSIAN_SAMPLING / ARS_SAMPLING solver.")
      .def(
          "set_center",
          [](StrategySolver& self, const FloatIn& params) {
            const std::vector<float> theta = to_vector<float>(params, "params");
            py::gil_scoped_release release;
            self.set_center(theta);
          },
          py::arg("params"),
          "Replace the centre parameters; keeps the optimizer state (Gaussian families; "
          "RuntimeError for a family whose centre follows from its state).")
      .def_property_readonly("member_keys", &StrategySolver::member_keys,
                             "The keys of the current generation's members, in order.")
      .def("is_member", &StrategySolver::is_member, py::arg("info"))
      .def_property_readonly(
          "cma", [](StrategySolver& self) -> CMABase& { return strategy_of<CMABase>(self, "cma"); },
          py::return_value_policy::reference_internal,
          "The CMA-ES a CMA_SAMPLING solver runs (read it, don't change it).")
      .def_property_readonly(
          "ga",
          [](StrategySolver& self) -> GeneticAlgorithm& {
            return strategy_of<GeneticAlgorithm>(self, "ga");
          },
          py::return_value_policy::reference_internal,
          "The GeneticAlgorithm a GA_SAMPLING solver runs (read it, don't change it).");

  m.def("solver_families", &solver_families, "The sampling families, in SamplingConfig order.");
  m.def(
      "validate_solver_options",
      [](const py::dict& options, std::optional<std::int64_t> num_params) {
        const OptionSet o = to_option_set(options);
        std::optional<std::size_t> n;
        if (num_params) n = to_size(*num_params, "num_params");
        validate_solver_options(o, n);
      },
      py::arg("options"), py::arg("num_params") = py::none(),
      "Check solver options (SolverConfig flattened to dotted names); raises ValueError "
      "'solver.<name> <what>, got <value>'.");
  m.def(
      "solver_key_options",
      [](const py::dict& options) { return solver_key_options(to_option_set(options)); },
      py::arg("options"),
      "The option names (below solver) whose change would give existing keys another meaning.");
  m.def(
      "make_solver",
      [](const py::dict& options, const FloatIn& x0, int num_threads) {
        const OptionSet o = to_option_set(options);
        std::vector<float> x = to_vector<float>(x0, "x0");
        py::gil_scoped_release release;  // a Gaussian noise table takes a while
        return make_solver(o, std::move(x), num_threads);
      },
      py::arg("options"), py::arg("x0"), py::arg("num_threads") = 1,
      "The solver the options describe, starting from x0.");
}

}  // namespace evokit::bindings
