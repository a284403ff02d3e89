// Checksummed state files (proto/evokit.proto, "State files"): the trailer
// and its refusals (word for word Python's, evokit/statefile.py). The damage
// replay over the files a warehouse is read from is in test_warehouse.cc.
#include "evokit/io/state_file.h"

#include <gtest/gtest.h>

#include <string>

#include "evokit/io/errors.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

std::string digest_bytes(const std::string& body) {
  Sha256 h;
  h.update(body);
  const auto d = h.digest();
  return std::string(d.begin(), d.end());
}

TEST(StateFile, TrailerIsField15OverEveryByteBeforeIt) {
  TempDir dir;
  proto::WarehouseInfo info;
  info.set_config("solver {}");
  info.set_config_fingerprint(std::string(64, 'a'));
  write_state_file(dir.file("warehouse.pb"), info);
  const std::string body = info.SerializeAsString();
  const std::string data = read_bytes(dir.file("warehouse.pb"));
  EXPECT_EQ(data, body + "\x7a\x20" + digest_bytes(body));
  proto::WarehouseInfo plain;  // a plain protobuf parser reads the file: field 15 is sha256
  ASSERT_TRUE(plain.ParseFromString(data));
  EXPECT_EQ(plain.sha256(), digest_bytes(body));
  proto::WarehouseInfo back;
  read_state_file<WarehouseError>(dir.file("warehouse.pb"), back, "warehouse info");
  EXPECT_EQ(back.SerializeAsString(), body);
}

TEST(StateFile, RefusalsNameTheFileAndTheDigests) {
  TempDir dir;
  const std::string path = dir.file("solver.pb");
  proto::SolverState state;
  state.set_num_params(3);
  const std::string body = state.SerializeAsString();
  std::string bad = seal_state(body);
  bad[1] ^= 0x01;
  write_bytes(path, bad);
  const std::string actual = sha256_hex(bad.substr(0, body.size()));
  const std::string recorded = sha256_hex(body);
  EXPECT_THROW_WITH(read_solver_state(path), SolverFileError,
                    path + ": damaged: the sha256 of its first " + std::to_string(body.size()) +
                        " bytes is " + actual + ", its trailer records " + recorded);
  write_bytes(path, body);
  EXPECT_THROW_WITH(read_solver_state(path), SolverFileError,
                    path + ": no sha256 trailer at its end (of " + std::to_string(body.size()) +
                        " bytes): cut short or damaged, or written by an EvoKit before state files "
                        "were checksummed; if it is an intact older file, add the trailer with "
                        "`evokit seal " + path + "`");
  write_bytes(path, "");
  EXPECT_THROW_WITH(read_solver_state(path), SolverFileError,
                    path + ": empty file, expected a state file ending with its sha256 trailer");
}

// A name taken from a damaged file may hold any byte: every io error is one
// line all the same, its control characters escaped.
TEST(StateFile, ErrorsAreOneLine) {
  EXPECT_STREQ(ModelError("m.onnx: output 'ac\nion\x1b' is not a value of the graph").what(),
               "m.onnx: output 'ac\\nion\\x1b' is not a value of the graph");
  EXPECT_STREQ(WarehouseError(std::string("W: a\0b\r\t", 8)).what(), "W: a\\x00b\\r\\t");
}

}  // namespace
}  // namespace evokit::io
