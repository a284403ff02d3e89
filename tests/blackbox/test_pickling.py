"""Save and resume: every ask/tell strategy pickles mid-run (a pending ask
included) and the copy continues bit for bit, with repaired and injected
solutions, constraints, NaN values under nan_policy='worst', restarts and
integer variables along the way."""

import pickle
import warnings

import numpy as np
import pytest

import evokit


def rastrigin(X):
    X = np.atleast_2d(X)
    return 10 * X.shape[1] + np.sum(X * X - 10 * np.cos(2 * np.pi * X), axis=1)


def step(es, g, rng_seed):
    """One generation with what a pycma user does: some rows clipped, a NaN,
    an injection every fourth generation (CMA), constraints on CMA."""
    X = es.ask()
    told = np.array(X, copy=True)
    rng = np.random.default_rng(rng_seed + g)
    if isinstance(es, (evokit.CMAES, evokit.SepCMAES)):
        told[::3] = np.clip(told[::3], -2.0, 2.0)
    F = rastrigin(told)
    F[rng.integers(len(F))] = np.nan
    kwargs = {}
    if isinstance(es, evokit.CMAES):
        kwargs["constraints"] = told[:, :1] - 1.5  # x0 <= 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        es.tell(told, F, **kwargs)
    if isinstance(es, (evokit.CMAES, evokit.SepCMAES)) and g % 4 == 1:
        es.inject([np.full(es.num_params, 0.25 * g)])


MAKERS = {
    "CMAES": lambda: evokit.CMAES(np.full(6, 2.0), 1.0, seed=5, nan_policy="worst", restarts=3,
                                  restart_strategy="bipop", integer_variables=[0, 1], tolfun=1e-3),
    "SepCMAES": lambda: evokit.SepCMAES(np.full(6, 2.0), 1.0, seed=5, nan_policy="worst",
                                        bounds=(-3.0, 3.0)),
    "GA": lambda: evokit.GA(np.full(6, 2.0), 0.5, population_size=12, truncation_size=4,
                            elite_evaluations=2, elite_candidates=2, seed=5, nan_policy="worst"),
    "OpenES": lambda: evokit.OpenES(np.full(6, 2.0), 0.3, seed=5, nan_policy="worst"),
    # The decays change the solver's options after every tell: a pickle holds the current ones.
    "OpenES-decays": lambda: evokit.OpenES(np.full(6, 2.0), 0.3, seed=5, nan_policy="worst", optimizer="momentum",
                                           sigma_decay=0.97, learning_rate_decay=0.95),
    "SNES": lambda: evokit.SNES(np.full(6, 2.0), 1.0, seed=5, nan_policy="worst"),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("pending", [False, True])
def test_a_pickled_strategy_continues_bit_for_bit(name, pending):
    a = MAKERS[name]()
    for g in range(9):
        step(a, g, 100)
    if pending:
        a.ask()
    b = pickle.loads(pickle.dumps(a))
    if pending:
        np.testing.assert_array_equal(b.ask(), a.ask())
    for g in range(9, 25):
        step(a, g, 100)
        step(b, g, 100)
        np.testing.assert_array_equal(b.ask(), a.ask())
    ra, rb = a.result, b.result
    assert (ra.fbest, ra.evaluations, ra.iterations, ra.stop) == (rb.fbest, rb.evaluations, rb.iterations, rb.stop)
    np.testing.assert_array_equal(ra.xbest, rb.xbest)


def test_a_pickled_cma_run_restarts_as_the_original():
    a = evokit.CMAES(np.full(4, 3.0), 2.0, seed=1, restarts=2, tolfun=1e-1)
    b = None
    for g in range(400):
        if a.stop():
            break
        if g == 30:
            b = pickle.loads(pickle.dumps(a))
        for es in (a,) if b is None else (a, b):
            X = es.ask()
            es.tell(X, rastrigin(X))
    assert a.result.restarts >= 1  # the copy lived through restarts
    assert (b.result.fbest, b.result.evaluations, b.result.restarts, b.stop()) == \
        (a.result.fbest, a.result.evaluations, a.result.restarts, a.stop())


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_telling_the_asked_array_is_the_general_tell(name):
    """tell(ask()'s own array, a float64 array) takes tell()'s short path;
    it updates as the general path (a copy of the solutions, a list of
    values) does, and its record is its own: changing the caller's values
    afterwards does not change what an unpickled copy replays."""
    fast, general = MAKERS[name](), MAKERS[name]()
    for g in range(12):
        X = fast.ask()
        np.testing.assert_array_equal(general.ask(), X)
        F = rastrigin(X)
        fast.tell(X, F)
        general.tell(np.array(X, copy=True), F.tolist())
        F[:] = np.nan  # the caller reuses its buffer
    np.testing.assert_array_equal(fast.ask(), general.ask())
    copy = pickle.loads(pickle.dumps(fast))
    np.testing.assert_array_equal(copy.ask(), fast.ask())
    assert copy.result.fbest == fast.result.fbest == general.result.fbest


def test_ga_and_openes_pickle_their_state_not_their_history():
    def f(X):
        return (X * X).sum(axis=1)

    sizes = {}
    for generations in (100, 200):  # past the tolfun window of best f-values (60 here)
        es = evokit.OpenES(np.full(20, 1.0), 0.2, seed=4, learning_rate_decay=0.99, population_size=20)
        for _ in range(generations):
            X = es.ask()
            es.tell(X, f(X))
        sizes[generations] = len(pickle.dumps(es))
        assert "log" not in es.__getstate__()
    # The centre, the solver's state (the optimizer's moments, the key
    # counters) and the stop criteria's history (the best and the median
    # f-value of each iteration: 16 bytes), never the told values (20 per
    # iteration here).
    assert sizes[200] - sizes[100] == 100 * 16
    ga = evokit.GA(np.full(4, 1.0), 0.3, population_size=8, seed=4)
    assert "_core_state" in ga.__getstate__() and "log" not in ga.__getstate__()


def test_cmaes_pickles_its_state_not_its_history():
    es = evokit.CMAES(np.full(6, 1.0), 0.5, seed=3, population_size=20)
    sizes = {}
    for g in range(1, 101):
        X = es.ask()
        es.tell(X, (X * X).sum(axis=1) + 1.0)
        if g in (50, 100):
            sizes[g] = len(pickle.dumps(es))
            assert "log" not in es.__getstate__()
    # The state grows only by the stop criteria's history (the best and the
    # median f-value of each generation: 16 bytes), never by the 20 told
    # values of each generation (160 bytes).
    assert sizes[100] - sizes[50] <= 50 * 16


def _cmaes_replayed():
    return evokit.CMAES(np.full(4, 1.0), 0.5, seed=4, restarts=2, restart_strategy="bipop", tolfun=1e-3)


@pytest.mark.parametrize("name,make", [
    ("cmaes", _cmaes_replayed),
    ("ga", lambda: evokit.GA(np.full(4, 1.0), 0.3, population_size=8, elite_evaluations=2, elite_candidates=2,
                             seed=4)),
])
def test_a_strategy_pickled_by_replay_before_still_loads_and_continues(name, make):
    # data/<name>_replay_pickle.pkl: `make()` told f for 5 generations (CMA:
    # 30, with an injection after the sixth and its BIPOP restarts), then
    # asked once more (pending), pickled by the code that pickled CMAES, GA
    # and OpenES by replaying their tells.
    import os

    def f(X):
        return (X * X).sum(axis=1) + (np.sin(3 * X[:, 0]) if name == "cmaes" else 0.0)

    with open(os.path.join(os.path.dirname(__file__), "data", f"{name}_replay_pickle.pkl"), "rb") as fh:
        old = pickle.load(fh)
    fresh = make()
    for g in range(30 if name == "cmaes" else 5):
        X = fresh.ask()
        fresh.tell(X, f(X))
        if name == "cmaes" and g == 5:
            fresh.inject([np.full(4, 0.3)])
    for _ in range(4):
        X = fresh.ask()
        np.testing.assert_array_equal(old.ask(), X)
        old.tell(X, f(X))
        fresh.tell(X, f(X))
    np.testing.assert_array_equal(old.result.xfavorite, fresh.result.xfavorite)


def test_a_cmaes_state_that_does_not_fit_is_refused_by_entry_and_changes_nothing():
    es = evokit.CMAES(np.full(4, 1.0), 0.5, seed=1)
    X = es.ask()
    es.tell(X, (X * X).sum(axis=1))
    state = es._es.export_state()
    other = evokit.CMAES(np.full(4, 1.0), 0.5, seed=1)
    before = other._es.export_state()
    doubles = dict(state.doubles)
    doubles["mean"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"'mean'"):
        other._es.import_state(evokit._core.SolverState(state.family, doubles=doubles, ints=state.ints))
    del doubles["mean"]
    with pytest.raises(ValueError, match=r"'mean'"):
        other._es.import_state(evokit._core.SolverState(state.family, doubles=doubles, ints=state.ints))
    with pytest.raises(ValueError, match="the state is of CMAES, this strategy is SepCMAES"):
        evokit.SepCMAES(np.full(4, 1.0), 0.5)._es.import_state(state)
    after = other._es.export_state()
    assert {k: list(v) for k, v in after.doubles.items()} == {k: list(v) for k, v in before.doubles.items()}


@pytest.mark.parametrize("name,start", [
    # OpenES(np.full(4, 1.0), 0.2, seed=4, sigma_decay=0.99, learning_rate_decay=0.98) after 5
    # tells and an ask, pickled by replay: the refusal names its x0.
    ("openes_replay_pickle.pkl", "from its x0 [1.0, 1.0, 1.0, 1.0]"),
    # OpenES(np.ones(3), 0.2, seed=2, population_size=4) after one tell, pickled as its state by
    # the OpenES that ran its own update loop: the refusal names its centre.
    ("openes_state_pickle.pkl", "from its centre [0.8999999761581421, 0.8999999761581421, 0.8999999761581421]"),
])
def test_an_openes_of_the_python_update_loop_is_refused_saying_what_to_do(name, start):
    import os

    with open(os.path.join(os.path.dirname(__file__), "data", name), "rb") as fh, \
            pytest.raises(ValueError) as err:
        pickle.load(fh)
    assert str(err.value) == (
        "this OpenES was pickled by an EvoKit whose OpenES ran its own update loop (other noise keys); "
        "evokit.OpenES is now the training family GAUSSIAN_SAMPLING, which cannot continue that run: start a "
        "new evokit.OpenES(x0, sigma, ...) " + start)
