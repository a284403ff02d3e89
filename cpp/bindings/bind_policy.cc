// PolicyGraph (the native forward pass) and Population (a whole ES
// population in one call). Python builds the graph node by node from an ONNX model it has
// parsed (evokit/policy/native.py); the extension itself never links ONNX.
#include <evokit/gaussian_sampler.h>
#include <evokit/policy_graph.h>
#include <evokit/population.h>

#include <map>
#include <string>
#include <vector>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

using UInt8In = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;
using DoubleIn = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::string shape_of(const py::array& a) { return py::str(a.attr("shape")); }

std::vector<std::size_t> to_sizes(const std::vector<std::int64_t>& dims, const char* what) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      throw std::invalid_argument(std::string(what) + ": dimension " + std::to_string(i) +
                                  " must be >= 0, got " + std::to_string(dims[i]));
    }
    out.push_back(static_cast<std::size_t>(dims[i]));
  }
  return out;
}

// Observations of `rows` members or batch rows: a float32 array of shape
// (rows, *feature_shape) or (rows, obs_size). Returns rows.
std::size_t obs_rows(const PolicyGraph& g, const FloatIn& obs, const char* what) {
  if (obs.ndim() < 1 || obs.shape(0) < 1) {
    throw std::invalid_argument(std::string(what) + " must have shape (n, " +
                                std::to_string(g.obs_size()) + ") with n >= 1, got " +
                                shape_of(obs));
  }
  const auto rows = static_cast<std::size_t>(obs.shape(0));
  if (static_cast<std::size_t>(obs.size()) != rows * g.obs_size()) {
    throw std::invalid_argument(std::string(what) + " has shape " + shape_of(obs) + ", expected (" +
                                std::to_string(rows) + ", " + std::to_string(g.obs_size()) +
                                "): " + std::to_string(g.obs_size()) + " values per row");
  }
  return rows;
}

// The output array (rows, *output_shape(1)[1:]): `out` if given (validated),
// else a new zero-filled one.
py::array_t<float> output_for(const PolicyGraph& g, std::size_t rows, const py::object& out) {
  // A member's output is output_shape(1); its leading batch dim of 1 (if
  // the output has one) becomes the member axis.
  const std::vector<std::size_t> shape = g.output_shape(1);
  const SymbolicShape symbolic = g.symbolic_output_shape();
  const bool batch_first = !symbolic.empty() && symbolic[0] == Dim{1, true};
  std::vector<py::ssize_t> dims{static_cast<py::ssize_t>(rows)};
  std::size_t per_row = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    per_row *= shape[i];
    if (i > 0 || !batch_first) dims.push_back(static_cast<py::ssize_t>(shape[i]));
  }
  if (out.is_none()) {
    py::array_t<float> result(dims);
    std::fill(result.mutable_data(), result.mutable_data() + result.size(), 0.0f);
    return result;
  }
  if (!py::isinstance<py::array_t<float>>(out) ||
      !(py::array(out).flags() & py::array::c_style) || !py::array(out).writeable()) {
    throw std::invalid_argument("out must be a writable C-contiguous float32 NumPy array");
  }
  auto arr = py::reinterpret_borrow<py::array_t<float>>(out);
  if (arr.ndim() < 1 || arr.shape(0) != static_cast<py::ssize_t>(rows) ||
      static_cast<std::size_t>(arr.size()) != rows * per_row) {
    throw std::invalid_argument("out has shape " + shape_of(arr) + ", expected " +
                                std::to_string(rows) + " rows of " + std::to_string(per_row) +
                                " values");
  }
  return arr;
}

// The recurrent state of `rows` observations, updated in place: None for a
// feed-forward graph, else a writable C-contiguous float32 array of
// rows * state_size() values.
float* state_buffer(const PolicyGraph& g, std::size_t rows, const py::object& state) {
  if (!g.recurrent()) {
    if (!state.is_none()) {
      throw std::invalid_argument("state was given but the graph is not recurrent");
    }
    return nullptr;
  }
  const std::size_t want = rows * g.state_size();
  if (state.is_none()) {
    throw std::invalid_argument("the graph is recurrent (state input '" + g.state_inputs()[0] +
                                "'): pass state, a float32 array of " + std::to_string(want) +
                                " values updated in place");
  }
  if (!py::isinstance<py::array_t<float>>(state) ||
      !(py::array(state).flags() & py::array::c_style) || !py::array(state).writeable()) {
    throw std::invalid_argument("state must be a writable C-contiguous float32 NumPy array");
  }
  auto arr = py::reinterpret_borrow<py::array_t<float>>(state);
  if (static_cast<std::size_t>(arr.size()) != want) {
    throw std::invalid_argument("state has shape " + shape_of(arr) + " (" +
                                std::to_string(arr.size()) + " values), expected " +
                                std::to_string(rows) + " * state_size " +
                                std::to_string(g.state_size()) + " = " + std::to_string(want));
  }
  return arr.mutable_data();
}

// The active mask: None, or `rows` booleans.
const unsigned char* active_mask(const py::object& active, std::size_t rows, UInt8In& holder) {
  if (active.is_none()) return nullptr;
  holder = UInt8In::ensure(py::array::ensure(active));
  if (!holder) throw std::invalid_argument("active must be an array of booleans");
  if (holder.ndim() != 1 || static_cast<std::size_t>(holder.shape(0)) != rows) {
    throw std::invalid_argument("active has shape " + shape_of(holder) + ", expected (" +
                                std::to_string(rows) + ",): one flag per member");
  }
  return holder.data();
}

}  // namespace

void bind_policy(py::module_& m) {
  py::class_<PolicyGraph>(m, "PolicyGraph",
                          "A native forward pass for feed-forward policies, built node by node "
                          "in topological order; parameters are windows of a flat vector given "
                          "at run time.")
      .def(py::init<>())
      .def_static("supported_ops", &PolicyGraph::supported_ops,
                  "The op types add_node accepts (ONNX names).")
      .def(
          "add_input",
          [](PolicyGraph& g, const std::string& name, const std::vector<std::int64_t>& features) {
            g.add_input(name, to_sizes(features, ("input '" + name + "'").c_str()));
          },
          py::arg("name"), py::arg("feature_shape"),
          "The observation input, shape (batch, *feature_shape).")
      .def(
          "add_param",
          [](PolicyGraph& g, const std::string& name, std::int64_t offset,
             const std::vector<std::int64_t>& shape) {
            if (offset < 0) {
              throw std::invalid_argument("parameter '" + name + "': offset must be >= 0, got " +
                                          std::to_string(offset));
            }
            g.add_param(name, static_cast<std::size_t>(offset),
                        to_sizes(shape, ("parameter '" + name + "'").c_str()));
          },
          py::arg("name"), py::arg("offset"), py::arg("shape"),
          "params[offset : offset + prod(shape)] as a tensor of `shape`.")
      .def(
          "add_constant",
          [](PolicyGraph& g, const std::string& name, const std::vector<std::int64_t>& shape,
             const FloatIn& data) {
            g.add_constant(name, to_sizes(shape, ("constant '" + name + "'").c_str()),
                           std::vector<float>(data.data(), data.data() + data.size()));
          },
          py::arg("name"), py::arg("shape"), py::arg("data"), "A fixed float tensor.")
      .def(
          "add_int_constant",
          [](PolicyGraph& g, const std::string& name, const std::vector<std::int64_t>& shape,
             const std::vector<std::int64_t>& data) {
            g.add_int_constant(name, to_sizes(shape, ("constant '" + name + "'").c_str()), data);
          },
          py::arg("name"), py::arg("shape"), py::arg("data"),
          "A fixed integer tensor (shapes, axes, indices), known when the graph is built.")
      .def(
          "add_state_input",
          [](PolicyGraph& g, const std::string& name, const std::vector<std::int64_t>& shape,
             std::int64_t batch_axis) {
            if (batch_axis < 0) {
              throw std::invalid_argument("state input '" + name + "': batch_axis must be >= 0, got " +
                                          std::to_string(batch_axis));
            }
            g.add_state_input(name, to_sizes(shape, ("state input '" + name + "'").c_str()),
                              static_cast<std::size_t>(batch_axis));
          },
          py::arg("name"), py::arg("shape"), py::arg("batch_axis"),
          "A recurrent state input; shape[batch_axis] is the batch size (its value is ignored).")
      .def("add_state_output", &PolicyGraph::add_state_output, py::arg("input"), py::arg("output"),
           "Declares `output` the next value of state input `input`.")
      .def_property_readonly("state_inputs", &PolicyGraph::state_inputs)
      .def_property_readonly("state_outputs", &PolicyGraph::state_outputs)
      .def_property_readonly("recurrent", &PolicyGraph::recurrent)
      .def_property_readonly("state_size", &PolicyGraph::state_size,
                             "Floats of recurrent state per observation.")
      .def("state_shapes", &PolicyGraph::state_shapes, py::arg("batch"))
      .def(
          "add_node",
          [](PolicyGraph& g, const std::string& op_type, const std::vector<std::string>& inputs,
             const std::vector<std::string>& outputs, const std::map<std::string, std::int64_t>& ints,
             const std::map<std::string, float>& floats, const std::string& name,
             const std::map<std::string, std::vector<std::int64_t>>& int_lists,
             const std::map<std::string, std::vector<std::string>>& strings) {
            NodeAttributes attributes;
            attributes.ints = ints;
            attributes.floats = floats;
            attributes.int_lists = int_lists;
            attributes.strings = strings;
            g.add_node(op_type, inputs, outputs, attributes, name);
          },
          py::arg("op_type"), py::arg("inputs"), py::arg("outputs"),
          py::arg("ints") = std::map<std::string, std::int64_t>{},
          py::arg("floats") = std::map<std::string, float>{}, py::arg("name") = "",
          py::arg("int_lists") = std::map<std::string, std::vector<std::int64_t>>{},
          py::arg("strings") = std::map<std::string, std::vector<std::string>>{},
          "A node; ValueError naming it for an unsupported op, a bad attribute or a shape "
          "mismatch.")
      .def("add_output", &PolicyGraph::add_output, py::arg("name"))
      .def_property_readonly("num_params", &PolicyGraph::num_params)
      .def_property_readonly("obs_size", &PolicyGraph::obs_size)
      .def_property_readonly("feature_shape", &PolicyGraph::feature_shape)
      .def_property_readonly("input_name", &PolicyGraph::input_name)
      .def_property_readonly("output_names", &PolicyGraph::output_names)
      .def_property_readonly("num_nodes", &PolicyGraph::num_nodes)
      .def("output_shape", &PolicyGraph::output_shape, py::arg("batch"))
      .def(
          "run",
          [](const PolicyGraph& g, const FloatIn& obs, const FloatIn& params,
             const py::object& state) {
            const std::size_t batch = obs_rows(g, obs, "obs");
            require_length(params, static_cast<py::ssize_t>(g.num_params()), "params");
            float* s = state_buffer(g, batch, state);
            const std::vector<std::size_t> shape = g.output_shape(batch);
            std::vector<float> out;
            {
              py::gil_scoped_release release;
              out = g.run(obs.data(), batch, params.data(), g.num_params(), s);
            }
            std::vector<py::ssize_t> dims(shape.begin(), shape.end());
            py::array_t<float> result(dims);
            std::copy(out.begin(), out.end(), result.mutable_data());
            return result;
          },
          py::arg("obs"), py::arg("params"), py::arg("state") = py::none(),
          "The first output for a batch obs (batch, *feature_shape) and one parameter vector; "
          "a recurrent graph's state (batch * state_size floats, each state tensor in turn) is "
          "replaced by the next state.")
      .def(
          "run_population",
          [](const PolicyGraph& g, const FloatIn& obs, const Population& population,
             const py::object& active, int num_threads, const py::object& out,
             const py::object& state) {
            const std::size_t rows = obs_rows(g, obs, "obs");
            float* s = state_buffer(g, rows, state);
            if (rows != population.size()) {
              throw std::invalid_argument("obs has " + std::to_string(rows) +
                                          " rows, the population has " +
                                          std::to_string(population.size()) +
                                          " members: one observation per member");
            }
            UInt8In mask;
            const unsigned char* flags = active_mask(active, rows, mask);
            py::array_t<float> result = output_for(g, rows, out);
            float* dst = result.mutable_data();
            {
              py::gil_scoped_release release;
              run_population(g, population, obs.data(), dst, flags, num_threads, s);
            }
            return result;
          },
          py::arg("obs"), py::arg("population"), py::arg("active") = py::none(),
          py::arg("num_threads") = 1, py::arg("out") = py::none(), py::arg("state") = py::none(),
          "Member i's output for obs[i] (one observation per member), threaded over members; "
          "rows of inactive members are left as they are (zeros in a new array).")
      .def(
          "run_population_params",
          [](const PolicyGraph& g, const FloatIn& obs, const FloatIn& params,
             const py::object& active, int num_threads, const py::object& out,
             const py::object& state) {
            const std::size_t rows = obs_rows(g, obs, "obs");
            float* s = state_buffer(g, rows, state);
            if (params.ndim() != 2 || static_cast<std::size_t>(params.shape(0)) != rows ||
                static_cast<std::size_t>(params.shape(1)) != g.num_params()) {
              throw std::invalid_argument("params has shape " + shape_of(params) + ", expected (" +
                                          std::to_string(rows) + ", " +
                                          std::to_string(g.num_params()) +
                                          "): one parameter vector per observation row");
            }
            UInt8In mask;
            const unsigned char* flags = active_mask(active, rows, mask);
            py::array_t<float> result = output_for(g, rows, out);
            float* dst = result.mutable_data();
            // Views into the caller's matrix: no copy of the parameters.
            std::vector<ParamView> members(rows);
            for (std::size_t i = 0; i < rows; ++i) {
              members[i] = ParamView{params.data() + i * g.num_params(), nullptr, 0.0f};
            }
            {
              py::gil_scoped_release release;
              run_population(g, obs.data(), rows, members.data(), dst, flags, num_threads, s);
            }
            return result;
          },
          py::arg("obs"), py::arg("params"), py::arg("active") = py::none(),
          py::arg("num_threads") = 1, py::arg("out") = py::none(), py::arg("state") = py::none(),
          "Row i's output for obs[i] and the parameter vector params[i].");

  py::class_<Population>(m, "Population",
                         "The members of an ES population as noise keys and signs around a "
                         "centre: the cached noise table is read in place, nothing is copied "
                         "per member.")
      .def(py::init([](const GaussianSampler& sampler, const FloatIn& centre, const Int64In& keys,
                       const FloatIn& signs, int num_threads) {
             require_length(centre, static_cast<py::ssize_t>(sampler.num_params()), "centre");
             if (keys.ndim() != 1) {
               throw std::invalid_argument("keys must be a 1-D array, got shape " + shape_of(keys));
             }
             require_length(signs, keys.shape(0), "signs");
             std::vector<float> c(centre.data(), centre.data() + centre.size());
             std::vector<std::int64_t> k(keys.data(), keys.data() + keys.size());
             std::vector<float> s(signs.data(), signs.data() + signs.size());
             py::gil_scoped_release release;  // uncached noise is generated here
             return std::make_unique<Population>(sampler, std::move(c), std::move(k),
                                                 std::move(s), num_threads);
           }),
           py::arg("sampler"), py::arg("centre"), py::arg("keys"), py::arg("signs"),
           py::arg("num_threads") = 1,
           "Member i is centre + signs[i] * sigma * eps(keys[i]); sign 0 is the centre itself.")
      .def_static(
          "from_params",
          [](const FloatIn& params) {
            if (params.ndim() != 2 || params.shape(0) < 1 || params.shape(1) < 1) {
              throw std::invalid_argument(
                  "params must be a 2-D array (num_members, num_params) with both > 0, got shape " +
                  shape_of(params));
            }
            std::vector<float> p(params.data(), params.data() + params.size());
            return std::make_unique<Population>(std::move(p),
                                                static_cast<std::size_t>(params.shape(0)),
                                                static_cast<std::size_t>(params.shape(1)));
          },
          py::arg("params"),
          "Explicit members: member i is row i of params (num_members, num_params), copied once.")
      .def("__len__", &Population::size)
      .def_property_readonly("num_params", &Population::num_params)
      .def(
          "params",
          [](const Population& population, std::size_t i) {
            py::array_t<float> out(static_cast<py::ssize_t>(population.num_params()));
            population.copy_member(i, out.mutable_data());
            return out;
          },
          py::arg("i"),
          "Member i's parameters as the forward pass reads them (base + scale * noise, rounded to float).")
      .def(
          "rows",
          [](const Population& population) {
            const std::size_t n = population.size(), p = population.num_params();
            py::array_t<float> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(p)});
            float* o = out.mutable_data();
            py::gil_scoped_release release;
            population.copy_rows(o);
            return out;
          },
          "Every member's parameters, one row each (num_members, num_params), in one call: "
          "row i equals params(i).");
}

}  // namespace evokit::bindings
