"""The training loop, the evaluators, the CLI and the demo."""

import csv
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

import evokit
from evokit.cli import main as cli
from evokit.errors import EnvError
from evokit.evaluation.processes import ProcessEvaluator
from evokit.evaluation.serial import SerialEvaluator

from helpers import CARTPOLE, ROOT


def quiet(_):
    pass


def open_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def short_config(generations=3, workers=1):
    cfg = evokit.load_config(CARTPOLE)
    cfg.train.max_generations = generations
    cfg.train.num_workers = workers
    cfg.train.eval_every = 2
    cfg.train.eval_episodes = 3
    cfg.solver.population_size = 10
    return cfg


def test_train_writes_model_solver_metrics(tmp_path):
    res = evokit.train(short_config(), out_dir=str(tmp_path), log=quiet)
    assert res.generations == 3 and not res.solved
    for name in ("model.onnx", "solver.pb", "config.prototxt", "metrics.csv", "init_model.onnx"):
        assert (tmp_path / name).is_file(), name
    with open(tmp_path / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["generation"]) for r in rows] == [1, 2, 3]
    assert rows[0]["eval_mean"] == "" and float(rows[1]["eval_mean"]) > 0
    assert int(rows[-1]["env_steps"]) == res.env_steps > 0
    # the saved model is plain ONNX with the trained parameters
    agent = evokit.ESAgent()
    agent.load_config(tmp_path / "config.prototxt")
    agent.load_inference_model(tmp_path / "model.onnx")
    agent.init_solver()
    agent.load_solver(tmp_path)
    assert agent.model_iter_id == 3
    sess = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    obs = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"obs": obs})[0], agent.predict(obs), rtol=1e-6)


def test_same_seed_same_model_bits_for_any_worker_count(tmp_path):
    a = evokit.train(short_config(workers=1), out_dir=str(tmp_path / "a"), log=quiet)
    b = evokit.train(short_config(workers=2), out_dir=str(tmp_path / "b"), log=quiet)
    c = evokit.train(short_config(workers=1), seed=5, out_dir=str(tmp_path / "c"), log=quiet)
    pa, pb_, pc = (open_bytes(r.model_path) for r in (a, b, c))
    assert pa == pb_
    assert pa != pc
    assert [r["reward_mean"] for r in a.history] == [r["reward_mean"] for r in b.history]


def test_evaluators_agree(mlp_path, seed_config):
    agent = evokit.ESAgent(seed_config, mlp_path)
    clones = [agent.clone() for _ in range(4)]
    infos = [c.add_noise() for c in clones] + [None]
    seeds = [[1, 2], [1, 2], [3], [3], [4]]
    with SerialEvaluator("CartPole-v1") as s, ProcessEvaluator("CartPole-v1", 2) as p:
        rs, rp = s.evaluate(agent, infos, seeds), p.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(rs.rewards, rp.rewards)
    assert rs.steps == rp.steps >= 5 * 8


def test_unknown_env_and_policy_that_does_not_fit(tmp_path, mlp_path):
    with pytest.raises(EnvError, match=r"cannot make environment 'NoSuchEnv-v0'"):
        evokit.train(short_config(), env_id="NoSuchEnv-v0", out_dir=str(tmp_path), log=quiet)
    with pytest.raises(EnvError, match=r"the policy takes observations of shape \(4,\), the environment "
                                       r"gives \(3,\)"):
        evokit.train(short_config(), env_id="Pendulum-v1", model=mlp_path, out_dir=str(tmp_path), log=quiet)


@pytest.mark.parametrize("command", ["train", "init-model", "check-config", "init-solver", "sample", "plot",
                                     "update", "evaluate"])
def test_cli_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli([command, "--help"])
    assert e.value.code == 0
    assert f"usage: evokit {command}" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert cli(["train", str(tmp_path / "missing.prototxt")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"evokit: error: {tmp_path / 'missing.prototxt'}: no such config file"
    bad = tmp_path / "bad.prototxt"
    bad.write_text("solver { sampling { gaussian_sampling { std: -1 } } }\n")
    assert cli(["check-config", str(bad)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"evokit: error: {bad}:1: solver.sampling.gaussian_sampling.std must be > 0, got -1")
    assert cli(["train", CARTPOLE, "--env", "NoSuchEnv-v0", "--out", str(tmp_path)]) == 1
    assert "cannot make environment 'NoSuchEnv-v0'" in capsys.readouterr().err


def test_cli_init_model_and_train(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    assert cli(["init-model", "--env", "CartPole-v1", "--hidden", "8", "-o", str(model)]) == 0
    assert capsys.readouterr().out == f"wrote {model}: MLP [8] (tanh) for CartPole-v1\n"
    policy = evokit.OnnxPolicy.load(model)
    assert policy.num_params == 4 * 8 + 8 + 8 * 2 + 2
    assert cli(["train", CARTPOLE, "--model", str(model), "--max-generations", "2", "--workers", "1",
                "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert (tmp_path / "run" / "model.onnx").is_file()
    assert capsys.readouterr().out == ""


def test_cli_workers_argument(capsys):
    from evokit.cli import _parser

    assert _parser().parse_args(["train", "c", "--workers", "auto"]).workers == (os.cpu_count() or 1)
    with pytest.raises(SystemExit):
        _parser().parse_args(["train", "c", "--workers", "0"])
    assert "argument --workers: must be >= 1, got 0" in capsys.readouterr().err


def test_console_script_runs():
    out = subprocess.run(["evokit", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"evokit {evokit.__version__}"


def test_demo_quick_mode():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "demo", "cartpole.py"), "--quick"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("epoch") == 3 and "model and solver saved" in out.stdout


def _judged_return(model_path, episodes=100):
    """The saved model in plain onnxruntime on fresh CartPole-v1 episodes:
    bench/judge.py's judge (its episode seeds start at 2**31, above every
    training seed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("evokit_bench_judge",
                                                  os.path.join(ROOT, "bench", "judge.py"))
    judge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judge)
    return float(np.mean(judge.judge(model_path, "CartPole-v1", episodes)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 6, 8, 1234])
def test_cartpole_default_config_solves_as_an_independent_judge_sees_it(seed, tmp_path):
    res = evokit.train(CARTPOLE, seed=seed, out_dir=str(tmp_path), log=quiet)
    assert res.solved, f"seed {seed}: centre return {res.eval_mean} after {res.generations} generations"
    assert res.eval_mean >= 490
    # Gymnasium's "solved" on 100 episodes the run never saw.
    assert _judged_return(res.model_path) >= 475


def _ars_config(offset):
    cfg = short_config(generations=2)
    cfg.solver.sampling.type = evokit.evokit_pb2.SamplingConfig.ARS_SAMPLING
    cfg.solver.sampling.ars_sampling.step_size = 0.5
    cfg.train.alive_bonus_offset = offset
    return cfg


def test_alive_bonus_offset_shifts_the_update_not_the_reported_returns(tmp_path):
    # CartPole pays 1 per step: with the offset 1, every training reward is
    # 0, so ARS's differences vanish and the centre stays where it started;
    # the metrics still report the environment's returns.
    still = evokit.train(_ars_config(1.0), out_dir=str(tmp_path / "a"), log=quiet)
    moved = evokit.train(_ars_config(0.0), out_dir=str(tmp_path / "b"), log=quiet)
    init = evokit.OnnxPolicy.load(tmp_path / "a" / "init_model.onnx")
    assert np.array_equal(evokit.OnnxPolicy.load(still.model_path).initial_params(), init.initial_params())
    assert not np.array_equal(evokit.OnnxPolicy.load(moved.model_path).initial_params(),
                              init.initial_params())
    for res in (still, moved):
        assert all(row["reward_min"] >= 8 for row in res.history)  # CartPole lasts >= 8 steps
    assert [r["reward_mean"] for r in still.history][:1] == [r["reward_mean"] for r in moved.history][:1]


def test_alive_bonus_offset_must_be_finite_and_not_negative():
    for value in ("-1", "inf"):
        with pytest.raises(evokit.ConfigError, match=f"train.alive_bonus_offset must be finite and "
                                                     f">= 0, got {value}"):
            evokit.parse_config(f"train {{ alive_bonus_offset: {value} }}")
