#include <evokit/ga.h>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

const char* phase_name(GeneticAlgorithm::Phase phase) {
  return phase == GeneticAlgorithm::Phase::kFitness ? "fitness" : "elite_scores";
}

}  // namespace

void bind_ga(py::module_& m) {
  using Options = GeneticAlgorithmOptions;
  py::class_<GeneticAlgorithm>(
      m, "GeneticAlgorithm",
      "The simple GA of Such et al. 2017 (truncation selection, elitism, elite "
      "re-evaluation); individuals are SamplingInfo whose key is the list of seeds. "
      "Larger fitness is better.")
      .def(py::init([](const FloatIn& x0, std::int64_t population_size,
                       std::int64_t truncation_size, std::int64_t num_elites,
                       float mutation_power, float init_sigma, std::int64_t elite_candidates,
                       std::int64_t elite_evaluations, std::uint64_t seed, int num_threads) {
             if (x0.ndim() != 1) {
               const std::string shape = py::str(x0.attr("shape"));
               throw std::invalid_argument("x0 must be a 1-D array, got shape " + shape);
             }
             const Options o = ga_options(population_size, truncation_size, num_elites,
                                   mutation_power, init_sigma, elite_candidates,
                                   elite_evaluations, seed, num_threads);
             std::vector<float> theta(x0.data(), x0.data() + x0.shape(0));
             py::gil_scoped_release release;
             return std::make_unique<GeneticAlgorithm>(o, std::move(theta));
           }),
           py::arg("x0"), py::kw_only(), py::arg("population_size") = Options{}.population_size,
           py::arg("truncation_size") = Options{}.truncation_size,
           py::arg("num_elites") = Options{}.num_elites,
           py::arg("mutation_power") = Options{}.mutation_power,
           py::arg("init_sigma") = Options{}.init_sigma,
           py::arg("elite_candidates") = Options{}.elite_candidates,
           py::arg("elite_evaluations") = Options{}.elite_evaluations,
           py::arg("seed") = Options{}.seed, py::arg("num_threads") = Options{}.num_threads,
           "theta_0 = x0 + init_sigma * eps(seeds[0]); each further seed adds "
           "mutation_power * eps(seed). elite_evaluations = 0 turns re-evaluation off.")
      .def("ask", &GeneticAlgorithm::ask,
           "The individuals of the current generation (a copy), as SamplingInfo.")
      .def(
          "tell",
          [](GeneticAlgorithm& self, const DoubleIn& fitness) {
            const std::vector<double> f = to_vector<double>(fitness, "fitness");
            py::gil_scoped_release release;
            self.tell(f);
          },
          py::arg("fitness"), "One score per individual of ask(); larger is better.")
      .def("ask_elite_candidates", &GeneticAlgorithm::ask_elite_candidates,
           "The elite candidates to re-evaluate elite_evaluations times each.")
      .def(
          "tell_elite_candidates",
          [](GeneticAlgorithm& self, const DoubleIn& scores) {
            const std::vector<double> s = to_vector<double>(scores, "scores");
            py::gil_scoped_release release;
            self.tell_elite_candidates(s);
          },
          py::arg("scores"),
          "elite_evaluations scores per candidate, candidate-major (scores[i * K + k]).")
      .def(
          "rebuild",
          [](const GeneticAlgorithm& self, std::vector<std::int64_t> seeds, int num_threads) {
            py::array_t<float> out(static_cast<py::ssize_t>(self.num_params()));
            float* ptr = out.mutable_data();
            {
              py::gil_scoped_release release;
              self.rebuild(seeds, ptr, num_threads);
            }
            return out;
          },
          py::arg("seeds"), py::arg("num_threads") = 1,
          "The parameters of the individual with these seeds.")
      .def(
          "rebuild_population",
          [](const GeneticAlgorithm& self, std::vector<SamplingInfo> individuals) {
            py::array_t<float> out({static_cast<py::ssize_t>(individuals.size()),
                                    static_cast<py::ssize_t>(self.num_params())});
            float* ptr = out.mutable_data();
            {
              py::gil_scoped_release release;
              self.rebuild_population(individuals, ptr);
            }
            return out;
          },
          py::arg("individuals"),
          "Row i: the parameters of individuals[i] (threaded with num_threads).")
      .def_property_readonly("generation", &GeneticAlgorithm::generation,
                             "Generations completed.")
      .def_property_readonly(
          "phase", [](const GeneticAlgorithm& self) { return phase_name(self.phase()); },
          "'fitness' (tell() is next) or 'elite_scores' (tell_elite_candidates() is next).")
      .def_property_readonly("reevaluates", &GeneticAlgorithm::reevaluates)
      .def_property_readonly("pending_order", &GeneticAlgorithm::pending_order,
                             "Population indices by told fitness, best first, while the "
                             "elite scores are awaited; else empty.")
      .def("set_state", &GeneticAlgorithm::set_state, py::arg("generation"), py::arg("population"),
           py::arg("elites"), py::arg("elite_scores"), py::arg("order"),
           "Restore a checkpoint (generation, ask(), elites, elite_scores, pending_order).")
      .def_property_readonly("elites", &GeneticAlgorithm::elites,
                             "The elites chosen when the last generation ended, best first.")
      .def_property_readonly(
          "elite_scores",
          [](const GeneticAlgorithm& self) {
            const std::vector<double>& s = self.elite_scores();
            return py::array_t<double>(static_cast<py::ssize_t>(s.size()), s.data());
          },
          "The scores the elites were chosen by (mean re-evaluation, else fitness).")
      .def_property_readonly(
          "x0",
          [](const GeneticAlgorithm& self) {
            const std::vector<float>& x = self.x0();
            return py::array_t<float>(static_cast<py::ssize_t>(x.size()), x.data());
          },
          "A copy of the initial vector.")
      .def_property_readonly("num_params", &GeneticAlgorithm::num_params)
      .def_property_readonly("population_size",
                             [](const GeneticAlgorithm& s) { return s.options().population_size; })
      .def_property_readonly("truncation_size",
                             [](const GeneticAlgorithm& s) { return s.options().truncation_size; })
      .def_property_readonly("num_elites",
                             [](const GeneticAlgorithm& s) { return s.options().num_elites; })
      .def_property_readonly("mutation_power",
                             [](const GeneticAlgorithm& s) { return s.options().mutation_power; })
      .def_property_readonly("init_sigma",
                             [](const GeneticAlgorithm& s) { return s.options().init_sigma; })
      .def_property_readonly(
          "elite_candidates", [](const GeneticAlgorithm& s) { return s.options().elite_candidates; })
      .def_property_readonly(
          "elite_evaluations",
          [](const GeneticAlgorithm& s) { return s.options().elite_evaluations; })
      .def_property_readonly("seed", [](const GeneticAlgorithm& s) { return s.options().seed; })
      .def_property_readonly("num_threads",
                             [](const GeneticAlgorithm& s) { return s.options().num_threads; });
}

}  // namespace evokit::bindings
