// formats/: the state-file trailer, solver.pb's layout and the fingerprint's
// reading of the ONNX wire format. The files themselves are tested against
// the committed fixtures of every kind (tests/fixtures/files, through
// Python and the C++ io library).
#include <gtest/gtest.h>

#include <string>

#include "evokit/formats/fingerprint.h"
#include "evokit/formats/solver_file.h"
#include "evokit/formats/state_file.h"
#include "test_util.h"

namespace evokit::formats {
namespace {

using evokit::testing::MessageOf;

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string field(std::uint32_t number, const std::string& bytes) { return varint(number << 3 | 2) + varint(bytes.size()) + bytes; }
std::string field_varint(std::uint32_t number, std::uint64_t v) { return varint(number << 3) + varint(v); }

// A model with one initializer "w" of dims (2, 3), written with its dims
// packed or not, and its graph given whole or in two parts (protobuf merges).
std::string model(bool packed, bool split_graph) {
  const std::string dims = packed ? field(1, varint(2) + varint(3)) : field_varint(1, 2) + field_varint(1, 3);
  const std::string w = dims + field_varint(2, 1) + field(8, "w") + field(9, std::string(24, '\0'));
  const std::string node = field(1, "x") + field(1, "w") + field(2, "y") + field(4, "MatMul");
  const std::string part1 = field(1, node) + field(5, w);
  const std::string part2 = field(11, field(1, "x")) + field(12, field(1, "y"));
  const std::string opset = field(8, field(1, "") + field_varint(2, 17));
  return split_graph ? opset + field(7, part1) + field(7, part2) : opset + field(7, part1 + part2);
}

TEST(FormatsFingerprint, ReadsTheWireAsProtobufDoes) {
  const std::string a = model_fingerprint(model(false, false), {"w"}, "m");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(model_fingerprint(model(true, false), {"w"}, "m"), a);
  EXPECT_EQ(model_fingerprint(model(false, true), {"w"}, "m"), a);
  EXPECT_NE(model_fingerprint(model(false, false), {}, "m"), a);  // w a fixed initializer, not a parameter
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { model_fingerprint(model(false, false), {"v"}, "m"); }),
            "m: parameter 'v' is not an initializer");
  const std::string cut = model(false, false).substr(0, 20);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { model_fingerprint(cut, {}, "m"); }),
            "m: not a valid ONNX model (the bytes do not parse as a protobuf message)");
}

TEST(FormatsStateFile, TrailerSealsAndRefusesDamage) {
  const std::string sealed = seal_state("body");
  EXPECT_EQ(sealed.size(), 4 + kStateTrailerSize);
  EXPECT_TRUE(has_state_trailer(sealed));
  EXPECT_EQ(unseal_state("s.pb", sealed), "body");
  std::string damaged = sealed;
  damaged[0] = 'B';
  EXPECT_NE(MessageOf<std::invalid_argument>([&] { unseal_state("s.pb", damaged); })
                .find("s.pb: damaged: the sha256 of its first 4 bytes is "),
            std::string::npos);
  EXPECT_EQ(MessageOf<std::invalid_argument>([] { unseal_state("s.pb", ""); }),
            "s.pb: empty file, expected a state file ending with its sha256 trailer");
}

TEST(FormatsSolverFile, RoundTripsAndRefusesLayoutsItDoesNotRead) {
  SolverState s;
  s.family = "GAUSSIAN_SAMPLING";
  s.model_iter_id = 3;
  s.noise_version = 4;
  s.floats["optimizer.m"] = {1.0f, -2.0f};
  s.ints["draws.counters"] = {5};
  const StoredSolverState stored = encode_solver_state(s);
  ASSERT_EQ(stored.vectors.size(), 2u);
  EXPECT_EQ(stored.vectors[0].data, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  const SolverState back = decode_solver_state(stored, "s.pb");
  EXPECT_EQ(back.floats.at("optimizer.m"), s.floats.at("optimizer.m"));
  EXPECT_EQ(back.ints.at("draws.counters"), s.ints.at("draws.counters"));
  EXPECT_EQ(back.model_iter_id, 3);

  StoredSolverState bad = stored;
  bad.vectors.push_back(bad.vectors[0]);
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: state vector 'optimizer.m' appears twice");
  bad = stored;
  bad.vectors[0].type.reset();
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: state vector 'optimizer.m' has no element type this EvoKit knows (FLOAT32, FLOAT64, INT64): "
            "a newer EvoKit wrote it?");
  bad = stored;
  bad.state_version = 3;
  EXPECT_EQ(MessageOf<std::invalid_argument>([&] { decode_solver_state(bad, "s.pb"); }),
            "s.pb: solver state version 3, this EvoKit reads versions 1 and 2 (a newer EvoKit wrote it)");
}

}  // namespace
}  // namespace evokit::formats
