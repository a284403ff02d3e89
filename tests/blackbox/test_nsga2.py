"""evokit.NSGA2 and evokit.blackbox.pareto: the non-dominated sort, crowding
distance and hypervolume against brute-force NumPy references (ties and
duplicates included), the SBX / polynomial-mutation formulas against scalar
transcriptions of the papers, survival against a reference of Deb et al.'s
main loop, ZDT1 convergence, determinism and pickling, error messages. The
comparison with pymoo is bench/multiobjective.py and bench/bbob.py's bbob-biobj runs."""

import itertools
import pickle

import numpy as np
import pytest

import evokit
from evokit.blackbox.pareto import crowding_distances, dominates, hypervolume, nondominated_ranks

# ---- brute-force references ------------------------------------------------------


def ref_dominates(a, b):
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def ref_ranks(F):
    """Peel fronts: a front is the remaining rows no remaining row dominates."""
    remaining, rank, r = set(range(len(F))), np.full(len(F), -1), 0
    while remaining:
        front = [i for i in remaining if not any(ref_dominates(F[j], F[i]) for j in remaining)]
        rank[front] = r
        remaining -= set(front)
        r += 1
    return rank


def ref_crowding(F, rank):
    """Deb et al. 2002, Sec. III-B, one point at a time; Python's sort is stable."""
    d = np.zeros(len(F))
    for r in set(rank.tolist()):
        members = [i for i in range(len(F)) if rank[i] == r]
        if len(members) <= 2:
            d[members] = np.inf
            continue
        for j in range(F.shape[1]):
            order = sorted(members, key=lambda i: F[i][j])
            d[order[0]] = d[order[-1]] = np.inf
            span = F[order[-1]][j] - F[order[0]][j]
            for a, i, b in zip(order, order[1:], order[2:]):
                if span > 0:
                    d[i] += (F[b][j] - F[a][j]) / span
    return d


def ref_hypervolume(F, ref):
    """Inclusion-exclusion over all subsets of the points (exact, any m, small k)."""
    P = [p for p in np.asarray(F, float) if np.all(p < ref)]
    total = 0.0
    for size in range(1, len(P) + 1):
        for subset in itertools.combinations(P, size):
            total += (-1) ** (size + 1) * np.prod(ref - np.max(subset, axis=0))
    return total


def random_sets():
    rng = np.random.default_rng(7)
    yield rng.random((60, 2))
    yield rng.random((50, 3))
    yield rng.integers(0, 4, (60, 2)).astype(float)     # many ties and duplicates
    yield rng.integers(0, 3, (40, 3)).astype(float)
    yield np.repeat(rng.random((5, 2)), 4, axis=0)       # every row four times
    yield rng.random((30, 4))


# ---- sort, crowding -------------------------------------------------------------------

@pytest.mark.parametrize("F", list(random_sets()))
def test_nondominated_sort_and_crowding_equal_brute_force(F):
    expected = np.array([[ref_dominates(a, b) for b in F] for a in F])
    np.testing.assert_array_equal(dominates(F), expected)
    rank = nondominated_ranks(F)
    np.testing.assert_array_equal(rank, ref_ranks(F))
    np.testing.assert_allclose(crowding_distances(F), ref_crowding(F, rank), rtol=1e-12, atol=0)


def test_crowding_by_hand():
    F = np.array([[0.0, 3.0], [1.0, 2.0], [2.0, 1.0], [3.0, 0.0], [3.0, 3.0]])
    # front 0: the anti-diagonal; interior points: 2/3 per objective. front 1: one point.
    np.testing.assert_array_equal(nondominated_ranks(F), [0, 0, 0, 0, 1])
    np.testing.assert_allclose(crowding_distances(F), [np.inf, 4 / 3, 4 / 3, np.inf, np.inf])
    # equal rows share the front; the constant objective's sort (stable) still has
    # boundaries (rows 0 and 3: infinite) and adds nothing inside
    G = np.array([[1.0, 5.0], [1.0, 5.0], [2.0, 5.0], [0.0, 5.0]])
    np.testing.assert_array_equal(nondominated_ranks(G), [1, 1, 2, 0])
    np.testing.assert_array_equal(crowding_distances(G, np.zeros(4)), [np.inf, 0.5, np.inf, np.inf])


# ---- hypervolume -----------------------------------------------------------------------

def test_hypervolume_by_hand():
    ref2 = [4.0, 4.0]
    staircase = [[1, 3], [2, 2], [3, 1]]
    assert hypervolume(staircase, ref2) == 6.0
    # a dominated point, a duplicate and points outside the reference box add nothing
    assert hypervolume(staircase + [[3, 3], [2, 2], [5, 0], [0, 4]], ref2) == 6.0
    assert hypervolume(np.empty((0, 2)), ref2) == 0.0
    assert hypervolume([[0.0, 0.0, 0.0]], [1, 2, 3]) == 6.0
    assert hypervolume([[0, 0, 1], [1, 1, 0]], [2, 2, 2]) == 5.0      # 4 + 2 - 1
    assert hypervolume([[0, 1, 1], [1, 0, 1], [1, 1, 0]], [2, 2, 2]) == 4.0  # 6 - 3 + 1
    assert hypervolume([[0.5]], [2.0]) == 1.5


@pytest.mark.parametrize("m, k, seed", [(2, 9, 0), (2, 10, 1), (3, 8, 2), (3, 10, 3)])
def test_hypervolume_equals_inclusion_exclusion(m, k, seed):
    rng = np.random.default_rng(seed)
    F = np.round(rng.random((k, m)), 1)  # ties
    ref = np.full(m, 0.95)               # some points outside
    assert hypervolume(F, ref) == pytest.approx(ref_hypervolume(F, ref), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_against_monte_carlo(m):
    rng = np.random.default_rng(11 + m)
    # points near the simplex sum = 1: a realistic front of 40 points
    F = rng.dirichlet(np.ones(m), 40) + 0.05 * rng.random((40, m))
    ref = np.full(m, 1.1)
    exact = hypervolume(F, ref)
    samples = 200_000
    U = rng.random((samples, m)) * ref  # the box [0, ref]
    covered = np.zeros(samples, dtype=bool)
    for p in F:
        covered |= np.all(U >= p, axis=1)
    p_hat = covered.mean()
    box = np.prod(ref)
    stderr = box * np.sqrt(p_hat * (1 - p_hat) / samples)
    assert abs(exact - box * p_hat) < 4 * stderr
    # and the module's own estimate (the box from the points' minimum)
    estimate = hypervolume(F, ref, samples=samples, seed=3)
    assert abs(estimate - exact) < 4 * stderr * 1.5


def test_hypervolume_errors():
    with pytest.raises(ValueError, match=r"^the exact hypervolume is implemented for at most 3 objectives, "
                                         r"got 4; pass samples=N for a Monte-Carlo estimate$"):
        hypervolume(np.zeros((3, 4)), np.ones(4))
    assert hypervolume(np.zeros((1, 4)), np.ones(4), samples=1000) == 1.0
    with pytest.raises(ValueError, match=r"^F has 3 objectives but reference_point has 2$"):
        hypervolume(np.zeros((3, 3)), [1, 1])
    with pytest.raises(ValueError, match=r"^F rows \[1\] hold NaN objective values$"):
        hypervolume([[0, 0], [np.nan, 0]], [1, 1])
    with pytest.raises(ValueError, match=r"^reference_point must be a non-empty 1-D sequence of finite"):
        hypervolume([[0, 0]], [1, np.inf])
    with pytest.raises(ValueError, match=r"^samples must be an integer >= 1 or None \(exact\), got 0$"):
        hypervolume([[0, 0]], [1, 1], samples=0)


# ---- variation operators against the papers' formulas ------------------------------------

class Draws:
    """A stand-in Generator handing out given uniform arrays in order."""

    def __init__(self, *arrays):
        self.arrays = list(arrays)

    def random(self, shape):
        a = np.asarray(self.arrays.pop(0), dtype=float)
        assert a.shape == (shape if isinstance(shape, tuple) else (shape,))
        return a


def sbx_scalar(y1, y2, lo, hi, u, eta):
    """Deb & Agrawal 1995 SBX, bounded as in Deb's NSGA-II code, for y1 < y2."""
    def betaq(beta):
        alpha = 2 - beta ** -(eta + 1)
        if u <= 1 / alpha:
            return (u * alpha) ** (1 / (eta + 1))
        return (1 / (2 - u * alpha)) ** (1 / (eta + 1))
    c1 = 0.5 * ((y1 + y2) - betaq(1 + 2 * (y1 - lo) / (y2 - y1)) * (y2 - y1))
    c2 = 0.5 * ((y1 + y2) + betaq(1 + 2 * (hi - y2) / (y2 - y1)) * (y2 - y1))
    return min(max(c1, lo), hi), min(max(c2, lo), hi)


def polynomial_scalar(y, lo, hi, u, eta):
    d1, d2 = (y - lo) / (hi - lo), (hi - y) / (hi - lo)
    if u <= 0.5:
        dq = (2 * u + (1 - 2 * u) * (1 - d1) ** (eta + 1)) ** (1 / (eta + 1)) - 1
    else:
        dq = 1 - (2 * (1 - u) + 2 * (u - 0.5) * (1 - d2) ** (eta + 1)) ** (1 / (eta + 1))
    return min(max(y + dq * (hi - lo), lo), hi)


def test_sbx_and_polynomial_mutation_follow_the_formulas():
    lo, hi = np.array([-1.0, 0.0, 0.0, 2.0]), np.array([1.0, 5.0, 1.0, 3.0])
    es = evokit.NSGA2(bounds=(lo, hi), population_size=4, crossover_eta=15, mutation_eta=20)
    p1 = np.array([[-0.5, 4.9, 0.3, 2.5], [0.9, 0.1, 0.3, 2.0]])
    p2 = np.array([[0.7, 1.0, 0.3, 2.9], [-0.9, 4.0, 0.8, 3.0]])
    cross_pair = [0.1, 0.95]              # the second pair does not cross (p_c = 0.9)
    cross_var = [[0.2, 0.3, 0.4, 0.7], [0.1, 0.1, 0.1, 0.1]]  # variable 3 of pair 0 not crossed
    u = [[0.05, 0.6, 0.3, 0.99], [0.5, 0.5, 0.5, 0.5]]
    swap = [[0.7, 0.2, 0.9, 0.9], [0.1, 0.1, 0.1, 0.1]]
    children = es._sbx(p1, p2, Draws(cross_pair, cross_var, u, swap))
    expected = np.array([p1[0], p2[0], p1[1], p2[1]])
    for j in (0, 1):  # variable 2 of pair 0 has equal parents: left alone
        y1, y2 = sorted((p1[0, j], p2[0, j]))
        c1, c2 = sbx_scalar(y1, y2, lo[j], hi[j], u[0][j], 15)
        expected[0, j], expected[1, j] = (c2, c1) if swap[0][j] < 0.5 else (c1, c2)
    np.testing.assert_allclose(children, expected, rtol=1e-14)

    Y = np.array([[-1.0, 2.5, 0.999, 2.2], [0.3, 0.0, 0.5, 3.0]])
    mutate = [[0.1, 0.1, 0.1, 0.9], [0.1, 0.1, 0.1, 0.1]]  # p_m = 1/4: one variable kept
    u = [[0.2, 0.8, 0.999, 0.5], [0.5, 0.01, 0.49, 0.51]]
    out = es._mutate(Y, Draws(mutate, u))
    expected = Y.copy()
    for i, j in itertools.product(range(2), range(4)):
        if mutate[i][j] < 0.25:
            expected[i, j] = polynomial_scalar(Y[i, j], lo[j], hi[j], u[i][j], 20)
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    assert out[0, 3] == Y[0, 3] and out[0, 1] != Y[0, 1]


# ---- the main loop ----------------------------------------------------------------------

def zdt1(X):
    X = np.asarray(X)
    g = 1 + 9 * X[..., 1:].mean(axis=-1)
    f1 = X[..., 0]
    return np.stack([f1, g * (1 - np.sqrt(f1 / g))], axis=-1)


ZDT1_FRONT_HV = 0.1 + 2 / 3 + 0.11  # integral of (1.1 - (1 - sqrt f1)) over [0, 1] plus 0.1 x 1.1


def make_zdt1(seed=0, **options):
    options.setdefault("max_evaluations", 10_000)
    return evokit.NSGA2(bounds=(np.zeros(30), np.ones(30)), seed=seed, reference_point=[1.1, 1.1],
                        **options)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zdt1_reaches_the_front(seed):
    # 100 x 100 generations: measured 0.851-0.854 (0.971-0.974 of the front's 0.8767)
    result = make_zdt1(seed).optimize(zdt1, vectorized=True)
    assert result.hypervolume >= 0.96 * ZDT1_FRONT_HV
    assert result.evaluations == 10_000 and result.iterations == 100
    assert result.stop == {"max_evaluations": 10_000}
    np.testing.assert_array_equal(result.pareto_f, zdt1(result.pareto_x))
    assert np.all(nondominated_ranks(result.pareto_f) == 0)
    assert len(np.unique(result.pareto_x, axis=0)) == len(result.pareto_x) >= 80
    assert np.all(result.pareto_x >= 0) and np.all(result.pareto_x <= 1)


def test_survival_is_deb_et_al_main_loop():
    es = make_zdt1(5, population_size=20)
    es.tell(es.ask(), zdt1(es.ask()))
    for _ in range(5):
        P, PF, _, _ = es.population
        Q = es.ask()
        assert np.all(Q >= 0) and np.all(Q <= 1)
        QF = zdt1(Q)
        QF[3] = PF[0]  # a duplicate objective row
        es.tell(Q, QF)
        R, RF = np.concatenate([P, Q]), np.concatenate([PF, QF])
        rank = ref_ranks(RF)
        crowd = ref_crowding(RF, rank)
        chosen = []
        for r in range(rank.max() + 1):
            front = [i for i in range(40) if rank[i] == r]
            if len(chosen) + len(front) <= 20:
                chosen += front
            else:
                front.sort(key=lambda i: -crowd[i])  # stable: index order on ties
                chosen += front[:20 - len(chosen)]
                break
        X, F, front_of, crowding = es.population
        np.testing.assert_array_equal(X, R[sorted(chosen, key=lambda i: (rank[i], -crowd[i], i))])
        np.testing.assert_array_equal(F, RF[sorted(chosen, key=lambda i: (rank[i], -crowd[i], i))])
        np.testing.assert_array_equal(np.sort(front_of), np.sort(rank[chosen]))
        np.testing.assert_allclose(np.sort(crowding), np.sort(crowd[chosen]))


def test_tournaments_prefer_lower_fronts_then_crowding():
    es = make_zdt1(1, population_size=8)
    es.tell(es.ask(), zdt1(es.ask()))
    es._rank = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    es._crowding = np.array([np.inf, 1.0, 2.0, 0.5, 1.0, 1.0, 0.0, 0.0])
    for t in range(20):
        es._generation = t
        rng = es._rng()
        order = np.concatenate([rng.permutation(8), rng.permutation(8)])
        winners = es._tournaments(es._rng())
        for a, b, w in zip(order[0::2], order[1::2], winners):
            key = lambda i: (es._rank[i], -es._crowding[i])  # noqa: E731
            if key(a) != key(b):
                assert w == min((a, b), key=key)
            else:
                assert w in (a, b)


def test_x0_is_the_first_member_and_p0_is_uniform_in_the_bounds():
    lo, hi = np.array([-2.0, 0.0, 10.0]), np.array([2.0, 1.0, 10.5])
    es = evokit.NSGA2([0.5, 0.25, 10.1], bounds=(lo, hi), population_size=200, seed=4)
    X = es.ask()
    np.testing.assert_array_equal(X[0], [0.5, 0.25, 10.1])
    assert np.all(X >= lo) and np.all(X <= hi)
    np.testing.assert_allclose(((X[1:] - lo) / (hi - lo)).mean(axis=0), 0.5, atol=0.1)
    es2 = evokit.NSGA2(bounds=(0.0, [1, 2, 3, 4]), population_size=4)  # scalar lower, broadcast
    assert es2.num_params == 4 and es2.bounds[0].tolist() == [0, 0, 0, 0]
    assert es2.parameters == {"crossover_probability": 0.9, "crossover_eta": 15.0,
                              "mutation_probability": 0.25, "mutation_eta": 20.0}


# ---- determinism, pickling, optimize ------------------------------------------------------

def test_same_seed_same_run_and_pickle_continues_bit_for_bit():
    a, b, c = make_zdt1(3), make_zdt1(3), make_zdt1(4)
    for _ in range(6):
        for es in (a, b, c):
            es.tell(es.ask(), zdt1(es.ask()))
    np.testing.assert_array_equal(a.population[0], b.population[0])
    assert not np.array_equal(a.population[0], c.population[0])
    X = a.ask()
    mid = pickle.loads(pickle.dumps(a))  # pending ask included
    np.testing.assert_array_equal(mid.ask(), X)
    for es in (a, mid):
        es.tell(es.ask(), zdt1(es.ask()))
        for _ in range(4):
            es.tell(es.ask(), zdt1(es.ask()))
    ra, rm = a.result, mid.result
    np.testing.assert_array_equal(ra.pareto_x, rm.pareto_x)
    assert ra.hypervolume == rm.hypervolume and rm.iterations == 11


def test_optimize_serial_vectorized_processes_threads_equal():
    make = lambda: make_zdt1(2, population_size=20, max_evaluations=None, max_iterations=15)  # noqa: E731
    serial = make().optimize(lambda x: list(zdt1(x)))
    for result in (make().optimize(zdt1, vectorized=True), make().optimize(zdt1, num_workers=2),
                   make().optimize(zdt1, num_workers=2, backend="thread")):
        np.testing.assert_array_equal(result.pareto_x, serial.pareto_x)
        assert (result.hypervolume, result.iterations, result.stop) == \
            (serial.hypervolume, 15, {"max_iterations": 15})


def test_result_before_tell_and_default_reference_point():
    es = evokit.NSGA2(bounds=(np.zeros(3), np.ones(3)), population_size=4)
    r = es.result
    assert r.pareto_x.shape == (0, 3) and r.pareto_f.shape == (0, 0)
    assert r.hypervolume is None and r.reference_point is None and r.iterations == 0
    X = es.ask()
    F = np.stack([X[:, 0], 1 - X[:, 0], np.full(4, 2.0)], axis=1)
    es.tell(X, F)
    r = es.result
    worst, best = F.max(axis=0), F.min(axis=0)
    np.testing.assert_allclose(r.reference_point, worst + np.where(worst > best, 0.1 * (worst - best), 1.0))
    assert r.hypervolume == hypervolume(r.pareto_f, r.reference_point) > 0
    assert es.hypervolume([2, 2, 3]) == hypervolume(r.pareto_f, [2, 2, 3])


# ---- errors ----------------------------------------------------------------------------

BAD = [
    ({}, "bounds=(lower, upper) is required: NSGA2 samples and varies inside a box"),
    ({"bounds": [0, 1, 2]}, "bounds must be a pair (lower, upper), got [0, 1, 2]"),
    ({"bounds": (0, 1)}, "the number of variables is unknown: give x0 or bounds with 1-D lower or upper"),
    ({"bounds": ([0, 0], [1, 1, 1])}, "bounds: upper must be a number or 2 numbers (one per variable), got shape (3,)"),
    ({"bounds": ([0, 1], [1, 1])}, "bounds: lower[1] = 1.0 must be < upper[1] = 1.0"),
    ({"bounds": ([0, -np.inf], [1, 1])}, "bounds: lower[1] is -inf; bounds must be finite"),
    ({"x0": [0.5, 2.0], "bounds": (0, 1)}, "x0[1] = 2.0 lies outside bounds [0.0, 1.0]"),
    ({"bounds": ([0, 0], 1), "population_size": 7},
     "population_size must be even (offspring come in pairs), got 7"),
    ({"bounds": ([0, 0], 1), "population_size": 2}, "population_size must be an integer >= 4, got 2"),
    ({"bounds": ([0, 0], 1), "crossover_probability": 1.5}, "crossover_probability must be in [0, 1], got 1.5"),
    ({"bounds": ([0, 0], 1), "mutation_eta": -1}, "mutation_eta must be >= 0 and finite, got -1"),
    ({"bounds": ([0, 0], 1), "reference_point": [1, 1], "num_objectives": 3},
     "reference_point has 2 entries but num_objectives = 3"),
    ({"bounds": ([0, 0], 1), "nan_policy": "skip"}, "nan_policy must be one of 'error', 'worst', got 'skip'"),
]


@pytest.mark.parametrize("options, message", BAD)
def test_bad_options(options, message):
    with pytest.raises(ValueError) as info:
        evokit.NSGA2(**options)
    assert str(info.value) == message


def test_tell_errors():
    es = make_zdt1(population_size=6)
    with pytest.raises(RuntimeError, match=r"^NSGA2.tell\(\) was called without a preceding ask\(\)$"):
        es.tell(np.zeros((6, 30)), np.zeros((6, 2)))
    X = es.ask()
    F = zdt1(X)
    with pytest.raises(ValueError, match=r"^objective values must be a 2-D array \[#solutions, #objectives\] "
                                         r"\(one row per solution\), got shape \(6,\)$"):
        es.tell(X, F[:, 0])
    with pytest.raises(ValueError, match=r"^objective values have 3 objectives per solution but NSGA2 "
                                         r"optimises 2 \(rows of shape \(2,\)\), got shape \(6, 3\)$"):
        es.tell(X, np.hstack([F, F[:, :1]]))
    with pytest.raises(ValueError, match=r"^#f-values = 5 must equal #solutions = 6$"):
        es.tell(X, F[:5])
    F[[1, 4], 1] = np.nan
    with pytest.raises(ValueError, match=r"^f-values of solutions \[1, 4\] are NaN \(nan_policy='error'"):
        es.tell(X, F)
    F[[1, 4], 1] = 0.0
    F[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"^f-values of solutions \[2\] are infinite; NSGA2 needs finite"):
        es.tell(X, F)
    assert es.evaluations == 0
    with pytest.raises(ValueError, match=r"^NSGA2.optimize needs a budget"):
        make_zdt1(max_evaluations=None).optimize(zdt1)
    with pytest.raises(ValueError, match=r"^a vectorized f must return \[6, #objectives\] values"):
        make_zdt1(population_size=6).optimize(lambda X: zdt1(X)[:, 0], vectorized=True)
    with pytest.raises(ValueError, match=r"^f must return a 1-D row of objective values of one length: "
                                         r"f\(row 0\) has shape \(2,\), f\(row 1\) \(3,\)$"):
        make_zdt1(population_size=6).optimize(lambda x, c=itertools.count(): [0.0] * (2 + next(c) % 2))


def test_nan_worst_ranks_them_behind_everything():
    es = make_zdt1(population_size=6, nan_policy="worst")
    X = es.ask()
    F = zdt1(X)
    F[[0, 3], 0] = np.nan
    with pytest.warns(RuntimeWarning, match=r"f-values of solutions \[0, 3\] are NaN: ranked behind every "
                                            r"solution with numbers \(nan_policy='worst'\)"):
        es.tell(X, F)
    _, PF, rank, _ = es.population
    assert np.all(np.isnan(PF[-2:]).all(axis=1)) and np.all(rank[-2:] == rank[:-2].max() + 1)
    assert not np.isnan(es.result.pareto_f).any()
    es.tell(es.ask(), zdt1(es.ask()))  # the NaN rows are the first to go
    assert not np.isnan(es.population[1]).any()
