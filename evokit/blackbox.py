"""Black-box minimisation with ask/tell strategies: CMAES and SepCMAES.

    es = evokit.CMAES(x0, sigma0)
    while not es.stop():
        X = es.ask()                          # [population_size, num_params] float64
        es.tell(X, [f(x) for x in X])
    print(es.result.xbest, es.result.fbest)

or simply ``evokit.CMAES(x0, sigma0).optimize(f)``. The semantics and messages
follow pycma's (ask / tell / stop / result); the numbers come from the C++
core (cpp/include/evokit/cma_es.h), which documents the algorithm (Hansen's
tutorial, arXiv:1604.00772), the keys samples are drawn from, the bound
transformation and the termination criteria.

AskTellStrategy holds the bookkeeping every strategy shares (the tell
contract, NaN policy, optimize with parallel evaluation, result); a strategy
supplies four small hooks: _ask, _tell, _stop and _result.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from . import _core

__all__ = ["CMAES", "AskTellStrategy", "OptimizeResult", "SepCMAES"]

NAN_POLICIES = ("error", "worst")


@dataclasses.dataclass(frozen=True)
class OptimizeResult:
    """The state of a run: best solution so far, counts, and why it stopped."""

    xbest: np.ndarray       # best solution evaluated (in the bounds); empty before the first tell
    fbest: float            # its value (inf before the first tell)
    evaluations: int        # f-values told, over all restarts
    iterations: int         # generations, over all restarts
    xmean: np.ndarray       # the mean of the search distribution (mapped into the bounds)
    stds: np.ndarray        # sigma * sqrt(diag C): the coordinate-wise standard deviations
    stop: dict[str, Any]    # name -> threshold of the criteria that ended the run ({} while it runs)
    restarts: int = 0       # restarts done


class AskTellStrategy:
    """The ask/tell contract shared by the black-box strategies.

    Subclasses implement four hooks:
      _ask() -> float64 array [population_size, num_params]  (the core samples)
      _tell(values)   the f-values, float64 [population_size], NaN-free, in the order of _ask()
      _stop() -> dict the core's termination criteria that fired
      _result() -> OptimizeResult without the stop field
    and set self._num_params; population_size is read from the last ask.
    """

    def __init__(self, num_params: int, nan_policy: str):
        if nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
        self._num_params = int(num_params)
        self._nan_policy = nan_policy
        self._asked: np.ndarray | None = None  # the population of the pending ask
        self._told = False                         # tell() already answered the last ask()
        self._extra_stop: dict[str, Any] = {}      # stops decided in Python (maxiter, callback)

    # ---- hooks ----------------------------------------------------------------
    def _ask(self) -> np.ndarray:
        raise NotImplementedError

    def _tell(self, values: np.ndarray) -> None:
        raise NotImplementedError

    def _stop(self) -> dict[str, Any]:
        raise NotImplementedError

    def _result(self) -> OptimizeResult:
        raise NotImplementedError

    # ---- the public contract ----------------------------------------------------
    @property
    def num_params(self) -> int:
        return self._num_params

    @property
    def nan_policy(self) -> str:
        return self._nan_policy

    def ask(self) -> np.ndarray:
        """The population to evaluate, a read-only float64 array [population_size, num_params].

        Asking again before tell() returns the same population."""
        x = self._ask()
        x.setflags(write=False)
        self._asked = x
        self._told = False
        return x

    def tell(self, solutions: np.ndarray | Sequence[Sequence[float]],
             values: np.ndarray | Sequence[float]) -> None:
        """Updates the strategy with the f-values (minimised) of the solutions of the last ask().

        `solutions` must be those ask() returned, in the same order; `values`
        holds one f-value per solution. NaN values follow nan_policy: 'error'
        raises ValueError naming the members, 'worst' gives them the largest
        non-NaN value of the population (+inf if there is none) with a
        RuntimeWarning naming them."""
        if self._asked is None:
            if self._told:
                raise RuntimeError("tell() was already called for the last ask(): call ask() for the next "
                                   "generation before telling again")
            raise RuntimeError("tell() called without a preceding ask(): call ask() first")
        asked = self._asked
        x = solutions if isinstance(solutions, np.ndarray) else np.asarray(solutions, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"values must be a 1-D sequence of f-values, got shape {v.shape}")
        if x.ndim != 2:
            raise ValueError(f"solutions must be a 2-D array [population_size, num_params], got shape {x.shape}")
        if len(v) != len(x):
            raise ValueError(f"#f-values = {len(v)} must equal #solutions = {len(x)}")  # pycma's message
        if x.shape != asked.shape:
            raise ValueError(f"#solutions = {x.shape[0]} (of {x.shape[1]} parameters) must equal "
                             f"population_size = {asked.shape[0]} (of {asked.shape[1]} parameters), the shape "
                             f"of the last ask()")
        if x is not asked and not np.array_equal(x, asked):
            row = int(np.flatnonzero(np.any(x != asked, axis=1))[0])
            raise ValueError(f"solutions must be those of the last ask(), in the same order: row {row} differs")
        v = self._apply_nan_policy(v)
        self._tell(v)
        self._asked = None
        self._told = True

    def _apply_nan_policy(self, v: np.ndarray) -> np.ndarray:
        nan = np.isnan(v)
        if not nan.any():
            return v
        members = np.flatnonzero(nan).tolist()
        if self._nan_policy == "error":
            raise ValueError(f"f-values of members {members} are NaN (nan_policy='error'; "
                             f"nan_policy='worst' ranks them last instead)")
        finite = v[~nan]
        worst = float(finite.max()) if finite.size else math.inf
        warnings.warn(f"f-values of members {members} are NaN: replaced by the worst value {worst} "
                      f"(nan_policy='worst')", RuntimeWarning, stacklevel=3)
        return np.where(nan, worst, v)

    def stop(self) -> dict[str, Any]:
        """name -> threshold of the termination criteria that fired; {} while the run goes on."""
        out = dict(self._stop())
        out.update(self._extra_stop)
        return out

    @property
    def result(self) -> OptimizeResult:
        return dataclasses.replace(self._result(), stop=self.stop())

    def optimize(self, f: Callable[[np.ndarray], Any], *, vectorized: bool = False, num_workers: int = 1,
                 max_iterations: int | None = None,
                 callback: Callable[[AskTellStrategy], Any] | None = None) -> OptimizeResult:
        """Minimises f until stop() is non-empty and returns the result.

        vectorized: f takes the population [population_size, num_params] and
            returns its population_size values.
        num_workers > 1: f(x) is called for the members on a pool of that
            many threads, so f must be thread-safe (NumPy and most native code
            release the GIL). Results do not depend on num_workers.
        max_iterations: stop after that many generations of this call
            (stop()['maxiter']).
        callback(strategy) after each tell(); returning True stops
            (stop()['callback']).
        """
        if vectorized and num_workers != 1:
            raise ValueError("vectorized=True evaluates the population in one call: num_workers must be 1, "
                             f"got {num_workers}")
        if int(num_workers) != num_workers or num_workers < 1:
            raise ValueError(f"num_workers must be an integer >= 1, got {num_workers!r}")
        if max_iterations is not None and (int(max_iterations) != max_iterations or max_iterations < 1):
            raise ValueError(f"max_iterations must be an integer >= 1 or None, got {max_iterations!r}")
        self._extra_stop = {}
        pool = ThreadPoolExecutor(max_workers=int(num_workers)) if num_workers > 1 else None
        try:
            done = 0
            while not self.stop():
                x = self.ask()
                self.tell(x, self._evaluate(f, x, vectorized, pool))
                done += 1
                if callback is not None and callback(self) is True:
                    self._extra_stop["callback"] = True
                if max_iterations is not None and done >= max_iterations:
                    self._extra_stop["maxiter"] = int(max_iterations)
        finally:
            if pool is not None:
                pool.shutdown()
        return self.result

    @staticmethod
    def _evaluate(f, x: np.ndarray, vectorized: bool, pool: ThreadPoolExecutor | None) -> np.ndarray:
        if vectorized:
            v = np.asarray(f(x), dtype=np.float64)
            if v.shape != (len(x),):
                raise ValueError(f"a vectorized f must return {len(x)} values (one per row of its "
                                 f"[{len(x)}, {x.shape[1]}] argument), got shape {v.shape}")
            return v
        if pool is not None:
            return np.fromiter(pool.map(lambda row: float(f(row)), x), dtype=np.float64, count=len(x))
        return np.fromiter((float(f(row)) for row in x), dtype=np.float64, count=len(x))


def _bounds(bounds, n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    if bounds is None:
        return None, None
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"bounds must be a pair (lower, upper) of scalars, arrays of {n} or None, got {bounds!r}")
    out = []
    for side, default in zip(bounds, (-math.inf, math.inf)):
        b = np.full(n, default) if side is None else np.asarray(side, dtype=np.float64)
        if b.ndim == 0:
            b = np.full(n, float(b))
        out.append(b)
    return out[0], out[1]


class _CMABlackBox(AskTellStrategy):
    _core_class: Any = None

    def __init__(self, x0, sigma0: float, *, population_size: int | None = None, seed: int = 0,
                 bounds=None, max_evaluations: int | None = None, ftarget: float | None = None,
                 tolfun: float = 1e-11, tolfunhist: float = 1e-12, tolx: float = 1e-11,
                 tolstagnation: int | None = None, conditioncov: float = 1e14, tolupsigma: float = 1e20,
                 restarts: int = 0, restart_strategy: str = "ipop", nan_policy: str = "error",
                 num_threads: int = 1):
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim != 1:
            raise ValueError(f"x0 must be a 1-D array of the initial solution, got shape {x0.shape}")
        super().__init__(x0.size, nan_policy)
        lower, upper = _bounds(bounds, x0.size)
        self._es = self._core_class(
            x0, float(sigma0), population_size=population_size, seed=seed, lower=lower, upper=upper,
            max_evaluations=max_evaluations, ftarget=-math.inf if ftarget is None else float(ftarget),
            tolfun=tolfun, tolfunhist=tolfunhist, tolx=tolx, tolstagnation=tolstagnation,
            conditioncov=conditioncov, tolupsigma=tolupsigma, restarts=restarts,
            restart_strategy=restart_strategy, num_threads=num_threads)

    # hooks
    def _ask(self) -> np.ndarray:
        return self._es.ask()

    def _tell(self, values: np.ndarray) -> None:
        self._es.tell(values)

    def _stop(self) -> dict[str, Any]:
        return self._es.stop()

    def _result(self) -> OptimizeResult:
        es = self._es
        return OptimizeResult(xbest=es.best_solution, fbest=es.best_value, evaluations=es.evaluations,
                              iterations=es.iterations, xmean=es.mean_solution, stds=es.stds, stop={},
                              restarts=es.restarts_done)

    # CMA specifics
    @property
    def population_size(self) -> int:
        """lambda of the current run (IPOP/BIPOP restarts change it)."""
        return self._es.population_size

    @property
    def sigma(self) -> float:
        return float(self._es.get_state()["sigma"])

    @property
    def keys(self) -> np.ndarray:
        """The noise keys of the last ask(), one per member: log them to rebuild the samples."""
        return self._es.keys

    def regenerate(self, key: int) -> np.ndarray:
        """The solution drawn with `key` under the current state (== its row of ask())."""
        return self._es.regenerate(key)

    @property
    def core(self):
        """The compiled strategy (evokit._core.CMAES / SepCMAES): state, keys, tell_keys."""
        return self._es


class CMAES(_CMABlackBox):
    """Full-covariance CMA-ES (Hansen's tutorial, arXiv:1604.00772), minimising.

    x0, sigma0: the initial mean and step size (about a quarter of the
        search range is a good sigma0).
    population_size: None is the tutorial's default 4 + floor(3 ln n).
    seed: the noise seed; same seed, same run, bit for bit, for any
        num_threads.
    bounds: None or (lower, upper), each a scalar, an array of n, or None
        (unbounded on that side); solutions are mapped into the box by mirror
        reflection, the mean lives in the unbounded space.
    max_evaluations (pycma's maxfevals), ftarget (stop once an f-value
        <= ftarget), tolfun, tolfunhist, tolx, tolstagnation (iterations;
        None: 100 + 100 n^1.5 / population_size), conditioncov, tolupsigma:
        termination criteria, reported by stop() under pycma's names.
    restarts, restart_strategy: up to `restarts` restarts after a stop by
        any criterion but maxfevals and ftarget; 'ipop' doubles the population
        each time, 'bipop' alternates that with small populations and step
        sizes (Hansen 2009).
    nan_policy: 'error' (ValueError) or 'worst' (RuntimeWarning; NaN members
        get the population's worst value).
    num_threads: OpenMP threads of the core (sampling, covariance update,
        eigendecomposition); results do not depend on it.
    """

    _core_class = _core.CMAES


class SepCMAES(_CMABlackBox):
    """Separable CMA-ES (Ros & Hansen 2008): a diagonal covariance matrix, linear time and
    memory per sample, for high dimensions. Options as CMAES."""

    _core_class = _core.SepCMAES
