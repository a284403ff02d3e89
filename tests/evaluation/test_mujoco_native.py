"""Native MuJoCo (cpp/mujoco, evokit.evaluation.native_mujoco) against
gymnasium's own environments, bit for bit: every step of the five tasks
(observation, reward, terminated, truncated, from env.reset(seed=s)), whole
episodes of a population (VectorEvaluator's native mode against
SerialEvaluator) with and without observation normalisation, any thread
count; and the refusals (other arguments or environments, another library,
a MuJoCo error)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import evokit
from evokit import _core
from evokit.errors import EnvError, NativeFallbackWarning
from evokit.evaluation import native_mujoco
from evokit.evaluation.envs import native_env, native_env_steps
from evokit.evaluation.factory import make_evaluator
from evokit.evaluation.obsnorm import ObsNorm
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp

mujoco = pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install '.[mujoco]')")
if _core.mujoco_header_version() == 0:
    pytest.skip("EvoKit was built without native MuJoCo", allow_module_level=True)
try:
    native_mujoco.load("Hopper-v5")
except EnvError as exc:
    pytest.skip(str(exc), allow_module_level=True)

# Every MuJoCo task the extension registers: a new task is tested here by its registration.
TASKS = [t["name"] for t in _core.mujoco_tasks()]
ENTRY_POINT = {t["name"]: t["entry_point"] for t in _core.mujoco_tasks()}


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """MuJoCo's own handler logs warnings (Ant's XML has a deprecated
    attribute) to MUJOCO_LOG.TXT in the working directory: keep it out of
    the source tree."""
    monkeypatch.chdir(tmp_path)


# ---- every step -----------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_steps_equal_gymnasium(task):
    """Random float32 actions, half of the episodes far beyond the action
    bounds (MuJoCo clamps the control, the cost takes them as they are); one
    episode runs to the time limit where the task lets it (HalfCheetah and
    Swimmer never terminate)."""
    env = gymnasium.make(task)
    native = native_mujoco.NativeMujocoEnv(task)  # one simulation for every episode
    assert native.max_episode_steps == 1000
    rng = np.random.default_rng(sum(map(ord, task)))
    shape = env.action_space.shape
    outcomes = set()
    for episode, seed in enumerate([0, 1, 2**31 - 1, 98765]):
        obs, _ = env.reset(seed=seed)
        got = native.reset(seed)
        assert got.dtype == np.float64 and np.array_equal(got, obs), (task, seed)
        scale = 2.5 if episode % 2 else 0.3
        limit = 1000 if episode == 0 else 120
        for step in range(limit):
            action = (scale * rng.standard_normal(shape)).astype(np.float32)
            want = env.step(action)
            got = native.step(action)
            assert np.array_equal(got[0], want[0]), (task, seed, step)
            assert got[1] == want[1] and type(got[1]) is float, (task, seed, step, got[1], want[1])
            assert got[2:] == tuple(want[2:4]), (task, seed, step)
            if want[2] or want[3]:
                outcomes.add("terminated" if want[2] else "truncated")
                break
    env.close()
    assert outcomes, task  # an episode ended: the task's termination or its time limit
    if task in ("HalfCheetah-v5", "Swimmer-v5"):
        assert outcomes == {"truncated"}


def test_step_before_reset_is_refused():
    native = native_mujoco.NativeMujocoEnv("Swimmer-v5")
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):
        native.step(np.zeros(2, np.float32))
    episode = native.native.env.episode()
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):
        episode.step(np.zeros(2, np.float32))
    episode.reset_state(np.zeros(10))
    with pytest.raises(ValueError, match=r"action must have shape \(2,\), got \(3,\)"):
        episode.step(np.zeros(3))
    with pytest.raises(ValueError, match=r"state must have shape \(10,\), got \(9,\)"):
        episode.reset_state(np.zeros(9))
    with pytest.raises(RuntimeError, match=r"Swimmer-v5 starts from a state \(qpos, qvel\), not a seed"):
        episode.reset(0)


# ---- whole episodes -----------------------------------------------------------------------


SEED_CONFIG = """solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
}
"""


def agent_for(tmp_path, task, hidden=(8,), seed=1):
    env = gymnasium.make(task)
    n_in, n_out = env.observation_space.shape[0], env.action_space.shape[0]
    env.close()
    model = tmp_path / f"{task}.onnx"
    model.write_bytes(init_mlp(n_in, n_out, hidden, discrete=False, seed=seed).SerializeToString())
    config = tmp_path / "config.prototxt"
    config.write_text(SEED_CONFIG)
    agent = evokit.ESAgent(str(config), str(model))
    assert agent.policy.backend == "native"
    return agent


@pytest.fixture
def short_tasks():
    """Each task registered again with a time limit of 60 steps (its default
    arguments: native), so that the serial reference stays quick."""
    ids = {}
    for task in TASKS:
        ids[task] = f"EvoKitTest/Short{task}"
        gymnasium.register(ids[task], entry_point=ENTRY_POINT[task],
                           max_episode_steps=60)
    yield ids
    for env_id in ids.values():
        del gymnasium.registry[env_id]


# Samples with 1 to 3 episodes each (the last one is the centre).
SEEDS = [[11, 12], [13], [14, 15, 16], [17], [18], [19, 20]]


def samples(agent):
    return [agent.clone().add_noise() for _ in range(len(SEEDS) - 1)] + [None]


def norm_for(env_id, clip):
    size = gymnasium.spec(env_id).make().observation_space.shape[0]
    rng = np.random.default_rng(size)
    return ObsNorm(rng.normal(0, 0.3, size).astype(np.float32),
                   rng.uniform(0.2, 3.0, size).astype(np.float32), clip)


@pytest.mark.parametrize("task", TASKS)
def test_rollouts_equal_serial_rewards(tmp_path, short_tasks, task):
    env_id = short_tasks[task]
    agent = agent_for(tmp_path, task)
    infos = samples(agent)
    with SerialEvaluator(env_id) as s, VectorEvaluator(env_id, num_threads=2) as v:
        assert v.vectorization_mode == "native" and v.per_member_seeds
        want, got = s.evaluate(agent, infos, SEEDS), v.evaluate(agent, infos, SEEDS)
        per_sample = [s.evaluate(agent, [i], [x]).steps for i, x in zip(infos, SEEDS)]
    assert got.rewards.dtype == np.float64
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps
    np.testing.assert_array_equal(got.sample_steps, per_sample)
    assert got.obs_stats is None
    assert len(set(got.rewards.tolist())) > 3  # the members really differ


@pytest.mark.parametrize("task,clip", [("Hopper-v5", 5.0), ("Ant-v5", 2.0), ("HalfCheetah-v5", np.inf)])
def test_rollouts_with_obs_norm_equal_serial(tmp_path, short_tasks, task, clip):
    env_id = short_tasks[task]
    agent = agent_for(tmp_path, task)
    infos = samples(agent)
    norm = norm_for(env_id, clip)
    with SerialEvaluator(env_id) as s, VectorEvaluator(env_id, num_threads=2) as v:
        s.obs_norm = v.obs_norm = norm
        want, got = s.evaluate(agent, infos, SEEDS), v.evaluate(agent, infos, SEEDS)
    with VectorEvaluator(env_id) as v:
        plain = v.evaluate(agent, infos, SEEDS)
    assert not np.array_equal(plain.rewards, got.rewards)  # the policy saw other inputs
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps
    np.testing.assert_array_equal(got.obs_stats.count, want.obs_stats.count)
    np.testing.assert_array_equal(got.obs_stats.count, got.sample_steps)
    # Summed per episode, then per sample: the same values up to rounding.
    np.testing.assert_allclose(got.obs_stats.sum, want.obs_stats.sum, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.obs_stats.sumsq, want.obs_stats.sumsq, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("task", ["Walker2d-v5", "Humanoid-v5"])
def test_results_are_the_same_for_any_thread_count(tmp_path, short_tasks, task):
    env_id = short_tasks[task]
    agent = agent_for(tmp_path, task)
    infos = [agent.clone().add_noise() for _ in range(15)] + [None]
    seeds = [[100 + i] for i in range(16)]
    results = []
    for threads, workers in [(1, 1), (2, 1), (1, 2), (3, 1)]:
        with VectorEvaluator(env_id, workers, num_threads=threads) as v:
            v.obs_norm = norm_for(env_id, 4.0)
            results.append(v.evaluate(agent, infos, seeds))
    for r in results[1:]:
        np.testing.assert_array_equal(r.rewards, results[0].rewards)
        np.testing.assert_array_equal(r.sample_steps, results[0].sample_steps)
        for field in ("count", "sum", "sumsq"):
            np.testing.assert_array_equal(getattr(r.obs_stats, field),
                                          getattr(results[0].obs_stats, field))


def test_default_task_ends_at_termination_or_1000_steps(tmp_path):
    """Hopper-v5 itself (TimeLimit 1000): full episodes of a policy that
    falls, picked by make_evaluator for a native policy."""
    agent = agent_for(tmp_path, "Hopper-v5", seed=4)
    infos = samples(agent)
    with make_evaluator("Hopper-v5", 2, "auto", agent.policy) as v, SerialEvaluator("Hopper-v5") as s:
        assert isinstance(v, VectorEvaluator) and v.vectorization_mode == "native"
        assert v.num_threads == 2
        got, want = v.evaluate(agent, infos, SEEDS), s.evaluate(agent, infos, SEEDS)
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps and got.steps < 1000 * sum(map(len, SEEDS))


def test_rollouts_core_arguments(tmp_path):
    task = native_mujoco.load("Hopper-v5")
    agent = agent_for(tmp_path, "Hopper-v5")
    graph = agent.policy.native.graph
    pop = agent.population([None, agent.clone().add_noise()])
    qpos, qvel = native_mujoco.initial_states(task, [1, 2])
    members = np.array([0, 1])
    states = np.hstack([qpos, qvel])
    np.testing.assert_array_equal(states, native_mujoco.initial_state_rows(task, [1, 2]))
    returns, lengths, s, q = _core.env_rollouts(task.env, graph, pop, members, 5, states=states)
    assert s is None and q is None and np.all(lengths <= 5) and returns.dtype == np.float64
    with pytest.raises(ValueError, match=r"states must have shape \(2, 12\), one row per episode, "
                                         r"got \(1, 12\)"):
        _core.env_rollouts(task.env, graph, pop, members, 5, states=states[:1])
    with pytest.raises(ValueError, match="Hopper-v5: give seeds or states, exactly one"):
        _core.env_rollouts(task.env, graph, pop, members, 5)
    with pytest.raises(ValueError, match=r"Hopper-v5 starts from states \(state_size 12\), not from seeds"):
        _core.env_rollouts(task.env, graph, pop, members, 5, seeds=np.array([1, 2]))
    with pytest.raises(IndexError, match="episode 1: member 2 is out of range for a population of 2"):
        _core.env_rollouts(task.env, graph, pop, np.array([0, 2]), 5, states=states)
    with pytest.raises(IndexError, match="episode 1: member -1 is negative"):
        _core.env_rollouts(task.env, graph, pop, np.array([0, -1]), 5, states=states)
    with pytest.raises(ValueError, match="max_steps must be >= 1, got 0"):
        _core.env_rollouts(task.env, graph, pop, members, 0, states=states)
    with pytest.raises(ValueError, match="num_threads must be >= 1, got 0"):
        _core.env_rollouts(task.env, graph, pop, members, 5, 0, states=states)
    with pytest.raises(ValueError, match="obs_mean and obs_std must be given together"):
        _core.env_rollouts(task.env, graph, pop, members, 5, states=states, obs_mean=np.zeros(11))
    with pytest.raises(ValueError, match=r"obs_std must have shape \(11,\)"):
        _core.env_rollouts(task.env, graph, pop, members, 5, states=states,
                              obs_mean=np.zeros(11), obs_std=np.ones(4))
    ant = agent_for(tmp_path, "Ant-v5")
    with pytest.raises(ValueError, match="Hopper-v5 gives 11 observation values, the policy takes 105"):
        _core.env_rollouts(task.env, ant.policy.native.graph, ant.population([None]),
                           np.array([0]), 5, states=states[:1])
    wide = tmp_path / "wide.onnx"
    wide.write_bytes(init_mlp(11, 4, (8,), discrete=False).SerializeToString())
    config = tmp_path / "config.prototxt"
    four = evokit.ESAgent(str(config), str(wide))
    with pytest.raises(ValueError, match="Hopper-v5 takes 3 action values, the policy outputs 4"):
        _core.env_rollouts(task.env, four.policy.native.graph, four.population([None]),
                           np.array([0]), 5, states=states[:1])


# ---- what runs natively, and the refusals ---------------------------------------------------


@pytest.fixture
def costly_hopper():
    gymnasium.register("EvoKitTest/CostlyHopper-v5", entry_point=ENTRY_POINT["Hopper-v5"],
                       max_episode_steps=1000, kwargs={"ctrl_cost_weight": 0.01, "render_mode": None})
    yield "EvoKitTest/CostlyHopper-v5"
    del gymnasium.registry["EvoKitTest/CostlyHopper-v5"]


def test_what_runs_natively(costly_hopper):
    for task in TASKS:
        assert native_env_steps(task) == 1000
        assert native_env(task)[0].mujoco_task == task
    assert native_env_steps("CartPole-v1") == 500
    assert native_env("Humanoid-v5")[0].mujoco_task == "Humanoid-v5"
    assert native_env_steps("Hopper-v4") is None
    info, why = native_env(costly_hopper)
    assert info is None and why == (f"{costly_hopper}: ctrl_cost_weight=0.01 is not Hopper-v5's "
                                    f"default 0.001; native Hopper-v5 runs the defaults only")
    with pytest.raises(EnvError, match=r"ctrl_cost_weight=0.01 is not Hopper-v5's default 0.001"):
        native_mujoco.NativeMujocoEnv(costly_hopper)
    with pytest.raises(EnvError, match=r"is not implemented natively \(EvoKitTest/CostlyHopper-v5: "
                                       r"ctrl_cost_weight=0.01 is not"):
        VectorEvaluator(costly_hopper, vectorization_mode="native")
    with VectorEvaluator(costly_hopper) as v:
        assert v.vectorization_mode == "sync"  # other arguments: the general path, no note
    with pytest.raises(EnvError, match=r"Pendulum-v1 is not a MuJoCo task EvoKit runs natively "
                                       r"\(those are Hopper-v5, HalfCheetah-v5, Walker2d-v5, "
                                       r"Ant-v5, Swimmer-v5, Humanoid-v5 with default arguments\)"):
        native_mujoco.NativeMujocoEnv("Pendulum-v1")
    with pytest.raises(ValueError, match="task must be one of Hopper-v5, HalfCheetah-v5, Walker2d-v5, "
                                         "Ant-v5, Swimmer-v5, Humanoid-v5, got 'Humanoid-v4'"):
        _core.MujocoEnv("Humanoid-v4", native_mujoco.mujoco_library(), 1)


def test_unavailable_native_mujoco_falls_back_with_one_note(monkeypatch):
    monkeypatch.setitem(native_mujoco._loaded, "Swimmer-v5", "native MuJoCo cannot run Swimmer-v5: test")
    monkeypatch.setattr(native_mujoco, "_noted", set())
    with pytest.warns(NativeFallbackWarning, match="native MuJoCo cannot run Swimmer-v5: test; "
                                                   "Swimmer-v5 runs on gymnasium's environments instead"):
        with VectorEvaluator("Swimmer-v5") as v:
            assert v.vectorization_mode == "sync"
    with VectorEvaluator("Swimmer-v5") as v:  # said once
        assert v.vectorization_mode == "sync"
    assert native_env_steps("Swimmer-v5") is None
    with pytest.raises(EnvError, match=r"Swimmer-v5 is not implemented natively \(native MuJoCo "
                                       r"cannot run Swimmer-v5: test\)"):
        VectorEvaluator("Swimmer-v5", vectorization_mode="native")


def test_model_of_other_sizes_is_refused():
    ant = gymnasium.make("Ant-v5").unwrapped
    with pytest.raises(ValueError, match="Hopper-v5: the model has nq = 15, the task's model has 6"):
        _core.MujocoEnv("Hopper-v5", native_mujoco.mujoco_library(), ant.model._address)
    ant.close()
    with pytest.raises(ValueError, match="model_address must not be 0"):
        _core.MujocoEnv("Hopper-v5", native_mujoco.mujoco_library(), 0)


def test_other_libraries_are_refused(tmp_path):
    model = gymnasium.make("Hopper-v5").unwrapped.model
    with pytest.raises(RuntimeError, match=r"cannot open the MuJoCo library /no/such/libmujoco.so"):
        _core.MujocoEnv("Hopper-v5", "/no/such/libmujoco.so", model._address)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build a stand-in library")
    # A library claiming to be another MuJoCo: refused before any struct is read.
    source = tmp_path / "fake.c"
    source.write_text('int mj_version(void) { return 4001002; }\n'
                      'const char* mj_versionString(void) { return "4.1.2"; }\n')
    lib = tmp_path / "libmujoco.so.4.1.2"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    version = native_mujoco.mujoco_library()  # the real one stays in use
    built = native_mujoco.headers_release()
    with pytest.raises(RuntimeError, match=re.escape(f"{lib} is MuJoCo 4.1.2, EvoKit was built with "
                                                     f"the headers of MuJoCo {built}; native MuJoCo "
                                                     f"needs that release: pip install "
                                                     f"'mujoco=={built}'")):
        _core.MujocoEnv("Hopper-v5", str(lib), model._address)
    source.write_text("int not_mujoco(void) { return 0; }\n")
    other = tmp_path / "libother.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(other), str(source)], check=True)
    with pytest.raises(RuntimeError, match=re.escape(f"{other} has no mj_version: not a MuJoCo library")):
        _core.MujocoEnv("Hopper-v5", str(other), model._address)
    assert native_mujoco.mujoco_library() == version



_TRAIN_WITH_ANOTHER_LIBRARY = """
import sys
from evokit import cli
from evokit.evaluation import native_mujoco
native_mujoco.mujoco_library = lambda: sys.argv[1]  # as if `mujoco` had loaded it
if __name__ == "__main__":  # not in the evaluation workers, which import this file
    sys.exit(cli.main(["train", sys.argv[2], "--max-generations", "2", "--out", sys.argv[3], "-v"]))
"""


def test_train_names_both_releases_and_a_command_once_at_its_start(tmp_path):
    """A runtime MuJoCo of another release than the headers: `evokit train`
    says so on one line before its first generation, naming both releases
    and a pip command that installs the headers' release, and trains on
    gymnasium's environments."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build the stand-in library"
    source = tmp_path / "fake.c"
    source.write_text('int mj_version(void) { return 4001002; }\n'
                      'const char* mj_versionString(void) { return "4.1.2"; }\n')
    lib = tmp_path / "libmujoco.so.4.1.2"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    config = tmp_path / "hopper.prototxt"
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "configs", "hopper.prototxt"),
                config)
    script = tmp_path / "train.py"
    script.write_text(_TRAIN_WITH_ANOTHER_LIBRARY)
    out = subprocess.run([sys.executable, str(script), str(lib), str(config), str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    built = native_mujoco.headers_release()
    lines = (out.stderr + out.stdout).splitlines()
    said = [i for i, line in enumerate(lines) if "is MuJoCo 4.1.2" in line]
    assert len(said) == 1, "\n".join(lines)
    line = lines[said[0]]
    assert line.startswith("evokit: warning: ")
    assert f"EvoKit was built with the headers of MuJoCo {built}" in line
    assert f"pip install 'mujoco=={built}'" in line
    assert "runs on gymnasium's environments instead" in line
    generations = [i for i, line in enumerate(lines) if re.match(r"\s*(gen|generation)\b", line)]
    assert generations and said[0] < generations[0], "\n".join(lines)
    assert (tmp_path / "run" / "model.onnx").is_file()


def test_a_mujoco_error_is_an_exception_not_an_exit(tmp_path):
    """Hopper's model with a 3 kB arena: MuJoCo runs out of stack memory at the
    first contact (mju_error, whose default handler would end the process)."""
    xml = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "hopper.xml")
    spec = mujoco.MjSpec.from_file(xml)
    spec.memory = 3000
    model = spec.compile()
    env = _core.MujocoEnv("Hopper-v5", native_mujoco.mujoco_library(), model._address)
    del model, spec  # the env holds its own copy
    start = np.array([0, 1.25, 0, 0, 0, 0.0]), np.zeros(6)
    episode = env.episode()
    episode.reset_state(np.concatenate(start))
    message = r"Hopper-v5: MuJoCo error: mj_stackAlloc: out of memory, stack overflow at [^\n]*$"
    with pytest.raises(RuntimeError, match=message):
        for _ in range(300):
            episode.step(np.ones(3, np.float32))
    # In a rollout, on any thread: the first error, naming its episode.
    agent = agent_for(tmp_path, "Hopper-v5", hidden=(), seed=0)
    params = np.zeros((1, agent.policy.num_params), np.float32)
    params[0, -3:] = 1.0  # the head's bias: full torque
    pop = _core.Population.from_params(params)
    qpos, qvel = np.tile(start[0], (4, 1)), np.zeros((4, 6))
    with pytest.raises(RuntimeError, match=r"^episode \d: Hopper-v5: MuJoCo error: mj_stackAlloc: "
                                           r"out of memory"):
        _core.env_rollouts(env, agent.policy.native.graph, pop, np.zeros(4, np.int64), 300, 2,
                           states=np.hstack([qpos, qvel]))


def test_check_native_compares_whole_episodes_and_names_the_releases(capsys):
    from evokit import cli

    assert cli.main(["check-native", "Hopper-v5", "--episodes", "2"]) == 0
    line = capsys.readouterr().out.strip()
    release = native_mujoco.headers_release()
    assert line.startswith(f"Hopper-v5: native, MuJoCo {mujoco.__version__} (")
    assert f"EvoKit built with the headers of MuJoCo {release}; 2 episodes, " in line
    steps = int(re.search(r"episodes, (\d+) steps equal to gymnasium's step for step$", line)[1])
    assert steps > 2
    assert cli.main(["check-native", "Hopper-v4"]) == 1
    assert "Hopper-v4 is not an environment EvoKit runs natively (those are CartPole-v1, " \
        "Pendulum-v1, Hopper-v5" in capsys.readouterr().err


def test_a_build_without_native_mujoco_says_so_once(monkeypatch):
    """Built without MuJoCo's headers, the registry holds no MuJoCo task; a
    MuJoCo env id then takes gymnasium's path with one NativeFallbackWarning
    giving the build's reason (CartPole stays native)."""
    import warnings

    from evokit import _core
    from evokit.errors import NativeFallbackWarning
    from evokit.evaluation import envs, native_mujoco, registry

    reason = "EvoKit was built without native MuJoCo (MuJoCo's headers were not found at build time)"
    core_only = {k: v for k, v in registry.entries().items() if v["component"] == "core"}
    monkeypatch.setattr(registry, "entries", lambda: core_only)
    monkeypatch.setattr(_core, "mujoco_unavailable_reason", lambda: reason)
    monkeypatch.setattr(native_mujoco, "_noted", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert envs.native_env("Hopper-v5") == (None, "")
        assert envs.native_env("Walker2d-v5") == (None, "")
        assert envs.native_env("CartPole-v1")[0] is not None
    said = [str(w.message) for w in caught if issubclass(w.category, NativeFallbackWarning)]
    assert said == [f"{reason}; Hopper-v5 runs on gymnasium's environments instead"]


def test_this_build_has_native_mujoco():
    from evokit import _core

    assert _core.mujoco_unavailable_reason() == "" and _core.mujoco_header_version() > 0
