"""The lockstep VectorEvaluator: the same rewards as SerialEvaluator, finished
members masked out, worker processes, and the evaluator make_evaluator picks."""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import evokit
from evokit.errors import EnvError
from evokit.evaluation.envs import has_vector_entry_point
from evokit.evaluation.factory import make_evaluator
from evokit.evaluation.processes import ProcessEvaluator
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp

from helpers import CARTPOLE


def cartpole_agent(tmp_path, seed_config, hidden=(8,), backend=None, std=None):
    path = tmp_path / "cartpole.onnx"
    path.write_bytes(init_mlp(4, 2, hidden, seed=3).SerializeToString())
    cfg = evokit.load_config(seed_config)
    if std is not None:
        cfg.solver.sampling.gaussian_sampling.std = std
    agent = evokit.ESAgent()
    agent.load_config(cfg)
    agent.load_inference_model(path, backend=backend)
    agent.init_solver()
    return agent


def population(agent, n):
    clones = [agent.clone() for _ in range(n)]
    return [c.add_noise() for c in clones]


# Samples whose episodes differ in number and length, the centre among them.
SEEDS = [[1, 2], [1, 2], [3], [3], [4], [5, 6, 7], [8], [8], [9]]


@pytest.mark.parametrize("mode", ["sync", "vector_entry_point", "native"])
def test_vector_rewards_equal_serial_rewards(tmp_path, seed_config, mode):
    agent = cartpole_agent(tmp_path, seed_config)
    infos = population(agent, 8) + [None]
    with SerialEvaluator("CartPole-v1") as s, VectorEvaluator("CartPole-v1", vectorization_mode=mode) as v:
        rs, rv = s.evaluate(agent, infos, SEEDS), v.evaluate(agent, infos, SEEDS)
        assert v.per_member_seeds
    np.testing.assert_array_equal(rs.rewards, rv.rewards)
    assert rs.steps == rv.steps
    assert len(set(rs.rewards)) > 3  # the episodes really differ in length


@pytest.mark.parametrize("mode", ["vector_entry_point", "native"])
def test_vector_rewards_after_updates_and_with_threads(tmp_path, seed_config, mode):
    """Bigger network, two threads, an updated centre, a second call on the same envs."""
    agent = cartpole_agent(tmp_path, seed_config, hidden=(64, 64), std=0.05)
    with SerialEvaluator("CartPole-v1") as s, \
            VectorEvaluator("CartPole-v1", num_threads=2, vectorization_mode=mode) as v:
        for generation in range(2):
            infos = population(agent, 40)
            seeds = [[100 * generation + i // 2] for i in range(40)]
            rs, rv = s.evaluate(agent, infos, seeds), v.evaluate(agent, infos, seeds)
            np.testing.assert_array_equal(rs.rewards, rv.rewards)
            assert rs.steps == rv.steps
            agent.update(infos, rs.rewards)


def test_vector_worker_processes_equal_serial(tmp_path, seed_config):
    agent = cartpole_agent(tmp_path, seed_config)
    infos = population(agent, 8) + [None]
    with SerialEvaluator("CartPole-v1") as s, \
            VectorEvaluator("CartPole-v1", num_workers=2, vectorization_mode="sync") as v:
        rs, rv = s.evaluate(agent, infos, SEEDS), v.evaluate(agent, infos, SEEDS)
    np.testing.assert_array_equal(rs.rewards, rv.rewards)
    assert rs.steps == rv.steps


class Countdown(gymnasium.Env):
    """Episodes of exactly ``seed % 7 + 1`` steps, reward 1 per step; an
    episode started without a seed (an autoreset) pays 1000 per step, so a
    finished member's next episode would show in its return."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.left = (seed % 7 + 1) if seed is not None else 5
        self.pay = 1.0 if seed is not None else 1000.0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.left -= 1
        return np.zeros(2, np.float32), self.pay, self.left == 0, False, {}


@pytest.fixture
def countdown():
    gymnasium.register("EvoKitTest/Countdown-v0", entry_point=Countdown)
    yield "EvoKitTest/Countdown-v0"
    del gymnasium.registry["EvoKitTest/Countdown-v0"]


def test_finished_members_are_masked_out(tmp_path, seed_config, countdown):
    path = tmp_path / "m.onnx"
    path.write_bytes(init_mlp(2, 2, (4,), seed=0).SerializeToString())
    agent = evokit.ESAgent(seed_config, path)
    infos = population(agent, 4) + [None, None]
    seeds = [[0], [6], [3, 13], [1], [20, 4, 0], [5]]
    with VectorEvaluator(countdown) as v:
        assert v.vectorization_mode == "sync"  # no vectorised form
        result = v.evaluate(agent, infos, seeds)
    lengths = [[s % 7 + 1 for s in member] for member in seeds]
    np.testing.assert_array_equal(result.rewards, [np.mean(x) for x in lengths])
    assert result.steps == sum(map(sum, lengths))
    with SerialEvaluator(countdown) as s:
        np.testing.assert_array_equal(s.evaluate(agent, infos, seeds).rewards, result.rewards)


def test_vector_evaluator_needs_a_native_policy(tmp_path, seed_config):
    agent = cartpole_agent(tmp_path, seed_config, backend="onnxruntime")
    with VectorEvaluator("CartPole-v1") as v:
        with pytest.raises(ValueError, match=r"the vector evaluator needs a policy on the native backend, "
                                             r"this one runs on onnxruntime \(backend=onnxruntime\)"):
            v.evaluate(agent, [None], [[1]])


def test_vector_evaluator_arguments():
    with pytest.raises(ValueError, match="num_workers must be >= 1, got 0"):
        VectorEvaluator("CartPole-v1", 0)
    with pytest.raises(ValueError, match="vectorization_mode must be one of auto, native, vector_entry_point, "
                                         "sync, async, got 'gpu'"):
        VectorEvaluator("CartPole-v1", vectorization_mode="gpu")
    with pytest.raises(EnvError, match=r"Acrobot-v1 is not implemented natively \(only the "
                                       r"environments the extension registers "
                                       r"\(evokit.evaluation.registry\) with their default arguments "
                                       r"and a time limit are\); use vectorization_mode='auto'"):
        VectorEvaluator("Acrobot-v1", vectorization_mode="native")
    with pytest.raises(EnvError, match=r"Pendulum-v1 has no vectorised form"):
        VectorEvaluator("Pendulum-v1", vectorization_mode="vector_entry_point")
    with pytest.raises(EnvError, match="cannot make environment 'NoSuchEnv-v0'"):
        VectorEvaluator("NoSuchEnv-v0")


def test_make_evaluator_kinds(tmp_path, seed_config):
    native = cartpole_agent(tmp_path, seed_config).policy
    ort = cartpole_agent(tmp_path, seed_config, backend="onnxruntime").policy
    assert has_vector_entry_point("CartPole-v1") and not has_vector_entry_point("Pendulum-v1")
    cases = [
        (("CartPole-v1", 2, "auto", native), VectorEvaluator, dict(vectorization_mode="native",
                                                                    num_workers=1, num_threads=2)),
        (("Acrobot-v1", 3, "auto", native), VectorEvaluator, dict(vectorization_mode="sync", num_workers=3)),
        (("CartPole-v1", 2, "auto", ort), ProcessEvaluator, {}),
        (("CartPole-v1", 1, "auto", ort), SerialEvaluator, {}),
        (("CartPole-v1", 2, "auto", None), ProcessEvaluator, {}),
        (("CartPole-v1", 2, "serial", native), SerialEvaluator, {}),
        (("CartPole-v1", 2, "process", native), ProcessEvaluator, {}),
        (("CartPole-v1", 1, "vector", ort), VectorEvaluator, {}),
    ]
    for args, cls, attrs in cases:
        with make_evaluator(*args) as ev:
            assert type(ev) is cls, args
            for name, value in attrs.items():
                assert getattr(ev, name) == value, (args, name)
    with pytest.raises(ValueError, match="kind must be one of auto, vector, process, serial, got 'ray'"):
        make_evaluator("CartPole-v1", 1, kind="ray")


def test_training_is_the_same_with_every_evaluator(tmp_path):
    """The vector evaluator gives the serial rewards, so training gives the same model bits."""
    cfg = evokit.load_config(CARTPOLE)
    cfg.train.max_generations = 4
    cfg.train.eval_every = 2
    cfg.train.eval_episodes = 3
    cfg.solver.population_size = 10
    models = {}
    for kind, workers in [("vector", 1), ("vector", 2), ("serial", 1), ("process", 2)]:
        cfg.train.num_workers = workers
        res = evokit.train(cfg, out_dir=str(tmp_path / f"{kind}{workers}"), evaluator_kind=kind, log=lambda s: None)
        with open(res.model_path, "rb") as f:
            models[(kind, workers)] = f.read()
    assert len(set(models.values())) == 1


def test_train_logs_the_evaluator(tmp_path):
    lines = []
    cfg = evokit.load_config(CARTPOLE)
    cfg.train.max_generations = 1
    evokit.train(cfg, out_dir=str(tmp_path), log=lines.append)
    assert re.search(r"policy on native, VectorEvaluator$", lines[0]), lines[0]


def test_vectorised_env_without_per_member_seeds(tmp_path, seed_config, monkeypatch):
    """Without a seeded reset, the members of a vectorised env share one seeded
    generator: deterministic rewards, but not SerialEvaluator's."""
    import evokit.evaluation.lockstep as ev

    agent = cartpole_agent(tmp_path, seed_config)
    infos = population(agent, 8)
    seeds = [[i // 2] for i in range(8)]
    monkeypatch.setattr(ev, "_SEEDED_RESETS", {})
    mode = dict(vectorization_mode="vector_entry_point")
    with VectorEvaluator("CartPole-v1", **mode) as a, VectorEvaluator("CartPole-v1", **mode) as b:
        ra, rb = a.evaluate(agent, infos, seeds), b.evaluate(agent, infos, seeds)
        assert not a.per_member_seeds
    np.testing.assert_array_equal(ra.rewards, rb.rewards)
    with SerialEvaluator("CartPole-v1") as s:
        assert not np.array_equal(s.evaluate(agent, infos, seeds).rewards, ra.rewards)

    # A seeded reset that does not reproduce the single env is refused, with a warning.
    def wrong(env, seeds):
        obs, _ = env.reset(seed=int(seeds[0]))
        return obs

    name = "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv"
    monkeypatch.setattr(ev, "_SEEDED_RESETS", {name: wrong})
    monkeypatch.setattr(ev, "_seeded_reset_checked", {})
    with VectorEvaluator("CartPole-v1", **mode) as c:
        with pytest.warns(RuntimeWarning, match="no longer reproduces the single environment"):
            c.evaluate(agent, infos, seeds)
        assert not c.per_member_seeds


def test_a_model_without_a_batch_dimension_is_refused_saying_what_it_has_and_needs():
    import warnings

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from evokit.evaluation.envs import check_policy_fits

    w = numpy_helper.from_array(np.zeros((4, 2), np.float32), "W")
    graph = helper.make_graph([helper.make_node("MatMul", ["obs", "W"], ["action"])], "g",
                              [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("action", TensorProto.FLOAT, [2])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the native backend falls back first
        policy = evokit.OnnxPolicy.from_model(model)
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(EnvError, match=r"^the policy's input 'obs' has shape \[4\], one observation "
                                       r"without a batch dimension; EvoKit feeds \[batch, 4\]"):
        check_policy_fits(policy, env)
    env.close()
