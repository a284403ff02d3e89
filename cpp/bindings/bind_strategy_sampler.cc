#include <evokit/strategy_sampler.h>

#include "pybind11.h"

namespace evokit::bindings {

void bind_strategy_sampler(py::module_& m) {
  py::class_<StrategySampler>(
      m, "StrategySampler",
      "CMA-ES or the GA as the sampler of a policy agent (CMA_SAMPLING / GA_SAMPLING): hands out "
      "the members of a generation, rebuilds them from their keys and tells their rewards.")
      .def_property_readonly("kind", &StrategySampler::kind)
      .def_property_readonly("num_params", &StrategySampler::num_params)
      .def_property_readonly(
          "center",
          [](py::object self) {
            const std::vector<float>& c = self.cast<const StrategySampler&>().center();
            return readonly_view(c.data(), c.size(), self);
          },
          "Read-only view (no copy) of the centre: the CMA mean or the best elite; it sees every "
          "update.")
      .def_property_readonly("model_iter_id", &StrategySampler::model_iter_id,
                             "The number of updates so far.")
      .def_property_readonly("draws", &StrategySampler::draws,
                             "Members handed out in the current generation.")
      .def("set_progress", &StrategySampler::set_progress, py::arg("model_iter_id"), py::arg("draws"))
      .def_property_readonly("member_keys", &StrategySampler::member_keys,
                             "The keys of the current generation's members, in order.")
      .def("next_member", &StrategySampler::next_member,
           "The next member's SamplingInfo (member draws mod population_size).")
      .def(
          "rebuild",
          [](const StrategySampler& self, const SamplingInfo& info, const py::object& out) {
            py::array_t<float> arr = require_out(out, static_cast<py::ssize_t>(self.num_params()), "out");
            float* ptr = arr.mutable_data();
            py::gil_scoped_release release;
            self.rebuild(info, ptr);
          },
          py::arg("info"), py::arg("out"), "Write the parameters of a member of this iteration to out.")
      .def("is_member", &StrategySampler::is_member, py::arg("info"))
      .def(
          "shortfall",
          [](const StrategySampler& self, const std::vector<SamplingInfo>& infos,
             const std::vector<double>& rewards) -> std::optional<std::string> {
            std::string s = self.shortfall(infos, rewards);
            if (s.empty()) return std::nullopt;
            return s;
          },
          py::arg("infos"), py::arg("rewards"),
          "Why these samples are not yet enough for an update (None when they are).")
      .def(
          "update",
          [](StrategySampler& self, const std::vector<SamplingInfo>& infos,
             const std::vector<double>& rewards) {
            py::gil_scoped_release release;
            return self.update(infos, rewards);
          },
          py::arg("infos"), py::arg("rewards"),
          "Tell the rewards (larger is better) of the current generation; returns model_iter_id.")
      .def("refresh", &StrategySampler::refresh,
           "Recompute the centre and the members after the strategy's state was replaced.");

  py::class_<CMASampler, StrategySampler>(m, "CMASampler")
      .def(py::init([](const FloatIn& x0, double sigma0, std::int64_t population_size, bool separable,
                       std::uint64_t seed, int num_threads) {
             return std::make_unique<CMASampler>(to_vector<float>(x0, "x0"), sigma0,
                                                 to_size(population_size, "population_size"), separable,
                                                 seed, num_threads);
           }),
           py::arg("x0"), py::arg("sigma0"), py::arg("population_size"), py::arg("separable") = false,
           py::arg("seed") = 0, py::arg("num_threads") = 1)
      .def_property_readonly(
          "cma", [](CMASampler& self) -> CMABase& { return self.cma(); },
          py::return_value_policy::reference_internal,
          "The CMA-ES it runs (state, keys); after cma.set_state call refresh().");

  py::class_<GASampler, StrategySampler>(m, "GASampler")
      .def(py::init([](const FloatIn& x0, std::int64_t population_size, std::int64_t truncation_size,
                       std::int64_t num_elites, float mutation_power, float init_sigma,
                       std::int64_t elite_candidates, std::int64_t elite_evaluations, std::uint64_t seed,
                       int num_threads) {
             const GeneticAlgorithmOptions o = ga_options(population_size, truncation_size, num_elites,
                                   mutation_power, init_sigma, elite_candidates,
                                   elite_evaluations, seed, num_threads);
             return std::make_unique<GASampler>(o, to_vector<float>(x0, "x0"));
           }),
           py::arg("x0"), py::arg("population_size"), py::arg("truncation_size"), py::arg("num_elites"),
           py::arg("mutation_power"), py::arg("init_sigma"), py::arg("elite_candidates"),
           py::arg("elite_evaluations"), py::arg("seed") = 0, py::arg("num_threads") = 1)
      .def_property_readonly(
          "ga", [](GASampler& self) -> GeneticAlgorithm& { return self.ga(); },
          py::return_value_policy::reference_internal,
          "The GeneticAlgorithm it runs; after ga.set_state call refresh(). Do not keep it across "
          "reset().")
      .def(
          "reset", [](GASampler& self, const FloatIn& x0) { self.reset(to_vector<float>(x0, "x0")); },
          py::arg("x0"), "A fresh GA of the same options around x0 (checkpoint restore).");
}

}  // namespace evokit::bindings
