"""The Ray backend: RayEvaluator, train(backend="ray"), the CLI, worker death.

One local Ray instance (2 CPUs) serves the whole module and is shut down at
its end, so no Ray process outlives the tests."""

import os

import numpy as np
import pytest

import evokit
from evokit.cli import main as cli
from evokit.config import config_to_text
from evokit.evaluation.serial import SerialEvaluator

ray = pytest.importorskip("ray")
from evokit.evaluation.ray_backend import RayEvaluator, init_ray  # noqa: E402

from helpers import CARTPOLE, ROOT, quiet, read  # noqa: E402
from helpers import mlp_agent as agent_for  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    init_ray(num_cpus=2)
    yield
    ray.shutdown()


def short_config(generations=4, population=12):
    cfg = evokit.load_config(CARTPOLE)
    cfg.train.max_generations = generations
    cfg.train.num_workers = 2
    cfg.train.eval_every = 2
    cfg.train.eval_episodes = 3
    cfg.solver.population_size = population
    return cfg


def test_rewards_equal_serial_evaluator(tmp_path):
    cfg = short_config()
    agent = agent_for(tmp_path, cfg)
    clones = [agent.clone() for _ in range(7)]
    infos = [c.add_noise() for c in clones] + [None]
    seeds = [[100 + i, 200 + i] for i in range(8)]
    with SerialEvaluator("CartPole-v1") as serial:
        want = serial.evaluate(agent, infos, seeds)
    with RayEvaluator("CartPole-v1", 2, chunks_per_worker=2) as ev:
        got = ev.evaluate(agent, infos, seeds)
        assert ev.last_timing["chunks"] == 4 and ev.last_timing["failures"] == 0
        assert 0 < ev.last_timing["put"] < ev.last_timing["wall"]
        again = ev.evaluate(agent, [None, None], [[7], [8]])  # the same centre: no new put
        assert ev.state_puts == 1
        agent.update(infos[:7], np.arange(7.0))
        ev.evaluate(agent, [None], [[7]])
        assert ev.state_puts == 2
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps
    with SerialEvaluator("CartPole-v1") as serial:
        np.testing.assert_array_equal(again.rewards, serial.evaluate(agent_for(tmp_path, cfg), [None, None],
                                                                      [[7], [8]]).rewards)
    assert ray.is_initialized()  # the module's instance: not the evaluator's to shut down


def test_recurrent_policy_rewards_equal_serial_evaluator(tmp_path):
    """Each actor's evaluator starts every episode of an LSTM policy from a zero state."""
    from evokit.policy.mlp import init_mlp

    path = tmp_path / "lstm.onnx"
    path.write_bytes(init_mlp(4, 2, (8,), recurrent="lstm", seed=3).SerializeToString())
    agent = evokit.ESAgent(short_config(), str(path))
    infos = [agent.clone().add_noise() for _ in range(5)] + [None]
    seeds = [[300 + i, 400 + i] for i in range(6)]
    with SerialEvaluator("CartPole-v1") as serial:
        want = serial.evaluate(agent, infos, seeds)
    with RayEvaluator("CartPole-v1", 2, chunks_per_worker=2) as ev:
        got = ev.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps


def test_worker_killed_mid_generation_gives_the_same_model(tmp_path):
    cfg = short_config()
    cfg.train.observation_normalization = True  # statistics merged from the actors too
    ref = evokit.train(cfg, out_dir=str(tmp_path / "local"), log=quiet)

    ev = RayEvaluator("CartPole-v1", 2, chunks_per_worker=3)
    killed = []

    def kill_one(in_flight):
        # Generation 1, a chunk running on each actor: kill the first actor
        # (ray.kill ends its process at once, mid-task).
        if not killed:
            ray.kill(in_flight[0], no_restart=True)
            killed.append(in_flight[0])

    ev._after_submit = kill_one
    try:
        res = evokit.train(cfg, out_dir=str(tmp_path / "ray"), evaluator=ev, log=quiet)
        assert ev.worker_failures == 1 and len(killed) == 1
        assert len(ev.actors) == 2  # a replacement was started
        assert killed[0] not in ev.actors
    finally:
        ev.close()
    assert res.env_steps == ref.env_steps
    assert [r["reward_mean"] for r in res.history] == [r["reward_mean"] for r in ref.history]
    assert read(tmp_path / "ray" / "model.onnx") == read(tmp_path / "local" / "model.onnx")
    assert read(tmp_path / "ray" / "solver.pb") == read(tmp_path / "local" / "solver.pb")
    assert read(tmp_path / "ray" / "obs_norm.pb") == read(tmp_path / "local" / "obs_norm.pb")


def test_too_many_worker_deaths_is_an_error(tmp_path):
    cfg = short_config()
    agent = agent_for(tmp_path, cfg)
    infos = [c.add_noise() for c in [agent.clone() for _ in range(4)]]
    ev = RayEvaluator("CartPole-v1", 2, max_worker_failures=0)

    def kill_all(in_flight):
        for actor in in_flight:
            ray.kill(actor, no_restart=True)

    ev._after_submit = kill_all
    try:
        with pytest.raises(RuntimeError, match=r"^1 Ray workers died in one evaluation "
                                               r"\(max_worker_failures=0\)"):
            ev.evaluate(agent, infos, [[1]] * 4)
    finally:
        ev.close()


def test_cli_backend_ray_equals_local(tmp_path):
    cfg_path = tmp_path / "short.prototxt"
    cfg_path.write_text(config_to_text(short_config(generations=2)))
    args = [str(cfg_path), "--quiet", "--workers", "2"]
    assert cli(["train", *args, "--out", str(tmp_path / "local")]) == 0
    assert cli(["train", *args, "--out", str(tmp_path / "ray"), "--backend", "ray"]) == 0
    assert read(tmp_path / "ray" / "model.onnx") == read(tmp_path / "local" / "model.onnx")


def test_bad_backend_and_address_are_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^backend must be one of local, ray, got 'dask'$"):
        evokit.train(short_config(), backend="dask", out_dir=str(tmp_path), log=quiet)
    assert cli(["train", CARTPOLE, "--address", "10.0.0.1:6379", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == (
        "evokit: error: address='10.0.0.1:6379' is for backend='ray', got backend='local'")


@pytest.mark.parametrize("name,family", [("cartpole_cma.prototxt", None), ("cartpole_ga.prototxt", None),
                                         ("cartpole_cma.prototxt", "MAES_SAMPLING")])
def test_ray_backend_trains_every_solver_as_locally(tmp_path, name, family):
    """CMA, GA and distribution-family members (MA-ES: a family added by one
    registry row) are rebuilt on the actors from the solver's sampling
    state: the run is the local one, bit for bit."""
    cfg = evokit.load_config(os.path.join(ROOT, "configs", name))
    if family is not None:
        cfg.solver.sampling.type = evokit.proto.SamplingConfig.Type.Value(family)
    cfg.train.max_generations = 2
    cfg.train.num_workers = 2
    for backend in ("ray", "local"):
        evokit.train(cfg, backend=backend, out_dir=str(tmp_path / backend), log=quiet)
    assert read(tmp_path / "ray" / "model.onnx") == read(tmp_path / "local" / "model.onnx")
    assert read(tmp_path / "ray" / "solver.pb") == read(tmp_path / "local" / "solver.pb")


def test_workers_the_cluster_cannot_place_are_given_up_not_waited_for(tmp_path, caplog):
    # The module's instance has 2 CPUs and each worker needs one: the third
    # never starts. The evaluation goes on with the others instead of waiting.
    cfg = short_config()
    agent = agent_for(tmp_path, cfg)
    infos = [c.add_noise() for c in [agent.clone() for _ in range(6)]]
    seeds = [[10 + i] for i in range(6)]
    with SerialEvaluator("CartPole-v1") as serial:
        want = serial.evaluate(agent, infos, seeds)
    # 10 s: on a busy machine (CI beside other jobs) an actor that can start
    # may take several seconds to
    with RayEvaluator("CartPole-v1", 3, actor_start_timeout=10.0) as ev:
        got = ev.evaluate(agent, infos, seeds)
        assert 1 <= len(ev.actors) <= 2
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert any(f"of 3 Ray workers started within 10 s; evaluating with those" in r.getMessage()
               for r in caplog.records)


def test_without_address_a_run_starts_its_own_instance_whatever_cluster_is_around(tmp_path):
    # A bare ray.init() joins the cluster that RAY_ADDRESS (or the cluster file
    # an earlier `ray start` leaves) names, and then refuses num_cpus; EvoKit
    # starts its own local instance. (A real `ray start` / `ray stop` here
    # would take down this module's instance and the test process with it.)
    import subprocess
    import sys

    cfg_path = tmp_path / "short.prototxt"
    cfg_path.write_text(config_to_text(short_config(generations=2)))
    env = dict(os.environ, RAY_ADDRESS="127.0.0.1:9", RAY_USAGE_STATS_ENABLED="0")
    out = subprocess.run([sys.executable, "-m", "evokit.cli", "train", str(cfg_path), "-q",
                          "--backend", "ray", "--workers", "2", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
    assert out.returncode == 0, out.stderr


def _rastrigin(x):
    return float(10 * len(x) + np.sum(x * x - 10 * np.cos(2 * np.pi * x)))


def test_optimize_on_ray_is_the_serial_run():
    """optimize(backend="ray") evaluates chunks on Ray actors (Ray is already
    up here, so the instance is used as it is) and tells the values in
    order: the serial run, bit for bit."""
    def run(**kw):
        return evokit.CMAES(np.full(6, 2.0), 1.0, seed=4).optimize(_rastrigin, max_iterations=15, **kw)

    serial, on_ray = run(), run(num_workers=2, backend="ray")
    np.testing.assert_array_equal(on_ray.xbest, serial.xbest)
    assert on_ray.evaluations == serial.evaluations and on_ray.fbest == serial.fbest

    def boom(x):
        raise KeyError("raised on a Ray actor")

    with pytest.raises(KeyError, match="raised on a Ray actor"):
        evokit.CMAES(np.zeros(3), 1.0).optimize(boom, num_workers=2, backend="ray")
