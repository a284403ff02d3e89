"""Property-based tests (hypothesis) of every ask/tell strategy of
evokit.blackbox: arbitrary dimensions, step sizes, bounds, population sizes,
f-values with NaN, infinities and ties, and solutions altered before tell().

The contract checked: each call either works or raises a documented
exception (ValueError for bad input, RuntimeError for a call out of order)
whose message is one non-empty line; a tell() that was accepted leaves a
usable strategy: its mean (xfavorite) and step sizes are finite, and the
next ask() returns finite solutions of the right shape unless stop() says
the run is over. The profile (tests/blackbox/conftest.py) bounds the
examples and the time per example; ``HYPOTHESIS_PROFILE=thorough`` runs
more.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evokit
import evokit.blackbox.cmaes

#: The exceptions a strategy may raise at a user: ValueError (bad input),
#: RuntimeError (a call out of order).
DOCUMENTED = (ValueError, RuntimeError)


def _cma(cls, **fixed):
    def make(x0, sigma, pop, seed, bounds, nan_policy):
        return cls(x0, sigma, population_size=pop, seed=seed, bounds=bounds, nan_policy=nan_policy, **fixed)
    return make


def _plain(cls, even=False, **fixed):
    def make(x0, sigma, pop, seed, bounds, nan_policy):
        kw = dict(fixed)
        if pop is not None:  # None: the class's default
            kw["population_size"] = pop + (pop % 2 if even else 0)
        return cls(x0, sigma, seed=seed, nan_policy=nan_policy, **kw)
    return make


#: name -> factory(x0, sigma, population_size, seed, bounds, nan_policy): one
#: row per ask/tell strategy (and restart scheme) of evokit.blackbox.
FACTORIES = {
    "CMAES": _cma(evokit.CMAES),
    "CMAES-IPOP": _cma(evokit.CMAES, restarts=3, restart_strategy="ipop"),
    "CMAES-BIPOP": _cma(evokit.CMAES, restarts=3, restart_strategy="bipop"),
    "CMAES-TPA": _cma(evokit.CMAES, step_size_adaptation="tpa"),
    "CMAES-integer": _cma(evokit.CMAES, integer_variables=[0]),
    "SepCMAES": _cma(evokit.SepCMAES),
    "SNES": _plain(evokit.SNES),
    "XNES": _plain(evokit.XNES),
    "CRFMNES": _plain(evokit.CRFMNES, even=True),
    "LMMAES": _plain(evokit.LMMAES),
    "MAES": _plain(evokit.MAES),
    "PGPE": _plain(evokit.PGPE, even=True),
    "CEM": _plain(evokit.CEM),
    "ARS": _plain(evokit.ARS, even=True),
    "GA": _plain(evokit.GA),
    "OpenES": _plain(evokit.OpenES, even=True),
}

# f-values: ordinary numbers, ties (a few repeated values), NaN, +-inf, huge and tiny.
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 1.0]
values_st = st.one_of(st.sampled_from(SPECIAL), st.floats(-1e6, 1e6, allow_nan=False),
                      st.sampled_from([1.0, 2.0, 3.0]))


def one_line(exc: BaseException) -> None:
    msg = str(exc)
    assert msg and "\n" not in msg, f"{type(exc).__name__} message must be one non-empty line: {msg!r}"


def check_state(es, n: int) -> None:
    """After an accepted tell: a finite mean and step sizes, and an ask()
    of finite solutions unless stop() has fired."""
    r = es.result
    assert r.xfavorite is not None and r.xfavorite.shape == (n,)
    stopped = bool(es.stop())
    if not stopped:
        assert np.all(np.isfinite(r.xfavorite)), f"mean not finite while running: {r.xfavorite}"
        if r.stds is not None:
            assert np.all(np.isfinite(r.stds)), f"stds not finite while running: {r.stds}"
        X = es.ask()
        assert X.ndim == 2 and X.shape[1] == n and X.shape[0] >= 1
        assert np.all(np.isfinite(X)), "ask() returned non-finite solutions while the run goes on"
    assert not math.isnan(r.fbest)
    assert r.evaluations >= 0


def drive(es, n: int, data, generations: int, nan_policy: str) -> None:
    """ask/tell for a few generations with drawn f-values and alterations."""
    for _ in range(generations):
        if es.stop():
            return
        X = np.array(es.ask(), dtype=np.float64)
        k = len(X)
        values = data.draw(st.lists(values_st, min_size=k, max_size=k), label="values")
        alter = data.draw(st.sampled_from(["none", "none", "perturb", "clip", "wrong_shape", "nan_row"]),
                          label="alter")
        told = X.copy()
        if alter == "perturb":
            row = data.draw(st.integers(0, k - 1))
            told[row] += data.draw(st.floats(-10, 10, allow_nan=False))
        elif alter == "clip":
            told = np.clip(told, -1.0, 1.0)
        elif alter == "wrong_shape":
            told = told[:, :-1] if n > 1 else told[:-1]
        elif alter == "nan_row":
            told[0, 0] = math.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # nan_policy='worst' warns by design
            try:
                es.tell(told, values)
            except DOCUMENTED as e:
                one_line(e)
                # a refused tell leaves the ask pending and the state as it was
                np.testing.assert_array_equal(es.ask(), X)
                # finite f-values of the asked solutions (CMA: or of repaired
                # ones) are never refused; NaN, infinities and other solutions may be
                repaired_ok = alter in ("perturb", "clip") and isinstance(es, evokit.blackbox.cmaes._CMABlackBox)
                valid = (alter == "none" or repaired_ok) and all(map(math.isfinite, values))
                assert not valid, f"a valid tell was refused: {e}"
                es.tell(X, [1.0] * k)  # a plain tell goes through after a refusal
                check_state(es, n)
                continue
        check_state(es, n)


@pytest.mark.parametrize("name", sorted(FACTORIES))
@given(data=st.data(), n=st.integers(1, 6), sigma=st.floats(1e-6, 1e3), seed=st.integers(0, 2 ** 32),
       pop=st.one_of(st.none(), st.integers(2, 24)), nan_policy=st.sampled_from(["error", "worst"]),
       bounded=st.booleans())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_ask_tell_never_leaves_a_broken_state(name, data, n, sigma, seed, pop, nan_policy, bounded):
    x0 = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n), label="x0"))
    bounds = None
    if bounded and name.startswith(("CMAES", "SepCMAES")):
        lo = x0 - data.draw(st.floats(0, 10), label="below")
        hi = x0 + data.draw(st.floats(1e-3, 10), label="above")
        bounds = (lo, hi)
    try:
        es = FACTORIES[name](x0, sigma, pop, seed, bounds, nan_policy)
    except DOCUMENTED as e:
        one_line(e)
        return
    drive(es, n, data, generations=data.draw(st.integers(1, 6), label="generations"), nan_policy=nan_policy)


@pytest.mark.parametrize("name", sorted(FACTORIES))
@given(sigma=st.one_of(st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf, 1e-320, 1e300]),
                       st.floats()),
       x0=st.lists(st.floats(), min_size=0, max_size=4),
       pop=st.one_of(st.none(), st.integers(-3, 3)))
def test_bad_arguments_are_refused_in_one_line(name, sigma, x0, pop):
    """Construction with any x0, sigma0 and population size: a strategy
    whose first ask() is finite, or a one-line ValueError."""
    x = np.array(x0, dtype=np.float64)
    try:
        es = FACTORIES[name](x, sigma, pop, 0, None, "error")
    except DOCUMENTED as e:
        one_line(e)
        return
    assert x.size >= 1 and np.all(np.isfinite(x)), "a non-finite or empty x0 was accepted"
    assert math.isfinite(sigma) and sigma > 0, f"sigma0 = {sigma!r} was accepted"
    if not es.stop():
        try:
            X = es.ask()
        except RuntimeError as e:  # x0 + sigma0 z overflows: raised by name
            one_line(e)
            assert sigma > 1e290 and "choose a smaller sigma0" in str(e), e
            return
        assert np.all(np.isfinite(X)), "the first ask() is not finite"


@pytest.mark.parametrize("name", sorted(FACTORIES))
@given(n=st.integers(1, 5), value=st.sampled_from([math.inf, -math.inf, 1e308, -1e308, 0.0]),
       generations=st.integers(1, 15))
def test_constant_and_extreme_values_keep_the_state_finite(name, n, value, generations):
    """Every member told the same (possibly infinite) value, generation after
    generation: ties everywhere. The run either goes on with a finite state
    or stops; it never asks non-finite solutions."""
    try:
        es = FACTORIES[name](np.zeros(n), 1.0, None, 1, None, "error")
    except DOCUMENTED as e:  # pragma: no cover - the defaults are valid
        raise AssertionError(e)
    for _ in range(generations):
        if es.stop():
            break
        X = es.ask()
        try:
            es.tell(X, [value] * len(X))
        except ValueError as e:
            one_line(e)
            assert math.isinf(value), f"a finite value {value} was refused: {e}"
            return
        check_state(es, n)


# ---- NSGA-II: rows of objectives ---------------------------------------------------------

@given(data=st.data(), n=st.integers(1, 5), m=st.integers(2, 3), pop=st.integers(2, 24),
       seed=st.integers(0, 2 ** 32), nan_policy=st.sampled_from(["error", "worst"]))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_nsga2_ask_tell_never_leaves_a_broken_state(data, n, m, pop, seed, nan_policy):
    lo = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n), label="lower"))
    width = np.array(data.draw(st.lists(st.floats(1e-6, 100), min_size=n, max_size=n), label="width"))
    try:
        es = evokit.NSGA2(bounds=(lo, lo + width), population_size=pop, seed=seed, num_objectives=m,
                          nan_policy=nan_policy)
    except DOCUMENTED as e:
        one_line(e)
        return
    for _ in range(data.draw(st.integers(1, 5), label="generations")):
        X = np.array(es.ask())
        assert X.shape[1] == n and np.all(np.isfinite(X))
        assert np.all(X >= lo) and np.all(X <= lo + width), "ask() left the bounds"
        F = np.array(data.draw(st.lists(st.lists(values_st, min_size=m, max_size=m),
                                        min_size=len(X), max_size=len(X)), label="F"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                es.tell(X, F)
            except DOCUMENTED as e:
                one_line(e)  # infinities (NSGA2 needs finite values) or NaN with 'error'
                assert not np.all(np.isfinite(F)), f"finite objective values were refused: {e}"
                return
        r = es.result
        assert r.evaluations >= len(X)


# ---- the cases the properties above found, pinned -----------------------------------------

def test_ars_step_is_the_same_for_rewards_beyond_2_to_the_512():
    """ARS's step is invariant to scaling the rewards: f-values near the
    largest double (whose spread would overflow sigma_R to inf and the step
    to NaN) give the step of the same values scaled down by 2^-1000, and
    f-values beyond float32's range (ARS computes in float32, as training
    does) are scaled by a power of two, not refused."""
    huge = np.array([0.0, 0.0, 0.0, 1e308, 0.0, -3e307, 2.0, 0.0])
    means = []
    for v in (huge, np.ldexp(huge, -1000)):
        es = evokit.ARS(np.zeros(3), 1.0, seed=1, population_size=8)
        X = es.ask()
        es.tell(X, v)
        means.append(es.mean)
    assert np.all(np.isfinite(means[0]))
    np.testing.assert_array_equal(means[0], means[1])


@pytest.mark.parametrize("cls", [evokit.LMMAES, evokit.SNES, evokit.GA, evokit.OpenES])
def test_tolfun_of_values_near_the_largest_double_does_not_overflow(cls):
    """f-values 1e308 and -1e308: their range is inf, not an overflow
    warning from stop() (pytest turns warnings into errors), and not tolfun."""
    es = cls(np.zeros(1), 1.0, population_size=2)
    X = es.ask()
    es.tell(X, [1e308, -1e308])
    assert "tolfun" not in es.stop()
    assert es.result.fbest == -1e308


def test_openes_ranks_f_values_beyond_float32():
    """OpenES computes in float32: finite f-values beyond 3.4e38 are scaled by
    a power of two (ranks and z-scores unchanged), not turned into -inf
    rewards; with fitness_shaping='raw' they are refused by name."""
    v = np.array([0.0, 0.0, 0.0, 1e308])
    for shaping in ("centered_rank", "z_score"):
        centres = []
        for values in (v, np.ldexp(v, -900)):
            es = evokit.OpenES(np.zeros(2), 0.5, population_size=4, fitness_shaping=shaping, seed=3)
            X = es.ask()
            es.tell(X, values)
            centres.append(es.result.xfavorite)
        np.testing.assert_array_equal(centres[0], centres[1])
        assert np.all(np.isfinite(centres[0]))
    es = evokit.OpenES(np.zeros(2), 0.5, population_size=4, fitness_shaping="raw")
    X = es.ask()
    with pytest.raises(ValueError, match=r"f-values of solutions \[3\] exceed float32's range \(3.4e38\)"):
        es.tell(X, v)


@pytest.mark.parametrize("cls", [evokit.GA, evokit.OpenES, evokit.ARS])
def test_float32_strategies_refuse_x0_and_sigma_beyond_float32(cls):
    """GA, OpenES and ARS keep their solutions in float32: an x0 or sigma beyond
    its range (which would be an inf centre) is refused by name."""
    with pytest.raises(ValueError, match=r"x0\[1\] = 3.5e\+38 exceeds float32's range \(3.4e38\), in which "
                                         + cls.__name__):
        cls(np.array([0.0, 3.5e38]), 1.0, population_size=4)
    with pytest.raises(ValueError, match=r"sigma = 1e\+39 exceeds float32's range"):
        cls(np.zeros(2), 1e39, population_size=4)


def test_nsga2_reference_point_and_hypervolume_of_values_near_the_largest_double():
    """For objectives spanning -1e308..1e308 (where worst + a tenth of the
    range overflows) the default reference point is finite and at least the
    worst, the hypervolume is inf without a warning, and the crowding
    distances are numbers."""
    es = evokit.NSGA2(bounds=(np.zeros(2), np.ones(2)), population_size=4, seed=0)
    X = es.ask()
    es.tell(X, [[0.0, 1e308], [1e308, -1e308], [-1e308, 0.0], [5.0, 5.0]])
    ref = es.result.reference_point
    assert np.all(np.isfinite(ref)) and np.all(ref >= [1e308, 1e308])
    assert es.result.hypervolume == math.inf
    from evokit.blackbox.pareto import crowding_distances, nondominated_ranks

    F = np.array([[-1e308, 1e308], [0.0, 0.0], [1e308, -1e308], [1.0, -1.0]])
    d = crowding_distances(F, nondominated_ranks(F))
    assert not np.any(np.isnan(d))


def test_cma_repaired_solution_on_the_mean_keeps_the_covariance_finite():
    """A told (repaired) solution equal to the mean has a step of norm 0,
    whose active (negative) weight w n / ||C^-1/2 y||^2 would be -inf: it
    adds nothing, and the covariance stays finite."""
    es = evokit.CMAES(np.zeros(4), 11.0, population_size=2, seed=0)
    for _ in range(8):
        X = np.array(es.ask())
        es.tell(np.clip(X, -1, 1), [1.0, 2.0])  # from the 2nd generation on the mean sits on a corner
        assert np.isfinite(es.sigma) and np.all(np.isfinite(es.result.stds))


@pytest.mark.parametrize("cls", [evokit.SNES, evokit.XNES, evokit.CRFMNES, evokit.LMMAES, evokit.MAES, evokit.CEM,
                                 evokit.CMAES, evokit.SepCMAES])
def test_a_first_generation_that_overflows_names_sigma0(cls):
    """sigma0 = 1.7e308 samples inf: ask() raises, naming sigma0 (no update
    has happened), and never hands inf to the objective."""
    es = cls(np.zeros(2), 1.7e308, population_size=8, seed=0)
    what = r"mean \+ sigma y overflows \(sigma = 1.7e\+308\)" if "CMA" in cls.__name__ else \
        r"x0 \+ sigma0 z overflows before any update"
    with pytest.raises(RuntimeError, match=r"generation 0's member \d+ has coordinate \d+ = -?inf: " + what
                                           + r"; choose a smaller sigma0"):
        es.ask()
