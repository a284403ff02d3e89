#include "evokit/io/fingerprint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "evokit/io/errors.h"
#include "evokit/io/es_agent.h"
#include "evokit/io/onnx_model.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

using testing::data_path;
using testing::expected_floats;
using testing::TempDir;

// cpp/io/tests/data/fingerprints.txt (make_fixtures.py): "name hex" per line,
// computed by the Python package.
const std::map<std::string, std::string>& python_fingerprints() {
  static const std::map<std::string, std::string> values = [] {
    std::map<std::string, std::string> out;
    for (const auto& [name, hex] : testing::fixture_lines("fingerprints.txt")) out[name] = hex;
    return out;
  }();
  return values;
}

const std::string& python_fingerprint(const std::string& name) {
  const auto& all = python_fingerprints();
  const auto it = all.find(name);
  if (it == all.end()) throw std::runtime_error("fingerprints.txt has no " + name);
  return it->second;
}

TEST(IoSha256, KnownDigests) {
  // FIPS 180-4 examples, and lengths around the 55/56/64-byte padding edges
  // (values from Python's hashlib).
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  // Fed in uneven pieces: the same digest as in one piece.
  const std::string million(1000000, 'a');
  Sha256 h;
  for (std::size_t pos = 0, step = 1; pos < million.size(); pos += step, step = step % 97 + 1) {
    h.update(million.data() + pos, std::min(step, million.size() - pos));
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Every fixture model: C++ computes the digest Python computed.
TEST(IoFingerprint, SameAsPython) {
  struct Case {
    const char* name;
    std::string path;
    const char* pattern;
  };
  const std::vector<Case> cases = {
      {"cartpole_h8", data_path("cartpole_h8.onnx"), ".*"},
      {"cartpole_h8_weights", data_path("cartpole_h8.onnx"), ".*weight"},
      {"iter1", data_path("iter1/model.onnx"), ".*"},
      {"torch_mlp", std::string(EVOKIT_SOURCE_DIR) + "/tests/fixtures/torch_mlp.onnx", ".*"},
      {"attributes", data_path("fingerprint_attributes.onnx"), ".*"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const OnnxModel model = OnnxModel::load(c.path, c.pattern);
    const std::string fp = model_fingerprint(model);
    EXPECT_EQ(fp, python_fingerprint(std::string(c.name) + ".model"));
    EXPECT_EQ(params_fingerprint(fp, model.parameters()),
              python_fingerprint(std::string(c.name) + ".params"));
  }
  // The parameter selection is part of the graph's fingerprint.
  EXPECT_NE(python_fingerprint("cartpole_h8.model"), python_fingerprint("cartpole_h8_weights.model"));
}

TEST(IoFingerprint, IndependentOfParameterValuesAndNames) {
  const OnnxModel model = OnnxModel::load(data_path("cartpole_h8.onnx"));
  std::vector<float> changed = model.parameters();
  changed[3] += 1.0f;
  const OnnxModel other = OnnxModel::from_bytes(model.serialize(changed));
  EXPECT_EQ(model_fingerprint(other), model_fingerprint(model));
  EXPECT_NE(params_fingerprint(model_fingerprint(other), other.parameters()),
            params_fingerprint(model_fingerprint(model), model.parameters()));
}

// A solver.pb written by Python verifies here; one written here carries the
// fingerprints Python computes for the same model (so Python's load_solver
// and `evokit update` accept it).
TEST(IoFingerprint, SolverFilesAgreeWithPython) {
  ESAgent agent;
  agent.load_config(data_path("adam.prototxt"));
  agent.load_inference_model(data_path("iter1"));
  agent.init_solver();
  agent.load_solver(data_path("iter1"));  // checks model_fingerprint

  TempDir dir;
  agent.save_solver(dir.path());
  const proto::SolverState saved = read_solver_state(dir.file("solver.pb"));
  const proto::SolverState python = read_solver_state(data_path("iter1/solver.pb"));
  EXPECT_EQ(saved.fingerprint_version(), 2);
  EXPECT_EQ(python.fingerprint_version(), 2);
  EXPECT_EQ(saved.model_fingerprint(), python.model_fingerprint());
  EXPECT_EQ(saved.params_fingerprint(), python.params_fingerprint());

  // After an update: the fingerprint of Python's iteration-2 model.
  agent.set_sampling_stream(7);
  std::vector<ESAgent> clones;
  for (int i = 0; i < 4; ++i) clones.push_back(agent.clone());
  std::vector<proto::SamplingInfo> infos;
  for (ESAgent& clone : clones) infos.push_back(clone.add_noise());
  agent.update(infos, expected_floats("iter1_rewards"));
  agent.save_solver(dir.path());
  EXPECT_EQ(read_solver_state(dir.file("solver.pb")).params_fingerprint(),
            python_fingerprint("iter2.params"));
}

TEST(IoFingerprint, RefusesAnotherModelOrVersion) {
  TempDir dir;
  proto::SolverState state = read_solver_state(data_path("iter1/solver.pb"));
  const auto load = [&](const proto::SolverState& s) {
    write_solver_state(dir.file("solver.pb"), s);
    ESAgent agent;
    agent.load_config(data_path("adam.prototxt"));
    agent.load_inference_model(data_path("iter1"));
    agent.init_solver();
    agent.load_solver(dir.path());
  };
  proto::SolverState other = state;
  other.set_model_fingerprint(std::string(64, 'a'));
  EXPECT_THROW_WITH(load(other), SolverFileError,
                    "solver.pb: solver state belongs to another model than " +
                        data_path("iter1/model.onnx") + " (graph fingerprint "
                        "aaaaaaaaaaaa, loaded model " +
                        state.model_fingerprint().substr(0, 12) + ", fingerprint version 2)");
  // A file of the previous Python version (no fingerprint_version).
  EXPECT_THROW_WITH(load(read_solver_state(data_path("solver_v1.pb"))), SolverFileError,
                    "solver.pb: solver state has fingerprint version 1, this library verifies "
                    "only version 2 (version 1 files come from an older EvoKit: load and save "
                    "them once with the Python package, which still verifies version 1)");
  proto::SolverState newer = state;
  newer.set_fingerprint_version(3);
  EXPECT_THROW_WITH(load(newer), SolverFileError,
                    "fingerprint version 3, this library verifies only version 2 (a newer EvoKit "
                    "wrote it)");
}

}  // namespace
}  // namespace evokit::io
