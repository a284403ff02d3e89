"""ARS as an ask/tell strategy (Mania, Guy, Recht 2018, Algorithm 2, V1 /
V1-t): the training family ARS_SAMPLING itself, checked against a NumPy
reference of Algorithm 2 and against ESAgent's training path, bit for bit."""

import numpy as np
import pytest

import distribution_reference as ref
from helpers import assert_same_run_for_threads_and_pickling
import evokit
from evokit import _core


def test_ars_is_the_training_family():
    es = evokit.ARS(np.zeros(10), 0.05)
    assert es.solver.family == "ARS_SAMPLING"
    assert "ARS" not in [name for name, _, _ in _core.distribution_families()]
    assert es.population_size == 10
    assert es.parameters == {"population_size": 10.0, "step_size": float(np.float32(0.02)),
                             "top_directions": 5.0, "sigma": float(np.float32(0.05))}
    assert evokit.ARS(np.zeros(10), 0.05, top_directions=99).parameters["top_directions"] == 5.0


def _cube(X):
    return np.array([float(np.sum((x - 1) ** 2) + np.sin(5 * x[0])) for x in X])


@pytest.mark.parametrize("top", [0, 3])
def test_the_same_bits_as_training_through_esagent(top, mlp_path):
    cfg = evokit.parse_config(
        "solver { sampling { type: ARS_SAMPLING ars_sampling { step_size: 0.05 std: 0.03 "
        f"top_directions: {top} seed: 11 }} }} population_size: 12 antithetic: true }}")
    agent = evokit.ESAgent(cfg, mlp_path)
    es = evokit.ARS(agent.params.astype(np.float64), 0.03, step_size=0.05, top_directions=top,
                    population_size=12, seed=11)
    for g in range(5):
        X = es.ask()
        infos = agent.draw_members(12)
        population = agent.population(infos)
        np.testing.assert_array_equal(X, np.array([population.params(i) for i in range(12)]))
        values = _cube(X)
        es.tell(X, values)
        agent.update(infos, (-values).tolist())
        assert es.mean.astype(np.float32).tobytes() == agent.params.tobytes(), g


@pytest.mark.parametrize("n,lam,b", [(6, None, None), (15, 16, 3), (4, 8, 1)])
def test_matches_algorithm_2(n, lam, b):
    rng = np.random.default_rng(n)
    x0 = rng.normal(size=n).astype(np.float32).astype(np.float64)
    es = evokit.ARS(x0, 0.3, population_size=lam, seed=6, step_size=0.05, top_directions=b or 0)
    lam = es.population_size
    b = b or lam // 2
    unit = _core.GaussianSampler(seed=6, sigma=1.0, cached=False, cache_size=0, num_params=n)
    theta = x0.copy()
    for g in range(8):
        X = es.ask()
        keys = es.keys
        assert np.all(keys[0::2] == keys[1::2])  # mirrored pairs share a key
        z = np.array([(1.0 if k % 2 == 0 else -1.0) * unit.noise(int(key)) for k, key in enumerate(keys)])
        np.testing.assert_allclose(X, theta + 0.3 * z, rtol=1e-6, atol=1e-6)
        values = _cube(X)
        values[3] = values[0]  # a tie between directions: the earlier pair first
        es.tell(X, values)
        theta = ref.ars_generation(theta, z, values, 0.05, b)
        np.testing.assert_allclose(es.mean, theta, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(es.stds, np.full(n, np.float32(0.3)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_converges_on_the_sphere_with_a_fixed_step(seed):
    # Near the optimum of the sphere, r+ - r- = -4 nu theta.delta shrinks
    # with theta while sigma_R stays at the spread of nu^2 ||delta||^2, so
    # the step is a fixed fraction of the gradient: a fixed alpha converges
    # linearly until the float32 rewards no longer resolve r+ - r-.
    # Measured with alpha = nu = 0.02, 16 directions, n = 10: f <= 1e-6
    # after 100 generations and about 1e-13 after 300 (from f = 10).
    es = evokit.ARS(np.ones(10), 0.02, seed=seed, population_size=32, step_size=0.02)
    for _ in range(300):
        X = es.ask()
        es.tell(X, (X * X).sum(axis=1))
    assert float(es.mean @ es.mean) <= 1e-10


def test_infinite_values_are_refused():
    es = evokit.ARS(np.zeros(3), 0.1, population_size=4)
    X = es.ask()
    with pytest.raises(ValueError, match=r"f-values of solutions \[1\] are infinite; ARS needs finite f-values"):
        es.tell(X, [0.0, -np.inf, 1.0, 1.0])
    np.testing.assert_array_equal(es.mean, np.zeros(3))


def test_a_run_is_the_same_for_any_thread_count_and_after_pickling():
    assert_same_run_for_threads_and_pickling(
        lambda t: evokit.ARS(np.ones(3000), 0.3, seed=9, num_threads=t, top_directions=3))


@pytest.mark.parametrize("kwargs,message", [
    ({"step_size": 0.0}, r"step_size must be > 0 and finite, got 0.0"),
    ({"top_directions": -1}, r"top_directions must be an integer >= 0, got -1"),
    ({"population_size": 5}, r"population_size must be even \(mirrored pairs\), got 5"),
])
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evokit.ARS(np.zeros(3), 1.0, **kwargs)


def test_an_ars_pickled_as_a_distribution_family_is_refused_saying_what_to_do():
    # data/ars_distribution_family.pkl: evokit.ARS(np.ones(3), 0.1, seed=2,
    # population_size=4) after one tell, pickled while the ask/tell ARS was
    # a float64 distribution family of its own.
    import os
    import pickle

    path = os.path.join(os.path.dirname(__file__), "data", "ars_distribution_family.pkl")
    with open(path, "rb") as f, pytest.raises(ValueError) as err:
        pickle.load(f)
    assert str(err.value) == (
        "this ARS was pickled by an EvoKit whose ask/tell ARS was a float64 distribution family; evokit.ARS is "
        "now the training family ARS_SAMPLING (other noise keys, float32), which cannot continue that run: start "
        "a new evokit.ARS(x0, sigma0, ...) from its mean [0.9611794155843465, 0.9720543276105282, "
        "1.0061680097910892]")
