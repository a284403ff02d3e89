"""CR-FM-NES (Nomura & Ono, IEEE CEC 2022, arXiv:2201.11422, Algorithm 1)
against its NumPy reference, its paper's defaults and claims, and at
d = 100,000 (linear time and memory)."""

import time

import numpy as np
import pytest

import distribution_reference as ref
import evokit
from evokit import _core
from evokit.solvers import solver_options
from helpers import assert_same_run_for_threads_and_pickling

KEYS = ["crfmnes.d", "crfmnes.mean", "crfmnes.p_c", "crfmnes.p_sigma", "crfmnes.sigma", "crfmnes.v"]


def sphere(x):
    return float(np.dot(x, x))


def rosenbrock(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def ellipsoid(x):
    n = len(x)
    return float(np.sum((1000.0 ** (np.arange(n) / (n - 1)) * x) ** 2))


def _state(es):
    d = es.state().doubles
    return {k.split(".", 1)[1]: (d[k][0] if k == "crfmnes.sigma" else d[k]) for k in KEYS}


def test_crfmnes_defaults_are_table_1():
    for n, lam in ((2, None), (10, None), (40, 16), (1000, None), (100_000, None)):
        es = evokit.CRFMNES(np.zeros(n), 1.0, population_size=lam)
        want = ref.crfmnes_defaults(n, lam)
        assert es.population_size == want["population_size"] and es.population_size % 2 == 0
        got = es.parameters
        assert sorted(got) == sorted(want)
        for name, value in want.items():
            assert got[name] == pytest.approx(value, rel=1e-13), name
    # lambda = 4 + floor(3 ln d) rounded up to even; h^-1 solves its equation
    assert evokit.CRFMNES(np.zeros(10), 1.0).population_size == 10  # 4 + 6
    assert evokit.CRFMNES(np.zeros(50), 1.0).population_size == 16  # 4 + 11 = 15, odd
    h = evokit.CRFMNES(np.zeros(50), 1.0).parameters["h_inv"]
    assert (1 + h * h) * np.exp(h * h / 2) / 0.24 - 10 - 50 == pytest.approx(0, abs=1e-9)


def test_the_initial_state_is_documented():
    es = evokit.CRFMNES(np.arange(6.0), 0.4, seed=17)
    s = _state(es)
    np.testing.assert_array_equal(s["v"], ref.crfmnes_initial_v(17, 6))
    np.testing.assert_array_equal(s["d"], np.ones(6))
    np.testing.assert_array_equal(s["p_sigma"], np.zeros(6))
    assert s["sigma"] == 0.4
    np.testing.assert_allclose(es.stds, 0.4 * np.sqrt(1 + s["v"] ** 2), rtol=1e-15)
    # mirrored pairs: members 2p and 2p + 1 share a key and take +z, -z
    X = es.ask()
    np.testing.assert_allclose(X[0::2] + X[1::2], np.tile(2 * es.mean, (len(X) // 2, 1)), atol=1e-14)
    assert list(es.keys[0::2]) == list(es.keys[1::2])


@pytest.mark.parametrize("n,lam,problem", [(7, None, rosenbrock), (12, 16, ellipsoid), (30, 8, rosenbrock)])
def test_crfmnes_matches_its_numpy_reference(n, lam, problem):
    rng = np.random.default_rng(n)
    x0 = rng.normal(size=n)
    es = evokit.CRFMNES(x0, 0.5, population_size=lam, seed=4)
    lam = es.population_size
    state = _state(es)
    regimes = set()
    for g in range(25):
        z = ref.member_z(4, g, lam, n, mirrored=True)
        X = es.ask()
        np.testing.assert_allclose(X, ref.crfmnes_samples(state, z), rtol=1e-11, atol=1e-13)
        values = np.array([problem(x) for x in X])
        if g % 5 == 3:
            values[[1, 4]] = np.inf  # infeasible members rank last, by |z|
        es.tell(X, values)
        ps_norm = np.linalg.norm(state["p_sigma"])
        state = ref.crfmnes_generation(state, z, values)
        chi = ref.crfmnes_defaults(n, lam)["chi_d"]
        ps_norm = np.linalg.norm(state["p_sigma"])
        regimes.add("move" if ps_norm >= chi else "stag" if ps_norm >= 0.1 * chi else "conv")
        got = _state(es)
        for name in ("mean", "d", "v", "p_sigma", "p_c"):
            np.testing.assert_allclose(got[name], state[name], rtol=1e-9, atol=1e-12, err_msg=name)
        assert got["sigma"] == pytest.approx(state["sigma"], rel=1e-10)
    assert "move" in regimes and "stag" in regimes  # both weightings were compared


@pytest.mark.parametrize("seed", [31, 32, 33])
def test_crfmnes_solves_what_its_paper_solves(seed):
    # Nomura & Ono 2022, section IV (Figures 3-4 and Table II): sphere,
    # ellipsoid and Rosenbrock at d = 40 / 80 reached to 1e-8 (the paper
    # stops at 1e-12), in the paper's budgets (ellipsoid d = 40, lambda = 16:
    # ~9,000 evaluations; Rosenbrock d = 40, lambda = 40: ~52,000); here
    # the limits are about 2.3x or more what these seeds take (sphere d = 80:
    # 6,800-7,200; ellipsoid: 7,500-7,900; Rosenbrock: 47,500-48,500).
    r = evokit.CRFMNES(np.full(80, 3.0), 2.0, seed=seed, ftarget=1e-8,
                       max_evaluations=20_000).optimize(lambda X: (X * X).sum(axis=1), vectorized=True)
    assert r.fbest <= 1e-8 and r.stop == {"ftarget": 1e-8}, r
    r = evokit.CRFMNES(np.full(40, 3.0), 2.0, population_size=16, seed=seed, ftarget=1e-8,
                       max_evaluations=20_000).optimize(ellipsoid)
    assert r.fbest <= 1e-8 and r.stop == {"ftarget": 1e-8}, r
    r = evokit.CRFMNES(np.zeros(40), 2.0, population_size=40, seed=seed, ftarget=1e-8,
                       max_evaluations=110_000).optimize(rosenbrock)
    assert r.fbest <= 1e-8 and r.stop == {"ftarget": 1e-8}, r
    np.testing.assert_allclose(r.xbest, np.ones(40), atol=1e-3)


def test_it_runs_at_d_100000_in_linear_time_and_memory():
    n = 100_000
    es = evokit.CRFMNES(np.ones(n), 3e-3, seed=2)
    state = es.state()
    sizes = [np.size(a) for a in list(state.doubles.values()) + list(state.ints.values())]
    assert sum(sizes) == 5 * n + 2  # mean, d, v, p_sigma, p_c (n each), sigma, generation
    start = time.perf_counter()
    for _ in range(10):
        X = es.ask()
        es.tell(X, (X * X).sum(axis=1))
    assert time.perf_counter() - start < 20.0  # ~0.04 s a generation: O(lambda d)
    # progress at the sphere's rate ~ lambda / d per generation (measured:
    # 100000 -> 99975 after 10 generations for seeds 2-5)
    assert sphere(es.mean) < n - 10
    assert np.all(np.isfinite(es.stds)) and np.all(es.stds > 0)


def test_a_run_is_the_same_for_any_thread_count_and_after_pickling():
    assert_same_run_for_threads_and_pickling(
        lambda threads: evokit.CRFMNES(np.ones(3000), 0.3, seed=9, num_threads=threads))


def test_state_round_trip_and_refusals():
    es = evokit.CRFMNES(np.zeros(4), 1.0, seed=3)
    X = es.ask()
    es.tell(X, (X ** 2).sum(axis=1))
    state = es.state()
    assert state.family == "CRFMNES" and sorted(state.doubles) == KEYS
    other = evokit.CRFMNES(np.zeros(4), 1.0, seed=3)
    other.load_state(state)
    np.testing.assert_array_equal(other.ask(), es.ask())

    def refused(name, value, message):
        doubles = state.doubles
        doubles[name] = value
        with pytest.raises(ValueError, match=message):
            other.load_state(_core.SolverState("CRFMNES", doubles=doubles, ints=state.ints))

    refused("crfmnes.d", np.array([1.0, 0.0, 1.0, 1.0]), r"state entry 'crfmnes.d'\[1\] must be > 0 and finite, got 0")
    refused("crfmnes.v", np.zeros(4), "state entry 'crfmnes.v' must not be all zeros")
    refused("crfmnes.p_c", np.array([0, 0, np.nan, 0]), r"state entry 'crfmnes.p_c'\[2\] is nan")
    refused("crfmnes.p_sigma", np.zeros(5), "state entry 'crfmnes.p_sigma' holds 5 values, expected 4")
    np.testing.assert_array_equal(other.ask(), es.ask())  # unchanged


@pytest.mark.parametrize("kwargs,message", [
    ({"population_size": 7}, r"population_size must be even \(mirrored pairs\), got 7"),
    ({"learning_rate_mean": 0.0}, r"learning_rate_mean must be in \(0, 1e\+06\], got 0"),
    ({"learning_rate_mean": None}, "learning_rate_mean must be a number, got None"),
])
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evokit.CRFMNES(np.zeros(3), 1.0, **kwargs)


def test_the_policy_config_names_the_option():
    cfg = evokit.proto.EvoKitConfig()
    cfg.solver.sampling.type = evokit.proto.SamplingConfig.CRFMNES_SAMPLING
    cfg.solver.antithetic = False
    cfg.solver.population_size = 9
    with pytest.raises(ValueError, match=r"solver.sampling.crfmnes_sampling.population_size must be even \(mirrored pairs\), got 9"):
        _core.validate_solver_options(solver_options(cfg.solver), None)


def test_small_dimensions_stay_finite():
    """Table I's c_1 is negative for d < 5; taken as published it turned D
    negative at d = 2 on the ellipsoid (5 of 100 seeds sampled NaN solutions
    within 2,600 evaluations). Floored at 0, every run stays finite and the
    rank-one update is off."""
    for n, seeds in ((2, 80), (3, 15), (4, 15)):
        assert evokit.CRFMNES(np.zeros(n), 1.0).parameters["c_1"] == 0.0
        for seed in range(seeds):
            es = evokit.CRFMNES(np.ones(n), 0.5, seed=seed)
            for _ in range(3000 // es.population_size):
                X = es.ask()  # raises if the distribution went non-finite
                values = np.array([ellipsoid(x) for x in X])
                if values.min() < 1e-8 or es.stop():
                    break
                es.tell(X, values)
    assert evokit.CRFMNES(np.zeros(6), 1.0).parameters["c_1"] > 0


def test_condition_bounds_the_covariance_condition_number():
    """condition: an upper bound of cond(sigma^2 D (I + v v^T) D) from the
    interlacing of a diagonal plus rank-one matrix's eigenvalues, within a
    factor 2 (d^2 of the second smallest / the smallest) of the exact one."""
    es = evokit.CRFMNES(np.ones(6), 0.5, seed=4)
    for g in range(60):
        X = es.ask()
        es.tell(X, [ellipsoid(x) for x in X])
        if g % 15 == 14:
            s = _state(es)
            d, v = s["d"], s["v"]
            cov = s["sigma"] ** 2 * (np.diag(d) @ (np.eye(6) + np.outer(v, v)) @ np.diag(d))
            ev = np.linalg.eigvalsh(cov)
            exact = ev[-1] / ev[0]
            d2 = np.sort(d * d)
            assert exact * (1 - 1e-9) <= es.condition <= 2 * d2[1] / d2[0] * exact * (1 + 1e-9)
    snes = evokit.SNES(np.ones(5), 0.5, seed=1)
    for _ in range(30):
        X = snes.ask()
        snes.tell(X, [ellipsoid(x) for x in X])
    assert snes.condition == pytest.approx((snes.stds.max() / snes.stds.min()) ** 2, rel=1e-15)


def rotated_ellipsoid(X):
    n = X.shape[1]
    q, r = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))
    Y = X @ (q * np.sign(np.diag(r))).T
    return np.sum(1e6 ** (np.arange(n) / (n - 1)) * Y * Y, axis=1)


def test_a_diverging_run_stops_by_conditioncov_instead_of_raising():
    """D (I + v v^T) D cannot model a rotated ellipsoid of condition 1e6 at
    d = 10: CR-FM-NES's updates then blow up (evosax's CR_FM_NES misses it
    too), on some seeds from a condition of 1e4 to a non-finite D in one
    generation. stop() reports conditioncov (condition > 1e14, or +inf once
    non-finite) before the next ask(), so optimize returns the best
    solution found (other seeds stagnate first: tolstagnation); with
    conditioncov=None ask() raises by name."""
    reasons = set()
    for seed in range(8):
        es = evokit.CRFMNES(np.ones(10), 0.5, seed=seed, ftarget=1e-8, max_evaluations=70_000)
        r = es.optimize(rotated_ellipsoid, vectorized=True)
        assert set(r.stop) & {"conditioncov", "ftarget", "max_evaluations", "tolstagnation"}, r.stop
        assert np.all(np.isfinite(r.xbest)) and np.isfinite(r.fbest)
        reasons |= set(r.stop)
    assert "conditioncov" in reasons
    es = evokit.CRFMNES(np.ones(10), 0.5, seed=1, conditioncov=None)  # seed 1 goes non-finite
    with pytest.raises(RuntimeError, match="CRFMNES: generation .* non-finite"):
        for _ in range(10_000):
            X = es.ask()
            es.tell(X, rotated_ellipsoid(X))
    with pytest.raises(ValueError, match="conditioncov must be a number > 1 or None"):
        evokit.CRFMNES(np.ones(3), 0.5, conditioncov=0.5)
