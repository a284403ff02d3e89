#include "evokit/formats/tensor_data.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "wire.h"

namespace evokit::formats {

namespace {

using wire::Message;
namespace tensor = wire::tensor;

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

Message parse(std::string_view bytes, const std::string& source, const std::string& what) {
  try {
    return Message(bytes);
  } catch (const wire::BadWire&) {
    refuse(source + ": " + what + " is not a valid TensorProto");
  }
}

std::vector<std::size_t> dims_of(const Message& t, const std::string& source, const std::string& what) {
  const std::vector<std::uint64_t> raw = t.repeated_scalars(tensor::kDims, 0);
  return tensor_dims(std::vector<std::int64_t>(raw.begin(), raw.end()), source, what);
}

// `width` bytes times the element count, in errors: the number, or "more
// than 18446744073709551615" beyond 64 bits.
std::string needed(const std::vector<std::size_t>& dims, std::size_t width) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  if (std::find(dims.begin(), dims.end(), std::size_t{0}) != dims.end()) return "0";
  std::size_t n = width;
  for (const std::size_t d : dims) {
    if (n > kMax / d) return "more than " + std::to_string(kMax);
    n *= d;
  }
  return std::to_string(n);
}

// T's bits from the low sizeof(T) bytes of `bits`.
template <class T>
T narrow(std::uint64_t bits) {
  using Bits = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                  std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                     std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
  const auto n = static_cast<Bits>(bits);
  T out;
  std::memcpy(&out, &n, sizeof(T));
  return out;
}

// The values of a tensor of element type T, from raw_data (little-endian) or
// the typed field `typed` (of wire type `wire_type`): the shape is checked
// against the data held before anything is allocated.
template <class T>
std::vector<T> values_of(const Message& t, std::uint32_t typed, int wire_type, const std::string& source,
                         const std::string& what) {
  const std::vector<std::size_t> dims = dims_of(t, source, what);
  if (t.has(tensor::kRawData)) {
    const std::string_view raw = t.bytes(tensor::kRawData);
    const std::string needs = needed(dims, sizeof(T));
    if (needs != std::to_string(raw.size())) {
      refuse(source + ": " + what + " holds " + std::to_string(raw.size()) + " bytes of raw data, its shape needs " +
             needs);
    }
    std::vector<T> out(raw.size() / sizeof(T));
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint64_t bits = 0;
      for (std::size_t k = sizeof(T); k-- > 0;) bits = (bits << 8) | static_cast<unsigned char>(raw[sizeof(T) * i + k]);
      out[i] = narrow<T>(bits);
    }
    return out;
  }
  const std::vector<std::uint64_t> values = t.repeated_scalars(typed, wire_type);
  const std::string needs = needed(dims, 1);
  if (needs != std::to_string(values.size())) {
    refuse(source + ": " + what + " holds " + std::to_string(values.size()) + " values, its shape needs " + needs);
  }
  std::vector<T> out(values.size());
  std::transform(values.begin(), values.end(), out.begin(), [](std::uint64_t v) { return narrow<T>(v); });
  return out;
}

template <class T>
std::vector<std::int64_t> widened(const std::vector<T>& v) {
  return std::vector<std::int64_t>(v.begin(), v.end());
}

}  // namespace

std::vector<std::size_t> tensor_dims(const std::vector<std::int64_t>& dims, const std::string& source,
                                     const std::string& what) {
  std::vector<std::size_t> out;
  out.reserve(dims.size());
  for (const std::int64_t d : dims) {
    if (d < 0) refuse(source + ": " + what + " has a negative dimension " + std::to_string(d));
    out.push_back(static_cast<std::size_t>(d));
  }
  return out;
}

std::vector<float> float_tensor_values(std::string_view bytes, const std::string& source, const std::string& what) {
  try {
    return values_of<float>(parse(bytes, source, what), tensor::kFloatData, 5, source, what);
  } catch (const wire::BadWire&) {
    refuse(source + ": " + what + " is not a valid TensorProto");
  }
}

bool is_int_tensor_type(std::int64_t type) {
  using namespace tensor;
  return type == INT64 || type == INT32 || type == INT16 || type == INT8 || type == UINT8 || type == UINT16 ||
         type == UINT32 || type == BOOL;
}

std::vector<std::int64_t> int_tensor_values(std::string_view bytes, const std::string& source,
                                            const std::string& what) {
  try {
    const Message t = parse(bytes, source, what);
    using namespace tensor;
    switch (t.int32(kDataType)) {
      case INT64: return values_of<std::int64_t>(t, kInt64Data, 0, source, what);
      case INT32: return widened(values_of<std::int32_t>(t, kInt32Data, 0, source, what));
      case UINT32: return widened(values_of<std::uint32_t>(t, kUint64Data, 0, source, what));
      case INT16: return widened(values_of<std::int16_t>(t, kInt32Data, 0, source, what));
      case UINT16: return widened(values_of<std::uint16_t>(t, kInt32Data, 0, source, what));
      case INT8: return widened(values_of<std::int8_t>(t, kInt32Data, 0, source, what));
      case UINT8:
      case BOOL: return widened(values_of<std::uint8_t>(t, kInt32Data, 0, source, what));
      default: refuse(source + ": " + what + " is not an integer tensor (data type " +
                      std::to_string(t.int32(kDataType)) + ")");
    }
  } catch (const wire::BadWire&) {
    refuse(source + ": " + what + " is not a valid TensorProto");
  }
}

}  // namespace evokit::formats
