"""PGPE (Sehnke et al. 2010) with ClipUp (Toklu et al. 2020) against its
NumPy reference and the papers' claims."""

import numpy as np
import pytest

import distribution_reference as ref
from helpers import assert_same_run_for_threads_and_pickling
import evokit


def rastrigin(x):
    return float(10 * len(x) + np.sum(x * x - 10 * np.cos(2 * np.pi * x)))


def test_defaults_are_the_clipup_papers():
    es = evokit.PGPE(np.zeros(10), 1.0, center_learning_rate=0.05)
    p = es.parameters
    assert p["stdev_learning_rate"] == 0.1 and p["stdev_max_change"] == 0.2
    assert p["momentum"] == 0.9
    assert p["max_speed"] == 2 * 0.05  # ClipUp: max_speed = 2 step_size
    assert es.population_size == 4 + int(np.floor(3 * np.log(10)))  # 10: even already
    assert evokit.PGPE(np.zeros(3), 1.0).population_size == 8  # 7 rounded up to even
    assert evokit.PGPE(np.zeros(3), 1.0, max_speed=0.7).parameters["max_speed"] == 0.7
    assert es.core.mirrored


@pytest.mark.parametrize("optimizer,n,lam", [("clipup", 6, None), ("clipup", 30, 10),
                                             ("adam", 7, 12), ("sgd", 5, None)])
def test_matches_its_numpy_reference(optimizer, n, lam):
    rng = np.random.default_rng(n)
    x0 = rng.normal(size=n)
    options = {"center_learning_rate": 0.07, "stdev_learning_rate": 0.15,
               "stdev_max_change": 0.25, "momentum": 0.8}
    es = evokit.PGPE(x0, 0.6, optimizer=optimizer, population_size=lam, seed=8,
                     max_speed=0.1 if n == 30 else None, **options)
    p = dict(options, optimizer=optimizer, max_speed=es.parameters["max_speed"])
    lam = es.population_size
    state = {"mean": x0.copy(), "sigma": np.full(n, 0.6), "velocity": np.zeros(n),
             "second": np.zeros(n), "t": 0}
    for g in range(8):
        z = ref.member_z(8, g, lam, n, mirrored=True)
        X = es.ask()
        np.testing.assert_allclose(X, state["mean"] + state["sigma"] * z, rtol=1e-12, atol=1e-12)
        values = np.array([rastrigin(x) for x in X])
        values[3] = values[0]  # a tie: member order decides
        es.tell(X, values)
        state = ref.pgpe_generation(state, z, values, p)
        np.testing.assert_allclose(es.mean, state["mean"], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(es.stds, state["sigma"], rtol=1e-10)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clipup_solves_sphere_and_ellipsoid_to_a_few_max_speeds(seed):
    # ClipUp by construction (Toklu et al. 2020): the step never exceeds
    # max_speed, and with a fixed step size the centre settles within a few
    # max_speed of the optimum (measured: 1-2 max_speed after 800
    # generations from a distance of 9.5; the test allows 5). The ellipsoid
    # has condition 100.
    scales = 100 ** (np.arange(10) / 9)
    for f in (lambda X: (X * X).sum(axis=1), lambda X: (X * X) @ scales):
        es = evokit.PGPE(np.full(10, 3.0), 1.0, seed=seed, population_size=20,
                         center_learning_rate=0.02)
        max_speed = es.parameters["max_speed"]
        previous = es.mean
        for _ in range(800):
            X = es.ask()
            es.tell(X, f(X))
            assert np.linalg.norm(es.mean - previous) <= max_speed * (1 + 1e-12)
            previous = es.mean
        assert np.linalg.norm(es.mean) <= 5 * max_speed
        assert np.all(es.stds < 0.05)  # the standard deviations shrank from 1


def test_a_run_is_the_same_for_any_thread_count_and_after_pickling():
    assert_same_run_for_threads_and_pickling(
        lambda t: evokit.PGPE(np.ones(3000), 0.3, seed=9, num_threads=t, optimizer="adam"))
    assert_same_run_for_threads_and_pickling(
        lambda t: evokit.PGPE(np.ones(3000), 0.3, seed=9, num_threads=t))


def test_state_refusals():
    ref.assert_state_entry_refused(
        evokit.PGPE(np.zeros(4), 1.0, seed=3),
        ["pgpe.mean", "pgpe.second_moment", "pgpe.sigma", "pgpe.velocity"], "pgpe.velocity",
        [0.0, np.inf, 0.0, 0.0], r"state entry 'pgpe.velocity'\[1\] is inf")
    ref.assert_state_entry_refused(
        evokit.PGPE(np.zeros(4), 1.0, seed=3),
        ["pgpe.mean", "pgpe.second_moment", "pgpe.sigma", "pgpe.velocity"], "pgpe.second_moment",
        [0.0, -1.0, 0.0, 0.0], r"state entry 'pgpe.second_moment'\[1\] must be >= 0, got -1")


@pytest.mark.parametrize("kwargs,message", [
    ({"optimizer": "rmsprop"}, "optimizer must be one of 'clipup', 'adam', 'sgd', got 'rmsprop'"),
    ({"optimizer": 3}, "optimizer must be one of 'clipup', 'adam', 'sgd', got 3"),
    ({"center_learning_rate": 0.0}, r"center_learning_rate must be in \(0, 1e\+06\], got 0"),
    ({"stdev_learning_rate": -0.1}, r"stdev_learning_rate must be in \[0, 1e\+06\], got -0.1"),
    ({"stdev_max_change": 1.5}, r"stdev_max_change must be in \(0, 1\], got 1.5"),
    ({"max_speed": -1.0}, r"max_speed must be in \(0, 1e\+12\] \(or 0: the default\), got -1"),
    ({"momentum": 1.0}, r"momentum must be in \[0, 1\), got 1"),
    ({"population_size": 7}, r"population_size must be even \(mirrored pairs\), got 7"),
])
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evokit.PGPE(np.zeros(3), 1.0, **kwargs)
