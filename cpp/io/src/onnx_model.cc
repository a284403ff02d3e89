#include "evokit/io/onnx_model.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "evokit/io/errors.h"
#include "file_util.h"

namespace evokit::io {

namespace {

// One line: the ONNX checker's messages span several.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string raw_bytes(const float* values, std::size_t n) {
  std::string out(n * 4, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int k = 0; k < 4; ++k) out[4 * i + static_cast<std::size_t>(k)] = static_cast<char>((bits >> (8 * k)) & 0xFFu);
  }
  return out;
}

std::size_t element_count(const std::vector<std::size_t>& dims) {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return n;
}

}  // namespace

OnnxModel OnnxModel::load(const std::string& path, const std::string& param_pattern) {
  std::string bytes, error;
  if (!detail::read_file(path, bytes, error)) throw ModelError(path + ": " + error);
  return from_bytes(bytes, param_pattern, path);
}

OnnxModel OnnxModel::from_bytes(const std::string& bytes, const std::string& param_pattern,
                                const std::string& source) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (!model->ParseFromString(bytes)) {
    throw ModelError(source + ": not a valid ONNX model (the bytes do not parse as an ONNX "
                              "ModelProto)");
  }
  OnnxModel m;
  m.model_ = std::move(model);
  m.bytes_ = std::make_shared<const std::string>(bytes);
  // The rules are the core's (formats/onnx_model.h); this runtime runs the
  // ONNX checker of the libonnx it links, on IR versions it knows.
  m.layout_ = detail::core_checked<ModelError>([&] {
    return formats::read_onnx_layout(*m.bytes_, param_pattern, source, [&](std::int64_t ir_version) {
      if (ir_version > onnx::Version::IR_VERSION) return;
      try {
        onnx::checker::check_model(*m.model_);
      } catch (const std::exception& e) {
        throw ModelError(source + ": ONNX checker rejected the model: " + one_line(e.what()));
      }
    });
  });
  return m;
}

PolicyGraph OnnxModel::graph() const {
  return detail::core_checked<ModelError>([&] { return formats::onnx_policy_graph(*bytes_, layout_); });
}

std::string OnnxModel::serialize(const std::vector<float>& params) const {
  if (params.size() != num_params()) {
    throw std::invalid_argument(source() + ": params holds " + std::to_string(params.size()) +
                                " values, the model has num_params = " +
                                std::to_string(num_params()));
  }
  onnx::ModelProto copy(*model_);
  std::size_t p = 0;
  for (onnx::TensorProto& t : *copy.mutable_graph()->mutable_initializer()) {
    if (p < layout_.param_names.size() && t.name() == layout_.param_names[p]) {
      const std::size_t n = element_count(layout_.param_shapes[p]);
      t.clear_float_data();
      t.set_raw_data(raw_bytes(params.data() + layout_.param_offsets[p], n));
      ++p;
    }
  }
  std::string bytes;
  if (!copy.SerializeToString(&bytes)) {
    throw ModelError(source() + ": cannot serialize the model");
  }
  return bytes;
}

void OnnxModel::save(const std::string& path, const std::vector<float>& params) const {
  const std::string bytes = serialize(params);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ModelError(path + ": is a directory");
  detail::atomic_write(path, bytes);
}

}  // namespace evokit::io
