"""ARS as an ask/tell strategy (Mania, Guy, Recht 2018, Algorithm 2, V1 /
V1-t) against a NumPy reference of Algorithm 2; its registry entry is
ask/tell only (the policy family is ARS_SAMPLING)."""

import numpy as np
import pytest

import distribution_reference as ref
from helpers import assert_same_run_for_threads_and_pickling
import evokit
from evokit import _core


def test_ars_is_an_ask_tell_only_family():
    assert ("ARS", None, None) in _core.distribution_families()
    assert "ARS" not in _core.solver_families() and "ARS_SAMPLING" in _core.solver_families()
    es = evokit.ARS(np.zeros(10), 0.05)
    assert es.core.mirrored and es.population_size == 10
    assert es.parameters == {"population_size": 10.0, "step_size": 0.02, "top_directions": 5.0,
                             "sigma": 0.05}
    assert evokit.ARS(np.zeros(10), 0.05, top_directions=99).parameters["top_directions"] == 5.0


@pytest.mark.parametrize("n,lam,b", [(6, None, None), (15, 16, 3), (4, 8, 1)])
def test_matches_algorithm_2(n, lam, b):
    rng = np.random.default_rng(n)
    x0 = rng.normal(size=n)
    es = evokit.ARS(x0, 0.3, population_size=lam, seed=6, step_size=0.05, top_directions=b)
    lam = es.population_size
    b = b or lam // 2
    theta = x0.copy()
    for g in range(8):
        z = ref.member_z(6, g, lam, n, mirrored=True)
        X = es.ask()
        np.testing.assert_allclose(X, theta + 0.3 * z, rtol=1e-12, atol=1e-12)
        values = np.array([float(np.sum((x - 1) ** 2) + np.sin(5 * x[0])) for x in X])
        values[3] = values[0]  # a tie between directions: the earlier pair first
        es.tell(X, values)
        theta = ref.ars_generation(theta, z, values, 0.05, b)
        np.testing.assert_allclose(es.mean, theta, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(es.stds, np.full(n, 0.3))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_converges_linearly_on_the_sphere_with_a_fixed_step(seed):
    # Near the optimum of the sphere, r+ - r- = -4 nu theta.delta shrinks
    # with theta while sigma_R stays at the spread of nu^2 ||delta||^2, so
    # the step alpha / (b sigma_R) sum (r+ - r-) delta is a fixed fraction of
    # the gradient: a fixed alpha converges linearly (no neighbourhood of
    # size alpha). Measured with alpha = nu = 0.02, 16 directions, n = 10:
    # f <= 1e-6 after 100 generations and ~1e-34 after 300 (from f = 10); the
    # test asks for 1e-20 after 300.
    es = evokit.ARS(np.ones(10), 0.02, seed=seed, population_size=32, step_size=0.02)
    for _ in range(300):
        X = es.ask()
        es.tell(X, (X * X).sum(axis=1))
    assert float(es.mean @ es.mean) <= 1e-20


def test_infinite_values_in_the_top_directions_are_refused():
    es = evokit.ARS(np.zeros(3), 0.1, population_size=4)
    X = es.ask()
    with pytest.raises(ValueError, match=r"ARS: values\[1\] is -inf; the members of the top "
                                         "directions need finite f-values"):
        es.tell(X, [0.0, -np.inf, 1.0, 1.0])
    np.testing.assert_array_equal(es.mean, np.zeros(3))


def test_a_run_is_the_same_for_any_thread_count_and_after_pickling():
    assert_same_run_for_threads_and_pickling(
        lambda t: evokit.ARS(np.ones(3000), 0.3, seed=9, num_threads=t, top_directions=3))


@pytest.mark.parametrize("kwargs,message", [
    ({"step_size": 0.0}, r"step_size must be in \(0, 1e\+12\], got 0"),
    ({"top_directions": -1}, r"top_directions must be >= 0 \(0: all\), got -1"),
    ({"population_size": 5}, r"population_size must be even \(mirrored pairs\), got 5"),
])
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evokit.ARS(np.zeros(3), 1.0, **kwargs)
