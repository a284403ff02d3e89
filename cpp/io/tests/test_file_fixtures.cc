// The legacy file fixtures (tests/fixtures/files), written once by the Python
// package (tests/fixtures/files/make_files.py, frozen), read and continued by
// this library: every result must equal what the Python package recorded in
// expected.txt (expected.json flattened to `dotted.name value...` lines by
// tests/file_fixture_steps.py), bit for bit. tests/test_file_fixtures.py runs
// the same steps in Python.
//
// Python-only, so only read here:
//   - resuming a training run (`evokit train --resume`): the training loop,
//     its evaluators and gymnasium's environments have no C++ counterpart;
//     here the checkpoint reads, and its solver state loads onto its model
//     and is the run's solver.pb;
//   - `evokit update`'s bookkeeping (dropping applied records by
//     consumed.pb): this library has no update pipeline; the test applies
//     the same rule to the logs and makes the same update with the agent;
//   - onnxruntime's outputs (expected.json's predict.*.onnxruntime): this
//     library runs models natively only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/es_agent.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/sample_log.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/state_file.h"
#include "evokit/io/warehouse.h"
#include "evokit/solver.h"
#include "io_test_util.h"
#include "raw_log.h"  // demo/cpp: PARL EvoKit's raw sampling log

namespace evokit::io {
namespace {

using testing::read_bytes;
using testing::TempDir;

std::string Fixture(const std::string& rel) { return std::string(EVOKIT_FILE_FIXTURES) + "/" + rel; }

// expected.txt: each name and the rest of its line.
const std::map<std::string, std::string>& Expected() {
  static const std::map<std::string, std::string> values = [] {
    std::map<std::string, std::string> out;
    for (const auto& [name, rest] : testing::file_lines(Fixture("expected.txt"))) out[name] = rest;
    return out;
  }();
  return values;
}

bool Has(const std::string& name) { return Expected().count(name) != 0; }

const std::string& Want(const std::string& name) {
  const auto it = Expected().find(name);
  if (it == Expected().end()) throw std::out_of_range("expected.txt has no " + name);
  return it->second;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::int64_t WantInt(const std::string& name) { return std::stoll(Want(name)); }
double ToDouble(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

std::vector<double> WantDoubles(const std::string& name) {
  std::vector<double> out;
  for (const std::string& w : Words(Want(name))) out.push_back(ToDouble(w));
  return out;
}

// X of every name PREFIX X SUFFIX in expected.txt, in name order.
std::vector<std::string> Keys(const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& [name, rest] : Expected()) {
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
  }
  return out;
}

std::uint64_t DoubleBits(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// float32 values as 8 hex digits of their bits, and back.
std::vector<std::string> FloatBits(const std::vector<float>& values) {
  std::vector<std::string> out;
  for (const float v : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    char text[9];
    std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(bits));
    out.emplace_back(text);
  }
  return out;
}

std::vector<float> FloatsOfBits(const std::vector<std::string>& words) {
  std::vector<float> out;
  for (const std::string& w : words) {
    const auto bits = static_cast<std::uint32_t>(std::stoul(w, nullptr, 16));
    float v;
    std::memcpy(&v, &bits, sizeof v);
    out.push_back(v);
  }
  return out;
}

std::string FileSha(const std::string& path) { return sha256_hex(read_bytes(path)); }
std::string ParamsSha(const std::vector<float>& params) { return sha256_hex(encode_floats(params)); }
std::string Hex(const std::string& bytes) {
  std::string hex;
  char byte[3];
  for (const unsigned char c : bytes) {
    std::snprintf(byte, sizeof byte, "%02x", c);
    hex += byte;
  }
  return hex;
}

// A sampling-log record's id (ConsumedSamples.record_ids): the first 16
// bytes of sha256(payload).
std::string RecordId(const proto::SampleRecord& record) {
  Sha256 h;
  h.update(record.SerializeAsString());
  const auto digest = h.digest();
  return std::string(digest.begin(), digest.begin() + 16);
}

// The config notes (a PARL-layout file) dropped while it lives.
class QuietConfigNotes {
 public:
  QuietConfigNotes() : previous_(set_config_note_handler({})) {}
  ~QuietConfigNotes() { set_config_note_handler(previous_); }

 private:
  ConfigNoteHandler previous_;
};

// A service's resume: load_config, load_inference_model, load_solver.
ESAgent LoadAgent(const std::string& model_dir, const std::string& config) {
  QuietConfigNotes quiet;
  ESAgent agent;
  agent.load_config(config);
  agent.load_inference_model(model_dir);
  agent.load_solver(model_dir);
  return agent;
}

void ExpectInfo(const proto::SamplingInfo& info, const std::string& prefix) {
  std::vector<std::string> keys;
  for (const std::int64_t k : info.key()) keys.push_back(std::to_string(k));
  EXPECT_EQ(keys, Words(Want(prefix + ".key"))) << prefix;
  EXPECT_EQ(info.model_iter_id(), WantInt(prefix + ".model_iter_id")) << prefix;
  EXPECT_EQ(info.mirrored(), Want(prefix + ".mirrored") == "1") << prefix;
}

// The centre's digest and those of the model.onnx and solver.pb saved for it.
void ExpectSaved(const ESAgent& agent, const std::string& prefix, const TempDir& dir) {
  EXPECT_EQ(ParamsSha(agent.params()), Want(prefix + ".params_sha256")) << prefix;
  EXPECT_EQ(FileSha(agent.save_inference_model(dir.path())), Want(prefix + ".model_sha256")) << prefix;
  EXPECT_EQ(FileSha(agent.save_solver(dir.path())), Want(prefix + ".solver_sha256")) << prefix;
}

// The message of a state file, checked by its trailer.
template <class M>
M ReadStateFile(const std::string& path) {
  std::string body, error;
  if (!unseal_state(path, read_bytes(path), body, error)) throw std::runtime_error(error);
  M message;
  if (!message.ParseFromString(body)) throw std::runtime_error(path + ": does not parse");
  return message;
}

std::unique_ptr<google::protobuf::MessageLite> StateMessage(const std::string& type) {
  if (type == "SolverState") return std::make_unique<proto::SolverState>();
  if (type == "WarehouseInfo") return std::make_unique<proto::WarehouseInfo>();
  if (type == "ConsumedSamples") return std::make_unique<proto::ConsumedSamples>();
  if (type == "TrainCheckpoint") return std::make_unique<proto::TrainCheckpoint>();
  if (type == "ObservationStats") return std::make_unique<proto::ObservationStats>();
  throw std::invalid_argument("no state file holds a " + type);
}

TEST(FileFixtures, ExpectedValuesAreThere) {
  EXPECT_EQ(Keys("solvers.", ".family").size(), 16u);
  EXPECT_EQ(Keys("configs.", ".text_sha256").size(), 5u);
  EXPECT_EQ(Keys("state_files.", ".message").size(), 27u);
  EXPECT_EQ(Words(Want("obs")).size(), 12u);
}

TEST(FileFixtures, ConfigsReadAsInPython) {
  QuietConfigNotes quiet;
  for (const std::string& rel : Keys("configs.", ".text_sha256")) {
    SCOPED_TRACE(rel);
    EXPECT_EQ(sha256_hex(config_to_text(load_config(Fixture(rel)))),
              Want("configs." + rel + ".text_sha256"));
  }
}

TEST(FileFixtures, ModelFingerprintsAsInPython) {
  const std::vector<std::string> models = Keys("fingerprints.", ".model");
  EXPECT_EQ(models.size(), 24u);
  for (const std::string& rel : models) {
    SCOPED_TRACE(rel);
    const OnnxModel model = OnnxModel::load(Fixture(rel));
    const std::string fingerprint = model_fingerprint(model);
    EXPECT_EQ(fingerprint, Want("fingerprints." + rel + ".model"));
    EXPECT_EQ(params_fingerprint(fingerprint, model.parameters()),
              Want("fingerprints." + rel + ".params"));
  }
}

TEST(FileFixtures, NativeModelOutputsAsInPython) {
  const std::vector<float> obs = FloatsOfBits(Words(Want("obs")));
  const std::vector<std::string> models = Keys("predict.", ".native");
  EXPECT_EQ(models.size(), 3u);
  for (const std::string& rel : models) {
    SCOPED_TRACE(rel);
    ESAgent agent;
    agent.load_inference_model(Fixture(rel));
    EXPECT_EQ(FloatBits(agent.predict(obs, 3)), Words(Want("predict." + rel + ".native")));
  }
}

TEST(FileFixtures, StateFilesKeepTheirTrailersAndBodies) {
  for (const std::string& rel : Keys("state_files.", ".message")) {
    SCOPED_TRACE(rel);
    const std::string prefix = "state_files." + rel;
    const std::string bytes = read_bytes(Fixture(rel));
    std::string body, error;
    ASSERT_TRUE(unseal_state(Fixture(rel), bytes, body, error)) << error;
    EXPECT_EQ(seal_state(body), bytes);
    EXPECT_EQ(static_cast<std::int64_t>(body.size()), WantInt(prefix + ".body_bytes"));
    const auto message = StateMessage(Want(prefix + ".message"));
    ASSERT_TRUE(message->ParseFromString(body));
    EXPECT_EQ(message->SerializeAsString() == body, Want(prefix + ".reserialized_equal") == "1");
  }
}

TEST(FileFixtures, EverySolverContinuesAsInPython) {
  const std::vector<std::string> names = Keys("solvers.", ".family");
  std::set<std::string> families;
  for (const std::string& name : names) families.insert(Want("solvers." + name + ".family"));
  const std::vector<std::string> registered = solver_families();
  EXPECT_EQ(families, std::set<std::string>(registered.begin(), registered.end()));
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string p = "solvers." + name + ".";
    const std::string dir = Fixture("solvers/" + name);
    ESAgent agent = LoadAgent(dir, dir + "/config.prototxt");
    EXPECT_EQ(proto::SamplingConfig::Type_Name(agent.config().solver().sampling().type()),
              Want(p + "family"));
    EXPECT_EQ(proto::OptimizerConfig::Type_Name(agent.config().solver().optimizer().type()),
              Want(p + "optimizer"));
    EXPECT_EQ(agent.model_iter_id(), WantInt(p + "continuation.loaded_iteration"));
    agent.set_sampling_stream(static_cast<std::uint64_t>(WantInt(p + "stream")));
    std::vector<ESAgent> clones;
    for (int i = 0; i < agent.config().solver().population_size(); ++i) clones.push_back(agent.clone());
    // As Python: rounds of the clones' add_noise while the solver says the
    // samples are not enough (GA elite re-evaluation), at most 4.
    const std::vector<double> rewards = WantDoubles(p + "continuation.rewards");
    std::vector<proto::SamplingInfo> infos;
    for (int round = 0; round < 4 && infos.size() < rewards.size(); ++round) {
      for (ESAgent& clone : clones) infos.push_back(clone.add_noise());
      if (infos.size() > rewards.size()) break;
      const std::vector<double> prefix(rewards.begin(), rewards.begin() + static_cast<long>(infos.size()));
      if (agent.shortfall(infos, prefix).empty()) break;
    }
    ASSERT_EQ(infos.size(), rewards.size());
    for (std::size_t i = 0; i < infos.size(); ++i) {
      ExpectInfo(infos[i], p + "continuation.infos." + std::to_string(i));
    }
    agent.update(infos, rewards);
    EXPECT_EQ(agent.model_iter_id(), WantInt(p + "continuation.after.model_iter_id"));
    TempDir out;
    ExpectSaved(agent, p + "continuation.after", out);
  }
}

TEST(FileFixtures, SamplingLogsReadAsInPython) {
  const std::vector<std::string> logs = Keys("logs.", ".records.0.id");
  EXPECT_EQ(logs.size(), 7u);
  for (const std::string& rel : logs) {
    SCOPED_TRACE(rel);
    const LogContents log = read_log(Fixture(rel));
    const std::string p = "logs." + rel + ".";
    std::string again;
    for (std::size_t i = 0; i < log.records.size(); ++i) {
      const std::string r = p + "records." + std::to_string(i) + ".";
      const proto::SampleRecord& record = log.records[i].record;
      EXPECT_EQ(Hex(RecordId(record)), Want(r + "id"));
      EXPECT_EQ(static_cast<std::int64_t>(log.records[i].offset), WantInt(r + "offset"));
      ExpectInfo(record.info(), r + "info");
      EXPECT_EQ(DoubleBits(record.reward()), DoubleBits(ToDouble(Want(r + "reward")))) << r;
      EXPECT_EQ(record.config_fingerprint(), Want(r + "config_fingerprint"));
      EXPECT_EQ(record.model_fingerprint(), Want(r + "model_fingerprint"));
      EXPECT_EQ(std::to_string(record.sampler_id()), Want(r + "sampler_id"));
      EXPECT_EQ(record.env_steps(), WantInt(r + "env_steps"));
      EXPECT_EQ(DoubleBits(record.time()), DoubleBits(ToDouble(Want(r + "time")))) << r;
      again += encode_record(record);
    }
    EXPECT_FALSE(Has(p + "records." + std::to_string(log.records.size()) + ".id"));
    for (std::size_t i = 0; i < log.skipped.size(); ++i) {
      const std::string s = p + "skipped." + std::to_string(i) + ".";
      EXPECT_EQ(static_cast<std::int64_t>(log.skipped[i].offset), WantInt(s + "offset"));
      EXPECT_EQ(static_cast<std::int64_t>(log.skipped[i].length), WantInt(s + "length"));
      EXPECT_EQ(log.skipped[i].reason, Want(s + "reason"));
    }
    EXPECT_FALSE(Has(p + "skipped." + std::to_string(log.skipped.size()) + ".offset"));
    if (log.skipped.empty()) {
      EXPECT_EQ(again, read_bytes(Fixture(rel)));  // re-encoded byte for byte
    }
  }
}

// PARL EvoKit's offline_update program (demo/cpp/offline_update.cc) on the
// raw log the C++ online_sampling program wrote.
TEST(FileFixtures, ParlOfflineUpdateFromTheRawLogAsInPython) {
  const evokit_demo::RawSamples samples = evokit_demo::read_raw_log(Fixture("parl/sampling_log_0"));
  ASSERT_EQ(samples.infos.size(), 10u);
  for (std::size_t i = 0; i < samples.infos.size(); ++i) {
    const std::string p = "parl.samples." + std::to_string(i);
    ExpectInfo(samples.infos[i], p);
    EXPECT_EQ(static_cast<double>(samples.rewards[i]), ToDouble(Want(p + ".reward")));
  }
  EXPECT_FALSE(Has("parl.samples.10.key"));
  ESAgent agent = LoadAgent(Fixture("parl/model_dir_0"), Fixture("configs/parl.prototxt"));
  agent.update(samples.infos, samples.rewards);
  EXPECT_EQ(agent.model_iter_id(), WantInt("parl.after.model_iter_id"));
  TempDir out;
  ExpectSaved(agent, "parl.after", out);
}

// The ids of the records iteration k's update consumed (consumed.pb), as
// sorted hex.
std::vector<std::string> ConsumedIds(const Warehouse& wh, std::int64_t k) {
  const std::string path = wh.iteration_dir(k) + "/consumed.pb";
  std::vector<std::string> out;
  if (!std::filesystem::exists(path)) return out;
  proto::ConsumedSamples consumed;
  read_state_file<WarehouseError>(path, consumed, "consumed-samples file");
  for (const std::string& id : consumed.record_ids()) out.push_back(Hex(id));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FileFixtures, WarehouseReadsAsInPython) {
  const Warehouse wh(Fixture("warehouse/W"));
  std::vector<std::string> kept;
  for (const std::int64_t k : wh.iterations()) kept.push_back(std::to_string(k));
  EXPECT_EQ(kept, Keys("warehouse.iterations.", ".model_fingerprint"));
  for (const std::int64_t k : wh.iterations()) {
    SCOPED_TRACE(k);
    const std::string p = "warehouse.iterations." + std::to_string(k) + ".";
    EXPECT_EQ(wh.model_fingerprint(k), Want(p + "model_fingerprint"));
    EXPECT_EQ(wh.config_fingerprint(), Want(p + "config_fingerprint"));
    EXPECT_EQ(ConsumedIds(wh, k), Words(Want(p + "consumed")));
    EXPECT_EQ(ParamsSha(wh.load_agent(k).params()), Want(p + "params_sha256"));
  }
  // Sampler 0 at iteration 2 draws what Python drew, and what sample_2.log holds.
  ESAgent agent = wh.load_agent(2);
  agent.set_sampling_stream(0);
  std::vector<ESAgent> clones;
  for (int i = 0; i < 8; ++i) clones.push_back(agent.clone());
  const LogContents log = read_log(Fixture("warehouse/logs/sample_2.log"));
  ASSERT_EQ(log.records.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const proto::SamplingInfo info = clones[i].add_noise();
    ExpectInfo(info, "warehouse.draws_2_stream_0." + std::to_string(i));
    EXPECT_EQ(info.SerializeAsString(), log.records[i].record.info().SerializeAsString());
  }
}

// `evokit update`'s next update of the warehouse: the records of its logs
// that no kept iteration consumed, those of the older iteration corrected by
// its parameters; the same model.onnx, solver.pb and consumed.pb as Python's
// iteration 3.
TEST(FileFixtures, WarehouseNextUpdateAsInPython) {
  const std::string p = "warehouse.next_update.";
  const Warehouse wh(Fixture("warehouse/W"));
  std::map<std::int64_t, ESAgent> agents;
  std::set<std::string> consumed;
  for (const std::int64_t k : wh.iterations()) {
    agents.emplace(k, wh.load_agent(k));
    for (const std::string& id : ConsumedIds(wh, k)) consumed.insert(id);  // hex
  }
  std::vector<proto::SamplingInfo> infos;
  std::vector<double> rewards;
  std::set<std::string> used_ids;  // sorted bytes, as consumed.pb lists them
  std::int64_t dropped = 0, older = 0;
  for (const std::string& name : Words(Want(p + "logs"))) {
    for (const LogRecord& rec : read_log(Fixture("warehouse/logs/" + name)).records) {
      const proto::SampleRecord& r = rec.record;
      EXPECT_EQ(r.config_fingerprint(), wh.config_fingerprint());
      EXPECT_EQ(r.model_fingerprint(), wh.model_fingerprint(r.info().model_iter_id()));
      if (consumed.count(Hex(RecordId(r))) != 0) {
        ++dropped;
        continue;
      }
      infos.push_back(r.info());
      rewards.push_back(r.reward());
      used_ids.insert(RecordId(r));
      older += r.info().model_iter_id() != wh.latest() ? 1 : 0;
    }
  }
  EXPECT_EQ(Want(p + "dropped.0.reason"), "already applied by an earlier update");
  EXPECT_EQ(dropped, WantInt(p + "dropped.0.count"));
  EXPECT_EQ(static_cast<std::int64_t>(infos.size()), WantInt(p + "used"));
  EXPECT_EQ(older, WantInt(p + "corrected"));

  ESAgent& agent = agents.at(wh.latest());
  EXPECT_EQ(agent.model_iter_id(), WantInt(p + "from_iteration"));
  const UpdateStats stats =
      agent.update(infos, rewards, [&](std::int64_t k) -> const std::vector<float>* {
        const auto it = agents.find(k);
        return it == agents.end() ? nullptr : &it->second.params();
      });
  EXPECT_EQ(static_cast<std::int64_t>(stats.num_corrected), WantInt(p + "corrected"));
  EXPECT_EQ(agent.model_iter_id(), WantInt(p + "to_iteration"));
  TempDir out;
  ExpectSaved(agent, "warehouse.next_update", out);
  // consumed.pb: the sorted ids of the records used.
  proto::ConsumedSamples ids;
  for (const std::string& id : used_ids) ids.add_record_ids(id);
  write_state_file(out.file("consumed.pb"), ids);
  EXPECT_EQ(FileSha(out.file("consumed.pb")), Want(p + "consumed_sha256"));
}

// Resuming the run is Python-only (see the top of this file): the checkpoint
// reads, its model is the run's, and its solver state loads onto it and
// gives the run's solver.pb byte for byte.
TEST(FileFixtures, TrainingCheckpointsLoadAsInPython) {
  const std::vector<std::string> runs = Keys("train_runs.", ".checkpoint.generation");
  EXPECT_EQ(runs.size(), 2u);
  for (const std::string& name : runs) {
    SCOPED_TRACE(name);
    const std::string p = "train_runs." + name + ".checkpoint.";
    const auto ckpt = ReadStateFile<proto::TrainCheckpoint>(Fixture(name + "/checkpoint.pb"));
    EXPECT_EQ(ckpt.generation(), WantInt(p + "generation"));
    EXPECT_EQ(ckpt.env_steps(), WantInt(p + "env_steps"));
    EXPECT_EQ(sha256_hex(ckpt.model()), Want(p + "model_sha256"));
    EXPECT_EQ(sha256_hex(ckpt.config()), Want(p + "config_sha256"));
    EXPECT_EQ(ckpt.solver().steps(), WantInt(p + "solver_steps"));
    EXPECT_EQ(ckpt.solver().family(), Want(p + "solver_family"));
    EXPECT_EQ(ckpt.has_obs_stats(), Has(p + "obs_stats.count"));
    EXPECT_EQ(sha256_hex(ckpt.model()), ckpt.solver().model_sha256());

    TempDir dir;
    testing::write_bytes(dir.file("model.onnx"), ckpt.model());
    ESAgent agent;
    agent.set_config(parse_config(ckpt.config(), name + "/checkpoint.pb", true), name);
    agent.load_inference_model(dir.file("model.onnx"));
    agent.load_solver_state(ckpt.solver(), Fixture(name + "/checkpoint.pb"), true);
    EXPECT_EQ(agent.model_iter_id(), WantInt(p + "solver_steps"));
    EXPECT_EQ(FileSha(agent.save_solver(dir.path())), FileSha(Fixture(name + "/solver.pb")));
  }
}

// obs_norm.pb of the run with observation normalisation, and the same
// statistics in its checkpoint.
TEST(FileFixtures, ObservationStatisticsAsInPython) {
  const auto ckpt = ReadStateFile<proto::TrainCheckpoint>(Fixture("train_obsnorm/checkpoint.pb"));
  const std::vector<std::pair<std::string, proto::ObservationStats>> all = {
      {"obs_norm.", ReadStateFile<proto::ObservationStats>(Fixture("train_obsnorm/obs_norm.pb"))},
      {"train_runs.train_obsnorm.checkpoint.obs_stats.", ckpt.obs_stats()}};
  for (const auto& [p, s] : all) {
    SCOPED_TRACE(p);
    EXPECT_EQ(s.count(), WantInt(p + "count"));
    EXPECT_EQ(static_cast<double>(s.clip()), ToDouble(Want(p + "clip")));
    EXPECT_EQ(sha256_hex(encode_le(std::vector<double>(s.sum().begin(), s.sum().end()))),
              Want(p + "sum_sha256"));
    EXPECT_EQ(sha256_hex(encode_le(std::vector<double>(s.sumsq().begin(), s.sumsq().end()))),
              Want(p + "sumsq_sha256"));
  }
}

}  // namespace
}  // namespace evokit::io
