#include "evokit/io/warehouse.h"

#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "evokit/io/config.h"
#include "evokit/io/errors.h"
#include "evokit/io/fingerprint.h"
#include "evokit/io/sha256.h"
#include "evokit/io/solver_state.h"
#include "evokit/io/state_file.h"
#include "evokit/noise.h"
#include "io_test_util.h"

namespace evokit::io {
namespace {

namespace fs = std::filesystem;
using testing::data_path;
using testing::TempDir;

// A warehouse laid out as Python writes it, from the fixtures: iteration 1
// is the fixtures' iter1/.
void MakeWarehouse(const std::string& w, int noise_version = kNoiseVersion) {
  fs::create_directories(w + "/model_iter_id-1");
  fs::copy_file(data_path("iter1/model.onnx"), w + "/model_iter_id-1/model.onnx");
  // solver.pb records the model file's sha256, as a warehouse iteration's does
  proto::SolverState state = read_solver_state(data_path("iter1/solver.pb"));
  state.set_model_sha256(sha256_hex(testing::read_bytes(data_path("iter1/model.onnx"))));
  write_solver_state(w + "/model_iter_id-1/solver.pb", state);
  proto::WarehouseInfo info;
  info.set_config(read_solver_state(data_path("iter1/solver.pb")).config());
  info.set_config_fingerprint(std::string(64, 'f'));
  if (noise_version != 0) info.set_noise_version(noise_version);  // 0: absent, as before version 3
  write_state_file(w + "/warehouse.pb", info);
}

TEST(Warehouse, FindsTheNewestCompleteIteration) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  fs::create_directories(w + "/model_iter_id-7");  // half-written: no files
  testing::write_bytes(w + "/model_iter_id-7/model.onnx", "");
  fs::create_directories(w + "/.tmp-model_iter_id-8-abc");  // a temporary dir
  fs::create_directories(w + "/model_iter_id-x");            // not an iteration
  const Warehouse wh(w);
  EXPECT_EQ(wh.iterations(), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(wh.latest(), 1);
  ASSERT_EQ(wh.problems().size(), 1u);
  EXPECT_NE(wh.problems()[0].find("model_iter_id-7 (solver.pb missing)"), std::string::npos);
  EXPECT_EQ(wh.config_fingerprint(), std::string(64, 'f'));
  EXPECT_EQ(wh.model_fingerprint(1),
            read_solver_state(data_path("iter1/solver.pb")).params_fingerprint());
  EXPECT_EQ(wh.config(1).solver().sampling().gaussian_sampling().cache_size(), 10000);

  ESAgent agent = wh.load_agent();
  EXPECT_EQ(agent.model_iter_id(), 1);
  EXPECT_EQ(agent.num_params(), 58u);
  EXPECT_EQ(agent.config().solver().optimizer().type(), proto::OptimizerConfig::ADAM);
}

// A CMA warehouse, as `evokit init-solver` + `evokit update` lay it out,
// written here by the C++ agent: load_agent restores the CMA state.
TEST(Warehouse, LoadsAnAgentOfAnyFamily) {
  TempDir dir;
  const std::string w = dir.file("W");
  ESAgent agent;
  agent.set_config(parse_config("solver { sampling { type: CMA_SAMPLING cma_sampling { sigma0: "
                                "0.3 } } population_size: 6 antithetic: false }"),
                   "cma");
  agent.load_inference_model(data_path("cartpole_h8.onnx"));
  agent.init_solver();
  std::vector<ESAgent> clones;
  for (int i = 0; i < 6; ++i) clones.push_back(agent.clone());
  std::vector<proto::SamplingInfo> infos;
  std::vector<double> rewards;
  for (ESAgent& clone : clones) {
    infos.push_back(clone.add_noise());
    rewards.push_back(static_cast<double>(clone.predict({0.1f, 0.2f, -0.1f, 0.0f})[0]));
  }
  agent.update(infos, rewards);
  const std::string k1 = w + "/model_iter_id-1";
  agent.save_inference_model(k1);
  agent.save_solver(k1);
  proto::WarehouseInfo info;
  info.set_config(config_to_text(agent.config()));
  info.set_config_fingerprint(std::string(64, 'c'));
  info.set_noise_version(kNoiseVersion);
  write_state_file(w + "/warehouse.pb", info);

  const Warehouse wh(w);
  EXPECT_EQ(wh.latest(), 1);
  EXPECT_EQ(wh.config(1).solver().sampling().type(), proto::SamplingConfig::CMA_SAMPLING);
  EXPECT_EQ(wh.model_fingerprint(1), agent.solver_state().params_fingerprint());
  ESAgent loaded = wh.load_agent();
  EXPECT_EQ(loaded.model_iter_id(), 1);
  EXPECT_TRUE(evokit::testing::SameBits(loaded.params(), agent.params()));
  EXPECT_EQ(loaded.solver_state().SerializeAsString(), agent.solver_state().SerializeAsString());
  // Its clones draw the members the original's next clones would.
  EXPECT_EQ(loaded.clone().add_noise().SerializeAsString(),
            agent.clone().add_noise().SerializeAsString());
}

// The files opened in directory `dir` while f() runs, by name, with how
// often each was opened (inotify IN_OPEN events).
template <class F>
std::map<std::string, int> OpensIn(const std::string& dir, F&& f) {
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0 || inotify_add_watch(fd, dir.c_str(), IN_OPEN) < 0) {
    ADD_FAILURE() << "inotify on " << dir << " failed";
    f();
    return {};
  }
  f();
  std::map<std::string, int> opens;
  alignas(inotify_event) char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    for (char* at = buffer; at < buffer + n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(at);
      if (event->len > 0) ++opens[event->name];
      at += sizeof(inotify_event) + event->len;
    }
  }
  close(fd);
  return opens;
}

// One call reads iteration k, each file once, and verifies it; the agent
// takes it without reading or checking anything again, and is load_agent's
// agent and the model directory's agent, bit for bit.
TEST(WarehouseIteration, ReadsEachFileOnceAndAnAgentTakesIt) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  const std::string k1 = w + "/model_iter_id-1";
  const Warehouse wh(w);
  Iteration it;
  const std::map<std::string, int> once{{"model.onnx", 1}, {"solver.pb", 1}};
  EXPECT_EQ(OpensIn(k1, [&] { it = wh.iteration(1); }), once);
  EXPECT_EQ(OpensIn(k1, [&] { wh.load_agent(1); }), once);
  EXPECT_EQ(it.k, 1);
  EXPECT_EQ(it.directory, wh.iteration_dir(1));
  EXPECT_EQ(it.solver_path(), k1 + "/solver.pb");
  EXPECT_EQ(it.model->bytes(), testing::read_bytes(k1 + "/model.onnx"));
  EXPECT_EQ(sha256_hex(it.model->bytes()), it.state.model_sha256());
  EXPECT_EQ(it.state.SerializeAsString(), wh.solver_state(1).SerializeAsString());
  EXPECT_EQ(it.config.SerializeAsString(), wh.config(1).SerializeAsString());
  EXPECT_EQ(it.params_fingerprint, wh.model_fingerprint(1));
  EXPECT_EQ(it.params_fingerprint, params_fingerprint(model_fingerprint(*it.model), it.model->parameters()));
  EXPECT_EQ(it.config_fingerprint, std::string(64, 'f'));
  ASSERT_NE(it.graph, nullptr);
  EXPECT_THROW_WITH(ESAgent{Iteration{}}, std::logic_error, "the iteration holds no model");

  ESAgent loaded = wh.load_agent(1);
  ESAgent by_hand;
  by_hand.set_config(wh.config(1));
  by_hand.load_inference_model(k1);
  by_hand.load_solver(k1);
  fs::remove_all(k1);  // the iteration holds everything an agent needs
  fs::create_directories(k1);
  std::optional<ESAgent> made;
  EXPECT_TRUE(OpensIn(k1, [&] { made.emplace(it); }).empty());
  ESAgent& agent = *made;
  EXPECT_EQ(&agent.model(), it.model.get());  // shared, not copied
  EXPECT_EQ(&agent.graph(), it.graph.get());
  for (ESAgent* other : {&loaded, &by_hand}) {
    EXPECT_EQ(agent.model_iter_id(), other->model_iter_id());
    EXPECT_TRUE(evokit::testing::SameBits(agent.params(), other->params()));
    EXPECT_EQ(agent.solver_state().SerializeAsString(), other->solver_state().SerializeAsString());
  }
  EXPECT_EQ(agent.solver_state().params_fingerprint(), it.params_fingerprint);
  const std::string drawn = agent.clone().add_noise().SerializeAsString();
  EXPECT_EQ(loaded.clone().add_noise().SerializeAsString(), drawn);
  EXPECT_EQ(by_hand.clone().add_noise().SerializeAsString(), drawn);
}

// iteration() refuses a damaged or mismatched file as load_agent does: the
// same error type and message.
TEST(WarehouseIteration, RefusesWhatLoadAgentRefuses) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  const std::string solver = w + "/model_iter_id-1/solver.pb";
  const std::string model = w + "/model_iter_id-1/model.onnx";
  const std::string good_solver = testing::read_bytes(solver);
  const std::string good_model = testing::read_bytes(model);
  const auto expect_refused = [&](auto error, const std::string& needle) {
    using Error = decltype(error);
    const Warehouse wh(w);
    EXPECT_THROW_WITH(wh.iteration(1), Error, needle);
    EXPECT_THROW_WITH(wh.load_agent(1), Error, needle);
    testing::write_bytes(solver, good_solver);
    testing::write_bytes(model, good_model);
  };
  std::string damaged = good_model;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 1);
  testing::write_bytes(model, damaged);
  expect_refused(ModelError(""), model + ": its sha256 is " + sha256_hex(damaged) + ", " + solver +
                                     " records " + sha256_hex(good_model) +
                                     " for its model (model_sha256): the file is damaged, or the "
                                     "state is another model's");
  testing::write_bytes(solver, good_solver.substr(0, good_solver.size() - 1));
  expect_refused(SolverFileError(""), solver + ": ");
  proto::SolverState state = read_solver_state(solver);
  state.set_params_fingerprint(std::string(64, '0'));
  write_solver_state(solver, state);
  expect_refused(SolverFileError(""), model + ": its parameters are not those of the model " + solver +
                                          " was saved with (params fingerprint ");
  state = read_solver_state(solver);
  state.set_steps(3);
  write_solver_state(solver, state);
  expect_refused(WarehouseError(""), w + "/model_iter_id-1: solver state is at iteration 3, the "
                                         "directory says 1");
  state = read_solver_state(solver);
  state.set_optimizer(proto::OptimizerConfig::SGD);
  write_solver_state(solver, state);
  expect_refused(SolverFileError(""), solver + ": solver state is for optimizer SGD, the config asks for ADAM");
  EXPECT_EQ(Warehouse(w).iteration(1).state.SerializeAsString(), read_solver_state(solver).SerializeAsString());
}

TEST(WarehouseErrors, NotAWarehouse) {
  TempDir dir;
  EXPECT_THROW_WITH(Warehouse(dir.file("none")), WarehouseError, "none: no such warehouse");
  EXPECT_THROW_WITH(Warehouse(dir.path()), WarehouseError, "empty directory, not a warehouse");
  testing::write_bytes(dir.file("f"), "x");
  EXPECT_THROW_WITH(Warehouse(dir.file("f")), WarehouseError, "is not a directory");
  EXPECT_THROW_WITH(Warehouse(dir.path()), WarehouseError, "not a warehouse (warehouse.pb is missing)");
  testing::write_bytes(dir.file("warehouse.pb"), "\xff\xff\xff");
  EXPECT_THROW_WITH(Warehouse(dir.path()), WarehouseError,
                    "warehouse.pb: no sha256 trailer at its end (of 3 bytes)");
  testing::write_bytes(dir.file("warehouse.pb"), seal_state("\xff\xff\xff"));
  EXPECT_THROW_WITH(Warehouse(dir.path()), WarehouseError,
                    "warehouse.pb: not a warehouse info (the bytes do not parse as "
                    "evokit.proto.WarehouseInfo)");
}

// A warehouse of another noise definition: its logged keys would be rebuilt
// into different noise, so it is refused, naming both versions.
TEST(WarehouseErrors, AnotherNoiseVersion) {
  TempDir dir;
  MakeWarehouse(dir.file("old"), 0);
  EXPECT_THROW_WITH(Warehouse(dir.file("old")), WarehouseError,
                    "old: warehouse refers to noise version 2 (Philox4x32-10, EvoKit before "
                    "noise version 3), this EvoKit rebuilds noise version 4 (ARS4x32-5): its "
                    "keys would give different noise");
  MakeWarehouse(dir.file("v3"), 3);
  EXPECT_THROW_WITH(Warehouse(dir.file("v3")), WarehouseError,
                    "v3: warehouse refers to noise version 3 (ARS4x32-7, EvoKit before noise "
                    "version 4), this EvoKit rebuilds noise version 4 (ARS4x32-5)");
  MakeWarehouse(dir.file("new"), kNoiseVersion + 1);
  EXPECT_THROW_WITH(Warehouse(dir.file("new")), WarehouseError,
                    "new: warehouse refers to noise version 5 (a newer EvoKit)");
}

TEST(WarehouseErrors, NoCompleteIterationOrUnknownOne) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  fs::remove(w + "/model_iter_id-1/solver.pb");
  EXPECT_THROW_WITH(Warehouse{w}, WarehouseError,
                    "no complete iteration in the warehouse; ignoring half-written iteration");
  fs::copy_file(data_path("iter1/solver.pb"), w + "/model_iter_id-1/solver.pb");
  const Warehouse wh(w);
  EXPECT_THROW_WITH(wh.solver_state(3), WarehouseError, "iteration 3 is not in the warehouse (kept: 1)");
}

TEST(WarehouseErrors, InconsistentIteration) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  fs::rename(w + "/model_iter_id-1", w + "/model_iter_id-4");
  EXPECT_THROW_WITH(Warehouse(w).load_agent(), WarehouseError,
                    "solver state is at iteration 1, the directory says 4");
  // A solver.pb without params_fingerprint cannot give a model fingerprint.
  proto::SolverState s = read_solver_state(w + "/model_iter_id-4/solver.pb");
  s.clear_params_fingerprint();
  write_solver_state(w + "/model_iter_id-4/solver.pb", s);
  EXPECT_THROW_WITH(Warehouse(w).model_fingerprint(4), WarehouseError, "has no params_fingerprint");
}

// ---- damage replay -------------------------------------------------------
// Seeded random damages (a bit flipped, a byte changed, the file cut short)
// of every file a warehouse is read from (warehouse.pb, solver.pb,
// model.onnx): each is refused with one line naming the file (every byte is
// under a trailer or the model_sha256 solver.pb records), or else harmless
// (the loaded agent is bit-identical); never accepted silently, never
// another exception (proto/evokit.proto, "State files").

// What a load gives, to compare with the undamaged warehouse's.
std::string LoadAll(const std::string& w) {
  const Warehouse wh(w);
  ESAgent agent = wh.load_agent(1);
  const std::vector<float>& p = agent.params();
  return wh.info().SerializeAsString() + "|" + wh.model_fingerprint(1) + "|" +
         agent.solver_state().SerializeAsString() + "|" +
         std::string(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(float));
}

struct Figures {
  int trials = 0, refused = 0, harmless = 0, silent = 0, crashes = 0;
};

Figures Replay(const std::string& w, const std::string& file, int trials, std::uint64_t seed) {
  const std::string path = w + "/" + file;
  const std::string good = testing::read_bytes(path);
  const std::string baseline = LoadAll(w);
  std::mt19937_64 rng(seed);
  Figures f;
  for (int t = 0; t < trials; ++t) {
    std::string data = good;
    const std::size_t at = rng() % data.size();
    switch (t % 3) {
      case 0: data[at] = static_cast<char>(data[at] ^ (1u << (rng() % 8))); break;
      case 1: data[at] = static_cast<char>(data[at] + 1 + rng() % 255); break;
      default: data.resize(at);
    }
    testing::write_bytes(path, data);
    ++f.trials;
    try {
      if (LoadAll(w) == baseline) {
        ++f.harmless;
      } else {
        ++f.silent;
        ADD_FAILURE() << file << " trial " << t << ": accepted, and loads something else";
      }
    } catch (const std::invalid_argument& e) {  // every io error type is one
      ++f.refused;
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    } catch (const std::exception& e) {
      ++f.crashes;
      ADD_FAILURE() << file << " trial " << t << ": " << e.what();
    }
  }
  testing::write_bytes(path, good);
  EXPECT_EQ(LoadAll(w), baseline);
  return f;
}

// 60 damages per file; EVOKIT_DAMAGE_TRIALS=N for more (the figures are printed).
TEST(WarehouseDamage, RefusedOrHarmlessNeverSilent) {
  TempDir dir;
  const std::string w = dir.file("W");
  MakeWarehouse(w);
  const char* env = std::getenv("EVOKIT_DAMAGE_TRIALS");
  const int trials = env != nullptr ? std::atoi(env) : 60;
  for (const char* file :
       {"warehouse.pb", "model_iter_id-1/solver.pb", "model_iter_id-1/model.onnx"}) {
    const Figures f = Replay(w, file, trials, 16);
    std::cout << "damage replay " << file << ": trials " << f.trials << ", refused " << f.refused
              << ", harmless " << f.harmless << ", silent " << f.silent << ", crashes "
              << f.crashes << "\n";
    EXPECT_EQ(f.silent, 0) << file;
    EXPECT_EQ(f.crashes, 0) << file;
    EXPECT_EQ(f.refused, f.trials) << file;  // every byte under a trailer or model_sha256
  }
}

}  // namespace
}  // namespace evokit::io
