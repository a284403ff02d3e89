#include <evokit/cma_es.h>

#include <cstring>
#include <limits>
#include <optional>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

std::vector<double> to_vector(const DoubleIn& a) { return std::vector<double>(a.data(), a.data() + a.size()); }

py::array_t<double> to_array(const std::vector<double>& v) {
  return py::array_t<double>(static_cast<py::ssize_t>(v.size()), v.data());
}

py::array_t<double> to_matrix(const std::vector<double>& v, std::size_t rows, std::size_t cols) {
  py::array_t<double> out({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
  return out;
}

RestartStrategy parse_restart_strategy(const std::string& name) {
  if (name == "ipop") return RestartStrategy::kIPOP;
  if (name == "bipop") return RestartStrategy::kBIPOP;
  throw std::invalid_argument("unknown restart_strategy '" + name + "', expected one of 'ipop', 'bipop'");
}

StepSizeAdaptation parse_step_size_adaptation(const std::string& name) {
  if (name == "auto") return StepSizeAdaptation::kAuto;
  if (name == "csa") return StepSizeAdaptation::kCSA;
  if (name == "tpa") return StepSizeAdaptation::kTPA;
  throw std::invalid_argument("unknown step_size_adaptation '" + name + "', expected one of 'auto', 'csa', 'tpa'");
}

std::vector<double> bound_vector(const std::optional<DoubleIn>& b, std::size_t n, const char* what) {
  if (!b) return {};
  require_length(*b, static_cast<py::ssize_t>(n), what);
  return to_vector(*b);
}

py::dict params_dict(const CMAParams& p) {
  py::dict d;
  d["num_params"] = p.num_params;
  d["population_size"] = p.population_size;
  d["mu"] = p.mu;
  d["separable"] = p.separable;
  d["weights"] = to_array(p.weights);
  d["mueff"] = p.mueff;
  d["mueff_minus"] = p.mueff_minus;
  d["cm"] = p.cm;
  d["c_sigma"] = p.c_sigma;
  d["d_sigma"] = p.d_sigma;
  d["cc"] = p.cc;
  d["c1"] = p.c1;
  d["cmu"] = p.cmu;
  d["chi_n"] = p.chi_n;
  d["eigen_interval"] = p.eigen_interval;
  d["tpa_c"] = p.tpa_c;
  d["tpa_damp"] = p.tpa_damp;
  return d;
}

template <class Strategy>
py::class_<Strategy, CMABase> bind_strategy(py::module_& m, const char* name, const char* doc) {
  return py::class_<Strategy, CMABase>(m, name, doc)
      .def(py::init([](const DoubleIn& x0, double sigma0, std::optional<std::int64_t> population_size,
                       std::uint64_t seed, std::optional<DoubleIn> lower, std::optional<DoubleIn> upper,
                       std::optional<std::int64_t> max_evaluations, double ftarget, double tolfun,
                       double tolfunhist, double tolx, std::optional<std::int64_t> tolstagnation,
                       double conditioncov, double tolupsigma, bool noeffectaxis, bool noeffectcoord,
                       int restarts, const std::string& restart_strategy,
                       std::optional<Int64In> integer_variables, std::optional<double> margin,
                       const std::string& step_size_adaptation, int num_threads) {
             if (x0.ndim() != 1) {
               throw std::invalid_argument("x0 must be a 1-D array, got shape " +
                                           std::string(py::str(x0.attr("shape"))));
             }
             const auto n = static_cast<std::size_t>(x0.size());
             CMAESOptions o;
             if (population_size) {
               if (*population_size < 2) {
                 throw std::invalid_argument("population_size must be >= 2, got " +
                                             std::to_string(*population_size));
               }
               o.population_size = static_cast<std::size_t>(*population_size);
             }
             o.seed = seed;
             if (lower.has_value() != upper.has_value()) {
               throw std::invalid_argument("lower and upper must be given together");
             }
             o.lower = bound_vector(lower, n, "lower");
             o.upper = bound_vector(upper, n, "upper");
             o.max_evaluations = max_evaluations;
             o.ftarget = ftarget;
             o.tolfun = tolfun;
             o.tolfunhist = tolfunhist;
             o.tolx = tolx;
             o.tolstagnation = tolstagnation;
             o.conditioncov = conditioncov;
             o.tolupsigma = tolupsigma;
             o.noeffectaxis = noeffectaxis;
             o.noeffectcoord = noeffectcoord;
             o.restarts = restarts;
             o.restart_strategy = parse_restart_strategy(restart_strategy);
             if (integer_variables) {
               if (integer_variables->ndim() != 1) {
                 throw std::invalid_argument("integer_variables must be a 1-D sequence of indices, got shape " +
                                             std::string(py::str(integer_variables->attr("shape"))));
               }
               for (py::ssize_t j = 0; j < integer_variables->size(); ++j) {
                 const std::int64_t i = integer_variables->data()[j];
                 if (i < 0) {
                   throw std::invalid_argument("integer_variables[" + std::to_string(j) + "] = " +
                                               std::to_string(i) + " is not a parameter index (num_params = " +
                                               std::to_string(n) + ")");
                 }
                 o.integer_variables.push_back(static_cast<std::size_t>(i));
               }
             }
             o.margin = margin;
             o.step_size_adaptation = parse_step_size_adaptation(step_size_adaptation);
             o.num_threads = num_threads;
             std::vector<double> start = to_vector(x0);
             py::gil_scoped_release release;
             return std::make_unique<Strategy>(std::move(start), sigma0, std::move(o));
           }),
           py::arg("x0"), py::arg("sigma0"), py::kw_only(), py::arg("population_size") = py::none(),
           py::arg("seed") = 0, py::arg("lower") = py::none(), py::arg("upper") = py::none(),
           py::arg("max_evaluations") = py::none(),
           py::arg("ftarget") = -std::numeric_limits<double>::infinity(), py::arg("tolfun") = 1e-11,
           py::arg("tolfunhist") = 1e-12, py::arg("tolx") = 1e-11, py::arg("tolstagnation") = py::none(),
           py::arg("conditioncov") = 1e14, py::arg("tolupsigma") = 1e20, py::arg("noeffectaxis") = true,
           py::arg("noeffectcoord") = true, py::arg("restarts") = 0, py::arg("restart_strategy") = "ipop",
           py::arg("integer_variables") = py::none(), py::arg("margin") = py::none(),
           py::arg("step_size_adaptation") = "auto", py::arg("num_threads") = 1);
}

}  // namespace

void bind_cma(py::module_& m) {
  m.def("default_population_size", &cma_default_population_size, py::arg("n"),
        "The default population size 4 + floor(3 ln n) (Hansen's tutorial, Eq. (48)).");
  m.attr("DEFAULT_POPULATION_RULE") = kDefaultPopulationRule;
  m.attr("MARGIN_RULE") = kDefaultMarginRule;
  m.def(
      "cma_default_params",
      [](std::size_t num_params, std::optional<std::size_t> population_size, bool separable) {
        return params_dict(cma_default_params(
            num_params, population_size.value_or(cma_default_population_size(num_params)), separable));
      },
      py::arg("num_params"), py::arg("population_size") = py::none(), py::arg("separable") = false,
      "The tutorial's default CMA-ES parameters (Hansen 2016, Table 1) as a dict.");
  m.def(
      "symmetric_eigen",
      [](const DoubleIn& a, int num_threads) {
        if (a.ndim() != 2 || a.shape(0) != a.shape(1)) {
          throw std::invalid_argument("a must be a square 2-D array, got shape " +
                                      std::string(py::str(a.attr("shape"))));
        }
        const auto n = static_cast<std::size_t>(a.shape(0));
        SymmetricEigen e;
        {
          py::gil_scoped_release release;
          e = symmetric_eigen(a.data(), n, num_threads);
        }
        return py::make_tuple(to_array(e.values), to_matrix(e.vectors, n, n));
      },
      py::arg("a"), py::arg("num_threads") = 1,
      "(values ascending, vectors with row j the eigenvector of values[j]): Householder, then divide and conquer (n > 32) or implicit QL.");

  py::class_<CMABase>(m, "CMABase", "The ask/tell bookkeeping shared by CMAES and SepCMAES.")
      .def(
          "ask",
          [](CMABase& self) {
            const std::vector<double>* x;
            {
              py::gil_scoped_release release;
              x = &self.ask();
            }
            return to_matrix(*x, self.population_size(), self.num_params());
          },
          "The population of the current generation, [population_size, num_params] float64.")
      .def(
          "tell",
          [](CMABase& self, const DoubleIn& values) {
            require_length(values, static_cast<py::ssize_t>(values.size()), "values");
            const double* v = values.data();
            const auto count = static_cast<std::size_t>(values.size());
            py::gil_scoped_release release;
            self.tell(v, count);
          },
          py::arg("values"), "f-values (minimised) of the last ask(), in its order.")
      .def(
          "tell_solutions",
          [](CMABase& self, const DoubleIn& solutions, const DoubleIn& values) {
            require_length(values, static_cast<py::ssize_t>(values.size()), "values");
            if (solutions.ndim() != 2 || solutions.shape(1) != static_cast<py::ssize_t>(self.num_params())) {
              throw std::invalid_argument("solutions must have shape (#solutions, " +
                                          std::to_string(self.num_params()) + "), got " +
                                          std::string(py::str(solutions.attr("shape"))));
            }
            if (solutions.shape(0) != values.size()) {
              throw std::invalid_argument("#f-values = " + std::to_string(values.size()) +
                                          " must equal #solutions = " + std::to_string(solutions.shape(0)));
            }
            const double* x = solutions.data();
            const double* v = values.data();
            const auto count = static_cast<std::size_t>(values.size());
            py::gil_scoped_release release;
            self.tell_solutions(x, v, count);
          },
          py::arg("solutions"), py::arg("values"),
          "tell() with the evaluated solutions: rows that differ from ask()'s (repaired) are used with "
          "pycma's Mahalanobis clipping.")
      .def(
          "inject",
          [](CMABase& self, const DoubleIn& solutions, bool force) {
            if (solutions.ndim() != 2 || solutions.shape(1) != static_cast<py::ssize_t>(self.num_params())) {
              throw std::invalid_argument("solutions must have shape (#solutions, " +
                                          std::to_string(self.num_params()) + "), got " +
                                          std::string(py::str(solutions.attr("shape"))));
            }
            const double* x = solutions.data();
            const auto count = static_cast<std::size_t>(solutions.shape(0));
            py::gil_scoped_release release;
            self.inject(x, count, force);
          },
          py::arg("solutions"), py::arg("force") = false,
          "Queues solutions for the first rows of the next ask()s (pycma's inject).")
      .def_property_readonly("pending_injections", &CMABase::pending_injections)
      .def_property_readonly("step_size_adaptation",
                             [](const CMABase& self) { return self.tpa() ? "tpa" : "csa"; },
                             "'csa' or 'tpa' ('auto' resolved: TPA for n >= 300).")
      .def_property_readonly("tpa_row", &CMABase::tpa_row,
                             "TPA's mirrored pair in the last ask(): rows tpa_row and tpa_row + 1 "
                             "(population_size: none).")
      .def_property_readonly("num_injected", &CMABase::num_injected,
                             "How many of the first rows of the last ask() were injected.")
      .def(
          "export_state", [](const CMABase& es) { return es.export_state(); },
          "The whole strategy (distribution, restarts, history, injections, a pending ask) as a SolverState.")
      .def(
          "import_state",
          [](CMABase& es, const SolverState& state) {
            py::gil_scoped_release release;
            es.import_state(state);
          },
          py::arg("state"),
          "Continues from export_state() of a strategy made with the same arguments (checked first).")
      .def("disable_stagnation", &CMABase::disable_stagnation,
           "Switches the stagnation test off for the rest of the run.")
      .def("disable_value_criteria", &CMABase::disable_value_criteria,
           "Switches tolfun, tolfunhist and tolstagnation off for the rest of the run (values "
           "whose spread is not the objective's precision, e.g. an augmented Lagrangian).")
      .def("count_evaluations", &CMABase::count_evaluations, py::arg("n"),
           "Counts n evaluations made outside the generations (the centre's) toward evaluations "
           "and maxfevals (checked at the next tell).")
      .def_property_readonly("large_restarts", &CMABase::large_restarts)
      .def_property_readonly("small_restarts", &CMABase::small_restarts)
      .def_property_readonly("margin", &CMABase::margin)
      .def(
          "tell_keys",
          [](CMABase& self, const Int64In& keys, const DoubleIn& values) {
            require_length(keys, static_cast<py::ssize_t>(keys.size()), "keys");
            require_length(values, static_cast<py::ssize_t>(values.size()), "values");
            if (keys.size() != values.size()) {
              throw std::invalid_argument("#f-values = " + std::to_string(values.size()) +
                                          " must equal #keys = " + std::to_string(keys.size()));
            }
            const std::int64_t* k = keys.data();
            const double* v = values.data();
            const auto count = static_cast<std::size_t>(values.size());
            py::gil_scoped_release release;
            self.tell_keys(k, v, count);
          },
          py::arg("keys"), py::arg("values"),
          "tell() for members given by their keys (e.g. from a log); needs no ask().")
      .def_property_readonly(
          "keys",
          [](const CMABase& self) {
            const auto& k = self.keys();
            return py::array_t<std::int64_t>(static_cast<py::ssize_t>(k.size()), k.data());
          },
          "The keys of the last ask(), one per member.")
      .def("sample_key", &CMABase::sample_key, py::arg("member"))
      .def(
          "regenerate",
          [](const CMABase& self, std::int64_t key) {
            std::vector<double> x;
            {
              py::gil_scoped_release release;
              x = self.regenerate(key);
            }
            return to_array(x);
          },
          py::arg("key"), "The solution of `key` under the current state.")
      .def("stop", [](const CMABase& self) { return self.stop(); },
           "name -> threshold of the criteria that ended the run ({} while it runs).")
      .def_property_readonly("stopped", &CMABase::stopped)
      .def_property_readonly("restart_history", &CMABase::restart_history)
      .def_property_readonly("has_pending_ask", &CMABase::has_pending_ask)
      .def_property_readonly("best_solution", [](const CMABase& s) { return to_array(s.best_solution()); })
      .def_property_readonly("best_value", &CMABase::best_value)
      .def_property_readonly("evaluations", &CMABase::evaluations)
      .def_property_readonly("iterations", &CMABase::iterations)
      .def_property_readonly("restarts_done", &CMABase::restarts_done)
      .def_property_readonly("mean_solution", [](const CMABase& s) { return to_array(s.mean_solution()); })
      .def_property_readonly("stds", [](const CMABase& s) { return to_array(s.stds()); })
      .def_property_readonly("num_params", &CMABase::num_params)
      .def_property_readonly("population_size", &CMABase::population_size)
      .def_property_readonly("sigma", &CMABase::sigma, "The current step size (get_state()['sigma']).")
      .def_property_readonly("sigma0", &CMABase::sigma0)
      .def_property_readonly("run_sigma0", &CMABase::run_sigma0)
      .def_property_readonly("params", [](const CMABase& s) { return params_dict(s.params()); })
      .def(
          "to_bounds",
          [](const CMABase& self, const DoubleIn& x) {
            require_length(x, static_cast<py::ssize_t>(self.num_params()), "x");
            std::vector<double> v = to_vector(x);
            self.to_bounds(v.data());
            return to_array(v);
          },
          py::arg("x"), "The bound transformation (mirror reflection) of x.")
      .def(
          "get_state",
          [](const CMABase& self) {
            const CMAState& s = self.state();
            const std::size_t n = self.num_params();
            py::dict d;
            d["mean"] = to_array(s.mean);
            d["sigma"] = s.sigma;
            d["p_sigma"] = to_array(s.p_sigma);
            d["p_c"] = to_array(s.p_c);
            d["cov"] = s.cov.size() == n ? to_array(s.cov) : to_matrix(s.cov, n, n);
            d["eigenvalues"] = to_array(s.eigenvalues);
            d["eigenvectors"] = to_matrix(s.eigenvectors, s.eigenvectors.empty() ? 0 : n,
                                          s.eigenvectors.empty() ? 0 : n);
            d["householder"] = to_array(s.householder.vectors);
            d["householder_tau"] = to_array(s.householder.tau);
            d["generation"] = s.generation;
            d["eigen_generation"] = s.eigen_generation;
            d["affine"] = to_array(s.affine);
            d["tpa_s"] = s.tpa_s;
            d["mean_shift"] = to_array(s.mean_shift);
            d["mean_shift_z"] = to_array(s.mean_shift_z);
            return d;
          },
          "A copy of the distribution: mean, sigma, p_sigma, p_c, cov, eigenvalues, eigenvectors, "
          "householder, householder_tau (B^T = eigenvectors Q^T, Q the product of the Householder reflectors; "
          "both empty: Q = I; CMAES.eigenbasis() gives B^T), generation, eigen_generation, affine, tpa_s, "
          "mean_shift, mean_shift_z.")
      .def(
          "set_state",
          [](CMABase& self, const DoubleIn& mean, double sigma, const DoubleIn& p_sigma, const DoubleIn& p_c,
             const DoubleIn& cov, std::int64_t generation, std::optional<DoubleIn> eigenvalues,
             std::optional<DoubleIn> eigenvectors, std::optional<std::int64_t> eigen_generation,
             std::optional<DoubleIn> affine, double tpa_s, std::optional<DoubleIn> mean_shift,
             std::optional<DoubleIn> householder, std::optional<DoubleIn> householder_tau,
             std::optional<DoubleIn> mean_shift_z) {
            CMAState s;
            s.mean = to_vector(mean);
            s.sigma = sigma;
            s.p_sigma = to_vector(p_sigma);
            s.p_c = to_vector(p_c);
            s.cov = to_vector(cov);
            s.generation = generation;
            if (eigenvalues.has_value() != eigenvectors.has_value()) {
              throw std::invalid_argument("eigenvalues and eigenvectors must be given together");
            }
            if (eigenvalues) {
              s.eigenvalues = to_vector(*eigenvalues);
              s.eigenvectors = to_vector(*eigenvectors);
            }
            if (householder.has_value() != householder_tau.has_value()) {
              throw std::invalid_argument("householder and householder_tau must be given together");
            }
            if (householder) {
              s.householder.vectors = to_vector(*householder);
              s.householder.tau = to_vector(*householder_tau);
            }
            s.eigen_generation = eigen_generation.value_or(generation);
            if (affine) s.affine = to_vector(*affine);
            s.tpa_s = tpa_s;
            if (mean_shift) s.mean_shift = to_vector(*mean_shift);
            if (mean_shift_z) s.mean_shift_z = to_vector(*mean_shift_z);
            py::gil_scoped_release release;
            self.set_state(s);
          },
          py::arg("mean"), py::arg("sigma"), py::arg("p_sigma"), py::arg("p_c"), py::arg("cov"),
          py::arg("generation") = 0, py::arg("eigenvalues") = py::none(), py::arg("eigenvectors") = py::none(),
          py::arg("eigen_generation") = py::none(), py::arg("affine") = py::none(), py::arg("tpa_s") = 0.0,
          py::arg("mean_shift") = py::none(), py::arg("householder") = py::none(),
          py::arg("householder_tau") = py::none(), py::arg("mean_shift_z") = py::none(),
          "Replaces the distribution; without eigenvalues/eigenvectors, C is decomposed now; "
          "householder/householder_tau: the reflectors of Q (None: Q = I, eigenvectors = B^T); "
          "affine: the margin's diagonal A (None: ones); tpa_s, mean_shift: TPA's state (None / "
          "empty: no mirrored pair in the next ask()); mean_shift_z: the shift's z in the current "
          "decomposition, as tell() left it (None / empty: computed from mean_shift).");

  bind_strategy<CMAES>(m, "CMAES", "Full-covariance CMA-ES (Hansen 2016).")
      .def(
          "eigenbasis",
          [](const CMAES& self) {
            std::vector<double> bt;
            {
              py::gil_scoped_release release;
              bt = self.eigenbasis();
            }
            const std::size_t n = self.num_params();
            return to_matrix(bt, n, n);
          },
          "B^T of the current decomposition C = B diag(eigenvalues) B^T (n x n; row j: the unit eigenvector "
          "of get_state()['eigenvalues'][j]): get_state()['eigenvectors'] times Q^T, Q the product of the "
          "state's Householder reflectors.");
  bind_strategy<SepCMAES>(m, "SepCMAES", "Separable (diagonal) CMA-ES (Ros & Hansen 2008).");
}

}  // namespace evokit::bindings
