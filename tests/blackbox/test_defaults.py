"""The defaults every black-box class shows: real values, or the formula of a
default the problem decides (a Rule), never a bare None for a computed
default; a Rule default does what its formula says."""

import inspect
import math
import pickle

import numpy as np
import pytest

import evokit
from evokit import _core
from evokit.solvers.options import Rule, rule_in_comment

CLASSES = [evokit.CMAES, evokit.SepCMAES, evokit.GA, evokit.OpenES, evokit.ARS, evokit.SNES, evokit.XNES,
           evokit.CRFMNES, evokit.LMMAES, evokit.MAES, evokit.PGPE, evokit.CEM]
# None means "off" for these (no limit, no target, no box, no integers).
OFF_SWITCHES = {"max_evaluations", "max_iterations", "ftarget", "bounds", "integer_variables"}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_no_default_is_a_bare_none_but_the_off_switches(cls):
    params = inspect.signature(cls).parameters
    nones = {name for name, p in params.items() if p.default is None}
    assert nones <= OFF_SWITCHES, (cls.__name__, nones - OFF_SWITCHES)
    assert isinstance(params["population_size"].default, (Rule, int))
    stagnation = params.get("tolstagnation", params.get("stagnation_iterations"))
    assert repr(stagnation.default) == "100 + 100 n^1.5 / population_size"


def first_generation(es, f=lambda x: float(np.sum(x * x)), generations=2):
    rows = []
    for _ in range(generations):
        X = np.array(es.ask())
        rows.append(X)
        es.tell(X, [f(x) for x in X])
    return np.concatenate(rows)


@pytest.mark.parametrize("n", [3, 10, 41])
def test_population_size_defaults_are_their_formula(n):
    base = 4 + math.floor(3 * math.log(n))
    even = base + base % 2
    x0 = np.full(n, 0.5)
    assert _core.default_population_size(n) == base
    assert evokit.CMAES(x0, 0.3).population_size == base
    assert evokit.SNES(x0, 0.3).population_size == base
    assert evokit.PGPE(x0, 0.3).population_size == even
    assert evokit.CRFMNES(x0, 0.3).population_size == even
    assert len(evokit.ARS(x0, 0.3).ask()) == even
    assert len(evokit.OpenES(x0, 0.3).ask()) == even
    assert len(evokit.OpenES(x0, 0.3, antithetic=False).ask()) == base
    assert evokit.CEM(x0, 0.3).population_size == 100


@pytest.mark.parametrize("make", [
    lambda **k: evokit.CMAES(np.full(5, 1.0), 0.4, seed=3, **k),
    lambda **k: evokit.SNES(np.full(5, 1.0), 0.4, seed=3, **k),
    lambda **k: evokit.ARS(np.full(5, 1.0), 0.4, seed=3, **k),
    lambda **k: evokit.OpenES(np.full(5, 1.0), 0.4, seed=3, **k),
], ids=["CMAES", "SNES", "ARS", "OpenES"])
def test_the_rule_none_and_the_formulas_value_are_the_same_run(make):
    rule = inspect.signature(make().__class__).parameters["population_size"].default
    value = make().population_size if hasattr(make(), "population_size") else len(make().ask())
    runs = [first_generation(make(**k)) for k in ({}, {"population_size": rule},
                                                  {"population_size": None}, {"population_size": value})]
    for other in runs[1:]:
        np.testing.assert_array_equal(other, runs[0])


def test_a_family_options_rule_is_the_value_the_core_computes():
    # SNES's eta_sigma = (3 + ln d) / (5 sqrt(d)) by default: given explicitly, the same bits.
    d = 7
    x0 = np.full(d, 1.0)
    default = first_generation(evokit.SNES(x0, 0.5, seed=2), generations=4)
    explicit = first_generation(evokit.SNES(x0, 0.5, seed=2,
                                            learning_rate_sigma=(3 + math.log(d)) / (5 * math.sqrt(d))),
                                generations=4)
    np.testing.assert_array_equal(default, explicit)
    other = first_generation(evokit.SNES(x0, 0.5, seed=2, learning_rate_sigma=0.05), generations=4)
    assert not np.array_equal(default, other)


def test_ga_defaults_computed_from_the_population():
    params = inspect.signature(evokit.GA).parameters
    assert repr(params["truncation_size"].default) == "max(1, population_size // 5)"
    assert repr(params["elite_candidates"].default) == "min(10, population_size)"
    x0 = np.zeros(4)
    a = first_generation(evokit.GA(x0, 0.3, population_size=15, seed=1), generations=3)
    b = first_generation(evokit.GA(x0, 0.3, population_size=15, seed=1, truncation_size=3, elite_candidates=10),
                         generations=3)
    np.testing.assert_array_equal(a, b)


def test_cmaes_margin_default_is_the_papers():
    es = evokit.CMAES(np.zeros(4), 1.0, population_size=8, integer_variables=[0, 1])
    assert repr(inspect.signature(evokit.CMAES).parameters["margin"].default) == "1 / (n population_size)"
    assert es.core.margin == pytest.approx(1 / (4 * 8))


def test_rules_read_from_the_proto_comment_convention():
    assert rule_in_comment("eta_sigma (> 0; 0: (3 + ln d) / (5 sqrt(d))).").formula == "(3 + ln d) / (5 sqrt(d))"
    assert rule_in_comment("m, the direction vectors kept (0: 4 + floor(3 ln n)).").formula == "4 + floor(3 ln n)"
    assert rule_in_comment("The momentum, in [0, 1).") is None
    assert rule_in_comment("ratio (10: ten)") is None
    rule = Rule("4 + floor(3 ln n)")
    assert pickle.loads(pickle.dumps(rule)) == rule and repr(rule) == "4 + floor(3 ln n)"


def test_none_still_selects_a_zero_default_without_a_rule():
    # CEM's extra_variance defaults to 0 (no formula): None gives the same run.
    x0 = np.zeros(3)
    np.testing.assert_array_equal(first_generation(evokit.CEM(x0, 0.5, seed=1, extra_variance=None)),
                                  first_generation(evokit.CEM(x0, 0.5, seed=1)))


# ---- the training options: each default written once, in proto/evokit.proto ----

from evokit import evokit_pb2  # noqa: E402
from evokit.solvers.options import proto_default  # noqa: E402

# Each ask / tell class over a training family: its arguments that are
# training options, by the option's dotted name below SolverConfig.
TRAINING_OPTIONS = {
    evokit.OpenES: {"learning_rate": "optimizer.base_lr", "optimizer": "optimizer.type",
                    "antithetic": "antithetic", "fitness_shaping": "fitness_shaping",
                    "weight_decay": "weight_decay"},
    evokit.ARS: {"step_size": "sampling.ars_sampling.step_size",
                 "top_directions": "sampling.ars_sampling.top_directions"},
    evokit.GA: {"population_size": "population_size",
                "truncation_size": "sampling.ga_sampling.truncation_size",
                "num_elites": "sampling.ga_sampling.num_elites",
                "elite_candidates": "sampling.ga_sampling.elite_candidates",
                "elite_evaluations": "sampling.ga_sampling.elite_evaluations"},
    evokit.CMAES: {},
}
# The fields of a family's message that a class takes otherwise: the
# positional step size, the seed (0 in every ask / tell class), the noise
# table (ask / tell draws uncached noise), the separable model (SepCMAES).
TAKEN_OTHERWISE = {
    evokit.OpenES: ("gaussian_sampling", {"std", "seed", "cached", "cache_size"}),
    evokit.ARS: ("ars_sampling", {"std", "seed", "cached", "cache_size"}),
    evokit.GA: ("ga_sampling", {"mutation_power", "init_sigma", "seed"}),
    evokit.CMAES: ("cma_sampling", {"sigma0", "seed", "separable"}),
}


@pytest.mark.parametrize("cls", list(TRAINING_OPTIONS), ids=lambda c: c.__name__)
def test_training_options_default_to_the_protos(cls):
    params = inspect.signature(cls).parameters
    for name, path in TRAINING_OPTIONS[cls].items():
        assert params[name].default == proto_default(path), (cls.__name__, name, path)
    # every field of the family's message is an argument above or taken otherwise
    field, otherwise = TAKEN_OTHERWISE[cls]
    message = evokit_pb2.SamplingConfig.DESCRIPTOR.fields_by_name[field].message_type
    mapped = {path.rsplit(".", 1)[1] for path in TRAINING_OPTIONS[cls].values()
              if path.startswith(f"sampling.{field}.")}
    assert {f.name for f in message.fields} == mapped | otherwise, cls.__name__


def test_proto_default_reads_the_proto():
    assert proto_default("optimizer.base_lr") == 0.01  # the float32 default's shortest decimal
    assert proto_default("optimizer.type") == "sgd"
    assert proto_default("fitness_shaping") == "centered_rank"
    assert proto_default("antithetic") is True
    assert proto_default("sampling.ga_sampling.truncation_size") == Rule("max(1, population_size // 5)")
    assert proto_default("sampling.ars_sampling.top_directions") == 0  # 0 has no formula there
    assert proto_default("beta1", evokit_pb2.AdamConfig) == 0.9
    with pytest.raises(KeyError, match="'optimizer.adam' is not an option of SolverConfig"):
        proto_default("optimizer.adam")
    with pytest.raises(KeyError, match="'nope' is not an option"):
        proto_default("nope")


def test_openes_defaults_are_the_training_configs_bit_for_bit():
    # OpenES() with its defaults is SGD at base_lr, as `evokit train` with the default solver config.
    x0 = np.full(6, 1.0)
    default = first_generation(evokit.OpenES(x0, 0.2, seed=3), generations=4)
    explicit = first_generation(evokit.OpenES(x0, 0.2, seed=3, optimizer="sgd", learning_rate=0.01,
                                              antithetic=True, fitness_shaping="centered_rank",
                                              weight_decay=0.0), generations=4)
    np.testing.assert_array_equal(default, explicit)
    adam = first_generation(evokit.OpenES(x0, 0.2, seed=3, optimizer="adam"), generations=4)
    assert not np.array_equal(default, adam)


@pytest.mark.parametrize("cls", CLASSES + [evokit.NSGA2], ids=lambda c: c.__name__)
def test_ask_tell_only_defaults_come_from_one_place(cls):
    from evokit.blackbox.tracked import ASK_TELL
    params = inspect.signature(cls).parameters
    for name, default in ASK_TELL.items():
        if name in params:
            assert params[name].default == default, (cls.__name__, name)
    if cls in (evokit.GA, evokit.OpenES, evokit.ARS):
        assert params["tolfunhist"].default == ASK_TELL["fixed_scale_tolfunhist"] == 0.0


def test_a_population_gives_every_row_in_one_call():
    es = evokit.OpenES(np.linspace(-1, 1, 9), 0.3, population_size=6, seed=2)
    X = es.ask()
    population = es.solver.population(es._infos, 1)
    rows = population.rows()
    assert rows.shape == (6, 9) and rows.dtype == np.float32
    np.testing.assert_array_equal(rows, np.stack([population.params(i) for i in range(6)]))
    np.testing.assert_array_equal(rows.astype(np.float64), X)


def test_a_generation_is_drawn_and_materialised_in_one_call():
    agent = evokit.OpenES(np.linspace(-1, 1, 7), 0.3, population_size=4, seed=5)._agent
    other = evokit.OpenES(np.linspace(-1, 1, 7), 0.3, population_size=4, seed=5)._agent
    infos, rows = agent.draw_generation(4, 2)
    assert rows.shape == (4, 7) and rows.dtype == np.float32
    expected = other.draw_members(4)
    assert [(i.key, i.mirrored) for i in infos] == [(i.key, i.mirrored) for i in expected]
    population = other.solver.population(expected, 1)
    np.testing.assert_array_equal(rows, population.rows())
