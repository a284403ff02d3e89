"""PARL EvoKit's "Example for Online Products", program for program, against
the `evokit` pipeline.

The example's three programs, with EvoKit's ESAgent in their place:

- init_solver: load_config, load_inference_model(model_dir_0), init_solver,
  save_solver(model_dir_0);
- online_sampling: load_config, load_inference_model(model_dir_k),
  load_solver(model_dir_k) (no init_solver), a clone per sample, add_noise,
  one CartPole-v1 episode each, and the log written raw as PARL writes it:
  per sample a float32 reward, an int32 size and the serialized SamplingInfo;
- offline_update: load_config, load_inference_model(model_dir_k),
  load_solver(model_dir_k), the raw log read back, update,
  save_inference_model + save_solver into model_dir_{k+1}.

They run here in Python and as the C++ programs of demo/cpp
(evokit_init_solver, evokit_online_sampling --model_dir,
evokit_offline_update, built into build-py/cmake/cpp/io by
`pip install '.[test]' -C cmake.define.EVOKIT_BUILD_TESTS=ON`; the test fails
if they are missing), for three iterations each, next to three iterations of
`evokit init-solver` / `evokit sample` / `evokit update` from the same model.
The programs' samples are those `evokit sample --seed 0` draws: the agents'
sampling stream is the sampler's seed (0, the default of both) and each
episode starts from `episode_seeds(0, k, pair, 1, SAMPLER_TAG)`, the seed
`evokit sample` gives it. Then every iteration's model.onnx is the
warehouse's byte for byte, and so is solver.pb.
"""

import hashlib
import os
import shutil
import struct
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from evokit import ESAgent
from evokit import evokit_pb2 as pb
from evokit.evaluation.seeds import SAMPLER_TAG, episode_seeds
from evokit.online.samplelog import read_log
from evokit.statefile import read_state_file

from helpers import read_raw_log

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONFIG = os.path.join(ROOT, "configs", "cartpole.prototxt")  # antithetic Gaussian sampling, Adam
# Where the C++ programs are built: the persistent build directory of
# `pip install` (cmake/skbuild_persistent.cmake), or EVOKIT_CMAKE_BUILD_DIR.
BUILD_DIR = os.environ.get("EVOKIT_CMAKE_BUILD_DIR", os.path.join(ROOT, "build-py", "cmake"))
CPP_PROGRAMS = ("init_solver", "online_sampling", "offline_update")

ITERATIONS = 3
NUM_SAMPLES = 10  # even: antithetic pairs
SAMPLER = 0       # the sampler's seed: `evokit sample --seed`, the agents' sampling stream


def evokit_cli(*args):
    proc = subprocess.run([sys.executable, "-P", "-m", "evokit.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"evokit {' '.join(map(str, args))}:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """The initial model and a warehouse after ITERATIONS updates of the
    `evokit` pipeline (its logs beside it)."""
    work = tmp_path_factory.mktemp("pipeline")
    model, warehouse = work / "init_model.onnx", work / "warehouse"
    evokit_cli("init-model", "--env", "CartPole-v1", "--hidden", 8, "--seed", 0, "-o", model)
    evokit_cli("init-solver", "--config", CONFIG, "--model", model, "--warehouse", warehouse)
    for k in range(ITERATIONS):
        log = work / f"sampling_log_{k}"
        evokit_cli("sample", "--warehouse", warehouse, "--env", "CartPole-v1", "--num-samples",
                   NUM_SAMPLES, "--seed", SAMPLER, "--log", log)
        out = evokit_cli("update", "--warehouse", warehouse, "--log", log)
        assert f"update {k} -> {k + 1}: used {NUM_SAMPLES} samples" in out
    return work


# ---- the programs in Python ---------------------------------------------------


def load_agent(model_dir, config_path) -> ESAgent:
    """The first three calls of online_sampling and offline_update."""
    agent = ESAgent()
    agent.load_config(config_path)
    agent.load_inference_model(model_dir)
    agent.load_solver(model_dir)  # no init_solver(): load_solver builds the solver
    return agent


def init_solver(model_dir, config_path):
    agent = ESAgent()
    agent.load_config(config_path)
    agent.load_inference_model(model_dir)
    agent.init_solver()
    agent.save_solver(model_dir)


def evaluate(env, agent, seed) -> float:
    obs, _ = env.reset(seed=seed)
    total = 0.0
    while True:
        obs, reward, terminated, truncated, _ = env.step(int(np.argmax(agent.predict(obs))))
        total += reward
        if terminated or truncated:
            return total


def online_sampling(model_dir, config_path, log_path):
    agent = load_agent(model_dir, config_path)
    agent.sampling_stream = SAMPLER
    k, antithetic = agent.model_iter_id, agent.config.solver.antithetic
    sampling_agents = [agent.clone() for _ in range(NUM_SAMPLES)]
    env = gym.make("CartPole-v1")
    sampling_infos, rewards = [], []
    for i, sampling_agent in enumerate(sampling_agents):
        sampling_infos.append(sampling_agent.add_noise())
        seed = episode_seeds(SAMPLER, k, i // 2 if antithetic else i, 1, SAMPLER_TAG)[0]
        rewards.append(evaluate(env, sampling_agent, seed))
    env.close()
    # save sampling information and log in binary format
    with open(log_path, "wb") as log_stream:
        for info, reward in zip(sampling_infos, rewards):
            data = info.SerializeToString()
            log_stream.write(struct.pack("<f", reward))
            log_stream.write(struct.pack("<i", len(data)))
            log_stream.write(data)


def offline_update(model_dir, updated_model_dir, config_path, log_path):
    agent = load_agent(model_dir, config_path)
    samples = read_raw_log(log_path)
    agent.update([info for info, _ in samples], [reward for _, reward in samples])
    os.makedirs(updated_model_dir)
    agent.save_inference_model(updated_model_dir)
    agent.save_solver(updated_model_dir)


@pytest.fixture(scope="module")
def python_programs(pipeline, tmp_path_factory):
    """The model warehouse of the Python programs after ITERATIONS loops."""
    work = tmp_path_factory.mktemp("python_programs")
    model_dir = work / "model_warehouse"
    os.makedirs(model_dir / "model_dir_0")
    shutil.copy(pipeline / "init_model.onnx", model_dir / "model_dir_0" / "model.onnx")
    init_solver(model_dir / "model_dir_0", CONFIG)
    for epoch in range(ITERATIONS):
        online_sampling(model_dir / f"model_dir_{epoch}", CONFIG, work / f"sampling_log_{epoch}")
        offline_update(model_dir / f"model_dir_{epoch}", model_dir / f"model_dir_{epoch + 1}", CONFIG,
                       work / f"sampling_log_{epoch}")
    return work


# ---- the C++ programs ---------------------------------------------------------


@pytest.fixture(scope="module")
def cpp_programs():
    paths = {name: os.path.join(BUILD_DIR, "cpp", "io", f"evokit_{name}") for name in CPP_PROGRAMS}
    missing = [p for p in paths.values() if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"the C++ programs of demo/cpp are not built: {', '.join(missing)} missing; "
                    f"build them with pip install '.[test]' -C cmake.define.EVOKIT_BUILD_TESTS=ON "
                    f"(or set EVOKIT_CMAKE_BUILD_DIR to the build directory that has them)")
    return paths


def run(program, *args):
    proc = subprocess.run([program, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{program} {' '.join(map(str, args))}:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def cpp_run(pipeline, cpp_programs, tmp_path_factory):
    """The model warehouse of the C++ programs after ITERATIONS loops, run as
    PARL's script runs them (gflags' --name="value")."""
    work = tmp_path_factory.mktemp("cpp_programs")
    model_dir = work / "model_warehouse"
    os.makedirs(model_dir / "model_dir_0")
    shutil.copy(pipeline / "init_model.onnx", model_dir / "model_dir_0" / "model.onnx")
    run(cpp_programs["init_solver"], f"--model_dir={model_dir / 'model_dir_0'}",
        f"--config_path={CONFIG}")
    for epoch in range(ITERATIONS):
        log = work / f"sampling_log_{epoch}"
        out = run(cpp_programs["online_sampling"], f"--log_path={log}",
                  f"--model_dir={model_dir / f'model_dir_{epoch}'}", f"--config_path={CONFIG}",
                  "--num-samples", NUM_SAMPLES, "--seed", SAMPLER, "--threads", 2)
        assert out.startswith(f"sampled {NUM_SAMPLES} at iteration {epoch}:")
        out = run(cpp_programs["offline_update"], f"--log_path={log}",
                  f"--model_dir={model_dir / f'model_dir_{epoch}'}",
                  f"--updated_model_dir={model_dir / f'model_dir_{epoch + 1}'}",
                  f"--config_path={CONFIG}")
        assert out.startswith(f"update {epoch} -> {epoch + 1}: used {NUM_SAMPLES} samples")
    return work


# ---- the comparisons ----------------------------------------------------------


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def assert_iteration_is_the_warehouse_s(model_dir, warehouse, k):
    """model_dir's model.onnx and solver.pb are iteration k's byte for byte."""
    iteration = warehouse / f"model_iter_id-{k}"
    model = read(model_dir / "model.onnx")
    assert model == read(iteration / "model.onnx"), f"model.onnx of iteration {k}"
    assert read(model_dir / "solver.pb") == read(iteration / "solver.pb"), f"solver.pb of iteration {k}"
    state = read_state_file(str(model_dir / "solver.pb"), pb.SolverState())
    assert state.steps == k and state.model_sha256 == hashlib.sha256(model).hexdigest()


@pytest.mark.parametrize("programs", ["python_programs", "cpp_run"])
def test_three_iterations_of_the_programs_equal_the_pipeline_s(programs, pipeline, request):
    work = request.getfixturevalue(programs)
    model_dir, warehouse = work / "model_warehouse", pipeline / "warehouse"
    for k in range(1, ITERATIONS + 1):
        assert_iteration_is_the_warehouse_s(model_dir / f"model_dir_{k}", warehouse, k)
    # model_dir_0 kept the model it was given; its solver.pb is init_solver's,
    # which is also the warehouse's iteration 0
    assert read(model_dir / "model_dir_0" / "solver.pb") == read(
        warehouse / "model_iter_id-0" / "solver.pb")
    # The raw logs hold the samples of the pipeline's logs: the same keys and rewards.
    for k in range(ITERATIONS):
        raw = read_raw_log(work / f"sampling_log_{k}")
        records = read_log(pipeline / f"sampling_log_{k}").records
        assert [(info.SerializeToString(), reward) for info, reward in raw] == [
            (r.record.info.SerializeToString(), np.float32(r.record.reward)) for r in records]
        assert len({info.SerializeToString() for info, _ in raw}) == NUM_SAMPLES


def test_the_cpp_programs_write_the_python_programs_bytes(python_programs, cpp_run):
    """The raw logs and every iteration's files, from either language."""
    for k in range(ITERATIONS):
        name = f"sampling_log_{k}"
        assert read(cpp_run / name) == read(python_programs / name), name
    for k in range(ITERATIONS + 1):
        for name in ("model.onnx", "solver.pb"):
            path = os.path.join("model_warehouse", f"model_dir_{k}", name)
            assert read(cpp_run / path) == read(python_programs / path), path


def test_evokit_update_does_not_read_a_raw_log(pipeline, python_programs, tmp_path):
    """`evokit update` reads EvoKit's framed sampling logs only (their records
    carry the fingerprints it checks samples against): a raw log is skipped
    as bad bytes, and the warehouse stays where it was."""
    warehouse = tmp_path / "warehouse"
    shutil.copytree(pipeline / "warehouse", warehouse)
    raw = python_programs / "sampling_log_0"
    proc = subprocess.run([sys.executable, "-P", "-m", "evokit.cli", "update", "--warehouse",
                           warehouse, "--log", raw], capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [
        f"{raw}: skipped {os.path.getsize(raw)} bytes at offset 0: not a record (no magic)",
        f"no usable samples: warehouse left at iteration {ITERATIONS}"])
    assert sorted(os.listdir(warehouse)) == sorted(os.listdir(pipeline / "warehouse"))
