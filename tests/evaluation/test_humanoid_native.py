"""Native Humanoid-v5 (cpp/mujoco/src/tasks/humanoid.cc) against gymnasium's
own env, bit for bit: the reset noise (qpos and qvel as reset(seed=s) draws
them), the observation's six parts, the reward with the contact cost clipped
at contact_cost_range's 10 (a start sunk into the floor), termination when
the torso leaves the healthy z range (1, 2), truncation at a registered time
limit, and whole episodes on 1, 2 and 3 threads. Every step of the task over
random episodes, and its rollouts against SerialEvaluator, are also tested
with the other MuJoCo tasks (test_mujoco_native.py, parametrised over the
registry)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import evokit
from evokit import _core
from evokit.evaluation import native_mujoco
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp

pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install '.[mujoco]')")


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's own log file stays out of the source tree


@pytest.fixture(scope="module")
def humanoid():
    return native_mujoco.load("Humanoid-v5")


def test_registered_sizes_and_defaults(humanoid):
    entry = {t["name"]: t for t in _core.mujoco_tasks()}["Humanoid-v5"]
    env = gymnasium.make("Humanoid-v5")
    assert entry["obs_size"] == env.observation_space.shape[0] == 348
    assert entry["action_size"] == env.action_space.shape[0] == 17
    assert (entry["nq"], entry["nv"], entry["state_size"]) == (24, 23, 47)
    assert entry["defaults"]["contact_cost_range"] == (-np.inf, 10.0)
    assert entry["defaults"]["healthy_z_range"] == (1.0, 2.0)
    assert entry["reset_noise_scale"] == 1e-2 and not entry["normal_qvel"]
    assert humanoid.env.obs_size == 348 and humanoid.env.nq == 24
    env.close()


@pytest.mark.parametrize("seed", [0, 5, 2**32 + 3])
def test_reset_noise_and_observation_parts(humanoid, seed):
    env = gymnasium.make("Humanoid-v5")
    data = env.unwrapped.data
    want, _ = env.reset(seed=seed)
    state = native_mujoco.initial_state_rows(humanoid, [seed])[0]
    np.testing.assert_array_equal(state, np.concatenate([data.qpos, data.qvel]))
    episode = humanoid.env.episode()
    assert np.array_equal(episode.reset_state(state), want)
    action = np.linspace(-0.4, 0.4, 17, dtype=np.float32)
    for step in range(40):  # until the feet touch the floor: cfrc_ext is then not all zero
        want = env.step(action)[0]
        got = episode.step(action)[0]
        parts = [data.qpos[2:], data.qvel, data.cinert[1:], data.cvel[1:], data.qfrc_actuator[6:],
                 data.cfrc_ext[1:]]
        np.testing.assert_array_equal(got, np.concatenate([p.ravel() for p in parts]))
        assert np.array_equal(got, want), step
        if np.any(data.cfrc_ext[1:] != 0):
            break
    assert np.any(got[-78:] != 0)  # the contact forces mj_rnePostConstraint computes
    env.close()


@pytest.mark.parametrize("z", [0.9, 0.3])
def test_contact_cost_is_clipped_and_a_sunk_torso_terminates(humanoid, z):
    env = gymnasium.make("Humanoid-v5")
    base = env.unwrapped
    env.reset(seed=0)
    qpos = base.init_qpos.copy()
    qpos[2] = z
    base.set_state(qpos, base.init_qvel)
    episode = humanoid.env.episode()
    episode.reset_state(np.concatenate([qpos, base.init_qvel]))
    action = np.full(17, 0.2, np.float32)
    want, reward, terminated, _, info = env.step(action)
    got, got_reward, got_terminated = episode.step(action)
    assert info["reward_contact"] == -10.0  # clipped: the unclipped cost is above 10
    assert 5e-7 * np.sum(np.square(base.data.cfrc_ext)) > 10.0
    assert np.array_equal(got, want) and got_reward == reward
    assert got_terminated == terminated
    env.close()


def test_terminates_and_truncates_as_gymnasium(humanoid):
    gymnasium.register("EvoKitTest/ShortHumanoid-v5", entry_point=gymnasium.spec("Humanoid-v5").entry_point,
                       max_episode_steps=8)
    try:
        rng = np.random.default_rng(3)
        outcomes = set()
        for env_id, scale in (("Humanoid-v5", 0.4), ("EvoKitTest/ShortHumanoid-v5", 0.05)):
            env, native = gymnasium.make(env_id), native_mujoco.NativeMujocoEnv(env_id)
            for seed in range(3):
                assert np.array_equal(native.reset(seed), env.reset(seed=seed)[0])
                while True:
                    action = (scale * rng.standard_normal(17)).astype(np.float32)
                    want, got = env.step(action), native.step(action)
                    assert np.array_equal(got[0], want[0]) and got[1:] == tuple(want[1:4])
                    if want[2] or want[3]:
                        outcomes.add("terminated" if want[2] else "truncated")
                        break
            env.close()
    finally:
        del gymnasium.registry["EvoKitTest/ShortHumanoid-v5"]
    assert outcomes == {"terminated", "truncated"}


SEED_CONFIG = """solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
}
"""


def test_whole_episodes_on_any_thread_count_equal_serial(tmp_path, humanoid):
    model = tmp_path / "humanoid.onnx"
    model.write_bytes(init_mlp(348, 17, (16,), discrete=False, seed=2).SerializeToString())
    config = tmp_path / "config.prototxt"
    config.write_text(SEED_CONFIG)
    agent = evokit.ESAgent(str(config), str(model))
    infos = [agent.clone().add_noise() for _ in range(5)] + [None]
    seeds = [[10 + i] for i in range(6)]
    pop = agent.population(infos)
    members = np.arange(6, dtype=np.int64)
    states = native_mujoco.initial_state_rows(humanoid, [s[0] for s in seeds])
    graph = agent.policy.native.graph
    runs = [_core.env_rollouts(humanoid.env, graph, pop, members, 1000, t, states=states)
            for t in (1, 2, 3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r[0], runs[0][0])
        np.testing.assert_array_equal(r[1], runs[0][1])
    with SerialEvaluator("Humanoid-v5") as s, VectorEvaluator("Humanoid-v5", num_threads=2) as v:
        assert v.vectorization_mode == "native"
        want, got = s.evaluate(agent, infos, seeds), v.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(got.rewards, want.rewards)
    np.testing.assert_array_equal(got.rewards, runs[0][0])
    assert got.steps == want.steps == int(runs[0][1].sum())
