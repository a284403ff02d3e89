#include <evokit/optimizer.h>

#include <cstring>

#include "pybind11.h"

namespace evokit::bindings {

void bind_optimizer(py::module_& m) {
  py::class_<Optimizer>(m, "Optimizer")
      .def_property_readonly("name", &Optimizer::name)
      .def_property_readonly("num_params", &Optimizer::num_params)
      .def_property("learning_rate", &Optimizer::learning_rate, &Optimizer::set_learning_rate,
                    "The learning rate of the next steps (> 0, finite; settable, e.g. to decay it).")
      .def_property_readonly("max_gradient", &Optimizer::max_gradient,
                             "The largest |grad[i]| step() takes: beyond it the step would make "
                             "the state or the parameters non-finite, and is refused.")
      .def_property("steps", &Optimizer::steps, &Optimizer::set_steps,
                    "Number of steps taken (Adam's bias correction counts these).")
      .def_property_readonly("state_names", &Optimizer::state_names)
      .def(
          "step",
          [](Optimizer& self, const py::object& params, const FloatIn& grad, int num_threads) {
            const auto n = static_cast<py::ssize_t>(self.num_params());
            py::array_t<float> p = require_out(params, n, "params");
            require_length(grad, n, "grad");
            float* pp = p.mutable_data();
            const float* gp = grad.data();
            py::gil_scoped_release release;
            self.step(pp, gp, static_cast<std::size_t>(n), num_threads);
          },
          py::arg("params"), py::arg("grad"), py::arg("num_threads") = 1,
          "One minimisation step on `params` (float32, updated in place).")
      .def(
          "get_state",
          [](Optimizer& self, const std::string& name) {
            const std::vector<float>& s = self.state(name);
            return py::array_t<float>(static_cast<py::ssize_t>(s.size()), s.data());
          },
          py::arg("name"), "A copy of the named state vector.")
      .def(
          "set_state",
          [](Optimizer& self, const std::string& name, const FloatIn& value) {
            std::vector<float>& s = self.state(name);
            require_length(value, static_cast<py::ssize_t>(s.size()), name.c_str());
            std::memcpy(s.data(), value.data(), s.size() * sizeof(float));
          },
          py::arg("name"), py::arg("value"));

  py::class_<SGD, Optimizer>(m, "SGD").def(py::init<float, std::size_t>(), py::arg("lr"),
                                           py::arg("num_params"));
  py::class_<Momentum, Optimizer>(m, "Momentum")
      .def(py::init<float, float, std::size_t>(), py::arg("lr"), py::arg("momentum"),
           py::arg("num_params"))
      .def_property_readonly("momentum", &Momentum::momentum);
  py::class_<Adam, Optimizer>(m, "Adam")
      .def(py::init<float, float, float, float, std::size_t>(), py::arg("lr"), py::arg("beta1"),
           py::arg("beta2"), py::arg("epsilon"), py::arg("num_params"))
      .def_property_readonly("beta1", &Adam::beta1)
      .def_property_readonly("beta2", &Adam::beta2)
      .def_property_readonly("epsilon", &Adam::epsilon);
}

}  // namespace evokit::bindings
