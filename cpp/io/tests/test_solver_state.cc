#include "evokit/io/solver_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::TempDir;

TEST(SolverState, ReadsTheStatePythonWrites) {
  const proto::SolverState s = read_solver_state(data_path("iter1/solver.pb"));
  EXPECT_EQ(s.num_params(), 58);
  EXPECT_EQ(s.optimizer(), proto::OptimizerConfig::ADAM);
  EXPECT_EQ(s.steps(), 1);
  EXPECT_EQ(s.model_fingerprint().size(), 64u);
  EXPECT_EQ(s.params_fingerprint().size(), 64u);
  const proto::EvoKitConfig c = parse_config(s.config());
  EXPECT_EQ(c.solver().sampling().gaussian_sampling().cache_size(), 10000);

  Adam adam(0.05f, 0.9f, 0.999f, 1e-8f, 58);
  restore_solver_state(s, adam, "solver.pb");
  EXPECT_EQ(adam.steps(), 1);
  ASSERT_EQ(s.vectors_size(), 2);
  for (const proto::NamedVector& v : s.vectors()) {
    EXPECT_TRUE(evokit::testing::SameBits(adam.state(v.name()), decode_floats(v.data())));
  }
  // After one Adam step from zero, v = (1 - beta2) g^2 > 0 somewhere.
  bool any = false;
  for (float x : adam.state("v")) any = any || x > 0.0f;
  EXPECT_TRUE(any);
}

TEST(SolverState, RoundTrip) {
  TempDir dir;
  Momentum opt(0.1f, 0.9f, 3);
  opt.state("velocity") = {1.5f, -0.0f, 3e-38f};
  opt.set_steps(42);
  proto::SolverState s = capture_solver_state(opt);
  EXPECT_EQ(s.optimizer(), proto::OptimizerConfig::MOMENTUM);
  s.set_config("solver { }");
  write_solver_state(dir.file("solver.pb"), s);
  const proto::SolverState back = read_solver_state(dir.file("solver.pb"));
  EXPECT_EQ(back.SerializeAsString(), s.SerializeAsString());
  Momentum other(0.1f, 0.9f, 3);
  restore_solver_state(back, other, "solver.pb");
  EXPECT_EQ(other.steps(), 42);
  EXPECT_TRUE(evokit::testing::SameBits(other.state("velocity"), {1.5f, -0.0f, 3e-38f}));
}

TEST(SolverState, FloatsAreLittleEndian) {
  EXPECT_EQ(encode_floats({1.0f}), std::string("\x00\x00\x80\x3f", 4));
  EXPECT_EQ(decode_floats(std::string("\x00\x00\x80\xbf", 4)), (std::vector<float>{-1.0f}));
  EXPECT_THROW_WITH(decode_floats("abc"), std::invalid_argument, "not a multiple of 4");
}

TEST(SolverStateErrors, BadFiles) {
  TempDir dir;
  EXPECT_THROW_WITH(read_solver_state(dir.file("solver.pb")), SolverFileError,
                    "solver.pb: cannot read solver state: no such file");
  testing::write_bytes(dir.file("junk.pb"), "\xff\xff\xff garbage");
  EXPECT_THROW_WITH(read_solver_state(dir.file("junk.pb")), SolverFileError,
                    "junk.pb: not a solver state file");
  testing::write_bytes(dir.file("empty.pb"), "");
  EXPECT_THROW_WITH(read_solver_state(dir.file("empty.pb")), SolverFileError,
                    "empty.pb: not a solver state file (no num_params)");
}

TEST(SolverStateErrors, MismatchesChangeNothing) {
  const proto::SolverState good = read_solver_state(data_path("iter1/solver.pb"));
  Adam adam(0.05f, 0.9f, 0.999f, 1e-8f, 58);
  adam.set_steps(7);
  const auto expect_refused = [&](const proto::SolverState& s, const std::string& needle) {
    EXPECT_THROW_WITH(restore_solver_state(s, adam, "it/solver.pb"), SolverFileError, needle);
    EXPECT_EQ(adam.steps(), 7);
    for (float x : adam.state("m")) ASSERT_EQ(x, 0.0f);
  };
  Adam small(0.05f, 0.9f, 0.999f, 1e-8f, 10);
  EXPECT_THROW_WITH(restore_solver_state(good, small, "it/solver.pb"), SolverFileError,
                    "it/solver.pb: solver state is for a model with 58 parameters, the loaded "
                    "model has 10");
  SGD sgd(0.1f, 58);
  EXPECT_THROW_WITH(restore_solver_state(good, sgd, "it/solver.pb"), SolverFileError,
                    "solver state is for optimizer ADAM, the config asks for SGD");

  proto::SolverState s = good;
  s.mutable_vectors()->RemoveLast();
  expect_refused(s, "state vector 'v' of optimizer ADAM is missing");
  s = good;
  s.mutable_vectors(0)->set_data("abcd");
  expect_refused(s, "state vector 'm' holds 4 bytes, expected 58 float32 values (232 bytes)");
  s = good;
  s.mutable_vectors(1)->set_name("velocity");
  expect_refused(s, "state vector 'velocity' is not a state of optimizer ADAM (it keeps 'm', 'v')");
  s = good;
  s.set_steps(-1);
  expect_refused(s, "solver state has steps -1, expected >= 0");
}

}  // namespace
}  // namespace evokit::io
