"""The core's native CartPole against gymnasium's: reset seeding, every step's
state and termination, truncation, and whole-episode rollouts of a
population (evokit._core.env_rollouts on the registered "CartPole-v1",
VectorEvaluator's "native" mode), with observation normalisation too."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import seeding

import evokit
from evokit import _core
from evokit.evaluation.envs import native_env_steps
from evokit.evaluation.obsnorm import ObsNorm
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 1000, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1])
def test_reset_is_gymnasiums(seed):
    want = seeding.np_random(seed)[0].uniform(-0.05, 0.05, size=(4,))
    np.testing.assert_array_equal(_core.cartpole_reset(seed), want)
    env = gymnasium.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    np.testing.assert_array_equal(_core.cartpole_reset(seed).astype(np.float32), obs)
    env.close()


def test_steps_are_gymnasiums_bit_for_bit():
    """Random and feedback actions from many starts, every state compared."""
    env = gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(5)
    steps = 0
    for episode in range(60):
        obs, _ = env.reset(seed=episode)
        state = _core.cartpole_reset(episode)
        while True:
            # Alternate between random pushes (short episodes, both
            # termination conditions) and a balancing controller (long ones).
            action = int(rng.integers(2)) if episode % 2 else int(obs[2] + 0.3 * obs[3] > 0)
            obs, reward, terminated, truncated, _ = env.step(action)
            state, done = _core.cartpole_step(state, action)
            steps += 1
            np.testing.assert_array_equal(state, env.unwrapped.state)
            np.testing.assert_array_equal(state.astype(np.float32), obs)
            assert done == terminated
            if terminated or truncated:
                break
    env.close()
    assert steps > 5000  # the balancing episodes ran into the time limit


def test_bad_arguments():
    with pytest.raises(ValueError, match="CartPole action must be 0 or 1, got 2"):
        _core.cartpole_step(np.zeros(4), 2)
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        _core.cartpole_reset(-1)
    with pytest.raises(ValueError, match="state"):
        _core.cartpole_step(np.zeros(3), 0)


CARTPOLE = _core.NativeEnv("CartPole-v1")


def lengths_of(graph, pop, members, seeds, max_steps, threads=1):
    """The core's episodes; each step's reward is 1, so returns are lengths."""
    returns, lengths, _, _ = _core.env_rollouts(CARTPOLE, graph, pop, members, max_steps, threads,
                                                seeds=seeds)
    np.testing.assert_array_equal(returns, lengths.astype(np.float64))
    return lengths


def agent_for(tmp_path, seed_config, n_in=4, n_out=2, hidden=(16,), cached=True):
    path = tmp_path / "m.onnx"
    path.write_bytes(init_mlp(n_in, n_out, hidden, seed=1).SerializeToString())
    cfg = evokit.load_config(seed_config)
    cfg.solver.sampling.gaussian_sampling.cached = cached
    agent = evokit.ESAgent()
    agent.load_config(cfg)
    agent.load_inference_model(path)
    agent.init_solver()
    return agent


def population_of(agent, n):
    infos = [agent.clone().add_noise() for _ in range(n)]
    keys = np.array([i.key[0] for i in infos], np.int64)
    signs = np.array([-1.0 if i.mirrored else 1.0 for i in infos], np.float32)
    return agent.policy.native.population(agent.center, keys, signs, agent.sampler), infos


@pytest.mark.parametrize("cached", [True, False])
def test_rollouts_equal_gymnasium_episodes_for_any_thread_count(tmp_path, seed_config, cached):
    """Noise read from the cached table or generated per key (uncached)."""
    agent = agent_for(tmp_path, seed_config, cached=cached)
    assert agent.sampler.cached == cached
    pop, infos = population_of(agent, 6)
    members = np.array([0, 1, 2, 3, 4, 5, 0, 3], np.int64)
    seeds = np.array([3, 3, 9, 9, 2**40, 0, 17, 5], np.int64)
    graph = agent.policy.native.graph
    lengths = lengths_of(graph, pop, members, seeds, 500, 1)
    np.testing.assert_array_equal(lengths_of(graph, pop, members, seeds, 500, 2), lengths)
    with SerialEvaluator("CartPole-v1") as s:
        want = s.evaluate(agent, [infos[m] for m in members], [[int(x)] for x in seeds])
    np.testing.assert_array_equal(lengths, want.rewards)
    # A shorter limit truncates, as CartPole-v0's TimeLimit(200) does.
    short = lengths_of(graph, pop, members, seeds, 10, 2)
    np.testing.assert_array_equal(short, np.minimum(lengths, 10))


def test_rollouts_on_two_threads_equal_one(tmp_path, seed_config):
    """128 episodes of a 4-64-64-2 policy: enough work for the core to wake a
    second thread (episodes x parameters >= 2 x 2^18)."""
    agent = agent_for(tmp_path, seed_config, hidden=(64, 64))
    pop, _ = population_of(agent, 64)
    members = np.arange(128, dtype=np.int64) % 64
    seeds = np.arange(128, dtype=np.int64) * 31
    graph = agent.policy.native.graph
    one = lengths_of(graph, pop, members, seeds, 500, 1)
    np.testing.assert_array_equal(lengths_of(graph, pop, members, seeds, 500, 2), one)
    assert len(set(one.tolist())) > 5


@pytest.mark.parametrize("threads", [1, 2])
def test_rollouts_say_where_the_threads_time_went(tmp_path, seed_config, threads):
    """timing=True: the call's wall time and each thread's time inside
    episodes, the same episodes as without it; the evaluator's idle share
    of the worker time from them, and its chunks' sums in concat."""
    from evokit.evaluation.base import EvalResult

    agent = agent_for(tmp_path, seed_config, hidden=(64, 64))
    pop, infos = population_of(agent, 64)
    members = np.arange(128, dtype=np.int64) % 64
    seeds = np.arange(128, dtype=np.int64) * 31
    graph = agent.policy.native.graph
    *results, (wall, busy) = _core.env_rollouts(CARTPOLE, graph, pop, members, 500, threads, seeds=seeds,
                                                 timing=True)
    np.testing.assert_array_equal(results[1], lengths_of(graph, pop, members, seeds, 500, threads))
    assert len(busy) == threads and wall > 0
    assert all(0 <= b <= wall * 1.001 for b in busy) and sum(busy) > 0  # a thread may get no episode
    with VectorEvaluator("CartPole-v1", num_threads=threads) as ev:
        r = ev.evaluate(agent, infos, [[i] for i in range(64)])
    assert r.thread_seconds > 0 and 0 < r.busy_seconds <= r.thread_seconds * 1.001
    assert r.idle_share == pytest.approx(1 - r.busy_seconds / r.thread_seconds)
    both = EvalResult.concat([r, r])
    assert both.thread_seconds == 2 * r.thread_seconds and both.idle_share == pytest.approx(r.idle_share)
    assert EvalResult(np.zeros(1), 1).idle_share is None


def test_rollout_errors(tmp_path, seed_config):
    agent = agent_for(tmp_path, seed_config)
    pop, _ = population_of(agent, 2)
    graph = agent.policy.native.graph
    one = np.array([0], np.int64)
    with pytest.raises(IndexError, match="episode 1: member 2 is out of range for a population of 2"):
        lengths_of(graph, pop, np.array([0, 2]), np.array([0, 0]), 500)
    with pytest.raises(ValueError, match="episode 0: seed must be >= 0, got -3"):
        lengths_of(graph, pop, one, np.array([-3]), 500)
    with pytest.raises(ValueError, match="max_steps must be >= 1, got 0"):
        lengths_of(graph, pop, one, one, 0)
    with pytest.raises(ValueError, match=r"seeds must have shape \(1,\), got \(2,\)"):
        lengths_of(graph, pop, one, np.array([1, 2]), 500)
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        lengths_of(graph, pop, one, one, 500, 0)
    wide = agent_for(tmp_path, seed_config, n_in=5)
    wpop, _ = population_of(wide, 1)
    with pytest.raises(ValueError, match="CartPole-v1 gives 4 observation values, the policy takes 5"):
        lengths_of(wide.policy.native.graph, wpop, one, one, 500)
    three = agent_for(tmp_path, seed_config, n_out=3)
    tpop, _ = population_of(three, 1)
    with pytest.raises(ValueError, match=r"CartPole-v1 has 2 actions \(one score each\), the policy outputs 3"):
        lengths_of(three.policy.native.graph, tpop, one, one, 500)
    with pytest.raises(ValueError, match="the population's members have 386 parameters, the graph "
                                         "expects num_params = 114"):
        bigger = agent_for(tmp_path, seed_config, hidden=(16, 16))
        bpop, _ = population_of(bigger, 1)
        lengths_of(graph, bpop, one, one, 500)


def test_native_env_steps():
    assert native_env_steps("CartPole-v1") == 500
    assert native_env_steps("CartPole-v0") == 200
    assert native_env_steps("Pendulum-v1") == 200
    assert native_env_steps("Acrobot-v1") is None
    assert native_env_steps("NoSuchEnv-v0") is None
    gymnasium.register("EvoKitTest/SBCartPole-v0", entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                       max_episode_steps=50, kwargs={"sutton_barto_reward": True})
    try:
        assert native_env_steps("EvoKitTest/SBCartPole-v0") is None
    finally:
        del gymnasium.registry["EvoKitTest/SBCartPole-v0"]


@pytest.mark.filterwarnings("ignore:.*CartPole-v0 is out of date:DeprecationWarning")
def test_native_mode_on_cartpole_v0_truncates_at_200(tmp_path, seed_config):
    agent = agent_for(tmp_path, seed_config)
    infos = [agent.clone().add_noise() for _ in range(4)] + [None]
    seeds = [[i, i + 10] for i in range(5)]
    with SerialEvaluator("CartPole-v0") as s, VectorEvaluator("CartPole-v0", num_threads=2) as v:
        assert v.vectorization_mode == "native" and v.per_member_seeds
        rs, rv = s.evaluate(agent, infos, seeds), v.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(rs.rewards, rv.rewards)
    assert rs.steps == rv.steps


@pytest.mark.parametrize("threads", [1, 2])
def test_native_mode_normalises_observations_as_serial(tmp_path, seed_config, threads):
    """Observation normalisation runs inside the core's episodes, as in
    every other evaluator."""
    agent = agent_for(tmp_path, seed_config)
    infos = [agent.clone().add_noise() for _ in range(6)] + [None]
    seeds = [[i, i + 50] for i in range(7)]
    norm = ObsNorm(np.array([0.1, -0.2, 0.01, 0.3], np.float32),
                   np.array([0.5, 1.5, 0.1, 2.0], np.float32), 3.0)
    with SerialEvaluator("CartPole-v1") as s, VectorEvaluator("CartPole-v1", num_threads=threads) as v:
        assert v.vectorization_mode == "native"
        s.obs_norm = v.obs_norm = norm
        want, got = s.evaluate(agent, infos, seeds), v.evaluate(agent, infos, seeds)
        v.obs_norm = None
        plain = v.evaluate(agent, infos, seeds)
    assert not np.array_equal(plain.rewards, got.rewards)  # the policy saw other inputs
    np.testing.assert_array_equal(got.rewards, want.rewards)
    np.testing.assert_array_equal(got.obs_stats.count, want.obs_stats.count)
    np.testing.assert_allclose(got.obs_stats.sum, want.obs_stats.sum, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.obs_stats.sumsq, want.obs_stats.sumsq, rtol=1e-12, atol=1e-12)
