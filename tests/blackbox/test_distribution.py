"""The distribution strategies' shared base (keys, noise, ask/tell contract,
state, pickling, the policy family) and SNES against its NumPy reference and
its paper's claims."""

import os
import pickle

import numpy as np
import pytest

import distribution_reference as ref
import evokit
from evokit import _core
from evokit.solvers.options import Rule
from helpers import ROOT


def sphere(x):
    return float(np.dot(x, x))


def rosenbrock(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def test_families_are_registered_in_sampling_config_order():
    families = _core.distribution_families()
    assert families[0] == ("SNES", "SNES_SAMPLING", "snes_sampling")
    # Ask/tell-only families (no SamplingConfig type) come last.
    policy = [f for f in families if f[1] is not None]
    assert families[:len(policy)] == policy
    assert all(f[2] is None for f in families[len(policy):])
    solver_families = _core.solver_families()
    assert solver_families[4:] == [f[1] for f in policy]
    for name, sampling_type, field in policy:
        assert evokit.proto.SamplingConfig.Type.Value(sampling_type) == solver_families.index(sampling_type)
        assert field in evokit.proto.SamplingConfig.DESCRIPTOR.fields_by_name


def test_keys_and_noise_are_the_documented_functions():
    es = evokit.SNES(np.zeros(7), 0.5, seed=123, population_size=6)
    for generation in range(3):
        keys = [ref.member_key(123, generation, k) for k in range(6)]
        np.testing.assert_array_equal(es.keys, keys)
        z = ref.member_z(123, generation, 6, 7)
        X = es.ask()
        np.testing.assert_array_equal(X, es.mean + es.stds * z)
        for k in range(6):
            np.testing.assert_array_equal(es.regenerate(k), X[k])
        es.tell(X, [sphere(x) for x in X])


def test_snes_defaults_are_table_1():
    for n in (1, 2, 10, 1000):
        es = evokit.SNES(np.zeros(n), 1.0)
        want = ref.snes_defaults(n)
        assert es.population_size == want["population_size"]
        assert es.parameters["learning_rate_mean"] == 1.0
        assert es.parameters["learning_rate_sigma"] == pytest.approx(want["learning_rate_sigma"], rel=1e-15)


@pytest.mark.parametrize("n,lam,eta_sigma", [(5, None, None), (12, 9, 0.3), (3, 20, None)])
def test_snes_matches_its_numpy_reference(n, lam, eta_sigma):
    rng = np.random.default_rng(n)
    x0 = rng.normal(size=n)
    es = evokit.SNES(x0, 0.7, population_size=lam, seed=5, learning_rate_sigma=eta_sigma)
    lam = es.population_size
    eta_mu, eta_s = es.parameters["learning_rate_mean"], es.parameters["learning_rate_sigma"]
    mean, sigma = x0.copy(), np.full(n, 0.7)
    for g in range(8):
        z = ref.member_z(5, g, lam, n)
        X = es.ask()
        np.testing.assert_allclose(X, mean + sigma * z, rtol=1e-12, atol=1e-12)
        values = np.array([rosenbrock(x) for x in X])
        values[1] = values[0]  # a tie: member order decides
        es.tell(X, values)
        mean, sigma = ref.snes_generation(mean, sigma, z, values, eta_mu, eta_s)
        np.testing.assert_allclose(es.mean, mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(es.stds, sigma, rtol=1e-10)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_snes_solves_separable_problems(seed):
    # Schaul et al. 2011 (section 5) / Wierstra et al. 2014 (section 6.2):
    # SNES, separable by design, converges on separable unimodal functions
    # (sphere, ellipsoid with condition 1e6) with its default parameters,
    # in high dimension too.
    r = evokit.SNES(np.full(10, 3.0), 1.0, seed=seed, ftarget=1e-8).optimize(sphere)
    assert r.fbest <= 1e-8 and r.stop == {"ftarget": 1e-8}
    assert r.evaluations < 5000
    scales = 1e6 ** (np.arange(20) / 19)
    r = evokit.SNES(np.ones(20), 1.0, seed=seed, ftarget=1e-8, max_evaluations=100_000).optimize(
        lambda x: float(scales @ (x * x)))
    assert r.fbest <= 1e-8, r
    r = evokit.SNES(np.ones(1000), 1.0, seed=seed, ftarget=1e-8, max_evaluations=600_000).optimize(
        lambda X: (X * X).sum(axis=1), vectorized=True)
    assert r.fbest <= 1e-8, r


def test_a_run_is_the_same_for_any_thread_count_and_after_pickling():
    def run(threads, pickle_at=None):
        es = evokit.SNES(np.ones(3000), 0.3, seed=9, num_threads=threads)
        for g in range(6):
            if g == pickle_at:
                es = pickle.loads(pickle.dumps(es))
            X = es.ask()
            es.tell(X, (X ** 2).sum(axis=1))
        return es.mean, es.stds, es.result.fbest, es.result.evaluations

    base = run(1)
    for other in (run(2), run(1, pickle_at=3), run(2, pickle_at=1)):
        for a, b in zip(base, other):
            np.testing.assert_array_equal(a, b)


def test_state_round_trip_and_refusals():
    es = evokit.SNES(np.zeros(4), 1.0, seed=3)
    X = es.ask()
    es.tell(X, (X ** 2).sum(axis=1))
    state = es.state()
    assert state.family == "SNES" and sorted(state.doubles) == ["snes.mean", "snes.sigma"]
    other = evokit.SNES(np.zeros(4), 1.0, seed=3)
    other.load_state(state)
    np.testing.assert_array_equal(other.ask(), es.ask())
    doubles = state.doubles
    doubles["snes.sigma"] = np.array([1.0, -1.0, 1.0, 1.0])
    bad = _core.SolverState("SNES", doubles=doubles, ints=state.ints)
    with pytest.raises(ValueError, match=r"state entry 'snes.sigma'\[1\] must be > 0 and finite, got -1"):
        other.load_state(bad)
    np.testing.assert_array_equal(other.ask(), es.ask())  # unchanged
    doubles["snes.sigma"] = np.ones(3)
    with pytest.raises(ValueError, match="state entry 'snes.sigma' holds 3 values, expected 4"):
        other.load_state(_core.SolverState("SNES", doubles=doubles, ints=state.ints))


@pytest.mark.parametrize("kwargs,message", [
    ({"population_size": 1}, "population_size must be an integer >= 2, got 1"),
    ({"learning_rate_mean": 0.0}, r"learning_rate_mean must be in \(0, 1e\+06\], got 0"),
    ({"learning_rate_sigma": -1.0}, r"learning_rate_sigma must be in \(0, 1e\+06\] \(or 0: the default\), got -1"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"num_threads": 0}, "num_threads must be an integer >= 1, got 0"),
])
def test_bad_options_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evokit.SNES(np.zeros(3), 1.0, **kwargs)


def test_bad_sigma_and_x0_are_refused():
    with pytest.raises(ValueError, match="sigma0 must be > 0 and finite, got 0"):
        evokit.SNES(np.zeros(3), 0.0)
    with pytest.raises(ValueError, match=r"x0\[1\] is nan"):
        evokit.SNES([0.0, float("nan")], 1.0)


def test_tell_checks_like_every_strategy():
    es = evokit.SNES(np.zeros(3), 1.0)
    X = es.ask()
    with pytest.raises(ValueError, match="f-values of solutions \\[2\\] are NaN"):
        es.tell(X, [1.0, 2.0, np.nan] + [0.0] * (len(X) - 3))
    with pytest.raises(ValueError, match="differ from the ones ask\\(\\) returned"):
        es.tell(X + 1, np.zeros(len(X)))
    es.tell(X, np.arange(len(X), dtype=float))
    with pytest.raises(RuntimeError, match="tell\\(\\) was called twice"):
        es.tell(X, np.zeros(len(X)))


def test_the_policy_family_is_the_same_strategy(mlp_path):
    """SNES_SAMPLING: a member's SamplingInfo key is (member key, index), its
    parameters the ask/tell strategy's row (as float32), and an update is the
    strategy's tell on the negated mean rewards."""
    cfg = evokit.load_config(os.path.join(ROOT, "configs", "cartpole_cma.prototxt"))
    cfg.solver.sampling.type = evokit.proto.SamplingConfig.SNES_SAMPLING
    cfg.solver.sampling.snes_sampling.sigma0 = 0.2
    cfg.solver.sampling.snes_sampling.seed = 77
    cfg.solver.population_size = 8
    agent = evokit.ESAgent(cfg, mlp_path)
    x0 = agent.center.astype(np.float64)
    es = evokit.SNES(x0, 0.2, population_size=8, seed=77)
    clones = [agent.clone() for _ in range(3)]
    for generation in range(3):
        infos = [clones[k % 3].add_noise() for k in range(8)]
        assert [list(i.key) for i in infos] == [[int(k), m] for m, k in enumerate(es.keys)]
        assert {i.model_iter_id for i in infos} == {generation}
        X = es.ask()
        np.testing.assert_array_equal(np.stack([agent.solver.rebuild(_core.SamplingInfo(
            key=list(i.key), model_iter_id=i.model_iter_id)) for i in infos]), X.astype(np.float32))
        rewards = -np.array([sphere(x) for x in X])
        agent.update(infos, rewards)
        es.tell(X, -rewards)
        np.testing.assert_array_equal(agent.center, es.mean.astype(np.float32))


def test_a_non_finite_distribution_is_refused_by_name():
    """An update that overflows (here SNES's step sizes, grown by ranking the
    farthest samples best from sigma0 = 1e300) makes ask() raise, naming the
    family, the generation, the member and the coordinate, instead of handing
    inf or NaN solutions to the objective."""
    es = evokit.SNES(np.zeros(3), 1e300, seed=1)
    with pytest.raises(RuntimeError, match=r"^SNES: generation (\d+)'s member \d+ has coordinate \d+ = "
                                           r"-?(inf|nan): an update left the distribution non-finite"):
        for _ in range(500):
            X = es.ask()
            Z = (X - es.mean) / 1e300
            es.tell(X, -np.sum(Z * Z, axis=1))
    assert es.iterations > 10  # it was the update, not the start


def test_every_familys_options_and_defaults_are_its_messages():
    # Each class's own options are its message's fields (proto/evokit.proto)
    # with the defaults written there, shown by its signature and its help()
    # with the message's comments; the stop thresholds are the core's.
    import inspect

    from google.protobuf.descriptor import FieldDescriptor

    from evokit import evokit_pb2 as pb

    classes = {cls._family: cls for cls in (evokit.SNES, evokit.XNES, evokit.CRFMNES, evokit.LMMAES,
                                            evokit.MAES, evokit.PGPE, evokit.CEM)}
    assert sorted(classes) == sorted(name for name, _, _ in _core.distribution_families())
    for name, sampling_type, field in _core.distribution_families():
        cls = classes[name]
        message = pb.SamplingConfig.DESCRIPTOR.fields_by_name[field].message_type
        params = inspect.signature(cls).parameters
        for f in message.fields:
            if f.name in ("sigma0", "seed"):
                continue
            default = (f.enum_type.values_by_number[f.default_value].name.lower()
                       if f.type == FieldDescriptor.TYPE_ENUM else f.default_value)
            shown = params[f.name].default
            if isinstance(shown, Rule):  # a 0 that selects the formula its comment names
                assert default == 0 and f"0: {shown.formula})" in cls.__doc__, (name, f.name)
                default = shown
            assert shown == default, (name, f.name)
            assert params[f.name].kind == inspect.Parameter.KEYWORD_ONLY
            assert f"    {f.name} = {default!r}" in cls.__doc__, (name, f.name)
        for threshold in ("tolfun", "tolfunhist", "conditioncov"):
            assert params[threshold].default == _core.STOP_DEFAULTS[threshold]
    # A comment of the proto reaches help(); a default the core computes shows its formula.
    assert "eta_sigma (> 0; 0: (3 + ln d) / (5 sqrt(d)))." in evokit.SNES.__doc__
    shown = {(cls.__name__, name): repr(p.default) for cls in classes.values()
             for name, p in inspect.signature(cls).parameters.items() if isinstance(p.default, Rule)}
    assert shown[("SNES", "learning_rate_sigma")] == "(3 + ln d) / (5 sqrt(d))"
    assert shown[("PGPE", "max_speed")] == "2 center_learning_rate"
    assert shown[("LMMAES", "memory")] == shown[("SNES", "population_size")] == "4 + floor(3 ln n)"
    assert shown[("PGPE", "population_size")] == "4 + floor(3 ln n), rounded up to even"
    assert inspect.signature(evokit.CEM).parameters["population_size"].default == 100
    assert inspect.signature(evokit.CMAES).parameters["tolx"].default == _core.STOP_DEFAULTS["tolx"]
