// The C++ side of the cross-language conformance test (ctest `conformance`).
//
//   evokit_io_conformance FIXTURE_DIR
//
// Reads FIXTURE_DIR/manifest.tsv (written by make_fixtures.py, next to this
// file), runs every fixture through the io component from FIXTURE_DIR (so
// that messages name the same relative paths as Python's), and prints one
// line of canonical JSON per fixture: sorted keys, no spaces, UTF-8 (as
// Python's json.dumps(sort_keys=True, separators=(",", ":"),
// ensure_ascii=False)). conformance.py prints the same lines through the
// Python package and compares them. Float bits are printed as hex
// ({"f32": "3f800000"}, {"f64": "..."}), never as decimals.
//
//   config  parse (io::load_config), the option walk (io::solver_options),
//           the core's checks without and with the model's size
//           (io::validate_config)
//   model   io::OnnxModel::load, the model and params fingerprints
//           (io::model_fingerprint, io::params_fingerprint), the native
//           graph's outputs for fixed observations
//   log     io::read_log: records (offset, id = sha256(payload)[:16], the
//           SampleRecord's set fields) and skipped stretches
//   state   io::ESAgent load_config, load_inference_model, init_solver,
//           set_sampling_stream, load_solver; then CLONES clones draw a
//           member each, clone 0 predicts, the agent updates with REWARDS,
//           and the centre and the saved state (io::ESAgent::solver_state)
//           are printed
//
// Exit status 0 when every fixture ran (a refusal is a result, not a
// failure), 2 for bad usage or an unreadable manifest.
#include <unistd.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "evokit/io/io.h"

namespace {

namespace io = evokit::io;
namespace pb = google::protobuf;

// ---- canonical JSON -----------------------------------------------------------

class Json {
 public:
  enum class Kind { kNull, kBool, kInt, kUint, kString, kArray, kObject };

  Json() = default;
  Json(bool b) : kind_(Kind::kBool), bool_(b) {}  // NOLINT: implicit by design
  Json(int v) : kind_(Kind::kInt), int_(v) {}     // NOLINT
  Json(long v) : kind_(Kind::kInt), int_(v) {}    // NOLINT
  Json(long long v) : kind_(Kind::kInt), int_(v) {}  // NOLINT
  Json(unsigned long v) : kind_(Kind::kUint), uint_(v) {}  // NOLINT
  Json(unsigned long long v) : kind_(Kind::kUint), uint_(v) {}  // NOLINT
  Json(unsigned v) : kind_(Kind::kUint), uint_(v) {}  // NOLINT
  Json(const char* s) : kind_(Kind::kString), string_(s) {}  // NOLINT
  Json(std::string s) : kind_(Kind::kString), string_(std::move(s)) {}  // NOLINT

  static Json array() {
    Json j;
    j.kind_ = Kind::kArray;
    return j;
  }
  static Json object() {
    Json j;
    j.kind_ = Kind::kObject;
    return j;
  }

  Json& push(Json item) {
    items_.push_back(std::move(item));
    return *this;
  }
  Json& set(const std::string& key, Json value) {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == key) {
        items_[i] = std::move(value);
        return *this;
      }
    }
    keys_.push_back(key);
    items_.push_back(std::move(value));
    return *this;
  }

  std::string dump() const {
    std::string out;
    write(out);
    return out;
  }

 private:
  void write(std::string& out) const {
    switch (kind_) {
      case Kind::kNull:
        out += "null";
        return;
      case Kind::kBool:
        out += bool_ ? "true" : "false";
        return;
      case Kind::kInt:
        out += std::to_string(int_);
        return;
      case Kind::kUint:
        out += std::to_string(uint_);
        return;
      case Kind::kString:
        write_string(out, string_);
        return;
      case Kind::kArray:
        out += '[';
        for (std::size_t i = 0; i < items_.size(); ++i) {
          if (i) out += ',';
          items_[i].write(out);
        }
        out += ']';
        return;
      case Kind::kObject: {
        std::vector<std::size_t> order(keys_.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [this](std::size_t a, std::size_t b) { return keys_[a] < keys_[b]; });
        out += '{';
        for (std::size_t n = 0; n < order.size(); ++n) {
          if (n) out += ',';
          write_string(out, keys_[order[n]]);
          out += ':';
          items_[order[n]].write(out);
        }
        out += '}';
        return;
      }
    }
  }

  // Python's json.dumps(..., ensure_ascii=False) escapes; the text is valid
  // UTF-8 (callers make it so).
  static void write_string(std::string& out, const std::string& s) {
    out += '"';
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
            out += buffer;
          } else {
            out += ch;
          }
      }
    }
    out += '"';
  }

  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  long long int_ = 0;
  unsigned long long uint_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::string> keys_;
};

// The length of the valid UTF-8 sequence at s[i] (as Python's strict
// decoder accepts it: no overlong forms, no surrogates, at most U+10FFFF),
// or 0.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// A message for JSON: invalid UTF-8 bytes become U+FFFD, one per byte.
std::string printable(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string hex(const unsigned char* data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

std::string hex(const std::string& bytes) {
  return hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

// The bits of `v`, 8 hex digits.
std::string bits32(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, 4);
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%08x", bits);
  return buffer;
}

Json f32(float v) { return Json::object().set("f32", bits32(v)); }

Json f64(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(bits));
  return Json::object().set("f64", buffer);
}

// Float bits, 8 hex digits each, concatenated (a parameter vector).
std::string float_bits(const std::vector<float>& values) {
  std::string out;
  for (const float v : values) out += bits32(v);
  return out;
}

// A string field: text if valid UTF-8, else {"bytes": hex}.
Json text_or_bytes(const std::string& s) {
  if (valid_utf8(s)) return s;
  return Json::object().set("bytes", hex(s));
}

// ---- errors ---------------------------------------------------------------------

// {"error": what, "type": the Python class the error corresponds to}.
Json error_of(const std::exception_ptr& error) {
  std::string type = "Exception", what;
  try {
    std::rethrow_exception(error);
  } catch (const io::ConfigError& e) {
    type = "ConfigError";
    what = e.what();
  } catch (const io::ModelError& e) {
    type = "ModelError";
    what = e.what();
  } catch (const io::SolverFileError& e) {
    type = "SolverFileError";
    what = e.what();
  } catch (const io::LogError& e) {
    type = "LogError";
    what = e.what();
  } catch (const io::WarehouseError& e) {
    type = "WarehouseError";
    what = e.what();
  } catch (const std::out_of_range& e) {
    type = "IndexError";
    what = e.what();
  } catch (const std::invalid_argument& e) {
    type = "ValueError";
    what = e.what();
  } catch (const std::logic_error& e) {
    type = "RuntimeError";
    what = e.what();
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "a non-std exception";
  }
  return Json::object().set("error", printable(what)).set("type", type);
}

// The error of f(), or nothing when it returns.
template <class F>
std::optional<Json> failure(F&& f) {
  try {
    f();
    return std::nullopt;
  } catch (...) {
    return error_of(std::current_exception());
  }
}

// "ok", or the error of f().
template <class F>
Json outcome(F&& f) {
  std::optional<Json> error = failure(std::forward<F>(f));
  return error ? std::move(*error) : Json("ok");
}

// ---- protobuf messages ------------------------------------------------------------

Json message_json(const pb::Message& message);

Json field_value(const pb::Message& m, const pb::FieldDescriptor* f, int index) {
  const pb::Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return message_json(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return static_cast<long long>(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return static_cast<long long>(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return static_cast<unsigned long long>(rep ? r->GetRepeatedUInt32(m, f, index)
                                                 : r->GetUInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<unsigned long long>(rep ? r->GetRepeatedUInt64(m, f, index)
                                                 : r->GetUInt64(m, f));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return f64(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return f32(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const pb::EnumValueDescriptor* v = f->enum_type()->FindValueByNumber(number);
      return v != nullptr ? Json(v->name()) : Json(number);
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      const std::string s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      if (f->type() == pb::FieldDescriptor::TYPE_BYTES) return Json::object().set("bytes", hex(s));
      return text_or_bytes(s);
    }
  }
  return Json();
}

// The set fields of `message` by name (as Python's ListFields()).
Json message_json(const pb::Message& message) {
  Json out = Json::object();
  std::vector<const pb::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->is_repeated()) {
      Json items = Json::array();
      const int n = message.GetReflection()->FieldSize(message, f);
      for (int i = 0; i < n; ++i) items.push(field_value(message, f, i));
      out.set(f->name(), std::move(items));
    } else {
      out.set(f->name(), field_value(message, f, 0));
    }
  }
  return out;
}

// ---- fixtures -------------------------------------------------------------------

constexpr std::size_t kBatch = 3;
constexpr std::size_t kRecurrentSteps = 3;
constexpr std::size_t kConfigNumParams = 58;

// The fixed observations: batch * obs_size values, exact in float32.
std::vector<float> observations(std::size_t obs_size) {
  std::vector<float> obs(kBatch * obs_size);
  for (std::size_t k = 0; k < obs.size(); ++k) {
    obs[k] = static_cast<float>(static_cast<int>((k * 37) % 101) - 50) / 16.0f;
  }
  return obs;
}

Json hex_floats(const std::vector<float>& values) {
  Json out = Json::array();
  for (const float v : values) out.push(bits32(v));
  return out;
}

Json config_line(const std::string& path) {
  Json out = Json::object();
  std::optional<evokit::proto::EvoKitConfig> config;
  std::string text;
  std::vector<std::string> notes;
  const io::ConfigNoteHandler previous =
      io::set_config_note_handler([&](const std::string& note) { notes.push_back(note); });
  out.set("parse", outcome([&] { config = io::load_config(path, false, &text); }));
  io::set_config_note_handler(previous);
  Json notes_json = Json::array();
  for (const std::string& note : notes) notes_json.push(note);
  out.set("notes", std::move(notes_json));
  if (!config) return out;
  Json options = Json::object();
  const evokit::OptionSet walked = io::solver_options(config->solver());
  for (const auto& [name, value] : walked.values()) {
    if (const bool* b = std::get_if<bool>(&value)) {
      options.set(name, *b);
    } else if (const std::int64_t* i = std::get_if<std::int64_t>(&value)) {
      options.set(name, static_cast<long long>(*i));
    } else if (const double* d = std::get_if<double>(&value)) {
      options.set(name, f64(*d));
    } else {
      options.set(name, text_or_bytes(std::get<std::string>(value)));
    }
  }
  out.set("options", std::move(options));
  out.set("check", outcome([&] { io::validate_config(*config, path, std::nullopt, text); }));
  out.set("check_n58", outcome([&] { io::validate_config(*config, path, kConfigNumParams, text); }));
  return out;
}

Json model_line(const std::string& path, const std::string& pattern) {
  Json out = Json::object();
  std::optional<io::OnnxModel> model;
  out.set("load", outcome([&] { model.emplace(io::OnnxModel::load(path, pattern)); }));
  if (!model) return out;
  out.set("num_params", static_cast<unsigned long long>(model->num_params()));
  Json names = Json::array(), shapes = Json::array();
  for (std::size_t i = 0; i < model->param_names().size(); ++i) {
    names.push(text_or_bytes(model->param_names()[i]));
    Json shape = Json::array();
    for (const std::size_t d : model->param_shapes()[i]) shape.push(static_cast<unsigned long long>(d));
    shapes.push(std::move(shape));
  }
  out.set("param_names", std::move(names));
  out.set("param_shapes", std::move(shapes));
  out.set("params", float_bits(model->parameters()));
  try {
    const std::string fingerprint = io::model_fingerprint(*model);
    out.set("fingerprint", fingerprint);
    out.set("params_fingerprint", io::params_fingerprint(fingerprint, model->parameters()));
  } catch (...) {
    out.set("fingerprint", error_of(std::current_exception()));
  }
  try {
    const evokit::PolicyGraph graph = model->graph();
    const std::vector<float> obs = observations(graph.obs_size());
    // A recurrent model: kRecurrentSteps steps, its state carried (as conformance.py).
    std::vector<float> state(kBatch * graph.state_size(), 0.0f), y;
    for (std::size_t t = 0; t < (graph.recurrent() ? kRecurrentSteps : 1); ++t) {
      const std::vector<float> step = graph.run(obs.data(), kBatch, model->parameters().data(),
                                                model->parameters().size(), state.data());
      y.insert(y.end(), step.begin(), step.end());
    }
    Json shape = Json::array();
    const std::vector<std::size_t> one = graph.output_shape(1);
    for (std::size_t i = 1; i < one.size(); ++i) shape.push(static_cast<unsigned long long>(one[i]));
    Json native = Json::object().set("out_shape", std::move(shape)).set("outputs", hex_floats(y));
    if (graph.recurrent()) native.set("state", hex_floats(state));
    out.set("native", std::move(native));
  } catch (...) {
    out.set("native", error_of(std::current_exception()));
  }
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

Json log_line(const std::string& path) {
  Json out = Json::object();
  io::LogContents contents;
  try {
    contents = io::read_log(path);
  } catch (...) {
    out.set("read", error_of(std::current_exception()));
    return out;
  }
  out.set("read", "ok");
  const std::string bytes = file_bytes(path);
  Json records = Json::array();
  for (const io::LogRecord& r : contents.records) {
    std::uint32_t length = 0;
    for (int k = 0; k < 4; ++k) {
      length |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[r.offset + 4 + k]))
                << (8 * k);
    }
    const std::string payload = bytes.substr(r.offset + io::kLogHeaderSize, length);
    records.push(Json::object()
                     .set("offset", static_cast<unsigned long long>(r.offset))
                     .set("id", io::sha256_hex(payload).substr(0, 32))
                     .set("record", message_json(r.record)));
  }
  Json skipped = Json::array();
  for (const io::SkippedBytes& s : contents.skipped) {
    skipped.push(Json::object()
                     .set("offset", static_cast<unsigned long long>(s.offset))
                     .set("length", static_cast<unsigned long long>(s.length))
                     .set("reason", printable(s.reason)));
  }
  out.set("records", std::move(records));
  out.set("skipped", std::move(skipped));
  return out;
}

Json info_json(const evokit::proto::SamplingInfo& info) {
  Json key = Json::array();
  for (const std::int64_t k : info.key()) key.push(static_cast<long long>(k));
  return Json::object()
      .set("key", std::move(key))
      .set("model_iter_id", static_cast<long long>(info.model_iter_id()))
      .set("mirrored", info.mirrored());
}

Json state_summary(const evokit::proto::SolverState& s) {
  Json vectors = Json::array();
  for (const auto& v : s.vectors()) {
    vectors.push(Json::array()
                     .push(text_or_bytes(v.name()))
                     .push(evokit::proto::NamedVector::ElementType_Name(v.type()))
                     .push(static_cast<unsigned long long>(v.data().size()))
                     .push(io::sha256_hex(v.data())));
  }
  return Json::object()
      .set("num_params", static_cast<long long>(s.num_params()))
      .set("optimizer", evokit::proto::OptimizerConfig::Type_Name(s.optimizer()))
      .set("steps", static_cast<long long>(s.steps()))
      .set("state_version", s.state_version())
      .set("family", s.family())
      .set("noise_version", s.noise_version())
      .set("fingerprint_version", s.fingerprint_version())
      .set("model_fingerprint", s.model_fingerprint())
      .set("params_fingerprint", s.params_fingerprint())
      .set("config", s.config())
      .set("vectors", std::move(vectors));
}

std::vector<double> parse_rewards(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::strtod(item.c_str(), nullptr));
  return out;
}

Json state_line(const std::vector<std::string>& f) {
  // f: config, model, dir, stream, clones, rewards
  Json out = Json::object();
  io::ESAgent agent;
  std::optional<Json> error = failure([&] {
    agent.load_config(f[0]);
    agent.load_inference_model(f[1]);
    agent.init_solver();
    agent.set_sampling_stream(std::stoull(f[3]));
  });
  out.set("setup", error ? *error : Json("ok"));
  if (error) return out;
  error = failure([&] { agent.load_solver(f[2]); });
  out.set("load", error ? *error : Json("ok"));
  if (error) return out;
  out.set("model_iter_id", static_cast<long long>(agent.model_iter_id()));
  out.set("center_loaded", float_bits(agent.params()));

  const std::size_t n = std::stoul(f[4]);
  const std::vector<double> rewards = parse_rewards(f[5]);
  std::vector<io::ESAgent> clones;
  std::vector<evokit::proto::SamplingInfo> infos;
  Json drawn = Json::array();
  const Json draw = outcome([&] {
    for (std::size_t i = 0; i < n; ++i) clones.push_back(agent.clone());
    for (io::ESAgent& c : clones) {
      infos.push_back(c.add_noise());
      drawn.push(info_json(infos.back()));
    }
  });
  out.set("draw", draw);
  out.set("infos", std::move(drawn));
  if (!clones.empty() && clones[0].is_clone()) {
    try {
      out.set("clone0_predict", hex_floats(clones[0].predict(observations(agent.obs_size()), kBatch)));
    } catch (...) {
      out.set("clone0_predict", error_of(std::current_exception()));
    }
  }
  try {
    const evokit::UpdateStats stats = agent.update(infos, rewards);
    out.set("update", Json::object()
                          .set("num_samples", static_cast<unsigned long long>(stats.num_samples))
                          .set("num_corrected", static_cast<unsigned long long>(stats.num_corrected))
                          .set("model_iter_id", static_cast<long long>(stats.model_iter_id)));
  } catch (...) {
    out.set("update", error_of(std::current_exception()));
  }
  out.set("center", float_bits(agent.params()));
  try {
    out.set("saved", state_summary(agent.solver_state()));
  } catch (...) {
    out.set("saved", error_of(std::current_exception()));
  }
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: evokit_io_conformance FIXTURE_DIR\n";
    return 2;
  }
  if (::chdir(argv[1]) != 0) {
    std::cerr << "evokit_io_conformance: cannot enter " << argv[1] << ": " << std::strerror(errno)
              << "\n";
    return 2;
  }
  std::ifstream manifest("manifest.tsv");
  if (!manifest) {
    std::cerr << "evokit_io_conformance: " << argv[1] << "/manifest.tsv: cannot read\n";
    return 2;
  }
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split_tabs(line);
    const std::string& kind = f[0];
    const std::vector<std::string> args(f.begin() + 2, f.end());
    const std::size_t want = kind == "config" || kind == "log" ? 1 : kind == "model" ? 2 : 6;
    if (args.size() != want || (kind != "config" && kind != "log" && kind != "model" && kind != "state")) {
      std::cerr << "evokit_io_conformance: bad manifest line: " << line << "\n";
      return 2;
    }
    Json out = kind == "config" ? config_line(args[0])
               : kind == "model" ? model_line(args[0], args[1])
               : kind == "log"   ? log_line(args[0])
                                 : state_line(args);
    out.set("kind", kind);
    out.set("name", f[1]);
    std::cout << out.dump() << "\n";
  }
  return 0;
}
