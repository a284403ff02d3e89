"""Recurrent policies in every evaluator: each episode starts from a zero
state (a member's two episodes give what each gives alone; evaluating twice
gives the same returns), and the lockstep, native and process evaluators
equal the serial one; `evokit evaluate` and `evokit init-model --recurrent`;
a recurrent policy trained on CartPole."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import evokit
from evokit.evaluation.processes import ProcessEvaluator
from evokit.evaluation.serial import SerialEvaluator
from evokit.evaluation.vector import VectorEvaluator
from evokit.policy.mlp import init_mlp

CONFIG = """solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 7 cache_size: 100000 } }
  population_size: 6
}
"""


def recurrent_agent(tmp_path, cell: str, obs_dim: int = 4, act_dim: int = 2):
    (tmp_path / "c.prototxt").write_text(CONFIG)
    path = tmp_path / f"{cell}.onnx"
    model = init_mlp(obs_dim, act_dim, (8,), recurrent=cell, seed=1)
    # A head large enough that the state sways the actions.
    for t in model.graph.initializer:
        if t.name == "head.weight":
            w = np.frombuffer(t.raw_data, np.float32) * 300.0
            t.raw_data = w.astype(np.float32).tobytes()
    path.write_bytes(model.SerializeToString())
    agent = evokit.ESAgent(str(tmp_path / "c.prototxt"), str(path))
    assert agent.policy.backend == "native" and agent.policy.recurrent
    return agent


def members(agent, n: int = 4):
    return [agent.clone().add_noise() for _ in range(n)] + [None]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_episodes_start_from_zero_and_every_evaluator_agrees(tmp_path, cell):
    agent = recurrent_agent(tmp_path, cell)
    infos = members(agent)
    seeds = [[i, 100 + i] for i in range(len(infos))]
    with SerialEvaluator("CartPole-v1") as serial:
        want = serial.evaluate(agent, infos, seeds)
        again = serial.evaluate(agent, infos, seeds)
        alone = [serial.evaluate(agent, infos, [[s[k]] for s in seeds]).rewards for k in (0, 1)]
    np.testing.assert_array_equal(want.rewards, again.rewards)
    np.testing.assert_array_equal(want.rewards, (alone[0] + alone[1]) / 2)
    assert len(set(want.rewards.tolist())) > 2  # the members differ
    for mode, threads in [("native", 1), ("native", 2), ("sync", 1), ("vector_entry_point", 1)]:
        with VectorEvaluator("CartPole-v1", num_threads=threads, vectorization_mode=mode) as v:
            got = v.evaluate(agent, infos, seeds)
        np.testing.assert_array_equal(got.rewards, want.rewards, err_msg=mode)
        assert got.steps == want.steps
    with ProcessEvaluator("CartPole-v1", num_workers=2) as p:
        np.testing.assert_array_equal(p.evaluate(agent, infos, seeds).rewards, want.rewards)


def test_the_state_changes_the_episodes(tmp_path):
    """The same member with its state zeroed before every step (a stateless
    evaluation) has other returns: the evaluators above did carry it."""
    agent = recurrent_agent(tmp_path, "lstm")
    infos = members(agent)
    clone = agent.clone()
    import gymnasium

    env = gymnasium.make("CartPole-v1")
    differ = 0
    for info in infos[:-1]:
        clone.set_noise(info)
        obs, _ = env.reset(seed=3)
        total, done = 0.0, False
        while not done:
            clone.reset_state()
            obs, r, term, trunc, _ = env.step(int(np.argmax(clone.predict(obs.astype(np.float32)))))
            total, done = total + r, term or trunc
        with SerialEvaluator("CartPole-v1") as serial:
            carried = serial.evaluate(agent, [info], [[3]]).rewards[0]
        differ += carried != total
    env.close()
    assert differ >= 1


def test_native_mujoco_rollouts_carry_and_reset_the_state(tmp_path):
    pytest.importorskip("mujoco")
    agent = recurrent_agent(tmp_path, "gru", obs_dim=8, act_dim=2)
    infos = members(agent, 2)
    seeds = [[i, 50 + i] for i in range(len(infos))]
    with SerialEvaluator("Swimmer-v5") as serial, \
            VectorEvaluator("Swimmer-v5", num_threads=2) as vector:
        assert vector.vectorization_mode == "native"
        want, got = serial.evaluate(agent, infos, seeds), vector.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(got.rewards, want.rewards)


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "evokit.cli", *args], cwd=cwd,
                          capture_output=True, text=True)


def test_init_model_recurrent_and_evaluate(tmp_path):
    out = run_cli("init-model", "--env", "CartPole-v1", "--recurrent", "gru", "--hidden", "8",
                  "4", "-o", "gru.onnx", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "wrote gru.onnx: GRU + MLP [8, 4] (tanh) for CartPole-v1"
    policy = evokit.OnnxPolicy.load(tmp_path / "gru.onnx")
    assert policy.backend == "native" and policy.state_names == ["h0"]
    report = run_cli("evaluate", "gru.onnx", "--env", "CartPole-v1", "--episodes", "3",
                     cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    bad = run_cli("init-model", "--env", "CartPole-v1", "--recurrent", "lstm", "--hidden",
                  "-o", "x.onnx", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("evokit init-model: --recurrent lstm needs --hidden with at "
                                  "least one size (the cell's hidden size)")


def write_train_config(path, train: str) -> None:
    """configs/cartpole.prototxt's solver (40 members, std 0.1, Adam 0.05) and `train`."""
    path.write_text("""solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.1 cached: true seed: 1024 cache_size: 100000 } }
  population_size: 40
  fitness_shaping: CENTERED_RANK
}
train { %s seed: 0 }
""" % train)


def test_a_recurrent_policy_learns_cartpole(tmp_path):
    """An LSTM policy from init-model, trained by evokit.train on the native
    CartPole rollouts (32 generations, well under a second here)."""
    write_train_config(tmp_path / "c.prototxt", 'env_id: "CartPole-v1" max_generations: 60 '
                       "eval_every: 2 eval_episodes: 20 target_return: 475 num_workers: 2")
    model = tmp_path / "lstm.onnx"
    evokit.init_model("CartPole-v1", model, hidden_sizes=(8,), recurrent="lstm")
    result = evokit.train(str(tmp_path / "c.prototxt"), model=str(model),
                          out_dir=str(tmp_path / "run"), log=lambda line: None)
    assert result.solved, (result.generations, result.eval_mean)
    trained = evokit.OnnxPolicy.load(tmp_path / "run" / "model.onnx")
    assert trained.recurrent and trained.backend == "native"


def _masked_cartpole(**kwargs):
    """CartPole-v1 observing only the cart position and the pole angle: the
    velocities must be inferred from the past, which takes memory."""
    import gymnasium
    from gymnasium.wrappers import TransformObservation

    env = gymnasium.make("CartPole-v1", **kwargs)
    low, high = env.observation_space.low[[0, 2]], env.observation_space.high[[0, 2]]
    space = gymnasium.spaces.Box(low, high, dtype=np.float32)
    return TransformObservation(env, lambda o: o[[0, 2]].astype(np.float32), space)


@pytest.mark.slow
def test_an_lstm_learns_cartpole_without_velocities(tmp_path):
    """A memory task: about 260 generations here (20 s), where a 16-unit MLP
    stays below 50 after 300 (measured with the same config and seed)."""
    import gymnasium

    if "EvoKitMaskedCartPole-v1" not in gymnasium.registry:
        gymnasium.register("EvoKitMaskedCartPole-v1", entry_point=_masked_cartpole)
    write_train_config(tmp_path / "c.prototxt", 'env_id: "EvoKitMaskedCartPole-v1" '
                       "max_generations: 300 eval_every: 5 eval_episodes: 10 target_return: 400 "
                       "num_workers: 1")
    model = tmp_path / "lstm.onnx"
    evokit.init_model("EvoKitMaskedCartPole-v1", model, hidden_sizes=(16,), recurrent="lstm")
    result = evokit.train(str(tmp_path / "c.prototxt"), model=str(model), evaluator_kind="vector",
                          out_dir=str(tmp_path / "run"), log=lambda line: None)
    assert result.solved, (result.generations, result.eval_mean)
