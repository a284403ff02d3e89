"""The one Solver interface seen from Python: every family behind the same
ESAgent calls, its state saved and loaded exactly (in a fresh process too),
its options taken from the config generically, its replicas rebuilding the
same members, and the solver.pb layouts of both state versions."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import evokit
from evokit import _core
from evokit import evokit_pb2 as pb
from evokit.config import ConfigError, parse_config
from evokit.solvers import solver_options, state_from_proto, state_to_proto

from helpers import ROOT

CONFIGS = {
    "GAUSSIAN_SAMPLING": "cartpole.prototxt",
    "CMA_SAMPLING": "cartpole_cma.prototxt",
    "GA_SAMPLING": "cartpole_ga.prototxt",
    "ARS_SAMPLING": "hopper.prototxt",
}
# The distribution families (SNES_SAMPLING, ...) start from the CMA config
# with their type (their options at the proto's defaults).
DISTRIBUTION_FAMILIES = [sampling_type for _, sampling_type, _ in _core.distribution_families()]
CONFIGS.update({family: "cartpole_cma.prototxt" for family in DISTRIBUTION_FAMILIES})


def _config(family, **changes):
    cfg = evokit.load_config(os.path.join(ROOT, "configs", CONFIGS[family]))
    cfg.solver.population_size = changes.get("population_size", 8)
    if family in DISTRIBUTION_FAMILIES:
        cfg.solver.sampling.type = pb.SamplingConfig.Type.Value(family)
    if family == "GA_SAMPLING":
        g = cfg.solver.sampling.ga_sampling
        g.truncation_size, g.num_elites = 3, 1
        g.elite_candidates, g.elite_evaluations = changes.get("elite", (2, 2))
    cfg.solver.sampling.gaussian_sampling.cached = changes.get("cached", True)
    if family == "ARS_SAMPLING":
        a = cfg.solver.sampling.ars_sampling
        a.cached, a.cache_size = changes.get("cached", True), 100000
        a.top_directions = changes.get("top_directions", 2)
    else:
        cfg.solver.optimizer.type = pb.OptimizerConfig.ADAM
    return cfg


def _reward(params: np.ndarray) -> float:
    """A deterministic reward of the parameters (no environment needed)."""
    return float(-np.sum((params.astype(np.float64) - 0.3) ** 2))


def _generations(agent, clones, count):
    """count rounds of add_noise on every clone and an update with _reward,
    drawing more rounds while the solver says the samples are not enough
    (GA elite re-evaluation). Returns the infos drawn, as bytes."""
    drawn = []
    for _ in range(count):
        infos, rewards = [], []
        while True:
            for c in clones:
                infos.append(c.add_noise())
                rewards.append(_reward(c.params))
            if agent.shortfall(infos, rewards) is None:
                break
        agent.update(infos, rewards)
        drawn += [i.SerializeToString() for i in infos]
    return drawn


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_every_family_runs_behind_the_same_calls(family, mlp_path):
    agent = evokit.ESAgent(_config(family), mlp_path)
    assert agent.solver.family == family == agent.sampling_type
    clones = [agent.clone() for _ in range(8)]
    start = agent.center.copy()
    _generations(agent, clones, 3)
    assert agent.model_iter_id >= 3
    assert not np.array_equal(agent.center, start)
    # A clone's parameters are the solver's rebuild of its info, and the
    # batched population holds the same rows (None = the centre).
    info = clones[1].add_noise()
    np.testing.assert_array_equal(clones[1].params, agent.solver.rebuild(_core.SamplingInfo(
        key=list(info.key), model_iter_id=info.model_iter_id, mirrored=info.mirrored)))
    population = agent.population([None, info])
    assert len(population) == 2
    obs = np.random.default_rng(1).normal(size=(2, 4)).astype(np.float32)
    native = agent.policy.native
    np.testing.assert_array_equal(native.run_members(obs, population),
                                  np.concatenate([agent.policy.run(obs[:1], agent.center),
                                                  agent.policy.run(obs[1:], clones[1].params)]))


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_a_generation_built_at_once_updates_as_one_built_member_by_member(family, mlp_path):
    # draw_members draws what the clones would draw; population() of a
    # whole generation materialises it in the strategy once (batched), and
    # the update reuses it; clones rebuild each member on its own. Both give
    # the same members and the same updates, bit for bit.
    a = evokit.ESAgent(_config(family), mlp_path)
    b = evokit.ESAgent(_config(family), mlp_path)
    clones = [b.clone() for _ in range(8)]
    for g in range(4):
        drawn = a.draw_members(8)
        population = a.population(drawn)
        rows = np.array([population.params(i) for i in range(len(population))])
        assert [c.add_noise() for c in clones] == drawn  # what the clones would draw
        for row, c in zip(rows, clones):
            np.testing.assert_array_equal(row, c.params)
        rewards = [float(-np.sum((row.astype(np.float64) - 0.3) ** 2)) for row in rows]
        if a.shortfall(drawn, rewards) is None:
            a.update(drawn, rewards)
            b.update(drawn, rewards)
            assert a.params.tobytes() == b.params.tobytes(), g


@pytest.mark.parametrize("family,cached,elite", [
    ("GAUSSIAN_SAMPLING", True, (2, 2)), ("GAUSSIAN_SAMPLING", False, (2, 2)),
    ("ARS_SAMPLING", False, (2, 2)),
    ("CMA_SAMPLING", True, (2, 2)), ("GA_SAMPLING", True, (2, 2)), ("GA_SAMPLING", True, (2, 0)),
])
def test_save_load_continues_bit_for_bit(family, cached, elite, mlp_path, tmp_path):
    cfg = _config(family, cached=cached, elite=elite)
    agent = evokit.ESAgent(cfg, mlp_path)
    clones = [agent.clone() for _ in range(8)]
    _generations(agent, clones, 2)
    clones[0].add_noise()  # mid-generation: a clone is one draw ahead
    agent.save_inference_model(tmp_path)
    agent.save_solver(tmp_path)

    again = evokit.ESAgent(cfg, str(tmp_path / "model.onnx"))
    again.load_solver(tmp_path)
    reloaded = [again.clone() for _ in range(8)]
    assert _generations(again, reloaded, 3) == _generations(agent, clones, 3)
    np.testing.assert_array_equal(again.center, agent.center)


_CONTINUE = r"""
import json, sys
import numpy as np
import evokit
sys.path.insert(0, {tests!r})
from test_solvers import _generations
agent = evokit.ESAgent({config!r}, {model!r})
agent.load_solver({out!r})
clones = [agent.clone() for _ in range(8)]
infos = _generations(agent, clones, 3)
print(json.dumps({{"infos": [i.hex() for i in infos], "centre": agent.center.tobytes().hex()}}))
"""


def test_gaussian_agent_continues_in_a_fresh_process(mlp_path, tmp_path):
    """save_solver, then load_solver in a new process, then clone / add_noise
    / update: the same bits as the agent that went on without stopping."""
    cfg = _config("GAUSSIAN_SAMPLING", cached=False)
    config_path = tmp_path / "config.prototxt"
    config_path.write_text(evokit.config.config_to_text(cfg))
    agent = evokit.ESAgent(str(config_path), mlp_path)
    clones = [agent.clone() for _ in range(8)]
    _generations(agent, clones, 2)
    agent.save_inference_model(tmp_path)
    agent.save_solver(tmp_path)
    script = _CONTINUE.format(tests=os.path.dirname(__file__), config=str(config_path),
                              model=str(tmp_path / "model.onnx"), out=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path)  # not the source tree: the installed evokit
    assert run.returncode == 0, run.stderr
    other = json.loads(run.stdout.strip().splitlines()[-1])
    mine = _generations(agent, clones, 3)
    assert other["infos"] == [i.hex() for i in mine]
    assert other["centre"] == agent.center.tobytes().hex()


def test_without_the_draw_counters_a_reload_draws_other_keys(mlp_path, tmp_path):
    """The counters in the state are what makes the continuation exact."""
    cfg = _config("GAUSSIAN_SAMPLING")
    agent = evokit.ESAgent(cfg, mlp_path)
    clones = [agent.clone() for _ in range(8)]
    _generations(agent, clones, 2)
    state = agent.solver_state()
    counters = next(v for v in state.vectors if v.name == "draws.counters")
    assert np.frombuffer(counters.data, "<i8").tolist() == [2] * 8
    counters.data = b""  # as a state of version 1 loads: every clone counts from 0
    again = evokit.ESAgent(cfg, mlp_path)
    again.load_solver_state(state)
    assert [c.add_noise() for c in [again.clone() for _ in range(8)]] != \
        [c.add_noise() for c in clones]


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_a_replica_rebuilds_the_owners_members(family, mlp_path):
    """What an evaluation worker does: a replica of the config and model,
    given the owner's sampling state, rebuilds every member bit for bit."""
    agent = evokit.ESAgent(_config(family), mlp_path)
    _generations(agent, [agent.clone() for _ in range(8)], 2)
    replica = evokit.ESAgent.replica(agent.config, agent.policy)
    replica.load_sampling_state(agent.sampling_state())
    assert replica.model_iter_id == agent.model_iter_id
    np.testing.assert_array_equal(replica.center, agent.center)
    mine, theirs = agent.clone(), replica.clone()
    for info in agent.draw_members(8):
        mine.set_noise(info)
        theirs.set_noise(info)
        np.testing.assert_array_equal(theirs.params, mine.params)


def test_options_are_every_field_of_the_solver_config():
    options = solver_options(pb.SolverConfig())
    assert options["population_size"] == 50 and options["antithetic"] is True
    assert options["sampling.type"] == "GAUSSIAN_SAMPLING"
    assert options["fitness_shaping"] == "CENTERED_RANK"
    assert options["optimizer.adam.beta2"] == pytest.approx(0.999)
    assert options["sampling.cma_sampling.sigma0"] == 0.5
    assert options["sampling.ga_sampling.seed"] == 1024
    big = pb.SolverConfig()
    big.sampling.gaussian_sampling.seed = 2**64 - 1
    assert solver_options(big)["sampling.gaussian_sampling.seed"] == -1  # the uint64's bits


@pytest.mark.parametrize("text,message", [
    ("solver { population_size: 0 }", "solver.population_size must be >= 1, got 0"),
    ("solver { population_size: 5 }",
     "solver.population_size must be even when solver.antithetic is true, got 5"),
    ("solver { antithetic: true sampling { type: CMA_SAMPLING } population_size: 10 }",
     "solver.antithetic must be false with CMA_SAMPLING (mirrored pairs are a Gaussian-sampling "
     "scheme), got true"),
    ("solver { optimizer { base_lr: 0 } }", "solver.optimizer.base_lr must be > 0, got 0"),
    ("solver { antithetic: false population_size: 10 sampling { type: GA_SAMPLING "
     "ga_sampling { truncation_size: 11 } } }",
     "solver.sampling.ga_sampling.truncation_size must be in [1, 10] (solver.population_size), "
     "got 11"),
])
def test_the_core_checks_the_options_and_the_message_names_the_field(text, message):
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert message in str(info.value)
    assert info.value.field == message.split(" ")[0]


def test_state_version_1_gaussian_loads_and_cma_is_refused_by_name(mlp_path):
    cfg = _config("GAUSSIAN_SAMPLING")
    agent = evokit.ESAgent(cfg, mlp_path)
    _generations(agent, [agent.clone() for _ in range(8)], 1)
    v2 = agent.solver_state()
    v1 = pb.SolverState()
    v1.CopyFrom(v2)
    v1.ClearField("state_version")
    v1.ClearField("family")
    del v1.vectors[:]
    for v in v2.vectors:
        if v.name.startswith("optimizer."):
            v1.vectors.add(name=v.name[len("optimizer."):], data=v.data)
    again = evokit.ESAgent(cfg, mlp_path)
    again.load_solver_state(v1, "old/solver.pb")
    for name in ("m", "v"):
        np.testing.assert_array_equal(again.solver.optimizer.get_state(name),
                                      agent.solver.optimizer.get_state(name))
    assert again.model_iter_id == 1

    v1.cma.sigma = 0.5
    with pytest.raises(ValueError, match=r"^old/solver.pb: a CMA_SAMPLING solver state of state "
                                         r"version 1 .*`evokit init-solver`"):
        state_from_proto(v1, "old/solver.pb")


@pytest.mark.parametrize("damage,message", [
    (lambda s: setattr(s, "state_version", 3), "solver state version 3, this EvoKit reads"),
    (lambda s: s.vectors.add(name="x", data=b""), "'x' has no element type this EvoKit knows"),
    (lambda s: s.vectors.add(name="optimizer.m", type=pb.NamedVector.FLOAT32, data=b"\0" * 4),
     "'optimizer.m' appears twice"),
    (lambda s: s.vectors.add(name="y", type=pb.NamedVector.INT64, data=b"\0" * 5),
     "holds 5 bytes, not a multiple of 8"),
])
def test_bad_state_layouts_are_refused_naming_file_and_entry(damage, message, mlp_path):
    agent = evokit.ESAgent(_config("GAUSSIAN_SAMPLING"), mlp_path)
    state = agent.solver_state()
    damage(state)
    with pytest.raises(ValueError, match=message):
        state_from_proto(state, "w/solver.pb")


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_the_solver_refuses_a_state_that_does_not_fit_and_changes_nothing(family, mlp_path):
    agent = evokit.ESAgent(_config(family), mlp_path)
    _generations(agent, [agent.clone() for _ in range(8)], 1)
    state = agent.solver_state()
    floats = [v for v in state.vectors if v.type != pb.NamedVector.INT64]
    if floats:  # a float vector one element short
        victim = floats[0]
        victim.data = victim.data[:-(8 if victim.type else 4)]
    else:  # ARS (plain SGD steps) keeps only the draw counters: without them
        victim = next(v for v in state.vectors if v.name == "draws.counters")
        state.vectors.remove(victim)
    before = agent.center.copy(), agent.model_iter_id
    with pytest.raises(evokit.SolverFileError, match=rf"^w/solver.pb: invalid solver state: .*"
                                                     rf"'{victim.name}'"):
        agent.load_solver_state(state, "w/solver.pb")
    np.testing.assert_array_equal(agent.center, before[0])
    assert agent.model_iter_id == before[1]


def test_state_round_trips_through_the_message(mlp_path):
    agent = evokit.ESAgent(_config("CMA_SAMPLING"), mlp_path)
    _generations(agent, [agent.clone() for _ in range(8)], 1)
    core = agent.solver.save()
    back = state_from_proto(state_to_proto(core, pb.SolverState()), "x")
    assert back.family == core.family and back.model_iter_id == core.model_iter_id
    for attr in ("floats", "doubles", "ints"):
        a, b = getattr(core, attr), getattr(back, attr)
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def _ars_reference(centre, deltas_plus, r_plus, r_minus, step_size, b):
    """Mania et al. 2018, Algorithm 2, line 7, in float64: the b directions
    with the largest max(r+, r-) (ties: the earlier), sigma_R the standard
    deviation of their 2b rewards."""
    r_plus, r_minus = np.asarray(r_plus, np.float64), np.asarray(r_minus, np.float64)
    order = sorted(range(len(r_plus)), key=lambda k: (-max(r_plus[k], r_minus[k]), k))[:b]
    used = np.concatenate([r_plus[order], r_minus[order]])
    step = sum((r_plus[k] - r_minus[k]) * deltas_plus[k].astype(np.float64) for k in order)
    return centre.astype(np.float64) + step_size / (b * used.std()) * step


@pytest.mark.parametrize("top,cached", [(2, True), (0, True), (3, False)])
def test_ars_update_is_algorithm_2(top, cached, mlp_path):
    cfg = _config("ARS_SAMPLING", top_directions=top, cached=cached)
    a = cfg.solver.sampling.ars_sampling
    agent = evokit.ESAgent(cfg, mlp_path)
    assert agent.solver.family == "ARS_SAMPLING"
    centre = agent.center.copy()
    infos = agent.draw_members(8)
    assert [i.mirrored for i in infos] == [False, True] * 4
    members = [agent.solver.rebuild(_core.SamplingInfo(key=list(i.key), model_iter_id=0,
                                                       mirrored=i.mirrored)) for i in infos]
    deltas = [(members[2 * k].astype(np.float64) - centre) / np.float32(a.std) for k in range(4)]
    rewards = [3.0, 1.0, -2.0, 5.0, 4.5, 0.0, 2.0, 2.5]  # max per pair: 3, 5, 4.5, 2.5
    expected = _ars_reference(centre, deltas, rewards[0::2], rewards[1::2], np.float32(a.step_size),
                              top or 4)
    agent.update(infos, rewards)
    np.testing.assert_allclose(agent.center, expected, rtol=1e-5, atol=1e-6)


def test_ars_pairs_samples_in_any_order_and_ignores_a_lone_one(mlp_path):
    cfg = _config("ARS_SAMPLING", top_directions=0)
    a, b = evokit.ESAgent(cfg, mlp_path), evokit.ESAgent(cfg, mlp_path)
    infos = a.draw_members(8)
    b.draw_members(8)
    rewards = [float(r) for r in (3, 1, -2, 5, 4.5, 0, 2, 2.5)]
    order = [5, 0, 3, 6, 1, 4, 7, 2]
    a.update(infos[:6], rewards[:6])  # pairs 0-2
    b.update([infos[i] for i in order if i != 7], [rewards[i] for i in order if i != 7])
    # 6 (pair 3's +) is alone and left out; the sums run in another order
    np.testing.assert_allclose(a.center, b.center, rtol=1e-5, atol=1e-7)
    assert not np.array_equal(a.center, a.policy.initial_params())


def test_ars_refuses_samples_without_partners_and_bad_options(mlp_path):
    agent = evokit.ESAgent(_config("ARS_SAMPLING"), mlp_path)
    infos = agent.draw_members(8)
    with pytest.raises(ValueError, match="none of the 2 samples has its partner"):
        agent.update([infos[0], infos[2]], [1.0, 2.0])
    for extra, ars, message in [
        ("antithetic: false", "", "solver.antithetic must be true for ARS_SAMPLING"),
        ("", "top_directions: 5",
         r"solver.sampling.ars_sampling.top_directions must be in \[0, population_size / 2 = 4\]"),
        ("", "step_size: 0", "solver.sampling.ars_sampling.step_size must be > 0, got 0"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_config(f"solver {{ population_size: 8 {extra} "
                         f"sampling {{ type: ARS_SAMPLING ars_sampling {{ {ars} }} }} }}")


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_the_solver_says_which_members_are_mirrored_pairs(family, mlp_path):
    """Solver.mirrored_pairs is true exactly when members 2p and 2p + 1 are
    the centre moved by one noise with opposite signs."""
    agent = evokit.ESAgent(_config(family), mlp_path)
    clones = [agent.clone() for _ in range(8)]
    for c in clones:
        c.add_noise()
    centre = agent.center.astype(np.float64)
    mirrored = all(np.allclose(clones[2 * p].params.astype(np.float64) + clones[2 * p + 1].params - 2 * centre, 0,
                               atol=1e-5) and not np.array_equal(clones[2 * p].params, clones[2 * p + 1].params)
                   for p in range(4))
    assert agent.solver.mirrored_pairs == mirrored
    assert mirrored == (family in ("GAUSSIAN_SAMPLING", "ARS_SAMPLING", "PGPE_SAMPLING", "CRFMNES_SAMPLING"))


@pytest.mark.parametrize("family", ["PGPE_SAMPLING", "SNES_SAMPLING"])
def test_mirrored_pairs_meet_the_same_episodes_in_training(family, mlp_path, tmp_path):
    from evokit.evaluation.serial import SerialEvaluator

    class Recording(SerialEvaluator):
        seeds: list = []  # the population's (the first call; later ones evaluate the centre)

        def evaluate(self, agent, infos, seeds):
            if not Recording.seeds:
                Recording.seeds = [list(s) for s in seeds]
            return super().evaluate(agent, infos, seeds)

    cfg = _config(family)
    cfg.train.env_id = "CartPole-v1"
    with Recording("CartPole-v1") as ev:
        evokit.train(cfg, out_dir=str(tmp_path), model=mlp_path, max_generations=1, evaluator=ev,
                     log=lambda s: None)
    seeds = Recording.seeds
    assert len(seeds) == 8
    same = [seeds[2 * p] == seeds[2 * p + 1] for p in range(4)]
    assert all(same) if family == "PGPE_SAMPLING" else not any(same)
