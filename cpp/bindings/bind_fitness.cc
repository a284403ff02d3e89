#include <evokit/fitness.h>

#include "pybind11.h"

namespace evokit::bindings {

FitnessShaping parse_fitness_shaping(const std::string& method) {
  if (method == "centered_rank") return FitnessShaping::kCenteredRank;
  if (method == "z_score") return FitnessShaping::kZScore;
  if (method == "raw") return FitnessShaping::kRaw;
  throw std::invalid_argument("unknown fitness shaping '" + method +
                              "', expected one of 'centered_rank', 'z_score', 'raw'");
}

void bind_fitness(py::module_& m) {
  m.def(
      "average_ranks",
      [](const FloatIn& rewards) {
        require_length(rewards, rewards.size(), "rewards");
        std::vector<double> ranks;
        {
          py::gil_scoped_release release;
          ranks = average_ranks(rewards.data(), static_cast<std::size_t>(rewards.size()));
        }
        return py::array_t<double>(static_cast<py::ssize_t>(ranks.size()), ranks.data());
      },
      py::arg("rewards"), "0-based ascending ranks; ties get the mean of their ranks.");
  m.def(
      "shape_fitness",
      [](const FloatIn& rewards, const std::string& method) {
        require_length(rewards, rewards.size(), "rewards");
        const FitnessShaping kind = parse_fitness_shaping(method);
        std::vector<float> weights;
        {
          py::gil_scoped_release release;
          weights = shape_fitness(rewards.data(), static_cast<std::size_t>(rewards.size()), kind);
        }
        return py::array_t<float>(static_cast<py::ssize_t>(weights.size()), weights.data());
      },
      py::arg("rewards"), py::arg("method"),
      "Fitness weights: 'centered_rank', 'z_score' or 'raw'.");
}

}  // namespace evokit::bindings
