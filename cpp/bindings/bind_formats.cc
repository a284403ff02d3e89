// The rules of EvoKit's files (cpp/include/evokit/formats): param_pattern
// and the config's text walk, literals, layout and checks. Python's
// protobuf turns text into messages and messages into dicts of dotted
// names; everything these decide is decided in the core, as for the C++ io
// library.
#include <evokit/formats/config.h>
#include <evokit/formats/fingerprint.h>
#include <evokit/formats/log_file.h>
#include <evokit/formats/onnx_model.h>
#include <evokit/formats/param_pattern.h>
#include <evokit/formats/solver_file.h>
#include <evokit/formats/state_file.h>
#include <evokit/formats/warehouse.h>

#include <functional>
#include <optional>
#include <set>

#include "pybind11.h"

namespace evokit::bindings {

namespace {

// A ConfigProblem as (field, message, line, column), None where unknown.
py::object problem_tuple(const std::optional<formats::ConfigProblem>& p) {
  if (!p) return py::none();
  const auto maybe = [](int v) -> py::object { return v > 0 ? py::object(py::int_(v)) : py::object(py::none()); };
  return py::make_tuple(p->field.empty() ? py::object(py::none()) : py::object(py::str(p->field)), p->message,
                        maybe(p->line), maybe(p->column));
}

// Options, with a list of ints as a repeated field's value.
OptionSet to_fields(const py::dict& values) {
  py::dict scalars;
  OptionSet out;
  for (const auto& item : values) {
    if (py::isinstance<py::list>(item.second) || py::isinstance<py::tuple>(item.second)) {
      // a repeated integer field; a repeated string field is only ever asked whether it is set
      const py::sequence items = item.second.cast<py::sequence>();
      bool integers = true;
      for (const auto& v : items) integers = integers && py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v);
      if (integers) out.set(py::str(item.first), items.cast<std::vector<std::int64_t>>());
    } else {
      scalars[item.first] = item.second;
    }
  }
  const OptionSet converted = to_option_set(scalars);
  for (const auto& [name, value] : converted.values()) out.set(name, value);
  return out;
}

py::dict to_dict(const OptionSet& options) {
  py::dict out;
  for (const auto& [name, value] : options.values()) {
    std::visit([&](const auto& v) { out[py::str(name)] = py::cast(v); }, value);
  }
  return out;
}

}  // namespace

void bind_formats(py::module_& m) {
  py::class_<formats::ParamPattern>(m, "ParamPattern",
                                    "solver.param_pattern: a regular expression in EvoKit's one dialect "
                                    "(docs/config.md), matched against whole initializer names.")
      .def(py::init<std::string>(), py::arg("pattern"))
      .def("matches", &formats::ParamPattern::matches, py::arg("name"), "Whether the whole of `name` matches.")
      .def_property_readonly("pattern", &formats::ParamPattern::pattern);

  m.def("config_parse_problem", [](const std::string& text, int line, int column, const std::string& message) {
    return problem_tuple(formats::parse_problem(text, formats::offset_of(text, line, column), message));
  }, py::arg("text"), py::arg("line"), py::arg("column"), py::arg("message"),
        "The problem for a parse error at 1-based (line, column): (field, 'field: message', line, column).");
  m.def("config_check_literals", [](const std::string& text, const std::set<std::string>& enums,
                                     const std::set<std::string>& bools) {
    return problem_tuple(formats::check_literals(text, formats::LiteralSchema{enums, bools}));
  }, py::arg("text"), py::arg("enums") = std::set<std::string>(), py::arg("bools") = std::set<std::string>(),
        "The first literal the two protobuf runtimes read differently, as a problem, or None (enums, bools: "
        "the dotted paths of the schema's enum and bool fields).");
  m.def("config_detect_layout", [](const std::string& text) {
    std::optional<formats::ConfigProblem> problem;
    const formats::Layout layout = formats::detect_layout(text, &problem);
    return py::make_tuple(layout == formats::Layout::kParl ? formats::kParlLayout : formats::kEvoKitLayout,
                          problem_tuple(problem));
  }, py::arg("text"), "(the layout's name, None or the problem of a config that mixes the two).");
  m.def("config_parl_to_evokit", [](const py::dict& parl, const std::set<std::string>& present, const std::string& text) {
    std::optional<formats::ConfigProblem> problem;
    const OptionSet out = formats::parl_to_evokit(to_fields(parl), present, text, &problem);
    return py::make_tuple(to_dict(out), problem_tuple(problem));
  }, py::arg("parl"), py::arg("present"), py::arg("text"),
        "(the EvoKitConfig fields a PARL-layout config means, None or the problem that refuses it).");
  m.def("config_parl_field", &formats::parl_field, py::arg("evokit_field"));
  m.def("config_parl_note", &formats::parl_note, py::arg("source"));
  m.def("config_unknown_enum_value", &formats::unknown_enum_value, py::arg("value"), py::arg("values"));
  m.def("validate_config", [](const py::dict& config, std::optional<std::int64_t> num_params, const std::string& text) {
    std::optional<std::size_t> n;
    if (num_params) n = to_size(*num_params, "num_params");
    return problem_tuple(formats::validate_config(to_fields(config), n, text));
  }, py::arg("config"), py::arg("num_params") = py::none(), py::arg("text") = std::string(),
        "The first bad value of an EvoKitConfig (its fields by dotted name) as a problem, or None.");
  m.def("config_problem", [](const std::string& field, const std::string& message, const std::string& text) {
    return problem_tuple(formats::config_problem(field, message, text));
  }, py::arg("field"), py::arg("message"), py::arg("text") = std::string());
  m.def("state_seal", [](const py::bytes& body) {
    const std::string in = body;
    std::string out;
    {
      py::gil_scoped_release release;
      out = formats::seal_state(in);
    }
    return py::bytes(out);
  }, py::arg("body"), "A serialized state message with its sha256 trailer appended.");
  m.def("state_unseal", [](const std::string& path, const py::bytes& data) {
    const std::string in = data;
    std::string out;
    {
      py::gil_scoped_release release;
      out = formats::unseal_state(path, in);
    }
    return py::bytes(out);
  }, py::arg("path"), py::arg("data"),
        "The body of state file `data` read from `path`; ValueError (one line starting with the path) "
        "when its sha256 trailer is missing or does not match.");
  m.def("state_has_trailer", [](const py::bytes& data) { return formats::has_state_trailer(std::string(data)); },
        py::arg("data"), "Whether `data` ends with something shaped as a trailer, matching or not.");
  m.attr("STATE_TRAILER_SIZE") = formats::kStateTrailerSize;
  m.def("solver_state_decode", [](int state_version, const std::string& family, std::int64_t steps,
                                   std::int64_t noise_version, bool has_cma, bool has_ga,
                                   const py::list& vectors, const std::string& path) {
    formats::StoredSolverState stored;
    stored.state_version = state_version;
    stored.family = family;
    stored.steps = steps;
    stored.noise_version = noise_version;
    stored.has_cma = has_cma;
    stored.has_ga = has_ga;
    for (const auto& item : vectors) {
      const py::tuple t = item.cast<py::tuple>();
      stored.vectors.push_back({t[0].cast<std::string>(), t[1].cast<std::optional<int>>(),
                                t[2].cast<std::string>()});
    }
    py::gil_scoped_release release;
    return formats::decode_solver_state(stored, path);
  }, py::arg("state_version"), py::arg("family"), py::arg("steps"), py::arg("noise_version"), py::arg("has_cma"),
        py::arg("has_ga"), py::arg("vectors"), py::arg("path"),
        "The core SolverState a solver.pb's fields hold (vectors: (name, element type or None, bytes)); "
        "ValueError starting with `path` for a layout EvoKit does not read.");
  m.def("solver_state_encode", [](const SolverState& state) {
    const formats::StoredSolverState stored = formats::encode_solver_state(state);
    py::list vectors;
    for (const formats::StoredVector& v : stored.vectors) vectors.append(py::make_tuple(v.name, *v.type, py::bytes(v.data)));
    return vectors;
  }, py::arg("state"), "The typed vectors of `state` as solver.pb stores them: (name, element type, bytes), in order.");
  m.attr("SOLVER_STATE_VERSION") = formats::kSolverStateVersion;
  m.def("solver_state_check", [](bool has_num_params, std::int64_t num_params, std::int64_t fingerprint_version,
                                  const std::string& model_fingerprint, const std::string& params_fingerprint,
                                  const std::string& optimizer, const std::string& model_source,
                                  std::int64_t model_num_params, const std::vector<int>& versions,
                                  const py::function& fingerprint, const FloatIn& params,
                                  const std::string& wanted_optimizer, bool exact_model, const std::string& path) {
    formats::StoredStateHeader header{has_num_params, num_params, fingerprint_version, model_fingerprint,
                                      params_fingerprint, optimizer};
    const std::vector<float> values = to_vector(params, "params");
    formats::ModelForState model;
    model.source = model_source;
    model.num_params = model_num_params;
    model.versions = versions;
    model.fingerprint = [&fingerprint](int version) { return fingerprint(version).cast<std::string>(); };
    model.params = values.data();
    model.size = values.size();
    formats::check_state_matches(header, model, wanted_optimizer, exact_model, path);
  }, py::arg("has_num_params"), py::arg("num_params"), py::arg("fingerprint_version"), py::arg("model_fingerprint"),
        py::arg("params_fingerprint"), py::arg("optimizer"), py::arg("model_source"), py::arg("model_num_params"),
        py::arg("versions"), py::arg("fingerprint"), py::arg("params"), py::arg("wanted_optimizer"),
        py::arg("exact_model"), py::arg("path"),
        "load_solver's checks of a solver.pb against the loaded model and the config; ValueError naming "
        "the file.");
  m.def("check_params_fingerprint", [](const std::string& recorded, const std::string& model_fingerprint,
                                        const FloatIn& params, const std::string& source, const std::string& path) {
    const std::vector<float> values = to_vector(params, "params");
    formats::check_params_fingerprint(recorded, model_fingerprint, values.data(), values.size(), source, path);
  }, py::arg("recorded"), py::arg("model_fingerprint"), py::arg("params"), py::arg("source"), py::arg("path"));

  m.def("model_fingerprint", [](const py::bytes& model, const std::vector<std::string>& param_names,
                                 const std::string& source) {
    const std::string bytes = model;
    py::gil_scoped_release release;
    return formats::model_fingerprint(bytes, param_names, source);
  }, py::arg("model"), py::arg("param_names"), py::arg("source") = "<memory>",
        "sha256 (hex) of the fingerprint encoding (version 2) of a serialized ONNX model with these "
        "initializers as parameters; ValueError naming the source and node for what it does not cover.");
  m.def("params_fingerprint", [](const std::string& model_fingerprint, const FloatIn& params) {
    const std::vector<float> values = to_vector(params, "params");
    py::gil_scoped_release release;
    return formats::params_fingerprint(model_fingerprint, values.data(), values.size());
  }, py::arg("model_fingerprint"), py::arg("params"),
        "sha256 (hex) of the model fingerprint's hex followed by the parameters as little-endian float32.");
  m.attr("FINGERPRINT_VERSION") = formats::kFingerprintVersion;

  // ONNX policy models (formats/onnx_model.h): the layout and the native graph.
  py::register_exception<formats::UnsupportedModel>(m, "UnsupportedModel", PyExc_ValueError);
  const auto shapes = [](const std::vector<std::vector<std::size_t>>& v) {
    py::list out;
    for (const auto& s : v) out.append(py::tuple(py::cast(s)));
    return out;
  };
  py::class_<formats::OnnxLayout>(m, "OnnxLayout",
                                  "What an ONNX policy model means: its parameters, observation input, output and "
                                  "recurrent state (read_onnx_layout).")
      .def_readonly("source", &formats::OnnxLayout::source)
      .def_readonly("param_pattern", &formats::OnnxLayout::param_pattern)
      .def_readonly("ir_version", &formats::OnnxLayout::ir_version)
      .def_readonly("opset", &formats::OnnxLayout::opset)
      .def_readonly("param_names", &formats::OnnxLayout::param_names)
      .def_property_readonly("param_shapes", [shapes](const formats::OnnxLayout& l) { return shapes(l.param_shapes); })
      .def_readonly("param_offsets", &formats::OnnxLayout::param_offsets)
      .def_property_readonly("parameters", [](const formats::OnnxLayout& l) {
        py::array_t<float> out(static_cast<py::ssize_t>(l.parameters.size()));
        std::copy(l.parameters.begin(), l.parameters.end(), out.mutable_data());
        return out;
      }, "The model's own parameter values, flat (a new float32 array).")
      .def_property_readonly("input_name", [](const formats::OnnxLayout& l) { return l.input.name; })
      .def_property_readonly("input_elem_type", [](const formats::OnnxLayout& l) { return l.input.elem_type; })
      .def_property_readonly("input_shape", [](const formats::OnnxLayout& l) -> py::object {
        if (!l.input.has_shape) return py::none();
        py::list dims;
        for (const std::int64_t d : l.input.dims) dims.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
        return py::tuple(dims);
      }, "The observation input's declared shape, None for a symbolic dimension; None without a shape.")
      .def_readonly("output_name", &formats::OnnxLayout::output_name)
      .def_readonly("state_names", &formats::OnnxLayout::state_names)
      .def_readonly("state_output_names", &formats::OnnxLayout::state_output_names)
      .def_property_readonly("state_shapes", [shapes](const formats::OnnxLayout& l) { return shapes(l.state_shapes); },
                             "Each state's shape, its batch dimension as 1.")
      .def_readonly("state_axes", &formats::OnnxLayout::state_axes);
  m.def("read_onnx_layout", [](const py::bytes& model, const std::string& param_pattern, const std::string& source,
                               const py::object& check) {
    const std::string_view bytes = model;
    std::function<void(std::int64_t)> call;
    if (!check.is_none()) call = [&check](std::int64_t ir_version) { check(ir_version); };
    return formats::read_onnx_layout(bytes, param_pattern, source, call);  // `check` needs the GIL
  }, py::arg("model"), py::arg("param_pattern"), py::arg("source"), py::arg("check") = py::none(),
        "The layout of a serialized ONNX model; ValueError naming the model for one that cannot be a policy. "
        "`check(ir_version)` runs first, once the model has nodes and outputs (Python's ONNX checker).");
  m.def("onnx_policy_graph", [](const py::bytes& model, const formats::OnnxLayout& layout) {
    const std::string_view bytes = model;
    py::gil_scoped_release release;
    return formats::onnx_policy_graph(bytes, layout);
  }, py::arg("model"), py::arg("layout"),
        "The native forward pass of a serialized ONNX model (a PolicyGraph); UnsupportedModel naming the node "
        "and op for a graph the native backend cannot run, ValueError for a broken model.");
  m.def("onnx_data_type_name", &formats::onnx_data_type_name, py::arg("data_type"));

  // A sampling log's file: each refusal is ValueError, one line naming the log.
  m.def("log_open_for_append", &formats::open_log_for_append, py::arg("path"),
        "A descriptor of the log opened for appending (created with its parent directories).");
  m.def("log_append", [](int fd, const std::string& path, const py::bytes& batch, std::size_t records, bool fsync) {
    const std::string data = batch;
    py::gil_scoped_release release;
    formats::append_to_log(fd, path, data, records, fsync);
  }, py::arg("fd"), py::arg("path"), py::arg("batch"), py::arg("records"), py::arg("fsync") = true,
        "Append the frames of `records` records whole or not at all, under an exclusive flock.");
  m.def("log_read", [](const std::string& path) {
    std::string bytes;
    {
      py::gil_scoped_release release;
      bytes = formats::read_log_file(path);
    }
    return py::bytes(bytes);
  }, py::arg("path"), "The bytes of the log, read under a shared flock.");

  // A warehouse's layout: each refusal is ValueError, one line starting with the path.
  m.def("warehouse_iteration_of", &formats::iteration_of, py::arg("name"),
        "k for a directory name model_iter_id-<k>, else None.");
  m.def("warehouse_iteration_dir", &formats::iteration_dir, py::arg("path"), py::arg("k"));
  m.def("warehouse_check_dir", &formats::check_warehouse_dir, py::arg("path"),
        "Refuses a path that is not a warehouse; returns its warehouse.pb's path.");
  m.def("warehouse_scan", [](const std::string& path) {
    formats::IterationScan scan = formats::scan_iterations(path);
    return py::make_tuple(scan.iterations, scan.problems);
  }, py::arg("path"), "(complete iterations ascending, a line for each half-written one).");
  m.def("warehouse_require_iterations", &formats::require_iterations, py::arg("path"));
  m.def("warehouse_require_iteration", &formats::require_iteration, py::arg("path"), py::arg("k"),
        "Iteration k's directory; refuses a k that is not a complete iteration.");
  m.def("warehouse_check_iteration", &formats::check_iteration_matches, py::arg("dir"), py::arg("state_iteration"),
        py::arg("k"));
  m.def("warehouse_check_new_path", &formats::check_new_warehouse_path, py::arg("path"));
  m.def("check_noise_version", &formats::check_noise_version, py::arg("path"), py::arg("what"), py::arg("version"),
        "Refuses a file whose keys refer to another noise definition than this build's.");
  m.attr("WAREHOUSE_INFO_FILE") = formats::kWarehouseInfoFile;
  m.attr("WAREHOUSE_MODEL_FILE") = formats::kWarehouseModelFile;
  m.attr("WAREHOUSE_SOLVER_FILE") = formats::kWarehouseSolverFile;
  m.attr("WAREHOUSE_CONSUMED_FILE") = formats::kWarehouseConsumedFile;
  m.attr("WAREHOUSE_ITERATION_PREFIX") = formats::kIterationPrefix;
  m.attr("CONFIG_BACKENDS") = py::tuple(py::cast(formats::backends()));
  m.attr("CONFIG_ACTIVATIONS") = py::tuple(py::cast(formats::activations()));
  m.attr("CONFIG_MAX_EPISODES") = formats::kMaxEpisodes;
  m.attr("CONFIG_MAX_WORKERS") = formats::kMaxWorkers;
  m.attr("CONFIG_PARL_FIELDS") = py::cast(formats::parl_fields());
  m.attr("CONFIG_PARL_REFUSED") = py::cast(formats::parl_refused());
}

}  // namespace evokit::bindings
