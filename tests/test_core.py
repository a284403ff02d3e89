"""The compiled core through its binding: noise against the NumPy reference,
thread-count invariance, fitness shaping, optimizers, and error translation."""

import numpy as np
import pytest

import es_oracle
from evokit import _core


def test_philox_known_answer():
    # Random123 kat_vectors, philox4x32_10
    assert tuple(_core.philox4x32([0, 0, 0, 0], [0, 0])) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert tuple(_core.philox4x32([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                                 [0xA4093822, 0x299F31D0])) == \
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def test_numpy_reference_philox_matches():
    for ctr, key in [([1, 2, 3, 4], [5, 6]), ([2**32 - 1, 0, 7, 2**31], [123456789, 987654321])]:
        assert tuple(_core.philox4x32(ctr, key)) == es_oracle.philox4x32(ctr, key)


def test_ars_known_answers():
    # Random123 kat_vectors, ars4x32 with 10 rounds, through the binding and the oracle
    cases = [([0, 0, 0, 0], [0, 0, 0, 0], (0x8D73EE19, 0x506401EF, 0x13C2DBE4, 0x0CBE9C0D)),
             ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
              [0xA4093822, 0x299F31D0, 0x082EFA98, 0xEC4E6C89],
              (0xA516E7D6, 0x8357AD74, 0x5B59B3EC, 0x8763FFF3))]
    for ctr, key, want in cases:
        assert tuple(_core.ars4x32(ctr, key, rounds=10)) == want
        assert tuple(es_oracle.ars4x32([ctr], key, rounds=10)[0]) == want
    assert _core.NOISE_ARS_ROUNDS == es_oracle.NOISE_ARS_ROUNDS == 5
    for ctr, key in [([1, 2, 3, 4], [5, 6, 7, 8]), ([2**32 - 1, 0, 7, 2**31], [123456789, 0, 1, 2**32 - 1])]:
        assert tuple(_core.ars4x32(ctr, key)) == tuple(es_oracle.ars4x32([ctr], key)[0])
    with pytest.raises(ValueError, match=r"rounds must be in \[1, 10\], got 0"):
        _core.ars4x32([0, 0, 0, 0], [0, 0, 0, 0], rounds=0)


@pytest.mark.parametrize("seed, stream", [(0, 0), (1024, 5), (2**40 + 3, 2**61), (7, _core.TABLE_STREAM)])
def test_gaussian_matches_numpy_reference(seed, stream):
    # 1000 + 301 normals: a leading partial block, whole blocks through the
    # vectorised generator (several of its passes) and a trailing one.
    got = _core.fill_gaussian(seed, stream, 1001, 301)
    want = es_oracle.gaussians(seed, stream, 1001, 301)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))  # bit for bit
    assert got[5] == _core.gaussian_at(seed, stream, 1006) == es_oracle.gaussian(seed, stream, 1006)


def test_zero_radius_has_the_same_bits_as_the_oracle():
    # normals 21105006, 21105007 of (seed 3, stream 6): u = 1, r = +0 (once in 2^24 pairs)
    got = _core.fill_gaussian(3, 6, 21105006 - 64, 128)
    want = es_oracle.gaussians(3, 6, 21105006 - 64, 128)
    assert got[64] == 0 and got[65] == 0
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert (got[64:66].view(np.uint32) == [0x00000000, 0x80000000]).all()  # +0, -0


def test_float_transform_is_close_to_the_exact_box_muller():
    # every radius word k (2^24 of them), each with a random angle word
    rng = np.random.default_rng(4)
    k = np.arange(2**24, dtype=np.uint64)
    wr = (k << np.uint64(8)).astype(np.uint32) | rng.integers(0, 256, 2**24).astype(np.uint32)
    wa = rng.integers(0, 2**32, 2**24, dtype=np.uint64).astype(np.uint32)
    z0, z1 = es_oracle.box_muller_f32(wr, wa)
    e0, e1 = es_oracle.box_muller_exact(wr, wa)
    worst = max(np.abs(z0 - e0).max(), np.abs(z1 - e1).max())
    assert 0 < worst < 1e-6
    # the extremes of the 24-bit uniforms: u = 1 gives 0, u = 2^-24 the largest radius
    z0, z1 = es_oracle.box_muller_f32([0xFFFFFFFF, 0x000000FF], [0, 0])
    assert z0[0] == 0 and z1[0] == 0
    assert abs(np.hypot(z0[1], z1[1]) - np.sqrt(48 * np.log(2))) < 1e-6
    # every angle word's low 23 bits (the fraction a) at the largest radius,
    # where an error in the angle is magnified most
    wa = (np.arange(2**23, dtype=np.uint32) | rng.integers(0, 32, 2**23).astype(np.uint32) << 27)
    wr = np.full(2**23, 0x000000FF, np.uint32)
    z0, z1 = es_oracle.box_muller_f32(wr, wa)
    e0, e1 = es_oracle.box_muller_exact(wr, wa)
    assert max(np.abs(z0 - e0).max(), np.abs(z1 - e1).max()) < 1e-6  # measured: 9.4e-7


def test_the_sine_fit_of_the_angle_is_within_1e_8():
    # noise.h's minimax sin(a pi / 16) ~ a (S1 + a^2 S3) on [-1/2, 1/2]
    a = np.arange(-2**22, 2**22) / 2.0**23
    fit = a * (np.float64(es_oracle.SIN1) + a * a * np.float64(es_oracle.SIN3))
    assert np.abs(fit - np.sin(a * np.pi / 16)).max() < 1e-8


def test_sum_floats_reads_the_whole_array():
    x = np.random.default_rng(2).normal(size=200_003).astype(np.float32)
    want = x.astype(np.float64).sum()
    for threads in (1, 2, 3):
        assert abs(_core.sum_floats(x, num_threads=threads) - want) < 1e-3
    assert _core.sum_floats(x, 1) == _core.sum_floats(x, 3)  # fixed blocks: same bits
    assert _core.sum_floats(np.zeros(0, np.float32)) == 0.0
    with pytest.raises(ValueError, match=r"num_threads must be >= 1, got 0"):
        _core.sum_floats(x, num_threads=0)
    with pytest.raises(ValueError, match=r"x must be a 1-D float32 array"):
        _core.sum_floats(np.zeros((2, 2), np.float32))


def test_noise_moments():
    x = _core.fill_gaussian(3, 9, 0, 400_000).astype(np.float64)
    assert abs(x.mean()) < 0.01
    assert abs(x.var() - 1) < 0.01
    assert abs(((x - x.mean()) ** 4).mean() / x.var() ** 2 - 3) < 0.05


@pytest.mark.parametrize("cached", [True, False])
def test_thread_count_does_not_change_bits(cached):
    n = 70_001  # not a multiple of any block size
    samplers = [_core.GaussianSampler(seed=5, sigma=0.1, cached=cached, cache_size=200_000,
                                      num_params=n, num_threads=t) for t in (1, 2, 3)]
    if cached:
        for s in samplers[1:]:
            np.testing.assert_array_equal(s.table, samplers[0].table)
    theta = np.random.default_rng(0).normal(size=n).astype(np.float32)
    keys = np.array([samplers[0].draw_key(0, j, 0) for j in range(9)], dtype=np.int64)
    signs = np.array([1, -1] * 4 + [1], dtype=np.float32)
    weights = np.linspace(-0.5, 0.5, 9).astype(np.float32)
    outs = [s.descent_direction(keys, signs, weights, theta, 0.01, num_threads=t)
            for s, t in zip(samplers, (1, 2, 3))]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    perts = [s.perturb(theta, int(keys[3]), -1.0, num_threads=t) for s, t in zip(samplers, (1, 2, 3))]
    for p in perts[1:]:
        np.testing.assert_array_equal(p, perts[0])
    # and the direction matches a float64 reference built from the noise
    eps = np.stack([samplers[0].noise(int(k)) for k in keys])
    ref = es_oracle.es_direction(theta, eps, signs, weights, 0.1, 0.01)
    np.testing.assert_allclose(outs[0], ref, rtol=1e-4, atol=1e-5)


def test_cached_noise_is_a_window_of_the_table():
    s = _core.GaussianSampler(seed=1, sigma=1.0, cached=True, cache_size=1000, num_params=10)
    np.testing.assert_array_equal(s.noise(990), s.table[990:1000])
    assert s.max_key == 990
    assert not s.table.flags.writeable
    assert s.table[17] == _core.gaussian_at(1, _core.TABLE_STREAM, 17)


def test_perturb_writes_in_place():
    s = _core.GaussianSampler(seed=1, sigma=0.5, cached=False, cache_size=0, num_params=8)
    theta = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    ret = s.perturb(theta, 42, 1.0, out=out)
    assert ret is out or np.shares_memory(ret, out)
    np.testing.assert_allclose(out, theta + 0.5 * s.noise(42), atol=1e-6)
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous float32 NumPy array"):
        s.perturb(theta, 42, 1.0, out=np.zeros(8, dtype=np.float64))


def test_sampler_errors():
    with pytest.raises(ValueError, match=r"gaussian_sampling.std must be > 0"):
        _core.GaussianSampler(seed=1, sigma=-0.5, cached=False, cache_size=0, num_params=4)
    with pytest.raises(ValueError, match=r"cache_size \(10\) must be >= the number of parameters \(40\)"):
        _core.GaussianSampler(seed=1, sigma=0.5, cached=True, cache_size=10, num_params=40)
    s = _core.GaussianSampler(seed=1, sigma=0.5, cached=True, cache_size=100, num_params=40)
    with pytest.raises(IndexError, match=r"key 61 is outside the noise table"):
        s.check_key(61)
    with pytest.raises(ValueError, match=r"theta must have shape \(40,\), got \(39,\)"):
        s.perturb(np.zeros(39, np.float32), 0, 1.0)
    with pytest.raises(ValueError, match=r"sign"):
        s.descent_direction(np.array([0]), np.array([0.5], np.float32), np.array([1.0], np.float32))


def test_fitness_shaping():
    np.testing.assert_array_equal(_core.average_ranks(np.array([1, 3, 3, 2], np.float32)), [0, 2.5, 2.5, 1])
    r = np.array([5.0, 1.0, 5.0, 2.0, 9.0], np.float32)
    np.testing.assert_allclose(_core.shape_fitness(r, "centered_rank"), es_oracle.centered_ranks(r), atol=1e-7)
    np.testing.assert_allclose(_core.shape_fitness(r, "z_score"), (r - r.mean()) / r.std(), atol=1e-6)
    np.testing.assert_array_equal(_core.shape_fitness(r, "raw"), r)
    with pytest.raises(ValueError, match=r"reward of sample 2 is nan"):
        _core.shape_fitness(np.array([1, 2, np.nan], np.float32), "raw")
    with pytest.raises(ValueError, match=r"unknown fitness shaping 'rank'"):
        _core.shape_fitness(r, "rank")


@pytest.mark.parametrize("kind", ["SGD", "MOMENTUM", "ADAM"])
def test_optimizers_match_reference(kind):
    n = 5
    opt = {"SGD": lambda: _core.SGD(0.1, n), "MOMENTUM": lambda: _core.Momentum(0.1, 0.9, n),
           "ADAM": lambda: _core.Adam(0.1, 0.9, 0.999, 1e-8, n)}[kind]()
    params = np.linspace(-1, 1, n).astype(np.float32)
    ref, state = params.astype(np.float64), {}
    rng = np.random.default_rng(2)
    for _step in range(4):
        g = rng.normal(size=n).astype(np.float32)
        opt.step(params, g)
        ref, state = es_oracle.optimizer_step(ref, g.astype(np.float64), state, kind, 0.1)
        np.testing.assert_allclose(params, ref, rtol=1e-5, atol=1e-6)
    assert opt.steps == 4


def test_optimizer_state_roundtrip_and_errors():
    a = _core.Adam(0.1, 0.9, 0.999, 1e-8, 3)
    p = np.ones(3, np.float32)
    a.step(p, np.array([1, -1, 2], np.float32))
    b = _core.Adam(0.1, 0.9, 0.999, 1e-8, 3)
    for name in a.state_names:
        b.set_state(name, a.get_state(name))
    b.steps = a.steps
    q = p.copy()
    a.step(p, np.array([0.5, 0.5, 0.5], np.float32))
    b.step(q, np.array([0.5, 0.5, 0.5], np.float32))
    np.testing.assert_array_equal(p, q)
    with pytest.raises(ValueError, match=r"grad must have shape \(3,\), got \(2,\)"):
        a.step(p, np.zeros(2, np.float32))
    before = p.copy()
    with pytest.raises(ValueError, match=r"grad\[1\] is inf"):
        a.step(p, np.array([0, np.inf, 0], np.float32))
    np.testing.assert_array_equal(p, before)
    with pytest.raises(ValueError, match=r"momentum"):
        _core.Momentum(0.1, 1.5, 3)
    with pytest.raises(ValueError):
        a.get_state("velocity")


def test_stub_file_matches_the_module():
    import ast
    import os

    import evokit

    stub = os.path.join(os.path.dirname(evokit.__file__), "_core.pyi")
    with open(stub) as f:
        tree = ast.parse(f.read())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    public = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    assert declared == public
    for cls in ("GaussianSampler", "Optimizer", "Adam"):
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
        members = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"}
        members |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        assert members == {n for n in vars(getattr(_core, cls)) if not n.startswith("_")}, cls


def test_episode_seeds_are_the_cores_rule():
    """Episode seeds (evokit/episode_seeds.h, which C++ samplers call too):
    hash_draw of (seed, generation, index, tag * 1000003 + episode), 31 bits;
    pinned so that the episodes of a run never change silently."""
    from evokit.evaluation.seeds import EVAL_TAG, SAMPLE_TAG, SAMPLER_TAG, episode_seeds

    assert (SAMPLE_TAG, EVAL_TAG, SAMPLER_TAG) == (0, 1, 2)
    assert episode_seeds(0, 0, 0, 3, SAMPLER_TAG) == [499688865, 1151428569, 1311104080]
    assert episode_seeds(7, 5, 11, 2, SAMPLE_TAG) == [1755432855, 2101963019]
    assert episode_seeds(2**40 + 3, 9, 4, 1, EVAL_TAG) == [2125290669]
    for args in [(3, 1, 2, 2, 5), (2**63 + 1, 2**33, 7, 1, 0)]:
        seed, generation, index, tag, episode = args
        assert _core.episode_seed(*args) == _core.hash_draw(
            seed, generation, index, tag * 1_000_003 + episode) & 0x7FFFFFFF
