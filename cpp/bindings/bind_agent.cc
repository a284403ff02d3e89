#include <evokit/es_agent.h>
#include <evokit/population.h>
#include <evokit/gaussian_solver.h>
#include <evokit/solver.h>
#include <evokit/formats/update_records.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

OptimizerOptions::Type parse_optimizer(const std::string& name) {
  if (name == "SGD") return OptimizerOptions::Type::kSGD;
  if (name == "MOMENTUM") return OptimizerOptions::Type::kMomentum;
  if (name == "ADAM") return OptimizerOptions::Type::kAdam;
  throw std::invalid_argument("unknown optimizer '" + name +
                              "', expected one of 'SGD', 'MOMENTUM', 'ADAM'");
}

// A read-only NumPy view of `v` (no copy); `owner` (the agent) keeps it alive.
py::array_t<float> view_of(const std::vector<float>& v, py::handle owner) {
  return readonly_view(v.data(), v.size(), owner);
}

std::string repr(const SamplingInfo& info) {
  std::ostringstream out;
  out << "SamplingInfo(key=[";
  for (std::size_t i = 0; i < info.key.size(); ++i) out << (i ? ", " : "") << info.key[i];
  out << "], model_iter_id=" << info.model_iter_id
      << ", mirrored=" << (info.mirrored ? "True" : "False") << ")";
  return out.str();
}

// One update of `self` from infos and rewards; `history` maps older
// iterations to their centres (the ones the infos name are copied).
py::dict update_with_history(ESAgent& self, const std::vector<SamplingInfo>& infos, const std::vector<double>& r,
                             const std::optional<py::dict>& history) {
  // Copy the parameters of the older iterations the samples need.
  std::map<std::int64_t, std::vector<float>> older;
  const std::int64_t current = self.model_iter_id();
  if (history) {
    std::set<std::int64_t> named;
    for (const SamplingInfo& info : infos) {
      if (info.model_iter_id < current) named.insert(info.model_iter_id);
    }
    for (const std::int64_t t : named) {
      const py::int_ key(t);
      if (!history->contains(key)) continue;  // the solver names the missing one
      const FloatIn value = FloatIn::ensure((*history)[key]);
      if (!value) {
        throw std::invalid_argument("history[" + std::to_string(t) + "] must be a 1-D float array");
      }
      const std::string what = "history[" + std::to_string(t) + "]";
      older.emplace(t, to_vector<float>(value, what.c_str()));
    }
  }
  UpdateStats stats;
  {
    py::gil_scoped_release release;
    stats = self.update(infos, r, [&older](std::int64_t t) -> const std::vector<float>* {
      const auto it = older.find(t);
      return it == older.end() ? nullptr : &it->second;
    });
  }
  py::dict out;
  out["num_samples"] = stats.num_samples;
  out["num_corrected"] = stats.num_corrected;
  out["model_iter_id"] = stats.model_iter_id;
  return out;
}

}  // namespace

void bind_agent(py::module_& m) {
  py::class_<SamplingInfo>(m, "SamplingInfo",
                           "The noise a sampling agent used: its key, the model iteration it "
                           "perturbed and whether it is the mirrored (-eps) member of a pair.")
      .def(py::init([](std::vector<std::int64_t> key, std::int64_t model_iter_id, bool mirrored) {
             return SamplingInfo{SampleKey(key), model_iter_id, mirrored};
           }),
           py::arg("key") = std::vector<std::int64_t>{}, py::arg("model_iter_id") = 0,
           py::arg("mirrored") = false)
      .def_property(
          "key", [](const SamplingInfo& s) { return s.key.to_vector(); },
          [](SamplingInfo& s, const std::vector<std::int64_t>& key) { s.key = key; },
          "The noise keys (read as a copy: assign a new list to change them).")
      .def_readwrite("model_iter_id", &SamplingInfo::model_iter_id)
      .def_readwrite("mirrored", &SamplingInfo::mirrored)
      .def(
          "__eq__",
          [](const SamplingInfo& a, const SamplingInfo& b) {
            return a.key == b.key && a.model_iter_id == b.model_iter_id &&
                   a.mirrored == b.mirrored;
          },
          py::is_operator())
      .def("__repr__", &repr);

  py::class_<ESAgent>(m, "ESAgent",
                      "The agent that owns a solver (Gaussian, CMA-ES, GA, ...); clone() makes "
                      "the sampling agents.")
      .def(py::init([](const FloatIn& params, const py::dict& options, int num_threads,
                       std::int64_t params_pool_bytes) {
             const OptionSet o = to_option_set(options);
             std::vector<float> theta = to_vector<float>(params, "params");
             const std::size_t pool = to_size(params_pool_bytes, "params_pool_bytes");
             py::gil_scoped_release release;  // a Gaussian noise table takes a while
             return std::make_unique<ESAgent>(make_solver(o, std::move(theta), num_threads),
                                              num_threads, pool);
           }),
           py::arg("params"), py::arg("options"), py::kw_only(), py::arg("num_threads") = 1,
           py::arg("params_pool_bytes") = static_cast<std::int64_t>(kDefaultParamsPoolBytes),
           "The original agent over the solver `options` describe (SolverConfig flattened to "
           "dotted names, see evokit.solvers), starting from a copy of `params`. Clones "
           "materialise their parameters into a shared pool of at most "
           "max(1, params_pool_bytes // (4 * num_params)) buffers.")
      .def(py::init([](const FloatIn& params, std::uint64_t seed, float sigma, bool cached,
                       std::int64_t cache_size, const std::string& optimizer, float learning_rate,
                       float momentum, float beta1, float beta2, float epsilon, bool antithetic,
                       const std::string& fitness_shaping, float weight_decay, int num_threads,
                       std::int64_t params_pool_bytes) {
             GaussianSolverOptions options;
             options.sampling.seed = seed;
             options.sampling.sigma = sigma;
             options.sampling.cached = cached;
             options.sampling.cache_size = to_size(cache_size, "gaussian_sampling.cache_size");
             options.sampling.num_threads = num_threads;
             options.optimizer.type = parse_optimizer(optimizer);
             options.optimizer.learning_rate = learning_rate;
             options.optimizer.momentum = momentum;
             options.optimizer.beta1 = beta1;
             options.optimizer.beta2 = beta2;
             options.optimizer.epsilon = epsilon;
             options.antithetic = antithetic;
             options.fitness_shaping = parse_fitness_shaping(fitness_shaping);
             options.weight_decay = weight_decay;
             options.num_threads = num_threads;
             options.params_pool_bytes = to_size(params_pool_bytes, "params_pool_bytes");
             std::vector<float> theta = to_vector<float>(params, "params");
             py::gil_scoped_release release;  // building the table takes a while
             return std::make_unique<ESAgent>(options, std::move(theta));
           }),
           py::arg("params"), py::kw_only(), py::arg("seed"), py::arg("sigma"), py::arg("cached"),
           py::arg("cache_size"), py::arg("optimizer"), py::arg("learning_rate"),
           py::arg("momentum") = 0.9, py::arg("beta1") = 0.9, py::arg("beta2") = 0.999,
           py::arg("epsilon") = 1e-8, py::arg("antithetic") = true,
           py::arg("fitness_shaping") = "centered_rank", py::arg("weight_decay") = 0.0,
           py::arg("num_threads") = 1,
           py::arg("params_pool_bytes") = static_cast<std::int64_t>(kDefaultParamsPoolBytes),
           "A Gaussian agent from keyword options (optimizer is 'SGD', 'MOMENTUM' or 'ADAM').")
      .def("clone", &ESAgent::clone, "A sampling agent sharing this agent's solver.")
      .def_property_readonly("is_clone", &ESAgent::is_clone)
      .def_property_readonly("clone_id", &ESAgent::clone_id, "-1 for the original.")
      .def("add_noise", &ESAgent::add_noise, py::call_guard<py::gil_scoped_release>(),
           "Clones only: the solver draws the next member; returns its SamplingInfo.")
      .def(
          "set_noise",
          [](ESAgent& self, SamplingInfo info) {  // a copy: Python cannot change it meanwhile
            py::gil_scoped_release release;
            self.set_noise(info);
          },
          py::arg("info"), "Clones only: take the member `info` names.")
      .def_property_readonly("has_noise", &ESAgent::has_noise,
                             "Whether this clone holds noise drawn at the current iteration.")
      .def_property_readonly(
          "params",
          [](py::object self) {
            const ESAgent& agent = self.cast<const ESAgent&>();
            const std::vector<float>* params;
            {
              py::gil_scoped_release release;  // may materialise a clone's parameters
              params = &agent.params();
            }
            return view_of(*params, self);
          },
          "Read-only view (no copy) of the parameters to predict with: a clone's member while "
          "it has current noise, else the centre. A clone's view is valid until the pool gives "
          "its buffer to another clone (only when more clones than param_buffer_capacity ask "
          "for their parameters).")
      .def_property_readonly("num_param_buffers", &ESAgent::num_param_buffers,
                             "How many buffers the clones' parameter pool holds now.")
      .def_property_readonly("param_buffer_capacity", &ESAgent::param_buffer_capacity,
                             "The most buffers the clones' parameter pool will hold.")
      .def_property_readonly(
          "center",
          [](py::object self) { return view_of(self.cast<const ESAgent&>().center(), self); },
          "Read-only view (no copy) of the centre parameters; it sees every update.")
      .def_property_readonly("num_params", &ESAgent::num_params)
      .def_property_readonly("model_iter_id", &ESAgent::model_iter_id,
                             "The number of updates so far.")
      .def(
          "update",
          [](ESAgent& self, const std::vector<SamplingInfo>& infos, const DoubleIn& rewards,
             const std::optional<py::dict>& history) {
            return update_with_history(self, infos, to_vector<double>(rewards, "rewards"), history);
          },
          py::arg("infos"), py::arg("rewards"), py::arg("history") = py::none(),
          "One update of the solver (original only). `history` maps an older model iteration to "
          "its centre parameters, for samples drawn before the last update (Gaussian sampling).")
      .def(
          "update_selected",
          [](ESAgent& self, const formats::SelectedRecords& samples, const std::optional<py::dict>& history) {
            return update_with_history(self, samples.infos, samples.rewards, history);
          },
          py::arg("samples"), py::arg("history") = py::none(),
          "update() of the samples select_update_records took, read where they are (no copy).")
      .def(
          "shortfall",
          [](const ESAgent& self, const std::vector<SamplingInfo>& infos,
             const DoubleIn& rewards) -> std::optional<std::string> {
            std::string s = self.shortfall(infos, to_vector<double>(rewards, "rewards"));
            if (s.empty()) return std::nullopt;
            return s;
          },
          py::arg("infos"), py::arg("rewards"),
          "Why these samples are not yet enough for an update (None when they are).")
      .def(
          "shortfall_selected",
          [](const ESAgent& self, const formats::SelectedRecords& samples) -> std::optional<std::string> {
            std::string s;
            {
              py::gil_scoped_release release;
              s = self.shortfall(samples.infos, samples.rewards);
            }
            if (s.empty()) return std::nullopt;
            return s;
          },
          py::arg("samples"), "shortfall() of the samples select_update_records took.")
      .def("draw_members", &ESAgent::draw_members, py::arg("count"), py::arg("first") = 0,
           py::call_guard<py::gil_scoped_release>(),
           "The next members for clones first .. first+count-1, as their add_noise() would draw "
           "them (original only).")
      .def(
          "draw_generation",
          [](ESAgent& self, std::size_t count, int num_threads) {
            const std::size_t p = self.solver().num_params();
            py::array_t<float> rows({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(p)});
            float* out = rows.mutable_data();
            std::vector<SamplingInfo> infos;
            {
              py::gil_scoped_release release;
              infos = self.draw_members(count);
              std::vector<const SamplingInfo*> members;
              for (const SamplingInfo& info : infos) members.push_back(&info);
              self.solver().population(members, num_threads).copy_rows(out);
            }
            return py::make_tuple(infos, rows);
          },
          py::arg("count"), py::arg("num_threads") = 1,
          "draw_members(count) and their parameters, (infos, rows [count, num_params] float32), "
          "in one call: a generation materialised once (the solver's population).")
      .def_property("sampling_stream", &ESAgent::sampling_stream, &ESAgent::set_sampling_stream,
                    "Salt for the keys of clones made afterwards.")
      .def_property_readonly(
          "solver", [](ESAgent& self) -> Solver& { return self.solver(); },
          py::return_value_policy::reference_internal,
          "The solver (shared with the clones; kept alive by the agent).");
}

}  // namespace evokit::bindings
