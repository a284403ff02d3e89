"""evokit.GA and evokit.OpenES: convergence on the sphere with fixed seeds and
budgets, GA individuals rebuilt from their seeds, elitism, elite
re-evaluation under noise, OpenES's step against the NumPy oracle, pycma's
error messages, stop criteria, and optimize (vectorised / threaded == serial)."""

import ast
import itertools
import os

import es_oracle
import numpy as np
import pytest

import evokit
from evokit import _core


def sphere(x):
    return float(np.sum(np.asarray(x) ** 2))


def sphere_rows(X):
    return np.sum(np.asarray(X) ** 2, axis=1)


# ---- convergence -------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ga_converges_on_sphere(seed):
    # dim 10 from f(x0) = 90: f < 0.01 within 300 generations of 50 (15,000 evaluations).
    es = evokit.GA(np.full(10, 3.0), 0.05, population_size=50, seed=seed, max_iterations=300)
    result = es.optimize(sphere)
    assert result.fbest < 0.01
    assert result.evaluations == 15_000 and result.iterations == 300
    assert result.stop == {"max_iterations": 300}
    assert sphere(result.xbest) == result.fbest
    np.testing.assert_array_equal(result.xfavorite, result.xbest)  # no noise: the elite is the best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_openes_converges_on_sphere(seed):
    # dim 10 from f(x0) = 90: the centre reaches f < 0.02 within 500 iterations of 20 (10,000 evaluations).
    es = evokit.OpenES(np.full(10, 3.0), 0.05, population_size=20, optimizer="adam", learning_rate=0.05,
                       seed=seed, max_evaluations=10_000)
    result = es.optimize(sphere)
    assert sphere(result.xfavorite) < 0.02
    assert result.fbest < 0.01
    assert result.evaluations <= 10_000
    assert set(result.stop) <= {"max_evaluations", "tolstagnation"}  # fixed sigma: it plateaus


# ---- GA: encoding, elitism, re-evaluation -------------------------------------------

def test_ga_individuals_rebuild_from_their_seeds_exactly():
    n, sigma, seed = 37, 0.3, 5
    x0 = np.linspace(-1, 1, n)
    es = evokit.GA(x0, sigma, population_size=8, seed=seed)
    for _ in range(4):
        X = es.ask()
        es.tell(X, sphere_rows(X))
    X = es.ask()
    individuals = es.individuals
    assert len(individuals) == 8 and all(2 <= len(s) <= 5 for s in individuals)
    fresh = evokit.GA(x0, sigma, population_size=8, seed=seed)  # knows nothing of the run
    s32 = np.float32(sigma)
    for row, seeds in zip(X, individuals):
        # theta_0 = x0 + sigma * eps(seeds[0]); theta_k = theta_{k-1} + sigma * eps(seeds[k]), in float32
        theta = x0.astype(np.float32) + s32 * _core.fill_gaussian(seed, seeds[0], 0, n)
        for s in seeds[1:]:
            theta = theta + s32 * _core.fill_gaussian(seed, s, 0, n)
        np.testing.assert_array_equal(row, theta)
        np.testing.assert_array_equal(fresh.rebuild(seeds), row)
        # and the noise is the documented ARS stream (independent NumPy reference)
        ref = x0 + sigma * sum(es_oracle.gaussians(seed, s, 0, n).astype(np.float64) for s in seeds)
        np.testing.assert_allclose(row, ref, atol=1e-5)


def test_ga_elitism_is_monotone_without_noise():
    es = evokit.GA(np.full(10, 1.0), 0.1, population_size=20, num_elites=2, seed=3)
    best_per_generation = []
    previous_best_row = None
    for _ in range(40):
        X = es.ask()
        values = sphere_rows(X)
        if previous_best_row is not None:
            np.testing.assert_array_equal(X[0], previous_best_row)  # the elite, unchanged
        es.tell(X, values)
        best_per_generation.append(values.min())
        previous_best_row = X[np.argmin(values)]
    assert all(b <= a for a, b in zip(best_per_generation, best_per_generation[1:]))
    assert best_per_generation[-1] < 0.5 * best_per_generation[0]
    assert es.result.fbest == best_per_generation[-1]


def _noisy_elite_quality(seed, elite_evaluations):
    rng = np.random.default_rng(100 + seed)  # the noise: seeded, called in a fixed order

    def noisy(X):
        return sphere_rows(X) + 0.5 * rng.standard_normal(len(X))

    es = evokit.GA(np.full(10, 2.0), 0.1, population_size=50, elite_candidates=10,
                   elite_evaluations=elite_evaluations, seed=seed, max_iterations=60)
    result = es.optimize(noisy, vectorized=True)
    return sphere(result.xfavorite)  # the true f of the final elite


def test_elite_reevaluation_keeps_a_better_elite_under_noise():
    # Noise (std 0.5) comparable to the f-differences of mutants: without
    # re-evaluation the elite is the luckiest single score. Same seeds and
    # generations (60 of 50) with and without 10 x 10 re-evaluations, over 16
    # seeds (measured: mean 0.72 of plain's, better in 11 of 16).
    plain = np.array([_noisy_elite_quality(s, 0) for s in range(16)])
    reevaluated = np.array([_noisy_elite_quality(s, 10) for s in range(16)])
    assert reevaluated.mean() < 0.8 * plain.mean()
    assert np.sum(reevaluated < plain) >= 10


def test_ga_reevaluation_batches_repeat_each_candidate():
    es = evokit.GA(np.zeros(4), 0.5, population_size=10, elite_candidates=3, elite_evaluations=4, seed=2)
    X = es.ask()
    values = sphere_rows(X)
    es.tell(X, values)
    assert es.iterations == 0 and es.evaluations == 10
    R = es.ask()  # the 3 best, each 4 times in a row
    assert R.shape == (12, 4)
    best3 = X[np.argsort(values, kind="stable")[:3]]
    np.testing.assert_array_equal(R, np.repeat(best3, 4, axis=0))
    scores = np.repeat([3.0, 1.0, 2.0], 4)  # re-evaluation prefers the second
    es.tell(R, scores)
    assert es.iterations == 1 and es.evaluations == 22
    np.testing.assert_array_equal(es.result.xfavorite, best3[1])
    np.testing.assert_array_equal(es.ask()[0], best3[1])
    assert es.core.elite_scores.tolist() == [-1.0]  # the core maximises -f


# ---- OpenES against the oracle -------------------------------------------------

@pytest.mark.parametrize("optimizer, kind", [("adam", "ADAM"), ("sgd", "SGD"), ("momentum", "MOMENTUM")])
@pytest.mark.parametrize("antithetic, weight_decay", [(True, 0.0), (False, 0.01)])
def test_openes_step_matches_the_numpy_oracle(optimizer, kind, antithetic, weight_decay):
    n, sigma, lr, seed, pop = 13, 0.2, 0.03, 9, 8
    x0 = np.linspace(-2, 2, n)
    es = evokit.OpenES(x0, sigma, population_size=pop, learning_rate=lr, optimizer=optimizer,
                       antithetic=antithetic, weight_decay=weight_decay, seed=seed)
    sampler = _core.GaussianSampler(seed=seed, sigma=sigma, cached=False, cache_size=0, num_params=n)
    theta = x0.astype(np.float32).astype(np.float64)
    state = {}
    for t in range(3):
        X = es.ask()
        keys = es.keys  # the training family's keys (GaussianStrategy: draw_key(t, pair, n, stream))
        if antithetic:
            np.testing.assert_array_equal(keys[0::2], keys[1::2])
            signs = np.tile([1.0, -1.0], pop // 2)
        else:
            signs = np.ones(pop)
        assert len(set(keys.tolist())) == (pop // 2 if antithetic else pop)
        eps = np.stack([sampler.noise(int(k)) for k in keys]).astype(np.float64)
        np.testing.assert_allclose(X, es.theta + sigma * signs[:, None] * eps, rtol=0, atol=1e-6)
        values = sphere_rows(X) + np.arange(pop) * 1e-3  # distinct
        es.tell(X, values)
        weights = es_oracle.centered_ranks(-values)
        d = es_oracle.es_direction(theta, eps, signs, weights, sigma, weight_decay)
        theta, state = es_oracle.optimizer_step(theta, d, state, kind, lr)
        np.testing.assert_allclose(es.theta, theta, rtol=1e-5, atol=1e-6)
        theta = es.theta  # follow the float32 trajectory
    assert es.iterations == 3


@pytest.mark.parametrize("optimizer,antithetic,shaping", [("ADAM", True, "CENTERED_RANK"),
                                                         ("MOMENTUM", False, "Z_SCORE")])
def test_openes_is_the_training_family_bit_for_bit(optimizer, antithetic, shaping, mlp_path):
    # OpenES is GAUSSIAN_SAMPLING run as ask / tell: the members, and the
    # centre after every update, are ESAgent's training path's bits.
    cfg = evokit.parse_config(
        f"solver {{ sampling {{ type: GAUSSIAN_SAMPLING gaussian_sampling {{ std: 0.04 cached: false seed: 5 }} }} "
        f"optimizer {{ type: {optimizer} base_lr: 0.03 }} population_size: 12 "
        f"antithetic: {str(antithetic).lower()} fitness_shaping: {shaping} weight_decay: 0.01 }}")
    agent = evokit.ESAgent(cfg, mlp_path)
    es = evokit.OpenES(agent.params.astype(np.float64), 0.04, population_size=12, learning_rate=0.03,
                       optimizer=optimizer.lower(), antithetic=antithetic, fitness_shaping=shaping.lower(),
                       weight_decay=0.01, seed=5)
    assert es.solver.family == "GAUSSIAN_SAMPLING"
    for g in range(4):
        X = es.ask()
        infos = agent.draw_members(12)
        population = agent.population(infos)
        np.testing.assert_array_equal(X, np.array([population.params(i) for i in range(12)]))
        values = np.array([float(np.sum((x - 0.5) ** 2)) for x in X])
        es.tell(X, values)
        agent.update(infos, (-values).tolist())
        assert es.theta.astype(np.float32).tobytes() == agent.params.tobytes(), g


def test_openes_default_population():
    assert evokit.OpenES(np.zeros(10), 0.1).ask().shape == (10, 10)   # 4 + floor(3 ln 10) = 10
    assert evokit.OpenES(np.zeros(3), 0.1).ask().shape == (8, 3)      # 4 + 3 = 7, rounded up to even
    assert evokit.OpenES(np.zeros(3), 0.1, antithetic=False).ask().shape == (7, 3)


# ---- the ask / tell contract and its errors ---------------------------------------

STRATEGIES = {
    "GA": lambda **kw: evokit.GA(np.full(5, 1.0), 0.1, population_size=6, seed=1, **kw),
    "OpenES": lambda **kw: evokit.OpenES(np.full(5, 1.0), 0.1, population_size=6, seed=1, **kw),
}


@pytest.mark.parametrize("name", STRATEGIES)
def test_tell_without_ask_and_twice(name):
    es = STRATEGIES[name]()
    with pytest.raises(RuntimeError, match=rf"^{name}\.tell\(\) was called without a preceding ask\(\)$"):
        es.tell(np.zeros((6, 5)), np.zeros(6))
    X = es.ask()
    es.tell(X, sphere_rows(X))
    with pytest.raises(RuntimeError, match=rf"^{name}\.tell\(\) was called twice: call ask\(\) for new solutions"):
        es.tell(X, sphere_rows(X))


@pytest.mark.parametrize("name", STRATEGIES)
def test_tell_lengths_and_solutions(name):
    es = STRATEGIES[name]()
    X = es.ask()
    with pytest.raises(ValueError, match=r"^#f-values = 5 must equal #solutions = 6$"):
        es.tell(X, sphere_rows(X)[:5])
    with pytest.raises(ValueError, match=r"^#f-values = 6 must equal #solutions = 4$"):
        es.tell(X[:4], sphere_rows(X))
    with pytest.raises(ValueError, match=r"^solutions have shape \(4, 5\) but ask\(\) returned \(6, 5\)$"):
        es.tell(X[:4], sphere_rows(X)[:4])
    with pytest.raises(ValueError, match=r"^f-values must be a 1-D sequence of numbers, got shape \(6, 1\)$"):
        es.tell(X, sphere_rows(X)[:, None])
    Y = X.copy()
    Y[2, 1] += 1.0
    Y[4, 0] += 1.0
    with pytest.raises(ValueError, match=rf"^solutions \[2, 4\] differ from the ones ask\(\) returned; {name} only"):
        es.tell(Y, sphere_rows(Y))
    # nothing was consumed by the failed tells
    assert es.evaluations == 0
    es.tell(X, sphere_rows(X))
    assert es.evaluations == 6 and es.iterations == 1


@pytest.mark.parametrize("name", STRATEGIES)
def test_ask_again_before_tell_returns_the_same_copy(name):
    es = STRATEGIES[name]()
    X = es.ask()
    X[0, 0] = 123.0  # the caller's copy
    Y = es.ask()
    assert Y[0, 0] != 123.0
    X[0, 0] = Y[0, 0]
    np.testing.assert_array_equal(X, Y)


@pytest.mark.parametrize("name", STRATEGIES)
def test_nan_error_policy_names_the_members(name):
    es = STRATEGIES[name]()
    X = es.ask()
    values = sphere_rows(X)
    values[[1, 4]] = np.nan
    with pytest.raises(ValueError, match=r"^f-values of solutions \[1, 4\] are NaN \(nan_policy='error'"):
        es.tell(X, values)
    assert es.evaluations == 0


def test_nan_worst_policy_ga_ranks_them_last():
    es = STRATEGIES["GA"](nan_policy="worst")
    X = es.ask()
    values = -np.arange(6.0)  # the NaN members would be the best
    values[[4, 5]] = np.nan
    with pytest.warns(RuntimeWarning, match=r"f-values of solutions \[4, 5\] are NaN: replaced by the worst value inf"):
        es.tell(X, values)
    np.testing.assert_array_equal(es.result.xfavorite, X[3])
    assert es.result.fbest == -3.0


def test_nan_worst_policy_openes_takes_the_largest_value():
    es = STRATEGIES["OpenES"](nan_policy="worst")
    twin = STRATEGIES["OpenES"]()
    X = es.ask()
    values = sphere_rows(X)
    values[2] = np.nan
    with pytest.warns(RuntimeWarning, match=r"f-values of solutions \[2\] are NaN: replaced by the worst value"):
        es.tell(X, values)
    values[2] = np.nanmax(values)
    twin.tell(twin.ask(), values)
    np.testing.assert_array_equal(es.theta, twin.theta)
    Y = es.ask()
    with pytest.raises(ValueError, match=r"^all f-values of this batch are NaN: OpenES has nothing to rank$"):
        es.tell(Y, np.full(6, np.nan))


def test_openes_refuses_infinite_values():
    es = STRATEGIES["OpenES"]()
    X = es.ask()
    values = sphere_rows(X)
    values[3] = np.inf
    with pytest.raises(ValueError, match=r"^f-values of solutions \[3\] are infinite; OpenES needs finite"):
        es.tell(X, values)


def test_ga_accepts_infinite_values():
    es = STRATEGIES["GA"]()
    X = es.ask()
    values = sphere_rows(X)
    values[0] = np.inf
    es.tell(X, values)
    assert es.iterations == 1


BAD_OPTIONS = [
    (evokit.GA, {"population_size": 1}, "population_size must be an integer >= 2, got 1"),
    (evokit.GA, {"population_size": 10, "truncation_size": 11},
     "truncation_size must be in [1, population_size = 10], got 11"),
    (evokit.GA, {"population_size": 10, "num_elites": 10},
     "num_elites must be < population_size = 10 (at least one child per generation), got 10"),
    (evokit.GA, {"population_size": 10, "elite_evaluations": 5, "elite_candidates": 11},
     "elite_candidates must be in [num_elites = 1, population_size = 10], got 11"),
    (evokit.GA, {"num_elites": 0, "elite_evaluations": 5},
     ("elite_evaluations = 5 re-evaluates elite candidates, which needs num_elites >= 1, got 0 "
      "(set elite_evaluations = 0 to turn re-evaluation off)")),
    (evokit.GA, {"nan_policy": "skip"}, "nan_policy must be one of 'error', 'worst', got 'skip'"),
    (evokit.GA, {"max_iterations": 0}, "max_iterations must be an integer >= 1, got 0"),
    (evokit.GA, {"num_threads": 0}, "num_threads must be an integer >= 1, got 0"),
    (evokit.OpenES, {"optimizer": "rmsprop"},
     "optimizer must be one of 'adam', 'sgd', 'momentum', got 'rmsprop'"),
    (evokit.OpenES, {"population_size": 7},
     "population_size must be even with antithetic=True (mirrored pairs), got 7"),
    (evokit.OpenES, {"fitness_shaping": "rank"},
     "fitness_shaping must be one of 'centered_rank', 'z_score', 'raw', got 'rank'"),
    (evokit.OpenES, {"learning_rate": -1.0}, "learning_rate must be > 0 and finite, got -1.0"),
    (evokit.OpenES, {"weight_decay": -0.1}, "weight_decay must be >= 0 and finite, got -0.1"),
    (evokit.OpenES, {"stagnation_iterations": 0}, "stagnation_iterations must be an integer >= 1, got 0"),
]


@pytest.mark.parametrize("cls, options, message", BAD_OPTIONS)
def test_bad_options(cls, options, message):
    with pytest.raises(ValueError) as info:
        cls(np.zeros(4), 0.1, **options)
    assert str(info.value) == message


@pytest.mark.parametrize("cls", [evokit.GA, evokit.OpenES])
def test_bad_x0_and_sigma(cls):
    with pytest.raises(ValueError, match=r"^sigma must be > 0 and finite, got 0$"):
        cls(np.zeros(4), 0)
    with pytest.raises(ValueError, match=r"^sigma must be > 0 and finite, got nan$"):
        cls(np.zeros(4), float("nan"))
    with pytest.raises(ValueError, match=r"^x0 must be a non-empty 1-D sequence of numbers, got shape \(0,\)$"):
        cls([], 0.1)
    with pytest.raises(ValueError, match=r"^x0\[2\] is inf$"):
        cls([0.0, 1.0, np.inf], 0.1)


# ---- stop criteria, result, optimize ----------------------------------------------

def test_result_before_any_tell():
    result = evokit.GA([0.1, 0.2], 0.5, population_size=4).result
    assert result.xbest is None and result.fbest == np.inf
    assert (result.evaluations, result.iterations, result.stop) == (0, 0, {})
    np.testing.assert_array_equal(result.xfavorite, np.float32([0.1, 0.2]))


@pytest.mark.parametrize("name", STRATEGIES)
def test_stop_criteria(name):
    es = STRATEGIES[name](ftarget=2.0)
    result = es.optimize(sphere)  # f(x0) = 5
    assert result.stop == {"ftarget": 2.0} and result.fbest <= 2.0

    es = STRATEGIES[name](max_evaluations=20)
    assert es.optimize(sphere).stop == {"max_evaluations": 20}
    assert es.evaluations == 24  # whole batches

    es = STRATEGIES[name]()
    assert es.optimize(lambda x: 1.0).stop == {"tolfun": 1e-11}  # a flat function
    assert es.iterations == 35  # once the best f-values of 10 + ceil(30 n / population) iterations are in

    calls = itertools.count()
    es = STRATEGIES[name](stagnation_iterations=4)
    result = es.optimize(lambda x: float(next(calls)))  # never improves on the first value
    assert result.stop == {"tolstagnation": 4} and result.fbest == 0.0
    # pycma's test (the core's, CMAES's too): past 4 iterations, once the
    # window of 120 + 30 n / population = 145 iterations is recorded, the
    # recent best and median f-values are no better than the oldest ones.
    assert es.iterations == 145


@pytest.mark.parametrize("name", STRATEGIES)
def test_optimize_call_limits(name):
    es = STRATEGIES[name]()
    result = es.optimize(sphere, max_iterations=3)
    assert result.stop == {"max_iterations": 3} and result.iterations == 3
    result = es.optimize(sphere, max_iterations=2)  # counted per call
    assert result.iterations == 5
    seen = []
    result = es.optimize(sphere, callback=lambda s: seen.append(s.iterations) or len(seen) == 2)
    assert result.stop == {"callback": True} and seen == [6, 7]
    with pytest.raises(ValueError, match=r"^num_workers must be an integer >= 1, got 0$"):
        es.optimize(sphere, num_workers=0)
    with pytest.raises(ValueError, match=r"^vectorized=True evaluates each batch with one call of f; "
                                         r"num_workers must be 1, got 2$"):
        es.optimize(sphere_rows, vectorized=True, num_workers=2)


@pytest.mark.parametrize("make", [
    lambda: evokit.GA(np.full(10, 2.0), 0.1, population_size=20, seed=4, max_iterations=25),
    lambda: evokit.GA(np.full(10, 2.0), 0.1, population_size=20, elite_evaluations=3, seed=4,
                      max_iterations=10),
    lambda: evokit.OpenES(np.full(10, 2.0), 0.1, population_size=20, learning_rate=0.05, seed=4,
                          max_iterations=25),
], ids=["GA", "GA-reevaluated", "OpenES"])
def test_vectorized_and_threaded_optimize_equal_serial(make):
    serial = make().optimize(sphere)
    for result in (make().optimize(sphere_rows, vectorized=True), make().optimize(sphere, num_workers=2, backend="thread")):
        np.testing.assert_array_equal(result.xbest, serial.xbest)
        np.testing.assert_array_equal(result.xfavorite, serial.xfavorite)
        assert (result.fbest, result.evaluations, result.iterations, result.stop) == \
            (serial.fbest, serial.evaluations, serial.iterations, serial.stop)


def test_vectorized_f_with_a_wrong_length():
    es = STRATEGIES["GA"]()
    with pytest.raises(ValueError, match=r"^#f-values = 5 must equal #solutions = 6$"):
        es.optimize(lambda X: sphere_rows(X)[:5], vectorized=True)


def test_genetic_algorithm_stub_matches_the_module():
    stub = os.path.join(os.path.dirname(evokit.__file__), "_core.pyi")
    with open(stub) as f:
        tree = ast.parse(f.read())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GeneticAlgorithm")
    members = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"}
    assert members == {n for n in vars(_core.GeneticAlgorithm) if not n.startswith("_")}


def _sphere_run(**options):
    es = evokit.OpenES(np.ones(10), 0.5, seed=3, max_evaluations=6000, optimizer="adam", learning_rate=0.1,
                       **options)
    while not es.stop():
        X = es.ask()
        es.tell(X, [float(x @ x) for x in X])
    return es


def test_openes_converges_with_decays_and_circles_the_optimum_without():
    # Fixed sigma and learning rate (the published method): Adam's steps
    # keep their length, so the centre circles the optimum.
    assert _sphere_run().result.fbest > 1e-3
    decayed = _sphere_run(sigma_decay=0.97, learning_rate_decay=0.97)
    assert decayed.result.fbest < 1e-8
    assert decayed.sigma == pytest.approx(0.5 * 0.97 ** decayed.result.iterations, rel=1e-9)
    assert decayed.learning_rate == pytest.approx(0.1 * 0.97 ** decayed.result.iterations, rel=1e-4)
    for name in ("sigma_decay", "learning_rate_decay"):
        for bad in (0, 1.5, True):
            with pytest.raises(ValueError, match=rf"{name} must be in \(0, 1\], got {bad!r}"):
                evokit.OpenES(np.ones(3), 0.5, **{name: bad})


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "momentum"])
def test_a_step_that_would_overflow_the_optimizer_is_refused(optimizer):
    make = {"adam": lambda: _core.Adam(0.1, 0.9, 0.999, 1e-8, 3),
            "sgd": lambda: _core.SGD(0.1, 3), "momentum": lambda: _core.Momentum(0.1, 0.9, 3)}
    opt = make[optimizer]()
    p = np.ones(3, np.float32)
    opt.step(p, np.array([1, -1, 2], np.float32))
    before = (p.copy(), [opt.get_state(n).copy() for n in opt.state_names], opt.steps)
    huge = np.float32(min(3e38, opt.max_gradient * 4))
    with pytest.raises(ValueError, match=rf"^grad\[2\] is .*: beyond .*{optimizer.upper()}'s step "
                                         rf"would overflow float32 .*nothing was changed"):
        opt.step(p, np.array([0.5, 0.5, huge], np.float32))
    np.testing.assert_array_equal(p, before[0])
    for name, state in zip(opt.state_names, before[1]):
        np.testing.assert_array_equal(opt.get_state(name), state)
    assert opt.steps == before[2]


def test_raw_rewards_around_1e22_are_refused_not_silently_frozen(tmp_path):
    from helpers import CARTPOLE, mlp_agent

    cfg = evokit.load_config(CARTPOLE)
    cfg.solver.fitness_shaping = evokit.proto.RAW
    cfg.solver.population_size = 10
    agent = mlp_agent(tmp_path, cfg)
    infos = agent.draw_members(10)
    with pytest.raises(ValueError, match="ADAM's step would overflow float32"):
        agent.update(infos, [1e22 * (i % 3) for i in range(10)])
    assert agent.model_iter_id == 0
