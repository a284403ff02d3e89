"""_core.ESAgent through its binding: updates against the NumPy oracle (with
the correction for samples from older iterations written out here), clones
and keys, zero-copy parameter views, and errors with their messages."""

import gc

import numpy as np
import pytest

import es_oracle
from evokit import _core

SEED, SIGMA, CACHE, LR, WD = 11, 0.1, 3000, 0.05, 0.02
P = 12


def make_agent(kind="SGD", cached=True, params=None, **kw):
    if params is None:
        params = np.random.default_rng(0).normal(size=P).astype(np.float32)
    opts = {"seed": SEED, "sigma": SIGMA, "cached": cached, "cache_size": CACHE, "optimizer": kind,
            "learning_rate": LR, "weight_decay": WD}
    opts.update(kw)
    return _core.ESAgent(params, **opts)


def oracle_eps(info, cached):
    """eps(key) from the NumPy ARS/Box-Muller reference, not from _core."""
    (key,) = info.key
    if cached:
        return es_oracle.gaussians(SEED, _core.TABLE_STREAM, key, P).astype(np.float64)
    return es_oracle.gaussians(SEED, key, 0, P).astype(np.float64)


def oracle_direction(infos, rewards, centres, t, cached):
    """-g + WD * theta_t with g = 1/(N sigma) sum_i w_i eps'_i and
    eps'_i = s_i eps_i + (theta_{t_i} - theta_t) / sigma."""
    theta = centres[t]
    eps = np.stack([oracle_eps(i, cached) for i in infos])
    signs = np.array([-1.0 if i.mirrored else 1.0 for i in infos])
    w = es_oracle.centered_ranks(rewards)
    d = es_oracle.es_direction(theta, eps, signs, w, SIGMA, WD)
    n = len(infos)
    for wi, info in zip(w, infos):  # the correction, sample by sample
        d -= wi / (n * SIGMA ** 2) * (centres[info.model_iter_id] - theta)
    return d


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("kind", ["SGD", "MOMENTUM", "ADAM"])
def test_update_matches_the_oracle(kind, cached):
    agent = make_agent(kind, cached)
    clones = [agent.clone() for _ in range(6)]
    rng = np.random.default_rng(1)
    centres = {0: agent.center.astype(np.float64)}
    history = {0: agent.center.copy()}
    state, drawn = {}, {}
    for t in range(4):
        infos = [c.add_noise() for c in clones]
        drawn[t] = infos
        if t >= 2:  # late samples from older iterations, corrected with their centres
            infos = infos + [drawn[0][1], drawn[t - 1][4], drawn[0][5]]
        rewards = rng.normal(size=len(infos))
        d = oracle_direction(infos, rewards, centres, t, cached)
        previous_state = state
        want, state = es_oracle.optimizer_step(centres[t], d, state, kind, LR)
        stats = agent.update(infos, rewards, history if t >= 2 else None)
        assert stats == {"num_samples": len(infos), "num_corrected": 3 if t >= 2 else 0,
                         "model_iter_id": t + 1}
        np.testing.assert_allclose(agent.center, want, rtol=1e-5, atol=1e-6)
        if t >= 2:  # the correction changes the step measurably
            plain = oracle_direction(infos, rewards, {**centres, 0: centres[t], t - 1: centres[t]},
                                     t, cached)
            unwanted, _ = es_oracle.optimizer_step(centres[t], plain, previous_state, kind, LR)
            assert np.abs(unwanted - want).max() > 1e-4
        centres[t + 1] = agent.center.astype(np.float64)
        history[t + 1] = agent.center.copy()
    assert agent.model_iter_id == 4
    assert agent.solver.optimizer.steps == 4
    assert agent.solver.optimizer.name == kind


def test_clone_params_are_the_centre_plus_the_signed_noise():
    agent = make_agent()
    a, b, c = agent.clone(), agent.clone(), agent.clone()
    assert (agent.is_clone, agent.clone_id) == (False, -1)
    assert [(x.is_clone, x.clone_id) for x in (a, b, c)] == [(True, 0), (True, 1), (True, 2)]
    ia, ib, ic = a.add_noise(), b.add_noise(), c.add_noise()
    assert ia.key == ib.key and ia.key != ic.key
    assert (ia.mirrored, ib.mirrored, ic.mirrored) == (False, True, False)
    assert ia.model_iter_id == 0 and a.has_noise and not agent.has_noise
    eps = oracle_eps(ia, True)
    np.testing.assert_allclose(a.params, agent.center + SIGMA * eps, atol=1e-6)
    np.testing.assert_allclose(b.params, agent.center - SIGMA * eps, atol=1e-6)
    np.testing.assert_array_equal(agent.params, agent.center)
    # set_noise rebuilds the same perturbation
    c.set_noise(ib)
    np.testing.assert_array_equal(c.params, b.params)


def test_keys_are_reproducible_and_salted_by_the_stream():
    def keys(agent):
        clones = [agent.clone() for _ in range(4)]
        return [c.add_noise().key[0] for c in clones]

    first = keys(make_agent())
    assert keys(make_agent(params=np.ones(P, np.float32))) == first
    salted = make_agent()
    assert salted.sampling_stream == 0
    salted.sampling_stream = 5
    assert salted.sampling_stream == 5
    other = keys(salted)
    assert other != first
    assert other[0] == salted.solver.sampler.draw_key(0, 0, 0, 5)


def test_clones_materialise_their_parameters_in_a_bounded_shared_pool():
    agent = make_agent(params_pool_bytes=3 * 4 * P)  # room for 3 clones' parameters
    assert agent.param_buffer_capacity == 3
    clones = [agent.clone() for _ in range(8)]
    infos = [c.add_noise() for c in clones]
    assert agent.num_param_buffers == 0  # add_noise only draws the key
    sampler = agent.solver.sampler

    def expected(info, center):
        return sampler.perturb(center, info.key[0], -1.0 if info.mirrored else 1.0)

    for _ in range(2):  # the second round finds every buffer taken by others
        for c, info in zip(clones, infos):
            np.testing.assert_array_equal(c.params, expected(info, agent.center))
            assert agent.num_param_buffers <= 3
    assert agent.num_param_buffers == 3
    # noise from the oracle, not from _core: the pool serves the right clone
    eps = oracle_eps(infos[5], cached=True)
    sign = -1.0 if infos[5].mirrored else 1.0
    np.testing.assert_allclose(clones[5].params, agent.center + sign * SIGMA * eps, atol=1e-6)
    # a clone asked twice in a row keeps its buffer (no copy, no refill)
    first = clones[7].params
    assert clones[7].params.__array_interface__["data"][0] == first.__array_interface__["data"][0]
    # parameters follow the centre: set_center makes every clone's buffer stale
    agent.solver.set_center(np.full(P, 0.25, np.float32))
    for c, info in zip(clones, infos):
        np.testing.assert_array_equal(c.params, expected(info, np.full(P, 0.25, np.float32)))
    # set_noise, too, is materialised lazily and correctly
    clones[0].set_noise(infos[3])
    np.testing.assert_array_equal(clones[0].params, expected(infos[3], agent.center))
    # after an update no clone holds current noise: they predict with the centre
    agent.update(infos[:4], [1.0, 0.5, -0.5, 2.0])
    for c in clones:
        np.testing.assert_array_equal(c.params, agent.center)
    # a pool smaller than one buffer still holds one
    assert make_agent(params_pool_bytes=0).param_buffer_capacity == 1
    assert make_agent().param_buffer_capacity == (256 << 20) // (4 * P)
    with pytest.raises(ValueError, match=r"params_pool_bytes must be >= 0, got -1"):
        make_agent(params_pool_bytes=-1)


def test_params_are_zero_copy_views_that_follow_updates():
    source = np.linspace(-1, 1, P).astype(np.float32)
    agent = make_agent(params=source)
    source[:] = 7  # the agent copied its parameters in
    center = agent.center
    assert not center.flags.writeable
    with pytest.raises(ValueError):
        center[0] = 1.0
    address = center.__array_interface__["data"][0]
    assert agent.center.__array_interface__["data"][0] == address
    assert agent.params.__array_interface__["data"][0] == address
    before = center.copy()
    clones = [agent.clone() for _ in range(2)]
    assert clones[0].center.__array_interface__["data"][0] == address
    clones[0].add_noise()
    noisy = clones[0].params
    noisy_before = noisy.copy()
    agent.update([c.add_noise() for c in clones], [1.0, 0.0])
    assert not np.array_equal(center, before)  # the old view sees the update
    np.testing.assert_array_equal(center, agent.center)
    assert not clones[0].has_noise
    np.testing.assert_array_equal(clones[0].params, agent.center)
    # a clone's buffer is refilled in place, when its parameters are asked for
    clones[0].add_noise()
    np.testing.assert_array_equal(noisy, noisy_before)  # lazily: nothing computed yet
    np.testing.assert_array_equal(clones[0].params, noisy)
    assert not np.array_equal(noisy, noisy_before)
    # views (and the sampler) keep the agent alive
    view = make_agent(params=np.full(P, 3, np.float32)).center
    sampler = make_agent().solver.sampler
    gc.collect()
    np.testing.assert_array_equal(view, np.full(P, 3, np.float32))
    assert sampler.sigma == np.float32(SIGMA)
    assert sampler.noise(0).shape == (P,)


def test_set_center_and_thread_count_invariance():
    results = []
    for threads in (1, 3):
        agent = make_agent("ADAM", cached=False, params=np.arange(5000, dtype=np.float32) / 5000,
                           num_threads=threads)
        clones = [agent.clone() for _ in range(4)]
        agent.update([c.add_noise() for c in clones], [3, 1, 2, 0])
        results.append(agent.center.copy())
    np.testing.assert_array_equal(results[0], results[1])
    agent.solver.set_center(np.zeros(5000, np.float32))
    np.testing.assert_array_equal(agent.center, 0)
    assert agent.model_iter_id == 1


def test_the_gaussian_solver_is_a_strategy_solver_with_clone_draw_counts():
    agent = make_agent("ADAM")
    solver = agent.solver
    assert isinstance(solver, _core.StrategySolver)
    assert (solver.family, solver.kind) == ("GAUSSIAN_SAMPLING", "Gaussian")
    assert solver.member_keys == [] and solver.corrects_older_samples and solver.mirrored_pairs
    clones = [agent.clone() for _ in range(3)]
    for c in clones + clones[:1]:
        c.add_noise()
    assert [solver.clone_draws(c) for c in range(4)] == [2, 1, 1, 0] and solver.draws == 0
    assert solver.optimizer.name == "ADAM" and solver.sampler.sigma == pytest.approx(SIGMA)


def test_sampling_info():
    info = _core.SamplingInfo()
    assert (info.key, info.model_iter_id, info.mirrored) == ([], 0, False)
    info = _core.SamplingInfo([5], 3, True)
    assert info == _core.SamplingInfo(key=[5], model_iter_id=3, mirrored=True)
    assert info != _core.SamplingInfo(key=[5], model_iter_id=3, mirrored=False)
    assert info != "SamplingInfo"
    assert repr(info) == "SamplingInfo(key=[5], model_iter_id=3, mirrored=True)"
    info.key = [1, 2]
    info.model_iter_id = 4
    info.mirrored = False
    assert repr(info) == "SamplingInfo(key=[1, 2], model_iter_id=4, mirrored=False)"


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"unknown optimizer 'RMSPROP', expected one of 'SGD', 'MOMENTUM', 'ADAM'"):
        make_agent("RMSPROP")
    with pytest.raises(ValueError, match=r"unknown fitness shaping 'rank', expected one of 'centered_rank', "
                                         r"'z_score', 'raw'"):
        make_agent(fitness_shaping="rank")
    with pytest.raises(ValueError, match=r"^weight_decay must be >= 0 and finite, got -1$"):
        make_agent(weight_decay=-1.0)
    with pytest.raises(ValueError, match=r"gaussian_sampling.std must be > 0 and finite, got -0.5"):
        make_agent(sigma=-0.5)
    with pytest.raises(ValueError, match=r"params must be a 1-D array, got shape \(2, 3\)"):
        make_agent(params=np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"params must not be empty"):
        make_agent(params=np.zeros(0, np.float32))
    with pytest.raises(ValueError, match=r"params\[1\] is nan"):
        make_agent(params=np.array([0, np.nan], np.float32))
    with pytest.raises(ValueError, match=r"momentum"):
        make_agent("MOMENTUM", momentum=1.5)


def test_misuse_is_a_runtime_error_with_the_message():
    agent = make_agent()
    clone = agent.clone()
    info = clone.add_noise()
    with pytest.raises(RuntimeError, match=r"^add_noise\(\) is for sampling agents: call it on a clone, "
                                           r"not on the agent that owns the solver$"):
        agent.add_noise()
    with pytest.raises(RuntimeError, match=r"^set_noise\(\) is for sampling agents"):
        agent.set_noise(info)
    with pytest.raises(RuntimeError, match=r"^update\(\) must be called on the agent that owns the solver, "
                                           r"not on a clone$"):
        clone.update([info], [1.0])
    assert clone.solver.center is not None  # clones share the solver (read-only use)
    with pytest.raises(ValueError, match=r"sampling info has no key"):
        clone.set_noise(_core.SamplingInfo())
    with pytest.raises(IndexError, match=r"key 99999 is outside the noise table"):
        clone.set_noise(_core.SamplingInfo([99999]))
    assert clone.has_noise  # the failed set_noise kept the old noise
    with pytest.raises(ValueError, match=r"set_center\(\) got 3 parameters, expected num_params 12"):
        agent.solver.set_center(np.zeros(3, np.float32))


def test_update_errors_change_nothing():
    agent = make_agent("MOMENTUM")
    clones = [agent.clone() for _ in range(4)]
    old = [c.add_noise() for c in clones]
    theta0 = agent.center.copy()
    agent.update(old, [1, 2, 3, 4])
    infos = [c.add_noise() for c in clones]
    velocity = agent.solver.optimizer.get_state("velocity")
    centre = agent.center.copy()

    def refused(exc, pattern, infos, rewards, history=None):
        with pytest.raises(exc, match=pattern):
            agent.update(infos, rewards, history)
        np.testing.assert_array_equal(agent.center, centre)
        np.testing.assert_array_equal(agent.solver.optimizer.get_state("velocity"), velocity)
        assert agent.model_iter_id == 1
        assert clones[0].has_noise

    def edited(i, **changes):
        out = [_core.SamplingInfo(x.key, x.model_iter_id, x.mirrored) for x in infos]
        for name, value in changes.items():
            setattr(out[i], name, value)
        return out

    refused(ValueError, r"update\(\) got 3 sampling infos but 2 rewards; they must pair up one to one",
            infos[:3], [1.0, 2.0])
    refused(ValueError, r"update\(\) needs at least one sample, got none", [], [])
    refused(ValueError, r"rewards must be a 1-D array, got shape \(2, 2\)", infos, [[1, 2], [3, 4]])
    refused(ValueError, r"sampling info 1 has no key", edited(1, key=[]), [1, 2, 3, 4])
    refused(ValueError, r"sampling info 2 has 2 keys, Gaussian sampling uses exactly 1",
            edited(2, key=[1, 2]), [1, 2, 3, 4])
    refused(IndexError, r"^sampling info 3: key 99999 is outside the noise table",
            edited(3, key=[99999]), [1, 2, 3, 4])
    refused(ValueError, r"sampling info 0 was drawn at model iteration 7 but the agent is at iteration 1",
            edited(0, model_iter_id=7), [1, 2, 3, 4])
    late = infos[:3] + [old[3]]
    unavailable = (r"sampling info 3 was drawn at model iteration 0, which is not available "
                   r"\(pass its parameters to correct for it\)")
    refused(ValueError, unavailable, late, [1, 2, 3, 4])
    refused(ValueError, unavailable, late, [1, 2, 3, 4], {5: theta0})
    refused(ValueError, r"history gave 3 parameters for it, expected num_params 12", late, [1, 2, 3, 4],
            {0: theta0[:3]})
    refused(ValueError, r"history\[0\] must be a 1-D array, got shape \(2, 6\)", late, [1, 2, 3, 4],
            {0: theta0.reshape(2, 6)})
    refused(ValueError, r"reward of sample 2 is nan", infos, [1, 2, np.nan, 4])
    refused(ValueError, r"reward of sample 0 is inf", infos, [np.inf, 2, 3, 4])
    with pytest.raises(TypeError):
        agent.update([1, 2], [1.0, 2.0])
    # and with everything right it goes through
    assert agent.update(late, [1, 2, 3, 4], {0: theta0})["num_corrected"] == 1
