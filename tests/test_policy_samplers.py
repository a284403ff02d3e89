"""CMA-ES and the GA as samplers of ESAgent (CMA_SAMPLING, GA_SAMPLING):
config validation, clone / add_noise / set_noise / update against the C++
strategies used directly, solver.pb round trips, the pipeline and the CLI."""

import os
import subprocess

import numpy as np
import pytest

import evokit
from evokit import ConfigError, ESAgent, _core, load_config, parse_config
from evokit import evokit_pb2 as pb
from evokit.online.pipeline import update
from evokit.online.samplelog import append_records, read_log
from evokit.online.warehouse import Warehouse
from evokit.policy.mlp import init_mlp
from evokit.statefile import read_state_file, write_state_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CMA = """solver {
  sampling { type: CMA_SAMPLING cma_sampling { sigma0: 0.3 separable: %s seed: 7 } }
  population_size: 8
  antithetic: false
}
"""

GA = """solver {
  sampling { type: GA_SAMPLING ga_sampling { truncation_size: 3 num_elites: 1 mutation_power: 0.05
             init_sigma: 0.2 elite_candidates: 2 elite_evaluations: %d seed: 11 } }
  population_size: 9
  antithetic: false
}
"""


def cma_config(separable=False):
    return parse_config(CMA % ("true" if separable else "false"))


def ga_config(elite_evaluations=0):
    return parse_config(GA % elite_evaluations)


def fitness(params):
    """A toy reward, larger is better: -||theta - 0.5||^2 in double."""
    return -float(np.sum((np.asarray(params, np.float64) - 0.5) ** 2))


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(init_mlp(4, 2, hidden_sizes=(3,), seed=1).SerializeToString())
    return str(path)


def generation(agent, clones):
    infos = [c.add_noise() for c in clones]
    rewards = [fitness(c.params) for c in clones]
    return infos, rewards


# ---------------------------------------------------------------- config


@pytest.mark.parametrize("text, message", [
    ("solver { sampling { type: CMA_SAMPLING cma_sampling { sigma0: -1 } } antithetic: false }",
     "bad.prototxt:1: solver.sampling.cma_sampling.sigma0 must be > 0, got -1"),
    ("solver {\n  sampling { type: CMA_SAMPLING }\n  antithetic: true\n}",
     "bad.prototxt:3: solver.antithetic must be false with CMA_SAMPLING (mirrored pairs are a "
     "Gaussian-sampling scheme), got true"),
    ("solver { sampling { type: GA_SAMPLING } antithetic: false population_size: 1 }",
     "bad.prototxt:1: solver.population_size must be >= 2, got 1"),
    ("solver {\n antithetic: false\n population_size: 6\n sampling {\n  type: GA_SAMPLING\n"
     "  ga_sampling { truncation_size: 7 }\n }\n}",
     "bad.prototxt:6: solver.sampling.ga_sampling.truncation_size must be in [1, 6] "
     "(solver.population_size), got 7"),
    ("solver { antithetic: false population_size: 16 sampling { type: GA_SAMPLING\n"
     " ga_sampling { num_elites: 16 } } }",
     "bad.prototxt:2: solver.sampling.ga_sampling.num_elites must be in [1, 15] "
     "(solver.population_size - 1), got 16"),
    ("solver { antithetic: false sampling { type: GA_SAMPLING ga_sampling {\n mutation_power: 0 } } }",
     "bad.prototxt:2: solver.sampling.ga_sampling.mutation_power must be > 0, got 0"),
    ("solver { antithetic: false sampling { type: GA_SAMPLING ga_sampling { init_sigma: -0.1 } } }",
     "bad.prototxt:1: solver.sampling.ga_sampling.init_sigma must be >= 0, got -0.1"),
    ("solver { antithetic: false sampling { type: GA_SAMPLING ga_sampling { elite_evaluations: -1 } } }",
     "bad.prototxt:1: solver.sampling.ga_sampling.elite_evaluations must be >= 0, got -1"),
    ("solver { antithetic: false population_size: 20 sampling { type: GA_SAMPLING ga_sampling {\n"
     " num_elites: 3 elite_candidates: 2 elite_evaluations: 1 } } }",
     "bad.prototxt:2: solver.sampling.ga_sampling.elite_candidates must be in [3, 20] (num_elites "
     "to solver.population_size), got 2"),
    ("solver { antithetic: false population_size: 20 sampling { type: GA_SAMPLING ga_sampling {\n"
     " elite_candidates: 4 elite_evaluations: 5 } } }",
     "bad.prototxt:2: solver.sampling.ga_sampling.elite_evaluations (5) times the at most 5 "
     "candidates (elite_candidates + num_elites) is 25, more than the 20 samples of a generation "
     "(solver.population_size)"),
], ids=["cma-sigma0", "antithetic", "population", "truncation", "elites", "mutation-power",
        "init-sigma", "elite-evaluations", "elite-candidates", "reevaluation-budget"])
def test_bad_cma_and_ga_configs_name_file_line_and_field(tmp_path, text, message):
    path = tmp_path / "bad.prototxt"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == message.replace("bad.prototxt", str(path))


def test_unknown_sampling_type_lists_the_three(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown value CMA, expected one of GAUSSIAN_SAMPLING, "
                                          r"CMA_SAMPLING, GA_SAMPLING"):
        parse_config("solver { sampling { type: CMA } }")


def test_defaults_are_documented_values():
    c = parse_config("")
    cma, ga = c.solver.sampling.cma_sampling, c.solver.sampling.ga_sampling
    assert (cma.sigma0, cma.separable, cma.seed) == (0.5, False, 1024)
    # 0: the formulas max(1, population_size // 5) and min(10, population_size)
    assert (ga.truncation_size, ga.num_elites, ga.elite_candidates, ga.elite_evaluations,
            ga.seed) == (0, 1, 0, 0, 1024)
    assert ga.mutation_power == pytest.approx(0.02) and ga.init_sigma == pytest.approx(0.02)


# ---------------------------------------------------------------- CMA agent


@pytest.mark.parametrize("separable", [False, True])
def test_cma_agent_is_the_cpp_cma_step_for_step(model, separable):
    agent = ESAgent(cma_config(separable), model)
    x0 = agent.center.astype(np.float64)
    ref = (_core.SepCMAES if separable else _core.CMAES)(
        x0, 0.3, population_size=8, seed=7, tolfun=0.0, tolfunhist=0.0, tolx=0.0,
        noeffectaxis=False, noeffectcoord=False)
    clones = [agent.clone() for _ in range(8)]
    for it in range(4):
        solutions = ref.ask()
        infos, rewards = generation(agent, clones)
        assert [list(i.key) for i in infos] == [[int(k)] for k in ref.keys]
        assert all(i.model_iter_id == it and not i.mirrored for i in infos)
        for c, x in zip(clones, solutions):
            np.testing.assert_array_equal(c.params, x.astype(np.float32))
        # another clone rebuilds a sample from its info alone
        other = agent.clone()
        other.set_noise(infos[5])
        np.testing.assert_array_equal(other.params, clones[5].params)
        stats = agent.update(infos, rewards)
        ref.tell(-np.asarray(rewards))  # CMA minimises
        assert stats["num_samples"] == 8 and agent.model_iter_id == it + 1
        np.testing.assert_array_equal(agent.center, ref.mean_solution.astype(np.float32))
        assert agent.solver.cma.get_state()["sigma"] == ref.get_state()["sigma"]


def test_cma_update_checks_every_sample(model):
    agent = ESAgent(cma_config(), model)
    clones = [agent.clone() for _ in range(8)]
    infos, rewards = generation(agent, clones)
    with pytest.raises(ValueError) as e:
        agent.update(infos[:6], rewards[:6])
    assert str(e.value) == ("CMA update needs 1 reward(s) for each of the 8 members of iteration 0; "
                            "2 have fewer (first: member 6 with 0)")
    bad = pb.SamplingInfo(key=[12345], model_iter_id=0)
    with pytest.raises(ValueError, match=r"^sampling info 8: key \[12345\] is not a member of "
                                          r"iteration 0$"):
        agent.update(infos + [bad], rewards + [0.0])
    with pytest.raises(ValueError, match=r"^reward 2 is nan, expected a finite value$"):
        agent.update(infos, rewards[:2] + [float("nan")] + rewards[3:])
    assert agent.model_iter_id == 0  # nothing changed on error
    # several rewards of one member are averaged
    agent.update(infos + [infos[0]], rewards + [rewards[0] + 2.0])
    ref = ESAgent(cma_config(), model)
    ref_clones = [ref.clone() for _ in range(8)]
    ref_infos, _ = generation(ref, ref_clones)
    ref.update(ref_infos, [rewards[0] + 1.0] + rewards[1:])
    np.testing.assert_array_equal(agent.center, ref.center)
    # a sample of the old distribution is refused, naming both iterations
    with pytest.raises(ValueError) as e:
        clones[0].set_noise(infos[0])
    assert str(e.value) == ("a CMA sample of iteration 0 cannot be rebuilt at iteration 1: its "
                            "distribution is gone (only samples of the current iteration are usable)")


def test_a_generation_solver_has_no_gaussian_parts(model):
    agent = ESAgent(cma_config(), model)
    solver = agent.solver
    assert solver.draws == 0
    for name in ("sampler", "optimizer"):
        assert not hasattr(solver, name)
    with pytest.raises(AttributeError, match=r"^a CMA solver has no 'optimizer'$"):
        solver.optimizer
    with pytest.raises(RuntimeError, match=r"^set_center\(\): the CMA strategy's centre follows from its "
                                           r"state; it cannot be replaced$"):
        solver.set_center(np.asarray(agent.center))


def test_strategy_members_are_rebuilt_by_a_replica_in_a_worker(model):
    agent = ESAgent(cma_config(), model)
    clones = [agent.clone() for _ in range(8)]
    infos, rewards = generation(agent, clones)
    agent.update(infos, rewards)
    replica = ESAgent.replica(agent.config, agent.policy)
    replica.load_sampling_state(agent.sampling_state())
    mine, theirs = agent.clone(), replica.clone()
    for info in [c.add_noise() for c in clones]:
        mine.set_noise(info)
        theirs.set_noise(info)
        np.testing.assert_array_equal(theirs.params, mine.params)
    with pytest.raises(RuntimeError, match=r"^sampler: CMA_SAMPLING has no Gaussian sampler$"):
        agent.sampler


# ---------------------------------------------------------------- GA agent


def test_ga_agent_is_the_cpp_ga_step_for_step(model):
    agent = ESAgent(ga_config(), model)
    ref = _core.GeneticAlgorithm(agent.center.copy(), population_size=9, truncation_size=3, num_elites=1,
                                 mutation_power=0.05, init_sigma=0.2, elite_candidates=2,
                                 elite_evaluations=0, seed=11)
    np.testing.assert_array_equal(agent.center, ref.x0)
    clones = [agent.clone() for _ in range(9)]
    for it in range(4):
        infos, rewards = generation(agent, clones)
        assert [list(i.key) for i in infos] == [list(i.key) for i in ref.ask()]
        for c, info in zip(clones, infos):
            np.testing.assert_array_equal(c.params, ref.rebuild(list(info.key)))
        agent.update(infos, rewards)
        ref.tell(np.asarray(rewards))
        assert agent.model_iter_id == it + 1
        # the centre is the best elite
        np.testing.assert_array_equal(agent.center, ref.rebuild(list(ref.elites[0].key)))
    assert len(infos[-1].key) > 1  # seed lists grow by one mutation per generation


def test_ga_elite_reevaluation_takes_two_updates(model):
    agent = ESAgent(ga_config(elite_evaluations=2), model)
    ref = _core.GeneticAlgorithm(agent.center.copy(), population_size=9, truncation_size=3, num_elites=1,
                                 mutation_power=0.05, init_sigma=0.2, elite_candidates=2,
                                 elite_evaluations=2, seed=11)
    clones = [agent.clone() for _ in range(9)]
    infos, rewards = generation(agent, clones)
    agent.update(infos, rewards)
    ref.tell(np.asarray(rewards))
    # the next draws cycle over the elite candidates
    candidates = [list(i.key) for i in ref.ask_elite_candidates()]
    infos, _ = generation(agent, clones[:4])
    assert [list(i.key) for i in infos] == candidates * 2
    rewards = [1.0, 5.0, 3.0, -1.0]  # candidate means: 2 and 2 -> the first wins the tie
    with pytest.raises(ValueError, match=r"GA update needs 2 reward\(s\) for each of the 2 elite "
                                          r"candidates of iteration 1; 1 have fewer"):
        agent.update(infos[:3], rewards[:3])
    agent.update(infos, rewards)
    ref.tell_elite_candidates([1.0, 3.0, 5.0, -1.0])  # candidate-major
    assert agent.model_iter_id == 2
    assert [list(i.key) for i in agent.solver.ga.elites] == [list(i.key) for i in ref.elites]
    np.testing.assert_array_equal(agent.center, ref.rebuild(list(ref.elites[0].key)))


# ---------------------------------------------------------------- save / load


@pytest.mark.parametrize("config", [cma_config(False), cma_config(True), ga_config(0), ga_config(2)],
                         ids=["cma", "sep-cma", "ga", "ga-reevaluation"])
def test_reloaded_solver_continues_bit_identically(tmp_path, model, config):
    def run(agent, clones, n, log):
        for _ in range(n):
            infos, rewards = generation(agent, clones)
            log.append(([list(i.key) for i in infos], agent.center.copy()))
            agent.update(infos, rewards)

    a = ESAgent(config, model)
    clones = [a.clone() for _ in range(config.solver.population_size)]
    run(a, clones, 3, [])
    a.save_solver(tmp_path)
    a.save_inference_model(tmp_path)
    b = ESAgent(config, str(tmp_path))  # the saved centre as the model, then the state
    b.load_solver(tmp_path)
    assert b.model_iter_id == a.model_iter_id == 3
    np.testing.assert_array_equal(b.center, a.center)
    log_a, log_b = [], []
    run(a, clones, 3, log_a)
    run(b, [b.clone() for _ in clones], 3, log_b)
    for (ka, ca), (kb, cb) in zip(log_a, log_b):
        assert ka == kb
        np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(a.center, b.center)


def test_strategy_state_of_another_noise_version_is_refused(tmp_path, model):
    # CMA and GA members are rebuilt from keys, so a state whose keys name
    # another noise definition is refused; a Gaussian state (centre and
    # optimizer vectors only) does not depend on the noise and still loads.
    for config in (cma_config(), ga_config()):
        a = ESAgent(config, model)
        a.save_solver(tmp_path)
        state = read_state_file(tmp_path / "solver.pb", pb.SolverState())
        assert state.noise_version == _core.NOISE_VERSION
        # absent: as EvoKit before noise version 3 wrote it; 3: the EvoKit of ARS4x32-7
        for version, name in ((None, r"2 \(Philox4x32-10, EvoKit before noise version 3\)"),
                              (3, r"3 \(ARS4x32-7, EvoKit before noise version 4\)")):
            if version is None:
                state.ClearField("noise_version")
            else:
                state.noise_version = version
            write_state_file(tmp_path / "solver.pb", state)
            with pytest.raises(evokit.SolverFileError,
                               match=rf"solver.pb: invalid solver state: the state refers to noise "
                                     rf"version {name}, this EvoKit rebuilds noise version 4 "
                                     r"\(ARS4x32-5\)"):
                ESAgent(config, model).load_solver(tmp_path)
    gaussian = load_config(os.path.join(os.path.dirname(__file__), "..", "configs", "cartpole.prototxt"))
    a = ESAgent(gaussian, model)
    a.save_solver(tmp_path)
    state = read_state_file(tmp_path / "solver.pb", pb.SolverState())
    state.ClearField("noise_version")
    write_state_file(tmp_path / "solver.pb", state)
    b = ESAgent(gaussian, model)
    b.load_solver(tmp_path)
    np.testing.assert_array_equal(b.center, a.center)


def test_solver_file_of_another_sampler_is_refused(tmp_path, model):
    a = ESAgent(ga_config(), model)
    a.save_solver(tmp_path)
    b = ESAgent(cma_config(), model)
    with pytest.raises(evokit.SolverFileError, match=r"solver.pb: invalid solver state: the state is "
                                                     r"of GA_SAMPLING, this solver is CMA_SAMPLING$"):
        b.load_solver(tmp_path)
    state = read_state_file(tmp_path / "solver.pb", pb.SolverState())
    del state.vectors[:]
    write_state_file(tmp_path / "solver.pb", state)
    with pytest.raises(evokit.SolverFileError, match=r"state entry 'draws' \(int64\) is missing"):
        a.load_solver(tmp_path)


# ---------------------------------------------------------------- pipeline and CLI


def evokit_cli(*args, check=True):
    proc = subprocess.run(["evokit", *map(str, args)], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"evokit {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


@pytest.fixture(params=["cma", "ga"])
def warehouse(request, tmp_path):
    text = {"cma": CMA % "false", "ga": GA % 0}[request.param]
    cfg = tmp_path / "config.prototxt"
    cfg.write_text(text + "async_es { max_to_keep: 3 }\n")
    model = tmp_path / "init.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(), seed=0).SerializeToString())
    wh = tmp_path / "wh"
    evokit_cli("init-solver", "--config", cfg, "--model", model, "--warehouse", wh)
    return request.param, tmp_path, str(wh)


def test_cli_sample_update_with_cma_and_ga(warehouse):
    kind, tmp, wh = warehouse
    n = 8 if kind == "cma" else 9
    log = tmp / "log"
    # half a generation: no update yet, the samples stay for later
    evokit_cli("sample", "--warehouse", wh, "--env", "CartPole-v1", "--num-samples", n // 2,
               "--log", log, "--workers", 2)
    proc = evokit_cli("update", "--warehouse", wh, "--log", log, check=False)
    assert proc.returncode == 1
    what = "members" if kind == "cma" else "individuals"
    assert (f"not enough samples yet ({kind.upper()} update needs 1 reward(s) for each of the {n} "
            f"{what} of iteration 0; {n - n // 2} have fewer") in proc.stderr
    assert Warehouse(wh).latest == 0
    # a second sampler completes it (members n//2.. again from 0: averaged)
    evokit_cli("sample", "--warehouse", wh, "--env", "CartPole-v1", "--num-samples", n,
               "--log", log, "--seed", 1)
    proc = evokit_cli("update", "--warehouse", wh, "--log", log)
    assert f"update 0 -> 1: used {n // 2 + n} samples" in proc.stdout
    # the same update by hand, from the records
    records = read_log(log).records
    agent = Warehouse(wh).load_agent(0)
    agent.update([r.record.info for r in records], [r.record.reward for r in records])
    np.testing.assert_array_equal(Warehouse(wh).load_agent().center, agent.center)

    # the centre of the warehouse's newest iteration, with evaluation workers
    proc = evokit_cli("evaluate", wh, "--env", "CartPole-v1", "--episodes", 4, "--workers", 2)
    assert proc.stdout.startswith(f"{wh} iteration 1: mean return ")

    # samples of iteration 0 that arrive after the update are dropped by name
    w = Warehouse(wh)
    late = [pb.SampleRecord(info=r.record.info, reward=1.0, config_fingerprint=w.info.config_fingerprint,
                            model_fingerprint=w.model_fingerprint(0), sampler_id=9) for r in records[:3]]
    append_records(tmp / "late", late)
    evokit_cli("sample", "--warehouse", wh, "--env", "CartPole-v1", "--num-samples", n,
               "--log", tmp / "late")
    rep = update(wh, [tmp / "late"])
    assert rep.to_iteration == 2 and rep.used == n
    name = "CMA_SAMPLING" if kind == "cma" else "GA_SAMPLING"
    assert rep.dropped == {f"{name} sample drawn at an older iteration (a sample is rebuilt only "
                           f"from the distribution/population it was drawn from)": 3}


@pytest.mark.parametrize("name", ["cartpole_cma.prototxt", "cartpole_ga.prototxt"])
def test_evokit_train_solves_cartpole(tmp_path, name):
    out = tmp_path / "run"
    proc = evokit_cli("train", os.path.join(ROOT, "configs", name), "--out", out, "--quiet",
                      "--require-solved")
    assert proc.returncode == 0
    agent = ESAgent(os.path.join(ROOT, "configs", name), str(out))
    agent.load_solver(out)
    from evokit.evaluation.seeds import episode_seeds
    from evokit.evaluation.serial import SerialEvaluator
    with SerialEvaluator("CartPole-v1") as ev:
        result = ev.evaluate(agent, [None] * 20, [episode_seeds(123, 0, i, 1, 1) for i in range(20)])
    assert result.rewards.mean() >= 475


@pytest.mark.parametrize("name", ["cartpole_cma.prototxt", "cartpole_ga.prototxt"])
def test_strategy_samplers_train_on_worker_processes_as_in_process(tmp_path, name):
    """Every evaluator works for every solver: worker processes rebuild the
    members from the solver's sampling state and give the same run."""
    cfg = load_config(os.path.join(ROOT, "configs", name))
    cfg.train.max_generations = 2
    cfg.train.num_workers = 2
    centres = []
    for kind in ("process", "vector"):
        out = tmp_path / kind
        evokit.train(cfg, out_dir=str(out), evaluator_kind=kind, log=lambda s: None)
        centres.append(evokit.OnnxPolicy.load(str(out / "model.onnx")).initial_params())
    np.testing.assert_array_equal(centres[0], centres[1])


@pytest.mark.parametrize("name", ["cartpole_cma.prototxt", "cartpole_ga.prototxt"])
@pytest.mark.parametrize("mode,workers", [("native", 1), ("vector_entry_point", 1), ("sync", 1),
                                          ("sync", 2)])
def test_vector_evaluator_runs_strategy_members_as_the_serial_one_does(tmp_path, name, mode,
                                                                       workers):
    """In this process, or (sync, 2 workers) in worker processes that rebuild
    the members from the solver's sampling state."""
    from evokit.evaluation.seeds import episode_seeds
    from evokit.evaluation.serial import SerialEvaluator
    from evokit.evaluation.vector import VectorEvaluator

    path = tmp_path / "mlp.onnx"
    path.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=3).SerializeToString())
    agent = ESAgent(os.path.join(ROOT, "configs", name), str(path))
    infos = agent.draw_members(agent.config.solver.population_size)[:6] + [None]
    seeds = [episode_seeds(5, 1, i, 2, 0) for i in range(len(infos))]
    with SerialEvaluator("CartPole-v1") as serial, \
            VectorEvaluator("CartPole-v1", workers, num_threads=2,
                            vectorization_mode=mode) as vector:
        want = serial.evaluate(agent, infos, seeds)
        got = vector.evaluate(agent, infos, seeds)
    np.testing.assert_array_equal(got.rewards, want.rewards)
    assert got.steps == want.steps
    assert len(set(want.rewards.tolist())) > 1  # the members differ


def test_update_refuses_a_config_that_changes_the_strategy(tmp_path, model):
    cfg = tmp_path / "config.prototxt"
    cfg.write_text(CMA % "false")
    Warehouse.create(tmp_path / "wh", str(cfg), model)
    other = tmp_path / "other.prototxt"
    other.write_text((CMA % "false").replace("seed: 7", "seed: 8"))
    with pytest.raises(ConfigError, match=r"solver.sampling.cma_sampling.seed changes from 7 to 8; the keys "
                                          r"in existing logs \(and the solver state\) would no longer match"):
        update(tmp_path / "wh", [], config=str(other))
