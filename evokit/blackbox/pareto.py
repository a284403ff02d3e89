"""Pareto tools for minimised objective vectors (rows of F [k, m]): the
non-dominated sort and crowding distance of NSGA-II, and the hypervolume.

- :func:`nondominated_ranks`: Deb, Pratap, Agarwal, Meyarivan 2002, "A fast
  and elitist multiobjective genetic algorithm: NSGA-II", IEEE TEVC 6(2),
  Sec. III-A, fast-non-dominated-sort: n_p (how many solutions dominate p)
  and S_p (the solutions p dominates); front 1 is {p : n_p = 0}; removing a
  front decrements n_q for every q in S_p of its members and the next front
  is the new zeros. Done with a boolean domination matrix: O(m k^2) time,
  k^2 bytes of memory (fine up to k of a few thousand).
- :func:`crowding_distances`: ibid. Sec. III-B, crowding-distance-assignment:
  per front and objective, sort by that objective (stable sort: ties keep
  their index order); the two boundary solutions get infinity, every other
  one adds (f[i+1] - f[i-1]) / (f_max - f_min) of its neighbours in that
  order, f_max / f_min the front's extremes (an objective constant on the
  front still marks its first and last rows in that order as boundaries, and
  adds nothing to the others). Fronts of one or two solutions are all infinite.
- :func:`hypervolume`: the Lebesgue measure of the region dominated by the
  points and bounded by the reference point (Zitzler & Thiele 1998, the
  "S metric"). Exact for m <= 3: m = 1 is ref - min; m = 2 the sweep over
  the non-dominated points sorted by f_1 (a sum of rectangles); m = 3 slices
  along f_3 (While, Hingston, Barone, Huband 2006, "A faster algorithm for
  calculating hypervolume", IEEE TEVC 10(1), HSO, one slicing step) with the
  2-D sweep in each slab: O(k^2 log k). m >= 4 is refused unless a
  Monte-Carlo estimate is asked for (``samples``): uniform points in the box
  [min of the points, ref], counted when some point weakly dominates them;
  its standard error is volume * sqrt(p (1 - p) / samples).

A point adds to the hypervolume only where it is strictly better than the
reference point in every objective; points that are not add nothing.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

__all__ = ["dominates", "nondominated_ranks", "nondominated_fronts", "crowding_distances",
           "hypervolume", "EXACT_HYPERVOLUME_MAX_OBJECTIVES"]

#: The largest number of objectives :func:`hypervolume` computes exactly.
EXACT_HYPERVOLUME_MAX_OBJECTIVES = 3


def _objectives(F, name: str = "F") -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D array [#points, #objectives >= 1], got shape {F.shape}")
    bad = np.flatnonzero(np.isnan(F).any(axis=1))
    if bad.size:
        raise ValueError(f"{name} rows {bad.tolist()} hold NaN objective values")
    return F


def dominates(F) -> np.ndarray:
    """D[i, j] = row i Pareto-dominates row j (minimisation): F[i] <= F[j]
    in every objective and < in at least one. Boolean [k, k]."""
    F = _objectives(F)
    k, m = F.shape
    no_worse = np.ones((k, k), dtype=bool)
    better = np.zeros((k, k), dtype=bool)
    for j in range(m):  # one objective at a time: k^2 booleans, not k^2 m
        col = F[:, j]
        no_worse &= col[:, None] <= col[None, :]
        better |= col[:, None] < col[None, :]
    return no_worse & better


def nondominated_ranks(F) -> np.ndarray:
    """The front of each row (0 = non-dominated), int64 [k]: Deb et al. 2002,
    Sec. III-A. Equal rows share a front."""
    D = dominates(F)
    k = D.shape[0]
    count = D.sum(axis=0)          # n_p: how many rows dominate p
    rank = np.full(k, -1, dtype=np.int64)
    front = np.flatnonzero(count == 0)
    r = 0
    while front.size:
        rank[front] = r
        count = count - D[front].sum(axis=0)  # every q in S_p loses one dominator
        count[rank >= 0] = -1                 # placed rows never come back
        front = np.flatnonzero(count == 0)
        r += 1
    return rank


def nondominated_fronts(F) -> List[np.ndarray]:
    """The fronts as arrays of row indices (ascending), best first."""
    rank = nondominated_ranks(F)
    return [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1 if rank.size else 0)]


def crowding_distances(F, ranks: Optional[np.ndarray] = None) -> np.ndarray:
    """The crowding distance of each row within its front (Deb et al. 2002,
    Sec. III-B), float64 [k]; boundary rows are inf. ranks: the fronts
    (default: :func:`nondominated_ranks` of F); all zeros treats the rows as
    one front."""
    F = _objectives(F)
    ranks = nondominated_ranks(F) if ranks is None else np.asarray(ranks)
    if ranks.shape != (F.shape[0],):
        raise ValueError(f"ranks must have shape ({F.shape[0]},) (one per row of F), got {ranks.shape}")
    distance = np.zeros(F.shape[0])
    for r in np.unique(ranks):
        members = np.flatnonzero(ranks == r)
        distance[members] = _front_crowding(F[members])
    return distance


def _front_crowding(F: np.ndarray) -> np.ndarray:
    k, m = F.shape
    d = np.zeros(k)
    if k <= 2:
        d[:] = np.inf
        return d
    for j in range(m):
        order = np.argsort(F[:, j], kind="stable")
        f = F[order, j]
        d[order[0]] = d[order[-1]] = np.inf
        with np.errstate(over="ignore"):
            span = f[-1] - f[0]
        if span == np.inf:  # values of opposite signs near the largest double: halved (exact)
            f = 0.5 * f
            span = f[-1] - f[0]
        if span > 0:
            d[order[1:-1]] += (f[2:] - f[:-2]) / span
    return d


def hypervolume(F, reference_point, *, samples: Optional[int] = None, seed: int = 0) -> float:
    """The hypervolume of the points F [k, m] (minimised) with respect to
    reference_point [m]. Exact for m <= 3; with ``samples`` a Monte-Carlo
    estimate for any m (``samples`` uniform points, Philox-seeded by seed).
    An empty F (shape (0, m)) has hypervolume 0; a volume beyond the
    largest double is inf."""
    F = np.asarray(F, dtype=np.float64)
    ref = np.asarray(reference_point, dtype=np.float64)
    if ref.ndim != 1 or ref.size == 0 or not np.all(np.isfinite(ref)):
        raise ValueError(f"reference_point must be a non-empty 1-D sequence of finite numbers, "
                         f"got {reference_point!r}")
    m = ref.size
    if F.ndim == 2 and F.shape == (0, m):
        return 0.0
    F = _objectives(F)
    if F.shape[1] != m:
        raise ValueError(f"F has {F.shape[1]} objectives but reference_point has {m}")
    P = F[np.all(F < ref, axis=1)]  # only points strictly better than ref add volume
    with np.errstate(over="ignore"):  # a volume beyond the largest double is inf
        return _hypervolume(P, ref, samples, seed)


def _hypervolume(P: np.ndarray, ref: np.ndarray, samples: Optional[int], seed: int) -> float:
    m = ref.size
    if samples is None:
        if m > EXACT_HYPERVOLUME_MAX_OBJECTIVES:
            raise ValueError(f"the exact hypervolume is implemented for at most "
                             f"{EXACT_HYPERVOLUME_MAX_OBJECTIVES} objectives, got {m}; pass "
                             f"samples=N for a Monte-Carlo estimate")
        if P.shape[0] == 0:
            return 0.0
        if m == 1:
            return float(ref[0] - P[:, 0].min())
        if m == 2:
            return _hv2(P, ref)
        return _hv3(P, ref)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be an integer >= 1 or None (exact), got {samples!r}")
    if P.shape[0] == 0:
        return 0.0
    return _hv_monte_carlo(P, ref, int(samples), seed)


def _hv2(P: np.ndarray, ref: np.ndarray) -> float:
    """2-D sweep: sorted by f1 (then f2), the running minimum of f2 marks the
    non-dominated points; each adds the rectangle up to the next one's f1."""
    order = np.lexsort((P[:, 1], P[:, 0]))
    f1, f2 = P[order, 0], P[order, 1]
    best = np.minimum.accumulate(f2)
    keep = np.concatenate(([True], best[1:] < best[:-1]))
    f1, f2 = f1[keep], best[keep]
    widths = np.diff(np.append(f1, ref[0]))
    return float(np.sum(widths * (ref[1] - f2)))


def _hv3(P: np.ndarray, ref: np.ndarray) -> float:
    """HSO's slicing along f3: between consecutive f3 levels, the area
    dominated in (f1, f2) by the points at or below the lower level."""
    order = np.argsort(P[:, 2], kind="stable")
    P = P[order]
    levels = np.append(P[:, 2], ref[2])
    total = 0.0
    for i in range(P.shape[0]):
        depth = levels[i + 1] - levels[i]
        if depth > 0:
            total += depth * _hv2(P[:i + 1, :2], ref[:2])
    return total


def _hv_monte_carlo(P: np.ndarray, ref: np.ndarray, samples: int, seed: int) -> float:
    low = P.min(axis=0)
    volume = float(np.prod(ref - low))
    rng = np.random.Generator(np.random.Philox(key=seed))
    hits, done, chunk = 0, 0, max(1, 2 ** 22 // max(1, P.size))
    while done < samples:
        c = min(chunk, samples - done)
        U = low + (ref - low) * rng.random((c, P.shape[1]))
        covered = np.zeros(c, dtype=bool)
        for p in P:
            covered |= np.all(U >= p, axis=1)
        hits += int(covered.sum())
        done += c
    return volume * hits / samples
