"""``NSGA2``: the elitist multi-objective genetic algorithm of Deb, Pratap,
Agarwal, Meyarivan 2002, "A fast and elitist multiobjective genetic
algorithm: NSGA-II", IEEE TEVC 6(2):182-197, minimising every objective
inside box bounds, with the ask / tell / stop / result contract of the other
black-box strategies (:class:`~evokit.blackbox.asktell.AskTellStrategy`):
``tell`` takes one row of objective values per solution.

The generation (Deb et al. 2002, Sec. III-C, "the main loop"):

- P_0: population_size points uniform in the bounds (x0, if given, is the
  first of them). Told, P_0 is ranked by the fast non-dominated sort
  (Sec. III-A) and crowding distance (Sec. III-B), :mod:`.pareto`.
- Q_t (ask): binary tournaments with the crowded-comparison operator <_n
  (Sec. III-B: the lower front wins, then the larger crowding distance, a
  fair coin on a tie); as in Deb's reference C code (NSGA-II revision 1.1.6,
  KanGAL), the contestants are consecutive pairs of two random permutations
  of P_t, so every member fights twice. Winners 2j and 2j+1 are the parents
  of children 2j and 2j+1:
  * simulated binary crossover, SBX (Deb & Agrawal 1995, "Simulated binary
    crossover for continuous search space", Complex Systems 9:115-148), in
    the bounded form of the reference code: with probability
    ``crossover_probability`` (p_c, 0.9) per pair, and then per variable with
    probability 1/2 when the parents differ (|y2 - y1| > 1e-14), for
    y1 <= y2 in [lo, hi], u ~ U[0, 1) and eta = ``crossover_eta``:
    beta = 1 + 2 (y1 - lo) / (y2 - y1) (for c1; 1 + 2 (hi - y2) / (y2 - y1)
    for c2), alpha = 2 - beta^-(eta + 1),
    beta_q = (u alpha)^(1/(eta+1)) if u <= 1/alpha else
    (1 / (2 - u alpha))^(1/(eta+1)),
    c1 = ((y1 + y2) - beta_q (y2 - y1)) / 2, c2 = ((y1 + y2) + beta_q (y2 - y1)) / 2,
    clipped to [lo, hi]; the children take (c1, c2) or, on a fair coin, (c2, c1);
  * polynomial mutation (Deb & Goyal 1996, "A combined genetic adaptive
    search (GeneAS) for engineering design", Computer Science and
    Informatics 26(4); the bounded form of the reference code): each variable
    with probability ``mutation_probability`` (p_m, default 1/n), with
    d1 = (y - lo)/(hi - lo), d2 = (hi - y)/(hi - lo), u ~ U[0, 1),
    eta = ``mutation_eta``: delta_q = (2u + (1 - 2u)(1 - d1)^(eta+1))^(1/(eta+1)) - 1
    if u <= 1/2, else 1 - (2(1 - u) + 2(u - 1/2)(1 - d2)^(eta+1))^(1/(eta+1));
    y + delta_q (hi - lo), clipped to [lo, hi].
- P_{t+1} (tell): R_t = P_t u Q_t is sorted into fronts; whole fronts are
  taken in order while they fit and the last one by descending crowding
  distance (ties: P_t before Q_t, then index order). The survivors keep the
  front and crowding distance they had in R_t for the next tournaments.

Defaults: p_c = 0.9, eta_c = 15, p_m = 1/n, eta_m = 20 (pymoo's; the 2002
paper ran eta_c = eta_m = 20).

Randomness: the draws of generation t come from NumPy's Philox4x64 with key
``seed`` and counter (0, t, 0, 0) in a fixed order (so generation t is a pure
function of seed, t and P_t): the same seed gives the same run bit for bit,
and a pickled strategy continues bit for bit.

NaN objective values: nan_policy='error' refuses them; 'worst' ranks such
solutions behind every solution with numbers (they never enter the Pareto
set). Infinite values are refused.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Dict, Optional

import numpy as np

from .asktell import GA_WORDING, AskTellStrategy
from .pareto import crowding_distances, hypervolume, nondominated_ranks
from .tracked import ASK_TELL, check_int

__all__ = ["NSGA2", "ParetoResult"]


@dataclasses.dataclass(kw_only=True)
class ParetoResult:
    """The state of a multi-objective run.

    pareto_x / pareto_f: the non-dominated solutions of the current
    population (duplicates removed, sorted by the first objective) and their
    objective rows; shapes (0, n) and (0, m) before the first tell.
    reference_point: the hypervolume's reference point (the user's, or the
    default fixed at the first tell; None before). hypervolume: of pareto_f
    with respect to it (None before the first tell, or for more than 3
    objectives: use :meth:`NSGA2.hypervolume` with samples=). stop: the
    criteria that ended the run ({} while it runs).
    """

    pareto_x: np.ndarray
    pareto_f: np.ndarray
    hypervolume: Optional[float]
    reference_point: Optional[np.ndarray]
    evaluations: int
    iterations: int
    stop: Dict[str, Any] = dataclasses.field(default_factory=dict)


def _check_probability(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def _check_eta(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return float(value)


def _check_bounds(bounds, x0) -> tuple:
    if bounds is None:
        raise ValueError("bounds=(lower, upper) is required: NSGA2 samples and varies inside a box")
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (lower, upper), got {bounds!r}") from None
    lo = np.array(lower, dtype=np.float64)
    hi = np.array(upper, dtype=np.float64)
    if x0 is not None:
        n = x0.size
    elif lo.ndim == 1 or hi.ndim == 1:
        n = (lo if lo.ndim == 1 else hi).size
    else:
        raise ValueError("the number of variables is unknown: give x0 or bounds with 1-D lower or upper")
    for name, b in (("lower", lo), ("upper", hi)):
        if b.ndim > 1 or (b.ndim == 1 and b.size != n):
            raise ValueError(f"bounds: {name} must be a number or {n} numbers (one per variable), "
                             f"got shape {b.shape}")
    lo, hi = np.broadcast_to(lo, (n,)).copy(), np.broadcast_to(hi, (n,)).copy()
    for name, b in (("lower", lo), ("upper", hi)):
        bad = np.flatnonzero(~np.isfinite(b))
        if bad.size:
            raise ValueError(f"bounds: {name}[{bad[0]}] is {b[bad[0]]}; bounds must be finite")
    bad = np.flatnonzero(~(lo < hi))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"bounds: lower[{i}] = {lo[i]} must be < upper[{i}] = {hi[i]}")
    if x0 is not None:
        out = np.flatnonzero((x0 < lo) | (x0 > hi))
        if out.size:
            i = int(out[0])
            raise ValueError(f"x0[{i}] = {x0[i]} lies outside bounds [{lo[i]}, {hi[i]}]")
    return lo, hi


class NSGA2(AskTellStrategy):
    """NSGA-II (Deb et al. 2002) minimising m objectives in box bounds.

    Usage::

        def zdt1(x):                                  # n = 30, both in [0, 1]^30
            g = 1 + 9 * x[1:].mean()
            return [x[0], g * (1 - (x[0] / g) ** 0.5)]

        es = evokit.NSGA2(bounds=(np.zeros(30), np.ones(30)), seed=1,
                          reference_point=[1.1, 1.1], max_evaluations=25_000)
        while not es.stop():
            X = es.ask()                              # [100, 30] float64
            es.tell(X, [zdt1(x) for x in X])          # [100, 2]: one row per solution
        r = es.result
        r.pareto_x, r.pareto_f, r.hypervolume         # the non-dominated set and its HV

    or ``es.optimize(zdt1)`` (``vectorized=True``: f maps [k, n] to [k, m]).

    x0: an optional first member of P_0 (1-D, inside the bounds); the rest of
        P_0 is uniform in the bounds.
    bounds: (lower, upper), each a number or one per variable (required;
        lower < upper, finite).
    population_size: N, even (offspring come in pairs), >= 4.
    crossover_probability, crossover_eta: SBX's p_c and eta_c (0.9, 15).
    mutation_probability, mutation_eta: polynomial mutation's p_m (None: 1/n)
        and eta_m (20).
    reference_point: for ``result.hypervolume``; None: fixed at the first tell
        to the worst value of each objective in P_0 plus a tenth of its range
        (plus 1 where the range is 0).
    num_objectives: m, checked at every tell (None: taken from the first tell).
    max_evaluations / max_iterations: stop criteria (an iteration is a
        generation; ``optimize`` needs one of them, its own max_iterations or
        a callback).
    seed: the Philox key (see the module docstring); nan_policy: 'error' or
        'worst' (ranked last).

    A policy-training family (``evokit.train``) does not apply: its rewards
    are scalars.
    """

    _wording = GA_WORDING
    _ask_returns_copy = True
    _accepts_infinite = False

    def __init__(self, x0=None, *, bounds=None, population_size: int = 100, seed: int = ASK_TELL["seed"],
                 crossover_probability: float = 0.9, crossover_eta: float = 15.0,
                 mutation_probability: Optional[float] = None, mutation_eta: float = 20.0,
                 reference_point=None, num_objectives: Optional[int] = None,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 nan_policy: str = ASK_TELL["nan_policy"]):
        if x0 is not None:
            x0 = np.array(x0, dtype=np.float64)
            if x0.ndim != 1 or x0.size == 0:
                raise ValueError(f"x0 must be a non-empty 1-D sequence of numbers, got shape {x0.shape}")
            bad = np.flatnonzero(~np.isfinite(x0))
            if bad.size:
                raise ValueError(f"x0[{bad[0]}] is {x0[bad[0]]}")
        self._lower, self._upper = _check_bounds(bounds, x0)
        n = self._lower.size
        super().__init__(n, nan_policy)
        self._x0 = x0
        population_size = check_int("population_size", population_size, 4)
        if population_size % 2:
            raise ValueError(f"population_size must be even (offspring come in pairs), got {population_size}")
        self._population_size = population_size
        self._seed = check_int("seed", seed, 0)
        if self._seed >= 2 ** 64:
            raise ValueError(f"seed must be < 2**64, got {seed}")
        self._pc = _check_probability("crossover_probability", crossover_probability)
        self._eta_c = _check_eta("crossover_eta", crossover_eta)
        self._pm = 1.0 / n if mutation_probability is None else \
            _check_probability("mutation_probability", mutation_probability)
        self._eta_m = _check_eta("mutation_eta", mutation_eta)
        self._num_objectives = check_int("num_objectives", num_objectives, 1, allow_none=True)
        self._reference_point = None
        if reference_point is not None:
            ref = np.array(reference_point, dtype=np.float64)
            if ref.ndim != 1 or ref.size == 0 or not np.all(np.isfinite(ref)):
                raise ValueError(f"reference_point must be a non-empty 1-D sequence of finite numbers, "
                                 f"got {reference_point!r}")
            if self._num_objectives is not None and ref.size != self._num_objectives:
                raise ValueError(f"reference_point has {ref.size} entries but num_objectives = "
                                 f"{self._num_objectives}")
            self._num_objectives = self._num_objectives or ref.size
            self._reference_point = ref
        self._max_evaluations = check_int("max_evaluations", max_evaluations, 1, allow_none=True)
        self._max_iterations = check_int("max_iterations", max_iterations, 1, allow_none=True)

        self._generation = 0     # tells so far (P_t's t)
        self._evaluations = 0
        self._X: Optional[np.ndarray] = None   # P_t [N, n]
        self._F: Optional[np.ndarray] = None   # its objectives [N, m] (NaN rows: 'worst')
        self._rank: Optional[np.ndarray] = None
        self._crowding: Optional[np.ndarray] = None

    # ---- options and state --------------------------------------------------------
    @property
    def population_size(self) -> int:
        return self._population_size

    @property
    def bounds(self):
        """(lower, upper), float64 copies."""
        return self._lower.copy(), self._upper.copy()

    @property
    def num_objectives(self) -> Optional[int]:
        return self._num_objectives

    @property
    def parameters(self) -> Dict[str, float]:
        """The variation operators' settings, defaults resolved."""
        return {"crossover_probability": self._pc, "crossover_eta": self._eta_c,
                "mutation_probability": self._pm, "mutation_eta": self._eta_m}

    @property
    def evaluations(self) -> int:
        return self._evaluations

    @property
    def iterations(self) -> int:
        return self._generation

    @property
    def population(self):
        """(X, F, front, crowding distance) of P_t, copies; None before the first tell."""
        if self._X is None:
            return None
        return self._X.copy(), self._F.copy(), self._rank.copy(), self._crowding.copy()

    def _rng(self) -> np.random.Generator:
        return np.random.Generator(np.random.Philox(key=self._seed, counter=[0, self._generation, 0, 0]))

    # ---- ask: P_0, then Q_t -------------------------------------------------------
    def _ask(self) -> np.ndarray:
        rng = self._rng()
        N, n = self._population_size, self._num_params
        lo, hi = self._lower, self._upper
        if self._X is None:
            X = lo + (hi - lo) * rng.random((N, n))
            if self._x0 is not None:
                X[0] = self._x0
            return np.clip(X, lo, hi)  # lo + (hi - lo) u can round up to hi
        winners = self._tournaments(rng)
        children = self._sbx(self._X[winners[0::2]], self._X[winners[1::2]], rng)
        return self._mutate(children, rng)

    def _tournaments(self, rng: np.random.Generator) -> np.ndarray:
        """N winners of binary tournaments under <_n; contestants are
        consecutive pairs of two permutations of P_t."""
        N = self._population_size
        order = np.concatenate([rng.permutation(N), rng.permutation(N)])
        a, b = order[0::2], order[1::2]
        coin = rng.random(N) < 0.5
        ra, rb = self._rank[a], self._rank[b]
        ca, cb = self._crowding[a], self._crowding[b]
        a_wins = (ra < rb) | ((ra == rb) & ((ca > cb) | ((ca == cb) & coin)))
        return np.where(a_wins, a, b)

    def _sbx(self, p1: np.ndarray, p2: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Bounded SBX of the parent pairs (p1[j], p2[j]) -> children 2j, 2j+1."""
        pairs, n = p1.shape
        lo, hi, eta = self._lower, self._upper, self._eta_c
        cross_pair = rng.random(pairs) < self._pc
        cross_var = rng.random((pairs, n)) < 0.5
        u = rng.random((pairs, n))
        swap = rng.random((pairs, n)) < 0.5
        y1, y2 = np.minimum(p1, p2), np.maximum(p1, p2)
        active = cross_pair[:, None] & cross_var & (y2 - y1 > 1e-14)
        dy = np.where(active, y2 - y1, 1.0)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            def beta_q(beta):
                alpha = 2.0 - beta ** -(eta + 1.0)
                return np.where(u <= 1.0 / alpha, (u * alpha) ** (1.0 / (eta + 1.0)),
                                (1.0 / (2.0 - u * alpha)) ** (1.0 / (eta + 1.0)))
            c1 = 0.5 * ((y1 + y2) - beta_q(1.0 + 2.0 * (y1 - lo) / dy) * dy)
            c2 = 0.5 * ((y1 + y2) + beta_q(1.0 + 2.0 * (hi - y2) / dy) * dy)
        c1, c2 = np.clip(c1, lo, hi), np.clip(c2, lo, hi)
        child1 = np.where(active, np.where(swap, c2, c1), p1)
        child2 = np.where(active, np.where(swap, c1, c2), p2)
        out = np.empty((2 * pairs, n))
        out[0::2], out[1::2] = child1, child2
        return out

    def _mutate(self, Y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Bounded polynomial mutation of each variable with probability p_m."""
        lo, hi, eta = self._lower, self._upper, self._eta_m
        mutate = rng.random(Y.shape) < self._pm
        u = rng.random(Y.shape)
        span = hi - lo
        d1, d2 = (Y - lo) / span, (hi - Y) / span
        power = 1.0 / (eta + 1.0)
        low = u <= 0.5
        with np.errstate(invalid="ignore"):  # the branch not taken may be NaN
            dq_low = (2.0 * u + (1.0 - 2.0 * u) * (1.0 - d1) ** (eta + 1.0)) ** power - 1.0
            dq_high = 1.0 - (2.0 * (1.0 - u) + 2.0 * (u - 0.5) * (1.0 - d2) ** (eta + 1.0)) ** power
        mutated = np.clip(Y + np.where(low, dq_low, dq_high) * span, lo, hi)
        return np.where(mutate, mutated, Y)

    # ---- tell: survival --------------------------------------------------------
    def _values_array(self, values) -> np.ndarray:
        v = np.array(values, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] == 0:
            raise ValueError(f"objective values must be a 2-D array [#solutions, #objectives] "
                             f"(one row per solution), got shape {v.shape}")
        m = self._num_objectives
        if m is not None and v.shape[1] != m:
            raise ValueError(f"objective values have {v.shape[1]} objectives per solution but "
                             f"NSGA2 optimises {m} (rows of shape ({m},)), got shape {v.shape}")
        return v

    def _replace_nan(self, values: np.ndarray, rows: np.ndarray) -> str:
        values[rows] = np.nan
        return "ranked behind every solution with numbers"

    def _tell(self, values: np.ndarray) -> None:
        X = self._asked
        if self._X is not None:
            X, values = np.concatenate([self._X, X]), np.concatenate([self._F, values])
        rank, crowding = self._rank_and_crowd(values)
        keep = np.lexsort((-crowding, rank))[:self._population_size]  # stable: P_t first on ties
        if self._num_objectives is None:
            self._num_objectives = values.shape[1]
        if self._reference_point is None:
            self._reference_point = self._default_reference_point(values)
        self._X, self._F = X[keep].copy(), values[keep].copy()
        self._rank, self._crowding = rank[keep], crowding[keep]
        self._generation += 1
        self._evaluations += self._asked.shape[0]

    @staticmethod
    def _rank_and_crowd(F: np.ndarray):
        """Fronts and crowding distances; rows with NaN form a last front of crowding 0."""
        finite = ~np.isnan(F).any(axis=1)
        rank = np.zeros(len(F), dtype=np.int64)
        crowding = np.zeros(len(F))
        if finite.any():
            rank[finite] = nondominated_ranks(F[finite])
            crowding[finite] = crowding_distances(F[finite], rank[finite])
            rank[~finite] = rank[finite].max() + 1
        return rank, crowding

    @staticmethod
    def _default_reference_point(F: np.ndarray) -> np.ndarray:
        finite = F[~np.isnan(F).any(axis=1)]
        if finite.size == 0:
            return None
        worst, best = finite.max(axis=0), finite.min(axis=0)
        with np.errstate(over="ignore"):  # near the largest double: handled below
            spread = worst - best
            ref = worst + np.where(spread > 0, 0.1 * spread, 1.0)
            # the range overflowed: its tenth as 0.1 worst - 0.1 best
            ref = np.where(np.isfinite(ref), ref, worst + (0.1 * worst - 0.1 * best))
        # still beyond the largest double, or no larger than worst (1 lost in a
        # huge worst): the next double above worst, the largest double at most
        top = np.finfo(np.float64).max
        return np.where(np.isfinite(ref) & (ref > worst), ref, np.minimum(np.nextafter(worst, np.inf), top))

    # ---- stop, result -----------------------------------------------------------
    def _stop(self) -> Dict[str, Any]:
        met: Dict[str, Any] = {}
        if self._max_evaluations is not None and self._evaluations >= self._max_evaluations:
            met["max_evaluations"] = self._max_evaluations
        if self._max_iterations is not None and self._generation >= self._max_iterations:
            met["max_iterations"] = self._max_iterations
        return met

    def pareto_set(self):
        """(X, F): the non-dominated members of P_t with numbers, duplicates
        (equal x) removed, sorted by the objectives (first one first)."""
        m = self._num_objectives or 0
        if self._X is None:
            return np.empty((0, self._num_params)), np.empty((0, m))
        best = np.flatnonzero((self._rank == 0) & ~np.isnan(self._F).any(axis=1))
        _, first = np.unique(self._X[best], axis=0, return_index=True)
        best = best[np.sort(first)]
        order = np.lexsort(self._F[best].T[::-1])
        best = best[order]
        return self._X[best].copy(), self._F[best].copy()

    def hypervolume(self, reference_point=None, *, samples: Optional[int] = None, seed: int = 0) -> float:
        """The hypervolume of the current Pareto set (see :func:`.pareto.hypervolume`:
        exact up to 3 objectives, Monte-Carlo with ``samples``); reference_point
        None: the strategy's (user-given or default)."""
        ref = self._reference_point if reference_point is None else reference_point
        if ref is None:
            raise ValueError("no reference point yet: pass reference_point (the default one is set "
                             "by the first tell)")
        return hypervolume(self.pareto_set()[1], ref, samples=samples, seed=seed)

    def _result(self) -> ParetoResult:
        X, F = self.pareto_set()
        ref = self._reference_point
        hv = None
        if ref is not None and self._X is not None and ref.size <= 3:
            hv = hypervolume(F, ref)
        return ParetoResult(pareto_x=X, pareto_f=F, hypervolume=hv,
                            reference_point=None if ref is None else ref.copy(),
                            evaluations=self._evaluations, iterations=self._generation)

    # ---- optimize -------------------------------------------------------------
    def optimize(self, f: Callable[[np.ndarray], Any], *, vectorized: bool = False, num_workers: int = 1,
                 backend: Optional[str] = None, max_iterations: Optional[int] = None,
                 callback: Optional[Callable[["AskTellStrategy"], Any]] = None) -> ParetoResult:
        """Minimises the objectives f(x) -> [m] (vectorized: f(X [k, n]) -> [k, m])
        until stop(); see :meth:`AskTellStrategy.optimize`. NSGA-II has no
        convergence test of its own: a budget (max_evaluations or
        max_iterations here or in the constructor) or a callback is required."""
        if max_iterations is None and callback is None and not self._stop() and \
                self._max_evaluations is None and self._max_iterations is None:
            raise ValueError("NSGA2.optimize needs a budget: max_evaluations or max_iterations "
                             "(NSGA2(...) or optimize(max_iterations=...)) or a callback that stops it")
        return super().optimize(f, vectorized=vectorized, num_workers=num_workers, backend=backend,
                                max_iterations=max_iterations, callback=callback)

    def _values_of(self, raw, x: np.ndarray, vectorized: bool) -> np.ndarray:
        if vectorized:
            v = np.asarray(raw, dtype=np.float64)
            if v.ndim != 2:
                raise ValueError(f"a vectorized f must return [{len(x)}, #objectives] values (one row "
                                 f"per row of its [{len(x)}, {x.shape[1]}] argument), got shape {v.shape}")
            return v
        rows = [np.asarray(r, dtype=np.float64) for r in raw]
        for i, r in enumerate(rows):
            if r.ndim != 1 or r.shape != rows[0].shape:
                raise ValueError(f"f must return a 1-D row of objective values of one length: f(row 0) "
                                 f"has shape {rows[0].shape}, f(row {i}) {r.shape}")
        return np.stack(rows)
