#include "evokit/io/solver_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/io/state_file.h"
#include "evokit/io/errors.h"
#include "evokit/io/onnx_model.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::TempDir;

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// A state of every element type with the values a codec gets wrong: signed
// zeros, NaN payloads, denormals, infinities, the int64 extremes.
evokit::SolverState EveryKindOfValue() {
  evokit::SolverState s;
  s.family = "SOME_FAMILY";
  s.model_iter_id = 12;
  s.noise_version = 4;
  float nan_payload;
  const std::uint32_t nan_bits = 0x7fc00123u;
  std::memcpy(&nan_payload, &nan_bits, 4);
  s.floats["b.floats"] = {1.5f, -0.0f, 3e-45f, nan_payload,
                          -std::numeric_limits<float>::infinity()};
  s.floats["a.empty"] = {};
  s.doubles["x.doubles"] = {0.1, -0.0, 5e-324, std::numeric_limits<double>::max()};
  s.ints["z.ints"] = {0, -1, std::numeric_limits<std::int64_t>::min(),
                      std::numeric_limits<std::int64_t>::max()};
  s.ints["draws"] = {3};
  return s;
}

TEST(SolverState, ReadsTheVersion1StatePythonWrote) {
  // iter1/solver.pb is an Adam state of state version 1: "m" and "v", bare.
  const proto::SolverState s = read_solver_state(data_path("iter1/solver.pb"));
  EXPECT_EQ(s.num_params(), 58);
  EXPECT_EQ(s.optimizer(), proto::OptimizerConfig::ADAM);
  EXPECT_EQ(s.steps(), 1);
  EXPECT_FALSE(s.has_state_version());
  EXPECT_EQ(s.model_fingerprint().size(), 64u);
  EXPECT_EQ(s.params_fingerprint().size(), 64u);
  const proto::EvoKitConfig c = parse_config(s.config());
  EXPECT_EQ(c.solver().sampling().gaussian_sampling().cache_size(), 10000);

  const evokit::SolverState state = state_from_proto(s, "solver.pb");
  EXPECT_EQ(state.family, "GAUSSIAN_SAMPLING");
  EXPECT_EQ(state.model_iter_id, 1);
  EXPECT_EQ(state.noise_version, s.noise_version());
  ASSERT_EQ(s.vectors_size(), 2);
  ASSERT_EQ(state.floats.size(), 2u);
  for (const proto::NamedVector& v : s.vectors()) {
    EXPECT_TRUE(evokit::testing::SameBits(state.float_array("optimizer." + v.name(), 58),
                                          decode_floats(v.data())));
  }
  EXPECT_TRUE(state.doubles.empty());
  // Version 1 kept no draw counters: the clones count from 0 again.
  EXPECT_EQ(state.ints, (std::map<std::string, std::vector<std::int64_t>>{{"draws.counters", {}}}));

  // The Gaussian solver the config describes takes it.
  const OnnxModel model = OnnxModel::load(data_path("iter1/model.onnx"));
  auto solver = make_solver(solver_options(c.solver()), model.parameters(), 1);
  solver->load(state);
  EXPECT_EQ(solver->model_iter_id(), 1);
  const evokit::SolverState saved = solver->save();
  // After one Adam step from zero, v = (1 - beta2) g^2 > 0 somewhere.
  bool any = false;
  for (float x : saved.float_array("optimizer.v", 58)) any = any || x > 0.0f;
  EXPECT_TRUE(any);
}

TEST(SolverState, Version2RoundTripIsExact) {
  TempDir dir;
  const evokit::SolverState state = EveryKindOfValue();
  proto::SolverState message;
  message.set_num_params(5);
  message.set_config("solver { }");
  state_to_proto(state, &message);
  EXPECT_EQ(message.state_version(), 2);
  EXPECT_EQ(message.family(), "SOME_FAMILY");
  EXPECT_EQ(message.steps(), 12);
  EXPECT_EQ(message.noise_version(), 4);
  // float32 entries first, then float64, then int64; each type in name order.
  std::vector<std::string> names;
  std::vector<proto::NamedVector::ElementType> types;
  for (const proto::NamedVector& v : message.vectors()) {
    names.push_back(v.name());
    types.push_back(v.type());
    EXPECT_TRUE(v.has_type()) << v.name();  // written even for FLOAT32, as Python writes it
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"a.empty", "b.floats", "x.doubles", "draws", "z.ints"}));
  EXPECT_EQ(types, (std::vector<proto::NamedVector::ElementType>{
                       proto::NamedVector::FLOAT32, proto::NamedVector::FLOAT32,
                       proto::NamedVector::FLOAT64, proto::NamedVector::INT64,
                       proto::NamedVector::INT64}));

  write_solver_state(dir.file("solver.pb"), message);
  const proto::SolverState read = read_solver_state(dir.file("solver.pb"));
  EXPECT_EQ(read.SerializeAsString(), message.SerializeAsString());
  const evokit::SolverState back = state_from_proto(read, dir.file("solver.pb"));
  EXPECT_EQ(back.family, state.family);
  EXPECT_EQ(back.model_iter_id, state.model_iter_id);
  EXPECT_EQ(back.noise_version, state.noise_version);
  ASSERT_EQ(back.floats.size(), state.floats.size());
  for (const auto& [name, values] : state.floats) {
    EXPECT_TRUE(evokit::testing::SameBits(back.floats.at(name), values)) << name;
  }
  ASSERT_EQ(back.doubles.size(), 1u);
  EXPECT_TRUE(SameBits(back.doubles.at("x.doubles"), state.doubles.at("x.doubles")));
  EXPECT_EQ(back.ints, state.ints);
}

TEST(SolverState, ElementsAreLittleEndian) {
  EXPECT_EQ(encode_le(std::vector<float>{1.0f}), std::string("\x00\x00\x80\x3f", 4));
  EXPECT_EQ(encode_le(std::vector<double>{-2.0}), std::string("\0\0\0\0\0\0\x00\xc0", 8));
  EXPECT_EQ(encode_le(std::vector<std::int64_t>{-2, 258}),
            std::string("\xfe\xff\xff\xff\xff\xff\xff\xff\x02\x01\0\0\0\0\0\0", 16));
  EXPECT_EQ(decode_le<float>(std::string("\x00\x00\x80\xbf", 4)), (std::vector<float>{-1.0f}));
  EXPECT_EQ(decode_le<double>(std::string("\0\0\0\0\0\0\xf0\x3f", 8)), (std::vector<double>{1.0}));
  EXPECT_EQ(decode_le<std::int64_t>(std::string("\x01\x02\0\0\0\0\0\x80", 8)),
            (std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min() + 0x0201}));
  EXPECT_EQ(encode_floats({1.0f}), std::string("\x00\x00\x80\x3f", 4));
  EXPECT_THROW_WITH(decode_floats("abc"), std::invalid_argument, "3 bytes are not a multiple of 4");
  EXPECT_THROW_WITH(decode_le<std::int64_t>("abcd"), std::invalid_argument,
                    "4 bytes are not a multiple of 8");
}

TEST(SolverStateErrors, BadFiles) {
  TempDir dir;
  EXPECT_THROW_WITH(read_solver_state(dir.file("solver.pb")), SolverFileError,
                    "solver.pb: cannot read solver state file: no such file");
  testing::write_bytes(dir.file("junk.pb"), "\xff\xff\xff garbage");
  EXPECT_THROW_WITH(read_solver_state(dir.file("junk.pb")), SolverFileError,
                    "junk.pb: no sha256 trailer at its end (of 11 bytes)");
  // Sound trailers over bytes that are not a SolverState, or lack num_params.
  testing::write_bytes(dir.file("junk.pb"), seal_state("\xff\xff\xff garbage"));
  EXPECT_THROW_WITH(read_solver_state(dir.file("junk.pb")), SolverFileError,
                    "junk.pb: not a solver state file (the bytes do not parse as "
                    "evokit.proto.SolverState)");
  testing::write_bytes(dir.file("empty.pb"), seal_state(""));
  EXPECT_THROW_WITH(read_solver_state(dir.file("empty.pb")), SolverFileError,
                    "empty.pb: not a solver state file (no num_params)");
}

// The layouts state_from_proto refuses, each naming the file (and the entry):
// the same messages as Python's evokit/solvers/state.py.
TEST(SolverStateErrors, LayoutsThatAreNotRead) {
  proto::SolverState good;
  good.set_num_params(5);
  state_to_proto(EveryKindOfValue(), &good);
  const std::string path = "it/solver.pb";
  const auto refused = [&](const proto::SolverState& s) {
    return evokit::testing::MessageOf<SolverFileError>([&] { state_from_proto(s, path); });
  };
  const auto entry = [](proto::SolverState& s, const std::string& name) -> proto::NamedVector& {
    for (proto::NamedVector& v : *s.mutable_vectors()) {
      if (v.name() == name) return v;
    }
    throw std::runtime_error("no entry " + name);
  };

  // An element type this schema does not know (a newer EvoKit): proto2
  // parses it into the unknown fields, leaving the type absent.
  proto::SolverState s = good;
  entry(s, "x.doubles").clear_type();
  entry(s, "x.doubles")
      .GetReflection()
      ->MutableUnknownFields(&entry(s, "x.doubles"))
      ->AddVarint(proto::NamedVector::kTypeFieldNumber, 7);
  proto::SolverState parsed;
  ASSERT_TRUE(parsed.ParseFromString(s.SerializeAsString()));  // as read from a file
  EXPECT_EQ(refused(parsed), "it/solver.pb: state vector 'x.doubles' has no element type this "
                             "EvoKit knows (FLOAT32, FLOAT64, INT64): a newer EvoKit wrote it?");
  // No element type at all: the same (both writers always write it).
  s = good;
  entry(s, "b.floats").clear_type();
  EXPECT_EQ(refused(s), "it/solver.pb: state vector 'b.floats' has no element type this EvoKit "
                        "knows (FLOAT32, FLOAT64, INT64): a newer EvoKit wrote it?");

  // Data that is not a whole number of elements.
  s = good;
  entry(s, "x.doubles").set_data(std::string(7, '\0'));
  EXPECT_EQ(refused(s),
            "it/solver.pb: state vector 'x.doubles' holds 7 bytes, not a multiple of 8");
  s = good;
  entry(s, "b.floats").set_data("abcdef");
  EXPECT_EQ(refused(s), "it/solver.pb: state vector 'b.floats' holds 6 bytes, not a multiple of 4");

  // One name twice within a type.
  s = good;
  *s.add_vectors() = entry(s, "draws");
  EXPECT_EQ(refused(s), "it/solver.pb: state vector 'draws' appears twice");

  // A state version from the future.
  s = good;
  s.set_state_version(3);
  EXPECT_EQ(refused(s), "it/solver.pb: solver state version 3, this EvoKit reads versions 1 and 2 "
                        "(a newer EvoKit wrote it)");
}

TEST(SolverStateErrors, Version1StrategyStatesAreRefusedByName) {
  proto::SolverState v1 = read_solver_state(data_path("iter1/solver.pb"));
  v1.clear_vectors();
  v1.mutable_cma()->set_sigma(0.5);
  v1.mutable_cma()->set_generation(3);
  EXPECT_THROW_WITH(state_from_proto(v1, "old/solver.pb"), SolverFileError,
                    "old/solver.pb: a CMA_SAMPLING solver state of state version 1 (an EvoKit "
                    "before the one Solver interface): its layout is not read; finish it with the "
                    "EvoKit that wrote it, or start afresh from its model with `evokit "
                    "init-solver`");
  v1.clear_cma();
  v1.mutable_ga()->set_generation(2);
  EXPECT_THROW_WITH(state_from_proto(v1, "old/solver.pb"), SolverFileError,
                    "old/solver.pb: a GA_SAMPLING solver state of state version 1");
  // Version 1 vectors are named bare in errors, as in the file.
  proto::SolverState bad = read_solver_state(data_path("iter1/solver.pb"));
  bad.mutable_vectors(0)->set_data("abc");
  EXPECT_THROW_WITH(state_from_proto(bad, "old/solver.pb"), SolverFileError,
                    "old/solver.pb: state vector 'm' holds 3 bytes, not a multiple of 4");
}

}  // namespace
}  // namespace evokit::io
