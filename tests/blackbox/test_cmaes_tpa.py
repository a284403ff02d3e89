"""CMA-ES's two-point step-size adaptation (TPA; Hansen 2008,
arXiv:0805.0231, in pycma's form): the mirrored pair and the sigma update
against the NumPy reference, the 'auto' rule (pycma's: TPA from n = 300),
where the pair sits among injected rows, state and pickling, and what TPA is
for: fewer evaluations than CSA on the sphere at large n."""

import pickle

import cma_reference
import numpy as np
import pytest
from cma_problems import sphere

import evokit
from evokit import _core


@pytest.mark.parametrize("cls, separable", [(_core.CMAES, False), (_core.SepCMAES, True)])
@pytest.mark.parametrize("n, lam", [(6, None), (9, 14), (130, None)])  # 130: packed products
def test_pair_and_generation_match_the_reference(cls, separable, n, lam):
    seed = 11
    rng = np.random.default_rng(n)
    es = cls(np.zeros(n), 1.0, population_size=lam, seed=seed, step_size_adaptation="tpa")
    assert es.step_size_adaptation == "tpa"
    s = cma_reference.random_state(n, rng, separable)
    s["tpa_s"], s["mean_shift"] = -0.15, rng.normal(size=n)
    es.set_state(**s)
    x = es.ask()
    lam = len(x)
    assert es.tpa_row == 0
    z_key = _core.fill_gaussian(seed, int(es.keys[0]), 0, n).astype(np.float64)
    plus, minus = cma_reference.tpa_pair(s["mean"], s["sigma"], s["cov"], s["mean_shift"], z_key)
    np.testing.assert_allclose(x[0], plus, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x[1], minus, rtol=0, atol=1e-12)
    # The other rows are the keys' samples, as with CSA.
    for k in range(2, lam):
        np.testing.assert_array_equal(x[k], es.regenerate(int(es.keys[k])))

    params = cma_reference.default_params(n, lam, separable)
    assert es.params["tpa_damp"] == pytest.approx(cma_reference.tpa_damp(n, lam), rel=1e-15)
    for values in (rng.normal(size=lam), np.r_[0.0, 1.0, rng.uniform(2, 3, lam - 2)]):
        e2 = cls(np.zeros(n), 1.0, population_size=lam, seed=seed, step_size_adaptation="tpa")
        e2.set_state(**s)
        e2.ask()
        want = cma_reference.generation(s["mean"], s["sigma"], s["cov"], s["p_sigma"], s["p_c"],
                                        s["generation"], x, values, params, separable, tpa=(s["tpa_s"], 0))
        e2.tell(values)
        got = e2.get_state()
        cma_reference.assert_state_matches(got, want)
        assert got["tpa_s"] == pytest.approx(want["tpa_s"], rel=1e-14)
        np.testing.assert_allclose(got["mean_shift"], want["mean_shift"], rtol=0, atol=1e-14)
    # The second values put the member along the shift first and its mirror
    # second: z = 1/(lambda - 1), s grows and so does sigma.
    assert got["tpa_s"] > s["tpa_s"]


def test_auto_is_pycmas_rule_and_the_names_are_checked():
    assert evokit.SepCMAES(np.zeros(299), 1.0).core.step_size_adaptation == "csa"
    assert evokit.SepCMAES(np.zeros(300), 1.0).core.step_size_adaptation == "tpa"
    assert evokit.CMAES(np.zeros(300), 1.0).core.step_size_adaptation == "tpa"
    assert evokit.SepCMAES(np.zeros(1000), 1.0, step_size_adaptation="csa").core.step_size_adaptation == "csa"
    assert evokit.CMAES(np.zeros(3), 1.0, step_size_adaptation="tpa").core.step_size_adaptation == "tpa"
    with pytest.raises(ValueError, match="unknown step_size_adaptation 'msr', expected one of 'auto', 'csa', 'tpa'"):
        evokit.CMAES(np.zeros(3), 1.0, step_size_adaptation="msr")


def test_first_generation_has_no_pair_and_keeps_sigma():
    es = _core.CMAES(np.ones(5), 0.7, seed=2, step_size_adaptation="tpa")
    x = es.ask()
    assert es.tpa_row == es.population_size
    np.testing.assert_array_equal(x[0], es.regenerate(int(es.keys[0])))
    es.tell(sphere(x))
    state = es.get_state()
    assert state["sigma"] == 0.7 and state["tpa_s"] == 0.0
    np.testing.assert_allclose(state["mean_shift"], state["mean"] - 1.0, rtol=0, atol=1e-15)
    x = es.ask()
    assert es.tpa_row == 0
    np.testing.assert_allclose(x[0] - state["mean"], -(x[1] - state["mean"]), rtol=0, atol=1e-14)


def test_the_pair_follows_the_injected_rows_and_needs_two_free_rows():
    n = 4
    es = evokit.CMAES(np.ones(n), 0.5, seed=3, population_size=6, step_size_adaptation="tpa")
    x = es.ask()
    es.tell(x, sphere(x))
    mean = es.core.get_state()["mean"]
    es.inject(np.zeros((1, n)))
    x = es.ask()
    assert es.core.num_injected == 1 and es.core.tpa_row == 1
    np.testing.assert_allclose(x[1] - mean, mean - x[2], rtol=0, atol=1e-14)
    es.tell(x, sphere(x))
    es.inject(np.zeros((5, n)))  # one row left: no pair, sigma stays
    sigma = es.sigma
    x = es.ask()
    assert es.core.num_injected == 5 and es.core.tpa_row == 6
    es.tell(x, sphere(x))
    assert es.sigma == sigma


def test_tell_keys_refuses_tpa():
    es = _core.SepCMAES(np.zeros(4), 1.0, step_size_adaptation="tpa")
    keys = np.array([es.sample_key(k) for k in range(es.population_size)])
    with pytest.raises(RuntimeError, match="tell_keys\\(\\) needs step-size adaptation CSA"):
        es.tell_keys(keys, np.arange(es.population_size, dtype=float))


def test_state_and_pickle_carry_the_pair():
    a = evokit.SepCMAES(np.ones(8), 0.5, seed=9, step_size_adaptation="tpa")
    for _ in range(5):
        x = a.ask()
        a.tell(x, sphere(x))
    b = pickle.loads(pickle.dumps(a))
    c = evokit.SepCMAES(np.ones(8), 0.5, seed=9, step_size_adaptation="tpa")
    c.core.set_state(**{k: v for k, v in a.core.get_state().items()
                        if k not in ("eigenvalues", "eigenvectors")})
    want = a.ask()
    np.testing.assert_array_equal(b.ask(), want)
    np.testing.assert_array_equal(c.ask()[:2], want[:2])
    with pytest.raises(ValueError, match="state.mean_shift must have 8 entries, got 3"):
        c.core.set_state(**dict(a.core.get_state(), mean_shift=np.ones(3)))


def test_tpa_needs_fewer_evaluations_than_csa_on_the_sphere_at_n_300():
    cls = evokit.SepCMAES
    # What pycma switches to TPA for: at n = 300 CSA's path adapts sigma over
    # about n / mueff generations. Measured: 3 seeds, TPA 19,887 against CSA
    # 29,442 (median).
    counts = {}
    for mode in ("csa", "tpa"):
        runs = []
        for seed in range(3):
            es = cls(np.ones(300), 0.5, seed=seed, step_size_adaptation=mode, ftarget=1e-8)
            res = es.optimize(sphere, vectorized=True)
            assert res.fbest <= 1e-8
            runs.append(res.evaluations)
        counts[mode] = np.median(runs)
    assert counts["tpa"] < 0.8 * counts["csa"], counts


def test_the_shift_z_is_kept_between_decompositions_and_resumes_bit_for_bit():
    # n = 200: C is decomposed every few generations (eigen_interval > 1), so
    # most tells keep the mean shift's z (c_m sigma <z>_w) for the next pair
    # instead of computing D^-1 B^T mean_shift at the next ask.
    n = 200
    a = _core.CMAES(np.ones(n), 0.5, seed=4, step_size_adaptation="tpa")
    assert a.params["eigen_interval"] > 1
    kept = decomposed = 0
    for _ in range(12):
        x = a.ask()
        a.tell(sphere(x))
        s = a.get_state()
        if s["eigen_generation"] == s["generation"]:
            decomposed += 1
            assert s["mean_shift_z"].size == 0
            continue
        kept += 1
        want = (a.eigenbasis() @ s["mean_shift"]) / np.sqrt(s["eigenvalues"])
        np.testing.assert_allclose(s["mean_shift_z"], want, rtol=0, atol=1e-10 * np.linalg.norm(want))
    assert kept >= 4 and decomposed >= 2
    # Resumed from the state (mean_shift_z included): the same bits onwards;
    # without it, the pair comes from mean_shift (the same points to 1e-12).
    while a.get_state()["mean_shift_z"].size == 0:  # resume from a state that keeps it
        x = a.ask()
        a.tell(sphere(x))
    s = a.get_state()
    b = _core.CMAES(np.ones(n), 0.5, seed=4, step_size_adaptation="tpa")
    b.set_state(**s)
    c = _core.CMAES(np.ones(n), 0.5, seed=4, step_size_adaptation="tpa")
    c.set_state(**dict(s, mean_shift_z=None))
    np.testing.assert_allclose(c.ask()[:2], a.ask()[:2], rtol=0, atol=1e-12)
    for _ in range(4):
        x = a.ask()
        np.testing.assert_array_equal(b.ask(), x)
        a.tell(sphere(x))
        b.tell(sphere(x))
    np.testing.assert_array_equal(b.get_state()["mean"], a.get_state()["mean"])


def test_the_shift_z_is_checked_and_not_kept_with_integer_variables():
    n = 200
    a = _core.CMAES(np.ones(n), 0.5, seed=4, step_size_adaptation="tpa")
    for _ in range(3):
        x = a.ask()
        a.tell(sphere(x))
    s = a.get_state()
    with pytest.raises(ValueError, match="state.mean_shift_z must have 200 entries, got 3"):
        a.set_state(**dict(s, mean_shift_z=np.ones(3)))
    with pytest.raises(ValueError, match="state.mean_shift_z\\[7\\] must be finite, got nan"):
        a.set_state(**dict(s, mean_shift_z=np.where(np.arange(n) == 7, np.nan, 1.0)))
    with pytest.raises(ValueError, match="state.mean_shift_z needs state.mean_shift"):
        a.set_state(**dict(s, mean_shift=None, mean_shift_z=np.ones(n)))
    m = _core.CMAES(np.ones(n), 0.5, seed=4, step_size_adaptation="tpa", integer_variables=[0, 5])
    for _ in range(6):
        x = m.ask()
        m.tell(sphere(x))
        assert m.get_state()["mean_shift_z"].size == 0
    with pytest.raises(ValueError, match="state.mean_shift_z must be empty with integer variables"):
        m.set_state(**dict(m.get_state(), mean_shift_z=np.ones(n)))
