// Internal to cpp/src/formats: protobuf's wire format, read without a
// protobuf runtime, and the field numbers of ONNX's messages the readers use
// (onnx/onnx.proto, stable since IR version 3). A field given twice is read
// as protobuf reads it (the last scalar wins, messages merge), packed and
// unpacked repeated scalars alike, unknown fields skipped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace evokit::formats::wire {

struct Field {
  std::uint32_t number = 0;
  int wire = 0;             // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  std::uint64_t value = 0;  // varint, fixed32, fixed64
  std::string_view bytes;   // length-delimited
};

class BadWire : public std::exception {};

inline std::uint64_t read_varint(std::string_view s, std::size_t& pos) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= s.size()) throw BadWire();
    const auto b = static_cast<unsigned char>(s[pos++]);
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  throw BadWire();
}

inline std::uint64_t read_fixed(std::string_view s, std::size_t& pos, int width) {
  if (s.size() - pos < static_cast<std::size_t>(width) || pos > s.size()) throw BadWire();
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[pos + i])) << (8 * i);
  pos += static_cast<std::size_t>(width);
  return v;
}

// A message: its fields in wire order.
class Message {
 public:
  // A message read from `bytes`, which `storage` (when set) owns and keeps alive.
  explicit Message(std::string_view bytes, std::shared_ptr<const std::string> storage = nullptr)
      : storage_(std::move(storage)) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
      const std::uint64_t key = read_varint(bytes, pos);
      Field f;
      f.number = static_cast<std::uint32_t>(key >> 3);
      f.wire = static_cast<int>(key & 7);
      if (f.number == 0) throw BadWire();
      switch (f.wire) {
        case 0: f.value = read_varint(bytes, pos); break;
        case 1: f.value = read_fixed(bytes, pos, 8); break;
        case 5: f.value = read_fixed(bytes, pos, 4); break;
        case 2: {
          const std::uint64_t n = read_varint(bytes, pos);
          if (n > bytes.size() - pos) throw BadWire();
          f.bytes = bytes.substr(pos, n);
          pos += n;
          break;
        }
        default: throw BadWire();  // groups: not in ONNX
      }
      fields_.push_back(f);
    }
  }

  bool has(std::uint32_t n) const {
    return std::any_of(fields_.begin(), fields_.end(), [&](const Field& f) { return f.number == n; });
  }
  // A scalar field: the last value given (with `wire`), or `otherwise`.
  std::uint64_t scalar(std::uint32_t n, int wire, std::uint64_t otherwise = 0) const {
    for (auto it = fields_.rbegin(); it != fields_.rend(); ++it) {
      if (it->number == n && it->wire == wire) return it->value;
    }
    return otherwise;
  }
  std::int64_t int64(std::uint32_t n) const { return static_cast<std::int64_t>(scalar(n, 0)); }
  std::int64_t int32(std::uint32_t n) const { return static_cast<std::int32_t>(scalar(n, 0)); }
  // A string or bytes field: the last given.
  std::string_view bytes(std::uint32_t n) const {
    for (auto it = fields_.rbegin(); it != fields_.rend(); ++it) {
      if (it->number == n && it->wire == 2) return it->bytes;
    }
    return {};
  }
  // A singular message field: every occurrence merged (their bytes concatenated).
  Message message(std::uint32_t n) const {
    const Field* only = nullptr;
    std::size_t count = 0;
    for (const Field& f : fields_) {
      if (f.number == n && f.wire == 2 && count++ == 0) only = &f;
    }
    if (count <= 1) return Message(only != nullptr ? only->bytes : std::string_view(), storage_);
    auto merged = std::make_shared<std::string>();  // given more than once: protobuf merges them
    for (const Field& f : fields_) {
      if (f.number == n && f.wire == 2) merged->append(f.bytes);
    }
    return Message(*merged, merged);
  }
  // A repeated string, bytes or message field.
  std::vector<std::string_view> repeated_bytes(std::uint32_t n) const {
    std::vector<std::string_view> out;
    for (const Field& f : fields_) {
      if (f.number == n && f.wire == 2) out.push_back(f.bytes);
    }
    return out;
  }
  std::vector<Message> repeated_messages(std::uint32_t n) const {
    std::vector<Message> out;
    for (const Field& f : fields_) {
      if (f.number == n && f.wire == 2) out.emplace_back(f.bytes, storage_);
    }
    return out;
  }
  // A repeated scalar field of `wire` type (0, 1 or 5), packed or not.
  std::vector<std::uint64_t> repeated_scalars(std::uint32_t n, int wire) const {
    std::vector<std::uint64_t> out;
    for (const Field& f : fields_) {
      if (f.number != n) continue;
      if (f.wire == wire) {
        out.push_back(f.value);
      } else if (f.wire == 2) {  // packed
        std::size_t pos = 0;
        while (pos < f.bytes.size()) {
          out.push_back(wire == 0 ? read_varint(f.bytes, pos) : read_fixed(f.bytes, pos, wire == 1 ? 8 : 4));
        }
      }
    }
    return out;
  }
  // The oneof member among `members` given last, or 0.
  std::uint32_t which(std::initializer_list<std::uint32_t> members) const {
    for (auto it = fields_.rbegin(); it != fields_.rend(); ++it) {
      if (std::find(members.begin(), members.end(), it->number) != members.end()) return it->number;
    }
    return 0;
  }

 private:
  std::shared_ptr<const std::string> storage_;  // what the views below point into, if this owns it
  std::vector<Field> fields_;
};

// ---- ONNX's field numbers ----------------------------------------------------------

namespace model { constexpr std::uint32_t kIrVersion = 1, kGraph = 7, kOpsetImport = 8; }
namespace opset { constexpr std::uint32_t kDomain = 1, kVersion = 2; }
namespace graph {
constexpr std::uint32_t kNode = 1, kName = 2, kInitializer = 5, kInput = 11, kOutput = 12, kSparseInitializer = 15;
}
namespace node { constexpr std::uint32_t kInput = 1, kOutput = 2, kName = 3, kOpType = 4, kAttribute = 5, kDomain = 7; }
namespace attr {
constexpr std::uint32_t kName = 1, kF = 2, kI = 3, kS = 4, kT = 5, kG = 6, kFloats = 7, kInts = 8, kStrings = 9,
                        kTensors = 10, kGraphs = 11, kType = 20;
enum Type { UNDEFINED, FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, GRAPHS, SPARSE_TENSOR,
            SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS };
const char* const kTypeNames[] = {"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
                                  "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
                                  "TYPE_PROTOS"};
}  // namespace attr
namespace tensor {
constexpr std::uint32_t kDims = 1, kDataType = 2, kFloatData = 4, kInt32Data = 5, kStringData = 6, kInt64Data = 7,
                        kName = 8, kRawData = 9, kDoubleData = 10, kUint64Data = 11, kDataLocation = 14;
enum DataType { UNDEFINED, FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE, UINT32,
                UINT64, COMPLEX64, COMPLEX128, BFLOAT16 };
constexpr std::uint64_t kExternal = 1;  // DataLocation
}  // namespace tensor
namespace value_info { constexpr std::uint32_t kName = 1, kType = 2; }
namespace type_proto {
constexpr std::uint32_t kTensorType = 1, kSequenceType = 4, kMapType = 5, kOpaqueType = 7, kSparseTensorType = 8,
                        kOptionalType = 9;
}
namespace tensor_type { constexpr std::uint32_t kElemType = 1, kShape = 2; }
namespace shape { constexpr std::uint32_t kDim = 1; }
namespace dim { constexpr std::uint32_t kValue = 1, kParam = 2; }

}  // namespace evokit::formats::wire
