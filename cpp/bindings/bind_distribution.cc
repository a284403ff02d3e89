// The distribution strategies (distribution.h): one class for every family,
// made by name from an option dict; evokit/blackbox/distribution.py gives
// each family its Python class with the family's arguments.
#include <evokit/distribution.h>
#include <evokit/termination.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "pybind11.h"

namespace evokit::bindings {


namespace {

py::array_t<double> rows(const std::vector<double>& v, std::size_t count, std::size_t n) {
  py::array_t<double> out({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(n)});
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
  return out;
}

py::array_t<double> vector(const std::vector<double>& v) {
  return py::array_t<double>(static_cast<py::ssize_t>(v.size()), v.data());
}

}  // namespace

void bind_distribution(py::module_& m) {
  m.def(
      "distribution_families",
      [] {
        py::list out;
        for (const DistributionFamily& f : distribution_families()) {
          out.append(py::make_tuple(f.name, f.sampling_type, f.config_field));
        }
        return out;
      },
      "The distribution families: (name, SamplingConfig type, config field), in "
      "SamplingConfig.Type order.");

  py::dict stop_defaults;
  stop_defaults["tolfun"] = kDefaultTolfun;
  stop_defaults["tolfunhist"] = kDefaultTolfunhist;
  stop_defaults["tolx"] = kDefaultTolx;
  stop_defaults["conditioncov"] = kDefaultConditioncov;
  stop_defaults["tolupsigma"] = kDefaultTolupsigma;
  m.attr("STOP_DEFAULTS") = stop_defaults;
  m.attr("TOLSTAGNATION_RULE") = kDefaultTolstagnationRule;
  py::class_<FValueHistory>(m, "FValueHistory",
                            "One run's f-value history and the stop criteria on it (evokit/termination.h: "
                            "pycma's definitions, shared by every strategy).")
      .def(py::init<>())
      .def(
          "record",
          [](FValueHistory& h, const DoubleIn& values, std::size_t n, std::size_t population_size) {
            const std::vector<double> v = to_vector<double>(values, "values");
            if (v.empty()) throw std::invalid_argument("values must hold at least one f-value");
            for (std::size_t k = 0; k < v.size(); ++k) {
              if (std::isnan(v[k])) throw std::invalid_argument("values[" + std::to_string(k) + "] is NaN");
            }
            if (n == 0 || population_size == 0) {
              throw std::invalid_argument("n and population_size must be >= 1");
            }
            h.record(v.data(), v.size(), n, population_size);
          },
          py::arg("values"), py::arg("n"), py::arg("population_size"),
          "Records a generation's f-values (n parameters, population_size members set the windows).")
      .def("clear", &FValueHistory::clear, "Forgets the run.")
      // Pickles as FValueHistory::save's entries, read back (and checked) by FValueHistory::read.
      .def(py::pickle(
          [](const FValueHistory& h) {
            SolverState s;
            h.save(s, "");
            const py::object state = py::cast(s);
            return py::make_tuple(state.attr("doubles"), state.attr("ints"));
          },
          [](const py::tuple& t) {
            if (t.size() != 2) throw std::invalid_argument("an FValueHistory pickles as (doubles, ints)");
            const SolverState s = py::type::of<SolverState>()("", py::arg("doubles") = t[0], py::arg("ints") = t[1])
                                      .cast<SolverState>();
            FValueHistory h;
            h.restore(FValueHistory::read(s, ""));
            return h;
          }))
      .def_property_readonly("generations", &FValueHistory::generations)
      .def(
          "check",
          [](FValueHistory& h, std::int64_t evaluations, double best_f, std::optional<std::int64_t> max_evaluations,
             std::optional<std::int64_t> max_iterations, double ftarget, double tolfun, double tolfunhist,
             std::optional<std::int64_t> tolstagnation) {
            FValueCriteria c;
            c.max_evaluations = max_evaluations;
            c.max_iterations = max_iterations;
            c.ftarget = ftarget;
            c.tolfun = tolfun;
            c.tolfunhist = tolfunhist;
            c.tolstagnation = tolstagnation;
            return h.check(c, evaluations, best_f);
          },
          py::arg("evaluations"), py::arg("best_f"), py::kw_only(), py::arg("max_evaluations") = py::none(),
          py::arg("max_iterations") = py::none(),
          py::arg("ftarget") = -std::numeric_limits<double>::infinity(), py::arg("tolfun") = kDefaultTolfun,
          py::arg("tolfunhist") = kDefaultTolfunhist, py::arg("tolstagnation") = py::none(),
          "The criteria met (pycma's name -> threshold).");

  py::class_<DistributionStrategy>(
      m, "DistributionStrategy",
      "A distribution strategy of evokit/distribution.h (SNES, ...), minimising. Make one with "
      "make_distribution(name, x0, options).")
      .def_property_readonly("family", &DistributionStrategy::family)
      .def_property_readonly("num_params", &DistributionStrategy::num_params)
      .def_property_readonly("population_size", &DistributionStrategy::population_size)
      .def_property_readonly("generation", &DistributionStrategy::generation)
      .def_property_readonly("mirrored", &DistributionStrategy::mirrored)
      .def_property_readonly("seed", &DistributionStrategy::seed)
      .def(
          "ask",
          [](DistributionStrategy& s) {
            const std::vector<double>* x = nullptr;
            {
              py::gil_scoped_release release;
              x = &s.ask();
            }
            return rows(*x, s.population_size(), s.num_params());
          },
          "The current generation's solutions [population_size, num_params] (a copy).")
      .def(
          "member_key", [](const DistributionStrategy& s, std::size_t k) { return s.member_key(k); },
          py::arg("k"), "The noise key of member k of the current generation.")
      .def_property_readonly(
          "keys",
          [](const DistributionStrategy& s) {
            std::vector<std::int64_t> keys(s.population_size());
            for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = s.member_key(k);
            return py::array_t<std::int64_t>(static_cast<py::ssize_t>(keys.size()), keys.data());
          },
          "The keys of the current generation's members (mirrored pairs share one).")
      .def(
          "regenerate",
          [](const DistributionStrategy& s, std::size_t k) {
            std::vector<double> x(s.num_params());
            {
              py::gil_scoped_release release;
              s.regenerate(k, x.data());
            }
            return vector(x);
          },
          py::arg("k"), "Member k's solution under the current state (== row k of ask()).")
      .def(
          "tell",
          [](DistributionStrategy& s, const DoubleIn& values) {
            const std::vector<double> v = to_vector<double>(values, "values");
            py::gil_scoped_release release;
            s.tell(v.data(), v.size());
          },
          py::arg("values"), "Updates from the f-values (minimised) of the members, in order.")
      .def_property_readonly("center", [](const DistributionStrategy& s) { return vector(s.center()); })
      .def_property_readonly("stds", [](const DistributionStrategy& s) { return vector(s.stds()); })
      .def_property_readonly("condition", &DistributionStrategy::condition,
                             "The covariance's condition number (max over min eigenvalue; see the family).")
      .def_property_readonly("parameters", &DistributionStrategy::parameters,
                             "The hyper-parameters in use, defaults resolved.")
      .def("save", &DistributionStrategy::save, "The full state (a SolverState).")
      .def(
          "load",
          [](DistributionStrategy& s, const SolverState& state) {
            py::gil_scoped_release release;
            s.load(state);
          },
          py::arg("state"), "Continues from a state of save(); checks it all first.");

  m.def(
      "make_distribution",
      [](const std::string& name, const DoubleIn& x0, const py::dict& options) {
        std::vector<double> start = to_vector<double>(x0, "x0");
        const OptionSet o = to_option_set(options);
        py::gil_scoped_release release;
        return make_distribution(name, std::move(start), o);
      },
      py::arg("name"), py::arg("x0"), py::arg("options"),
      "The distribution strategy `name` from x0 and its options (sigma0, population_size, seed, "
      "num_threads and the family's own; ValueError naming a bad one).");
}

}  // namespace evokit::bindings
