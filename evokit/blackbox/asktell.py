"""The one ask/tell base of EvoKit's black-box strategies (CMAES, SepCMAES, GA, OpenES).

pycma's contract, evosax's layout: :class:`AskTellStrategy` does the public
bookkeeping once (ask caching, the tell checks and the NaN policy, stop,
result, ``optimize`` with vectorised, process, thread or Ray evaluation) and a strategy
supplies small hooks:

- ``_ask()``: the solutions to evaluate, float64 [k, num_params];
- ``_tell(values)``: update from their f-values (checked, NaN handled, in
  the order of ``_ask``; a float64 copy the hook reads and must not
  change); validate before changing anything;
- ``_tell_solutions(solutions, values)`` (strategies with
  ``_learns_from_told_solutions``): the same when some told solutions
  differ from the asked ones;
- ``_stop()``: the strategy's own termination criteria that fired;
- ``_result()``: an :class:`OptimizeResult` (its ``stop`` is filled in here);
- ``iterations``: generations so far (``optimize(max_iterations=...)``).

Two families of messages exist, each kept word for word from the class that
introduced it (tests pin them): pycma's wording for the CMA-ES classes
(:data:`PYCMA_WORDING`) and the GA/OpenES wording (:data:`GA_WORDING`). Only
those strings differ; the checks and their order are the same.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

from .constraints import ConstraintHandler
from .parallel import Evaluation

__all__ = ["AskTellStrategy", "OptimizeResult", "Result", "NAN_POLICIES", "Wording"]

NAN_POLICIES = ("error", "worst")


@dataclasses.dataclass(kw_only=True)
class OptimizeResult:
    """The state of a run: the best solution so far, counts, and why it stopped.

    xbest / fbest: the best solution told so far and its f-value (CMA: an
    empty array and inf before the first tell; GA/OpenES: None and inf).
    xfavorite: the strategy's current best guess (CMA: the mean; GA: the
    elite, rebuilt from its seeds; OpenES: the centre). xmean, stds (CMA
    only): the mean of the search distribution mapped into the bounds, and
    sigma * sqrt(diag C). stop: name -> threshold of the criteria that ended
    the run ({} while it runs). restarts: CMA restarts done.

    With constraints (tell(..., constraints=G), see
    :mod:`evokit.blackbox.constraints`): xbest / fbest are the best FEASIBLE
    solution told and its true f-value (not the augmented Lagrangian the
    strategy ranks by); feasible says whether one was found (False: xbest
    None, fbest inf); gbest: xbest's constraint values; xbest_infeasible /
    gbest_infeasible: the solution with the smallest total violation.
    Without constraints feasible and these fields are None.

    success / message (scipy.optimize.OptimizeResult's convention): whether
    the run ended by converging, and why it ended. success is False while
    the run goes on (stop empty), when a budget or the user ended it
    (maxfevals / max_evaluations, maxiter / max_iterations, callback),
    when sigma diverged (tolupsigma), and, with constraints, when the run
    is not at a constrained optimum: no feasible solution was found, or
    none was told in the last 10 + ceil(30 n / population size)
    generations (the search distribution ended outside the feasible set,
    and xbest is an earlier point; see
    :meth:`evokit.blackbox.constraints.ConstraintHandler.unconverged`).
    Otherwise (ftarget, tolfun, tolx, ...) success is True.
    """

    xbest: Optional[np.ndarray]
    fbest: float
    evaluations: int
    iterations: int
    stop: Dict[str, Any] = dataclasses.field(default_factory=dict)
    xfavorite: Optional[np.ndarray] = None
    xmean: Optional[np.ndarray] = None
    stds: Optional[np.ndarray] = None
    restarts: int = 0
    feasible: Optional[bool] = None
    gbest: Optional[np.ndarray] = None
    xbest_infeasible: Optional[np.ndarray] = None
    gbest_infeasible: Optional[np.ndarray] = None
    success: bool = False
    message: str = ""


#: stop() names after which a run has not converged: budgets, the user, divergence.
_NOT_CONVERGED = {"maxfevals": "the evaluation budget is used up",
                  "max_evaluations": "the evaluation budget is used up",
                  "maxiter": "the iteration budget is used up",
                  "max_iterations": "the iteration budget is used up",
                  "callback": "the callback asked to stop",
                  "tolupsigma": "sigma grew by more than tolupsigma (divergence)"}


def _outcome(stop: Dict[str, Any], handler: Optional[ConstraintHandler]) -> tuple:
    """(success, message) of a result, see OptimizeResult."""
    if not stop:
        return False, "running: no termination criterion has fired yet"
    crit = ", ".join(f"{k}={v!r}" for k, v in stop.items())
    unconverged = None if handler is None else handler.unconverged()
    if unconverged is not None:
        return False, f"stopped ({crit}) before the constrained problem was solved: {unconverged}"
    why = [_NOT_CONVERGED[k] for k in stop if k in _NOT_CONVERGED]
    if why:
        return False, f"stopped ({crit}) before convergence: {'; '.join(dict.fromkeys(why))}"
    return True, f"optimization terminated successfully ({crit})"


#: The GA / OpenES name of the result type (the same class).
Result = OptimizeResult


@dataclasses.dataclass(frozen=True)
class Wording:
    """The messages that differ between the strategy families; str.format
    fields: name (the class), value, got / want (shapes), rows, first."""

    nan_policy: str
    no_ask: str
    twice: str
    shape: str
    differ: str
    noun: str     # what the rows of ask() are called in the NaN messages
    maxiter: str  # stop() key of optimize(max_iterations=...)


PYCMA_WORDING = Wording(
    nan_policy="nan_policy must be one of " + str(NAN_POLICIES) + ", got {value!r}",
    no_ask="tell() called without a preceding ask(): call ask() first",
    twice="tell() was already called for the last ask(): call ask() for the next generation before "
          "telling again",
    shape="#solutions = {got[0]} (of {got[1]} parameters) must equal population_size = {want[0]} "
          "(of {want[1]} parameters), the shape of the last ask()",
    differ="solutions must be those of the last ask(), in the same order: row {first} differs",
    noun="members", maxiter="maxiter")

GA_WORDING = Wording(
    nan_policy="nan_policy must be one of " + ", ".join(map(repr, NAN_POLICIES)) + ", got {value!r}",
    no_ask="{name}.tell() was called without a preceding ask()",
    twice="{name}.tell() was called twice: call ask() for new solutions before telling their f-values",
    shape="solutions have shape {got} but ask() returned {want}",
    differ="solutions {rows} differ from the ones ask() returned; {name} only learns from the "
           "solutions it asked for",
    noun="solutions", maxiter="max_iterations")


_NONE = np.zeros(0, dtype=np.intp)  # no rows


def _all_finite(v: np.ndarray) -> bool:
    """Whether every value is finite. A finite sum proves it (a NaN or an
    infinity makes the sum NaN or infinite); summing a short Python list is
    several times faster than NumPy's isfinite on the few values of a
    generation. A sum that overflowed is settled by isfinite."""
    if v.size <= 256 and math.isfinite(sum(v.ravel().tolist())):
        return True
    return bool(np.isfinite(v).all())


def _rows(mask: np.ndarray) -> np.ndarray:
    """The indices of the rows of a per-value mask (1-D or [rows, ...]) with any True."""
    return np.flatnonzero(mask.reshape(len(mask), -1).any(axis=1))


class AskTellStrategy:
    """The ask/tell contract shared by the black-box strategies (minimisation)."""

    _wording: Wording = PYCMA_WORDING
    #: ask() hands out a writable copy (True) or the read-only population itself.
    _ask_returns_copy = False
    #: Whether +-inf f-values can be handled (else ValueError naming them).
    _accepts_infinite = True
    #: Whether tell() takes solutions other than those of ask() (repaired,
    #: as pycma's CMA-ES): they go to _tell_solutions; else ValueError.
    _learns_from_told_solutions = False

    def __init__(self, num_params: int, nan_policy: str):
        if nan_policy not in NAN_POLICIES:
            raise ValueError(self._wording.nan_policy.format(value=nan_policy))
        self._num_params = int(num_params)
        self._nan_policy = nan_policy
        self._asked: Optional[np.ndarray] = None  # the population of the pending ask
        self._told = False                         # tell() already answered the last ask()
        self._extra_stop: Dict[str, Any] = {}      # stops decided by optimize (max_iterations, callback)
        self._constraints: Optional[ConstraintHandler] = None  # set by the first tell(constraints=G)
        self._tells = 0

    # ---- hooks ----------------------------------------------------------------
    def _ask(self) -> np.ndarray:
        raise NotImplementedError

    def _tell(self, values: np.ndarray) -> None:
        raise NotImplementedError

    def _tell_solutions(self, solutions: np.ndarray, values: np.ndarray) -> None:
        """_tell for told solutions of which some differ from _ask's (only with
        _learns_from_told_solutions)."""
        raise NotImplementedError

    def _stop(self) -> Dict[str, Any]:
        raise NotImplementedError

    def _constraints_started(self) -> None:
        """Called when tell() first ranks by the augmented Lagrangian: switch
        off the strategy's criteria that judge the spread of the values
        (tolfun, tolfunhist, the stagnation test): the Lagrangian's spread
        near the optimum is set by its penalty factors, not by f's
        precision, and its minimum rises while the multipliers move."""

    def _result(self) -> OptimizeResult:
        raise NotImplementedError

    @property
    def iterations(self) -> int:
        raise NotImplementedError

    def _nan_replacement(self, values: np.ndarray) -> float:
        """The worst value, given the batch's non-NaN values: their largest (+inf if none)."""
        return float(values.max()) if values.size else math.inf

    def _values_array(self, values) -> np.ndarray:
        """tell()'s values as a float64 array (a copy), its shape checked:
        one f-value per solution here; multi-objective strategies take rows."""
        v = np.array(values, dtype=np.float64)
        if v.ndim != 1:
            raise ValueError(f"f-values must be a 1-D sequence of numbers, got shape {v.shape}")
        return v

    def _values_of(self, raw, x: np.ndarray, vectorized: bool) -> np.ndarray:
        """optimize's values from what f returned (f(X) when vectorized, else
        the list of f(row)): one float per solution here; multi-objective
        strategies take rows."""
        if vectorized:
            v = np.asarray(raw, dtype=np.float64)
            if v.ndim != 1:  # a wrong length is tell()'s '#f-values = ...' error
                raise ValueError(f"a vectorized f must return {len(x)} values (one per row of its "
                                 f"[{len(x)}, {x.shape[1]}] argument), got shape {v.shape}")
            return v
        return np.array([float(r) for r in raw], dtype=np.float64)

    def _replace_nan(self, values: np.ndarray, rows: np.ndarray) -> str:
        """nan_policy='worst': fixes the NaN f-values of these rows in place
        and says how (for the warning)."""
        worst = self._nan_replacement(values[~np.isnan(values)])
        values[rows] = worst
        return f"replaced by the worst value {worst}"

    # ---- the public contract ----------------------------------------------------
    @property
    def num_params(self) -> int:
        return self._num_params

    @property
    def nan_policy(self) -> str:
        return self._nan_policy

    def ask(self) -> np.ndarray:
        """The solutions to evaluate, float64 [k, num_params]; asking again
        before tell() returns the same solutions."""
        if self._asked is None:
            x = self._ask()
            x.setflags(write=False)
            self._asked = x
            self._told = False
        return self._asked.copy() if self._ask_returns_copy else self._asked

    def tell(self, solutions: Union[np.ndarray, Sequence[Sequence[float]]],
             values: Union[np.ndarray, Sequence[float]], *,
             constraints: Optional[Union[np.ndarray, Sequence[Sequence[float]]]] = None) -> None:
        """Updates the strategy with the f-values (minimised) of the solutions of the last ask().

        `solutions` must be those ask() returned, in the same order (CMA-ES:
        or repaired versions of them, see its class); `values` holds one
        f-value per solution. NaN values follow nan_policy: 'error'
        raises ValueError naming them, 'worst' gives them the worst value of
        the batch with a RuntimeWarning naming them.

        constraints: None, or G [#solutions, m], row k the values g_i of
        solution k, feasible when every g_i <= 0 (finite; the same m at every
        tell, from the first on). The strategy then ranks by the adaptive
        augmented Lagrangian of :mod:`evokit.blackbox.constraints` and result
        reports the best feasible solution."""
        asked = self._asked
        if (solutions is asked and asked is not None and constraints is None and self._constraints is None
                and type(values) is np.ndarray and values.dtype == np.float64 and values.ndim == 1
                and len(values) == len(asked) and type(self)._values_array is AskTellStrategy._values_array
                and _all_finite(values)):
            # The common case, checked in a few cheap steps: ask()'s own
            # array, one finite f-value per row, no constraints. The same
            # update as the general path below.
            v = values.copy()
            self._tell(v)
            self._told_once()
            return
        w, name = self._wording, type(self).__name__
        if asked is None:
            raise RuntimeError((w.twice if self._told else w.no_ask).format(name=name))
        x = np.asarray(solutions, dtype=np.float64)
        v = self._values_array(values)
        if x.ndim != 2:
            raise ValueError(f"solutions must be a 2-D array [#solutions, num_params], got shape {x.shape}")
        if len(v) != len(x):
            raise ValueError("#f-values = %d must equal #solutions = %d" % (len(v), len(x)))  # pycma's
        if x.shape != asked.shape:
            raise ValueError(w.shape.format(got=x.shape, want=asked.shape))
        # (fast paths: the asked array itself, all values finite)
        differ = _NONE if x is asked or np.array_equal(x, asked) else np.flatnonzero(np.any(x != asked, axis=1))
        if differ.size and not self._learns_from_told_solutions:
            raise ValueError(w.differ.format(rows=differ.tolist(), first=int(differ[0]), name=name))
        finite = _all_finite(v)
        if not self._accepts_infinite and not finite:
            inf = _rows(np.isinf(v))
            if inf.size:
                raise ValueError(f"f-values of {w.noun} {inf.tolist()} are infinite; {name} "
                                 f"needs finite f-values")
        nan = _NONE if finite else _rows(np.isnan(v))
        if nan.size:
            if self._nan_policy == "error":
                raise ValueError(f"f-values of {w.noun} {nan.tolist()} are NaN (nan_policy='error'; "
                                 f"nan_policy='worst' ranks them last instead)")
            done = self._replace_nan(v, nan)
            warnings.warn(f"f-values of {w.noun} {nan.tolist()} are NaN: {done} "
                          f"(nan_policy='worst')", RuntimeWarning, stacklevel=2)
        handler = None
        if constraints is not None or self._constraints is not None:  # rank by the AL instead
            v, handler = ConstraintHandler.told(self._constraints, constraints, x, v, nan,
                                                self._num_params, self._tells)
        if differ.size:
            self._tell_solutions(x, v)  # raises before changing anything
        else:
            self._tell(v)
        if handler is not None and self._constraints is None:
            self._constraints_started()
        self._constraints = handler
        self._told_once()

    def tell_center(self, value: float, constraints) -> None:
        """After a tell(..., constraints=G): the f-value and the m constraint
        values of ``result.xfavorite``, the distribution's new centre. The
        augmented Lagrangian then adapts from the centre, as the papers do
        (X_{t+1} is the new mean, [P16] and [F17] of
        :mod:`evokit.blackbox.constraints`), instead of from the batch's best
        solution; a feasible centre counts as a solution for result.xbest,
        and the evaluation toward the evaluation count. The centre converges
        faster than the samples around it, so a constrained run reaches its
        precision with it. ``optimize(f, constraints=g)`` tells it every
        generation (one more evaluation per generation, as pycma's
        fmin_con2). ValueError unless the last call was such a tell."""
        handler = self._constraints
        if handler is None or not self._told:
            raise ValueError("tell_center() follows a tell(..., constraints=G), once per tell")
        handler.center(self._favorite(), value, constraints)
        self._count_evaluations(1)

    def _favorite(self) -> np.ndarray:
        """result.xfavorite without building the result (the strategies override it)."""
        return self.result.xfavorite

    def _count_evaluations(self, n: int) -> None:
        """Counts n evaluations made outside the generations (the centre's)."""
        raise NotImplementedError

    def _told_once(self) -> None:
        """tell()'s bookkeeping once the strategy has updated: the ask is answered."""
        self._tells += 1
        self._asked = None
        self._told = True

    def stop(self) -> Dict[str, Any]:
        """name -> threshold of the termination criteria that fired; {} while the run goes on."""
        out = dict(self._stop())
        out.update(self._extra_stop)
        return out

    @property
    def result(self) -> OptimizeResult:
        r = self._result()
        r.stop = self.stop()
        if self._constraints is not None:
            self._constraints.report(r)
        if isinstance(r, OptimizeResult):
            r.success, r.message = _outcome(r.stop, self._constraints)
        return r

    @property
    def constraint_handler(self) -> Optional[ConstraintHandler]:
        """The constraint state (None until tell(constraints=G)): its
        ``lagrangian`` holds the multipliers and penalty factors."""
        return self._constraints

    def optimize(self, f: Callable[[np.ndarray], Any], *, vectorized: bool = False, num_workers: int = 1,
                 backend: Optional[str] = None, max_iterations: Optional[int] = None,
                 callback: Optional[Callable[["AskTellStrategy"], Any]] = None,
                 constraints: Optional[Callable[[np.ndarray], Any]] = None) -> OptimizeResult:
        """Minimises f until stop() is non-empty and returns the result.

        vectorized: f takes the solutions [k, num_params] and returns k values.
        num_workers > 1: the rows of a generation are split into num_workers
            chunks evaluated in parallel by ``backend``: "process" (the
            default: spawned worker processes, f sent once by cloudpickle,
            so an f that holds the GIL gains), "thread" (a thread pool, for
            an f that releases the GIL) or "ray" (Ray actors; a local Ray
            is started unless Ray is initialised). Values are told in
            order: the result is the serial run's for any backend and
            num_workers (evokit.blackbox.parallel).
        max_iterations: stop after that many more generations (stop() names
            it: 'maxiter' for CMA, 'max_iterations' for GA/OpenES).
        callback(strategy) after each tell(); returning True stops
            (stop()['callback']).
        constraints: g(x) -> the m constraint values of x (g_i <= 0 feasible;
            vectorized: g(X) -> [k, m]), evaluated with f (in the same
            worker) and told with tell(constraints=...); after each tell the
            centre (result.xfavorite) is evaluated too and told with
            tell_center (one more evaluation of f and g per generation,
            counted in result.evaluations). A constrained run
            that ends away from a constrained optimum (no feasible solution,
            or none in the last generations: see OptimizeResult.success)
            warns (RuntimeWarning, the result's message) and returns
            success=False.
        """
        if max_iterations is not None and (isinstance(max_iterations, bool)
                                           or int(max_iterations) != max_iterations or max_iterations < 1):
            raise ValueError(f"max_iterations must be an integer >= 1 or None, got {max_iterations!r}")
        evaluate = Evaluation(f, vectorized=vectorized, num_workers=num_workers, backend=backend,
                              constraints=constraints)
        self._extra_stop = {}
        start = self.iterations
        try:
            while not self.stop():
                x = self.ask()
                raw, g = evaluate(x)
                v = self._values_of(raw, x, vectorized)
                if constraints is None:
                    self.tell(x, v)
                else:
                    self.tell(x, v, constraints=g)
                    centre = np.asarray(self._favorite(), dtype=np.float64)[None, :]
                    raw, g = evaluate(centre)
                    self.tell_center(self._values_of(raw, centre, vectorized)[0], g[0])
                if callback is not None and callback(self) is True:
                    self._extra_stop["callback"] = True
                if max_iterations is not None and self.iterations - start >= max_iterations:
                    self._extra_stop[self._wording.maxiter] = int(max_iterations)
        finally:
            evaluate.close()
        r = self.result
        if constraints is not None and self._constraints is not None and self._constraints.unconverged():
            warnings.warn(f"{type(self).__name__}.optimize: {r.message}", RuntimeWarning, stacklevel=2)
        return r
