"""The core's native Pendulum-v1 (cpp/src/envs/pendulum.cc) against
gymnasium's: reset seeding, every step's observation, reward, termination
and truncation (actions beyond the torque bounds included), whole episodes of
a population (VectorEvaluator's "native" mode against SerialEvaluator) on 1
and 2 threads, with and without observation normalisation; and the
refusals."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import evokit
from evokit import _core
from evokit.evaluation.envs import native_env
from evokit.evaluation.obsnorm import ObsNorm
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp

PENDULUM = _core.NativeEnv("Pendulum-v1")


def test_registered_with_gymnasiums_defaults():
    spec = PENDULUM.spec
    assert spec["entry_point"] == gymnasium.spec("Pendulum-v1").entry_point
    assert spec["defaults"] == {"g": 10.0}
    assert (spec["obs_size"], spec["action_size"], spec["discrete"]) == (3, 1, False)
    info, why = native_env("Pendulum-v1")
    assert why == "" and info.task == "Pendulum-v1" and info.max_steps == 200
    assert info.mujoco_task is None and info.unavailable is None
    gymnasium.register("EvoKitTest/MoonPendulum-v1", entry_point=spec["entry_point"],
                       max_episode_steps=200, kwargs={"g": 1.62})
    try:
        assert native_env("EvoKitTest/MoonPendulum-v1") == (
            None, "EvoKitTest/MoonPendulum-v1: g=1.62 is not Pendulum-v1's default 10.0; native "
                  "Pendulum-v1 runs the defaults only")
    finally:
        del gymnasium.registry["EvoKitTest/MoonPendulum-v1"]


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31 - 1, 2**32, 2**63 - 1])
def test_reset_is_gymnasiums(seed):
    env = gymnasium.make("Pendulum-v1")
    want, _ = env.reset(seed=seed)
    got = PENDULUM.episode().reset(seed)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    env.close()


def test_steps_are_gymnasiums_bit_for_bit():
    """Random torques, a third of them beyond +-2 (clipped by the env), from
    many seeds; every episode runs to the time limit (Pendulum never
    terminates)."""
    env = gymnasium.make("Pendulum-v1")
    episode = PENDULUM.episode()
    rng = np.random.default_rng(11)
    steps = 0
    for seed in range(12):
        want, _ = env.reset(seed=seed)
        assert np.array_equal(episode.reset(seed), want)
        for t in range(1000):
            action = rng.uniform(-3.0, 3.0, 1).astype(np.float32)
            want, reward, terminated, truncated, _ = env.step(action)
            got, got_reward, got_terminated = episode.step(action)
            steps += 1
            assert np.array_equal(got, want), (seed, t)
            assert got_reward == reward and type(got_reward) is float, (seed, t, got_reward, reward)
            assert got_terminated is False and terminated is False
            if truncated:
                assert t + 1 == 200  # gymnasium's TimeLimit; the evaluators stop there too
                break
    env.close()
    assert steps == 12 * 200


def test_episode_errors():
    episode = PENDULUM.episode()
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\)"):
        episode.step(np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        episode.reset(-1)
    with pytest.raises(ValueError, match=r"state must have shape \(2,\), got \(3,\)"):
        episode.reset_state(np.zeros(3))
    episode.reset_state(np.array([0.5, -0.25]))
    with pytest.raises(ValueError, match=r"action must have shape \(1,\), got \(2,\)"):
        episode.step(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="native environment must be one of CartPole-v1, "
                                         "Pendulum-v1, got 'Acrobot-v1'"):
        _core.NativeEnv("Acrobot-v1")


def agent_for(tmp_path, seed_config, hidden=(8,)):
    path = tmp_path / "pendulum.onnx"
    path.write_bytes(init_mlp(3, 1, hidden, discrete=False, seed=3).SerializeToString())
    agent = evokit.ESAgent()
    agent.load_config(seed_config)
    agent.load_inference_model(path)
    agent.init_solver()
    assert agent.policy.backend == "native"
    return agent


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("norm", [None, ObsNorm(np.array([0.1, -0.2, 0.5], np.float32),
                                                np.array([0.5, 0.7, 2.0], np.float32), 2.5)])
def test_native_rollouts_equal_serial(tmp_path, seed_config, threads, norm):
    agent = agent_for(tmp_path, seed_config)
    infos = [agent.clone().add_noise() for _ in range(6)] + [None]
    seeds = [[i, 40 + i] for i in range(6)] + [[99]]
    with SerialEvaluator("Pendulum-v1") as s, VectorEvaluator("Pendulum-v1", num_threads=threads) as v:
        assert v.vectorization_mode == "native" and v.per_member_seeds
        s.obs_norm = v.obs_norm = norm
        want, got = s.evaluate(agent, infos, seeds), v.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps == 200 * 13
    assert len(set(got.rewards.tolist())) == 7  # the members really differ
    if norm is None:
        assert got.obs_stats is None
    else:
        np.testing.assert_array_equal(got.obs_stats.count, want.obs_stats.count)
        np.testing.assert_allclose(got.obs_stats.sum, want.obs_stats.sum, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.obs_stats.sumsq, want.obs_stats.sumsq, rtol=1e-12, atol=1e-12)


def test_rollouts_are_the_same_for_any_thread_count(tmp_path, seed_config):
    """Enough parameter reads (episodes x parameters) for the core to wake
    the threads it is given."""
    agent = agent_for(tmp_path, seed_config, hidden=(64, 64))
    graph = agent.policy.native.graph
    infos = [agent.clone().add_noise() for _ in range(64)]
    pop = agent.population(infos)
    members = np.arange(128, dtype=np.int64) % 64
    seeds = np.arange(128, dtype=np.int64) * 17
    one = _core.env_rollouts(PENDULUM, graph, pop, members, 200, 1, seeds=seeds)
    for threads in (2, 3):
        got = _core.env_rollouts(PENDULUM, graph, pop, members, 200, threads, seeds=seeds)
        np.testing.assert_array_equal(got[0], one[0])
        np.testing.assert_array_equal(got[1], one[1])
    assert len(set(one[0].tolist())) == 128


def test_check_native(capsys):
    from evokit import cli

    assert cli.main(["check-native", "Pendulum-v1", "CartPole-v1", "--episodes", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["Pendulum-v1: native (EvoKit's core); 2 episodes, 400 steps equal to "
                   "gymnasium's step for step", out[1]]
    assert out[1].startswith("CartPole-v1: native (EvoKit's core); 2 episodes, ")
