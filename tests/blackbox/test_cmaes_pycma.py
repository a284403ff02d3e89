"""CMAES as a drop-in for pycma users: repaired solutions in tell() (against the
NumPy reference of one generation with pycma's Mahalanobis clipping), inject(),
BIPOP's restart counting (pycma's fmin), and integer variables with the margin
(Hamano et al., GECCO 2022, arXiv:2205.13482)."""

import cma_reference
import numpy as np
import pytest
from cma_problems import sphere

import evokit
from evokit import _core



def clipped(x, mean, sigma, C):
    """pycma's repair_genotype: the step's Mahalanobis norm clipped at sqrt(n) + 2n / (n + 2)."""
    n = len(mean)
    y = (x - mean) / sigma
    C = np.diag(C) if np.ndim(C) == 1 else C
    norm = np.sqrt(y @ np.linalg.solve(C, y))
    upper = np.sqrt(n) + 2 * n / (n + 2)
    return mean + sigma * (y * upper / norm if norm > upper else y)


@pytest.mark.parametrize("cls, separable", [(_core.CMAES, False), (_core.SepCMAES, True)])
@pytest.mark.parametrize("n", [8, 130])  # 130: the packed products of n >= 128
def test_repaired_solutions_update_as_the_reference_with_pycmas_clip(cls, separable, n):
    rng = np.random.default_rng(5)
    es = cls(np.zeros(n), 1.0, seed=3)
    s = cma_reference.random_state(n, rng, separable)
    es.set_state(**s)
    x = es.ask().copy()
    lam = len(x)
    told = x.copy()
    told[0] = np.clip(told[0], -0.1, 0.1)        # clipped into a box
    told[2] = np.round(told[2])                   # rounded
    told[3] = s["mean"] + 50.0                    # far out: clipped in Mahalanobis norm
    values = rng.normal(size=lam)
    values[3] = values.min() - 1                  # ... and the best, so it moves the mean
    effective = told.copy()
    for k in (0, 2, 3):
        effective[k] = clipped(told[k], s["mean"], s["sigma"], s["cov"])
    assert not np.allclose(effective[3], told[3])  # the clip really acted
    params = cma_reference.default_params(n, None, separable)
    want = cma_reference.generation(s["mean"], s["sigma"], s["cov"], s["p_sigma"], s["p_c"], s["generation"],
                                    effective, values, params, separable)
    es.tell_solutions(told, values)
    got = es.get_state()
    cma_reference.assert_state_matches(got, want)
    np.testing.assert_array_equal(es.best_solution, told[3])  # the told solution, as pycma's best


@pytest.mark.parametrize("n, lam", [(2, 6), (3, 4), (20, 12), (100, 17), (1000, 24), (1000, 300)])
def test_separable_rates_are_pycmas(n, lam):
    # pycma's CMA_diagonal learning rates (c1_sep, cmu_sep, cc_sep) and its
    # CSA's cs (pycma itself picks TPA for some large separable settings).
    cma = pytest.importorskip("cma")
    sp = cma.CMAEvolutionStrategy(n * [0.0], 1.0, {"popsize": lam, "verbose": -9, "CMA_diagonal": True,
                                                    "AdaptSigma": cma.sigma_adaptation.CMAAdaptSigmaCSA})
    got = _core.SepCMAES(np.zeros(n), 1.0, population_size=lam).params
    assert got["c1"] == pytest.approx(sp.sp.c1_sep, rel=1e-13)
    assert got["cmu"] == pytest.approx(sp.sp.cmu_sep, rel=1e-13)
    assert got["cc"] == pytest.approx(sp.sp.cc_sep, rel=1e-13)
    assert got["c_sigma"] == pytest.approx(sp.adapt_sigma.cs, rel=1e-13)
    full = _core.CMAES(np.zeros(n), 1.0, population_size=lam).params
    assert full["cc"] == pytest.approx(sp.sp.cc, rel=1e-13) and full["cc"] != got["cc"]


@pytest.mark.parametrize("cls", [evokit.CMAES, evokit.SepCMAES])
def test_telling_the_asked_solutions_is_bit_identical_to_before(cls):
    a, b = cls(np.ones(6), 0.5, seed=7), cls(np.ones(6), 0.5, seed=7)
    for _ in range(15):
        x = a.ask()
        a.tell(x, sphere(x))
        b.core.tell_solutions(b.core.ask(), sphere(x))
    for name in ("mean", "cov", "p_sigma", "p_c"):
        np.testing.assert_array_equal(a.core.get_state()[name], b.core.get_state()[name])


TARGET = np.array([0.9, -0.95, 0.3, -0.2, 0.5, 0.1])


def boxed_ellipsoid(x):
    return float(np.sum((np.asarray(x) - TARGET) ** 2 * np.arange(1, 7)))


def clipped_loop(es, lo=-1.0, hi=1.0):
    """pycma's documented ask/tell loop with solutions clipped into [lo, hi]."""
    clipped_rows = 0
    while not es.stop():
        X = es.ask()
        X = [np.clip(x, lo, hi) for x in X]
        clipped_rows += sum(np.any(x != a) for x, a in zip(X, es.ask()))
        es.tell(X, [boxed_ellipsoid(x) for x in X])
    return clipped_rows


def test_a_pycma_loop_with_clipping_converges_unchanged_but_the_import():
    # An optimum near the faces of [-1, 1]^6 and sigma0 = 1: many solutions are
    # clipped (repaired) in the first generations.
    es = evokit.CMAES(np.zeros(6), 1.0, seed=1)
    assert clipped_loop(es) > 20
    assert "tolfun" in es.stop(), es.stop()
    assert es.result.fbest < 1e-12
    np.testing.assert_allclose(es.result.xbest, TARGET, atol=1e-6)
    assert es.result.evaluations < 2500


def test_pycma_side_by_side_on_the_clipped_loop():
    cma = pytest.importorskip("cma")
    for seed in (1, 2, 3):
        pycma = cma.CMAEvolutionStrategy(np.zeros(6), 1.0, {"seed": seed, "verbose": -9})
        clipped_loop(pycma)
        es = evokit.CMAES(np.zeros(6), 1.0, seed=seed)
        clipped_loop(es)
        assert pycma.result.fbest < 1e-12 and es.result.fbest < 1e-12
        assert es.result.evaluations < 1.3 * pycma.result.evaluations, (seed, es.result.evaluations,
                                                                     pycma.result.evaluations)


def test_inject_as_pycmas_doctest():
    # pycma's inject example: the injected solution comes first in ask() and helps.
    def run(inject):
        es = evokit.CMAES(4 * [1], 2, ftarget=1e-10, seed=3)
        while not es.stop():
            if inject:
                es.inject([4 * [0.0]])
            X = es.ask()
            if inject and es.iterations == 0:
                assert X[0][0] == X[0][1]  # on the diagonal (rescaled when far, as pycma)
                assert es.core.num_injected == 1
            es.tell(X, [float(sphere(x)) for x in X])
        return es.result

    with_inject, without = run(True), run(False)
    assert with_inject.fbest <= 1e-10 and without.fbest <= 1e-10
    assert with_inject.evaluations < 0.5 * without.evaluations, (with_inject.evaluations, without.evaluations)


def test_inject_keeps_a_near_solution_exactly_and_checks_its_shape():
    es = evokit.CMAES(np.zeros(3), 1.0, seed=2)
    es.inject([[0.1, -0.2, 0.3], [0.0, 0.0, 0.05]])
    X = es.ask()
    np.testing.assert_array_equal(X[:2], [[0.1, -0.2, 0.3], [0.0, 0.0, 0.05]])
    es.tell(X, sphere(X))
    with pytest.raises(ValueError, match=r"each of dimension 3, got shape \(1, 2\)"):
        es.inject([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"solutions\[0\]\[1\] must be finite, got nan"):
        es.inject([[1.0, np.nan, 0.0]])


def rastrigin(x):
    x = np.atleast_2d(x)
    return 10 * x.shape[1] + np.sum(x ** 2 - 10 * np.cos(2 * np.pi * x), axis=1)


def test_bipop_restarts_counts_the_large_runs_as_pycma():
    # Rastrigin 10-D, restarts=9: the run ends after the 9th large (IPOP-regime)
    # restart; the small-population runs in between are not counted. Loose
    # tolerances keep the runs short.
    es = evokit.CMAES(np.full(10, 3.0), 2.0, restarts=9, restart_strategy="bipop", seed=1,
                      tolfun=1e-2, tolx=1e-2, max_evaluations=2_000_000)
    runs = []  # (population_size, sigma0) of each run
    while not es.stop():
        if len(runs) == es.result.restarts:
            runs.append((es.population_size, es.core.run_sigma0))
        X = es.ask()
        es.tell(X, rastrigin(X))
    assert "maxfevals" not in es.stop()
    assert es.large_restarts == 9
    assert es.small_restarts >= 1 and es.result.restarts == 9 + es.small_restarts
    large = [lam for lam, s0 in runs if s0 == 2.0]
    small = [(lam, s0) for lam, s0 in runs if s0 != 2.0]
    assert large == [10 * 2 ** k for k in range(10)]  # lambda0 = 4 + floor(3 ln 10) = 10, doubling
    assert len(small) == es.small_restarts
    assert all(10 <= lam <= 10 * 2 ** 9 and 0.02 <= s0 < 2.0 for lam, s0 in small)
    assert runs[-1][1] == 2.0  # it ends with a large run


# ---- integer variables: CMA-ES with margin -------------------------------------------

def sphere_int(x, n_int):
    """SphereInt of Hamano et al. (2022): the sphere, the last n_int coordinates integers."""
    return float(np.sum(np.asarray(x) ** 2))


def ellipsoid_int(x):
    """EllipsoidInt of Hamano et al. (2022) (vectorised over rows)."""
    x = np.asarray(x)
    n = x.shape[-1]
    return np.sum(1000 ** (np.arange(n) / (n - 1)) * x ** 2, axis=-1)


@pytest.mark.parametrize("f", [sphere_int, ellipsoid_int], ids=["SphereInt", "EllipsoidInt"])
def test_margin_solves_the_papers_mixed_integer_benchmarks(f):
    n = 20
    ints = list(range(n // 2, n))
    solved = []
    for seed in range(3):
        es = evokit.CMAES(np.full(n, 2.0), 1.0, integer_variables=ints, seed=seed, ftarget=1e-10,
                          max_evaluations=40000)
        while not es.stop():
            X = es.ask()
            assert np.all(X[:, ints] == np.round(X[:, ints]))  # every asked solution is integral there
            es.tell(X, [float(f(x)) if f is ellipsoid_int else f(x, len(ints)) for x in X])
        solved.append(es.result.fbest <= 1e-10)
        np.testing.assert_array_equal(es.result.xbest[ints], 0.0)
    assert all(solved)


def test_without_the_margin_rounding_stalls():
    # EllipsoidInt with the integers on its flat axes (coefficients 1 ... 1000^(9/19)):
    # the continuous part converges first and, without the margin, the variance of
    # the integer coordinates collapses before they reach 0. The flat-f criteria
    # (tolfun, tolfunhist, tolstagnation) are off: generations without a flip of an
    # integer coordinate have nearly equal f-values; the budget decides.
    n = 20
    ints = list(range(n // 2))
    results = {}
    for margin in (None, 0.0):
        results[margin] = [
            evokit.CMAES(np.full(n, 2.0), 1.0, integer_variables=ints, margin=margin, seed=seed, ftarget=1e-10,
                         max_evaluations=30000, tolfun=0, tolfunhist=0, tolstagnation=10**9)
            .optimize(ellipsoid_int, vectorized=True).fbest
            for seed in range(6)]
    assert sum(v <= 1e-10 for v in results[None]) >= 5, results  # seed 1 still waits at f = 5
    assert all(v >= 1.0 for v in results[0.0]), results  # an integer coordinate frozen off 0


def test_integers_within_bounds_and_the_options():
    es = evokit.CMAES([0.5, 0.0, 2.0], 3.0, integer_variables=[1, 2], bounds=([-1, -2.5, 0], [1, 2.5, 3]),
                      seed=4)
    assert es.core.margin == pytest.approx(1 / (3 * es.population_size))
    seen = []
    for _ in range(30):
        X = es.ask()
        seen.append(X)
        es.tell(X, [np.sum((x - [0.3, 2.4, 3.0]) ** 2) for x in X])
    seen = np.concatenate(seen)
    assert set(np.unique(seen[:, 1])) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    assert set(np.unique(seen[:, 2])) <= {0.0, 1.0, 2.0, 3.0}
    assert np.all(np.abs(seen[:, 0]) <= 1)
    np.testing.assert_array_equal(es.result.xbest[1:], [2.0, 3.0])
    assert np.all(es.result.xmean[1:] == np.round(es.result.xmean[1:]))
    with pytest.raises(ValueError, match=r"integer_variables\[0\] = 3 is not a parameter index \(num_params = 3\)"):
        evokit.CMAES(np.zeros(3), 1.0, integer_variables=[3])
    with pytest.raises(ValueError, match=r"integer_variables must be a sequence of parameter indices"):
        evokit.CMAES(np.zeros(3), 1.0, integer_variables=[0.5])
    with pytest.raises(ValueError, match=r"margin must be in \[0, 0.5\), got -0.1"):
        evokit.SepCMAES(np.zeros(3), 1.0, integer_variables=[0], margin=-0.1)
