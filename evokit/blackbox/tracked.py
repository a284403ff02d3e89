"""The bookkeeping of the black-box strategies whose C++ core does not keep it
(GA and OpenES): :class:`TrackedStrategy`, and the argument checks they share.

The ask / tell contract (value checks and NaN policy, stop, result,
``optimize``) is :class:`~evokit.blackbox.asktell.AskTellStrategy`'s, the one
base shared with CMAES; ``TrackedStrategy`` adds what the C++ CMA core does
for itself (evaluation counts, the best solution, the stop criteria) and asks
a strategy for three hooks: ``_ask`` (the solutions to evaluate),
``_tell_strategy`` (update from the checked f-values; says whether an
iteration is complete) and ``_favorite`` (its current best guess).

Parameters live in float32 in the core: x0 is rounded to float32, and the
solutions handed out are float32 values stored in float64 arrays.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from .. import _core
from ..solvers.options import Rule, given
from .asktell import GA_WORDING, AskTellStrategy, Result

__all__ = ["ASK_TELL", "EVEN_POPULATION_SIZE", "POPULATION_SIZE", "STOP", "TOLSTAGNATION", "TrackedStrategy",
           "default_population_size", "check_int", "check_positive", "check_x0", "float32_rewards"]

#: pycma's default thresholds (evokit/termination.h), the defaults of every class's arguments.
STOP: Dict[str, float] = dict(_core.STOP_DEFAULTS)
#: The defaults of the arguments that only the ask / tell classes take (the
#: training options' are proto/evokit.proto's: proto_default), in one place.
ASK_TELL: Dict[str, object] = {"seed": 0, "nan_policy": "error", "num_threads": 1,
                               # GA, OpenES and ARS: off (a fixed mutation / noise scale
                               # keeps the best f-values of a plateau apart by sampling noise)
                               "fixed_scale_tolfunhist": 0.0}
#: The defaults the core computes per problem, as signatures show them.
POPULATION_SIZE = Rule(_core.DEFAULT_POPULATION_RULE)
EVEN_POPULATION_SIZE = Rule(_core.DEFAULT_POPULATION_RULE + ", rounded up to even")
TOLSTAGNATION = Rule(_core.TOLSTAGNATION_RULE)


def default_population_size(n: int, even: bool) -> int:
    """POPULATION_SIZE (EVEN_POPULATION_SIZE when ``even``) for dimension n."""
    size = _core.default_population_size(n)
    return size + size % 2 if even else size


def check_x0(x0) -> np.ndarray:
    x = np.array(x0, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x0 must be a non-empty 1-D sequence of numbers, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"x0[{bad[0]}] is {x[bad[0]]}")
    return x


FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_float32(cls: str, x0: np.ndarray, sigma) -> None:
    """Refuses an x0 or sigma beyond float32's range (3.4e38) for the
    strategies whose centre and noise live in float32 (GA, OpenES): there
    they would turn into inf."""
    big = np.flatnonzero(np.abs(x0) > FLOAT32_MAX)
    if big.size:
        raise ValueError(f"x0[{big[0]}] = {float(x0[big[0]])!r} exceeds float32's range (3.4e38), in which {cls} "
                         f"keeps its solutions")
    if isinstance(sigma, (int, float, np.integer, np.floating)) and not isinstance(sigma, bool) \
            and math.isfinite(sigma) and abs(sigma) > FLOAT32_MAX:
        raise ValueError(f"sigma = {sigma!r} exceeds float32's range (3.4e38), in which {cls} draws its noise")


def float32_rewards(values: np.ndarray, refuse_beyond: Optional[str] = None) -> np.ndarray:
    """-values as the float32 rewards of the core. Finite f-values beyond
    float32's range (|f| > 3.4e38) are scaled by a power of two, which is
    exact: ranks, z-scores and ARS's reward-normalised step are unchanged.
    A strategy whose step is proportional to the rewards passes
    ``refuse_beyond``, the end of the refusal's sentence, and they are
    refused instead."""
    rewards = -values
    big = float(np.abs(rewards).max()) if rewards.size else 0.0
    if big > FLOAT32_MAX:
        if refuse_beyond is not None:
            rows = np.flatnonzero(np.abs(values) > FLOAT32_MAX).tolist()
            raise ValueError(f"f-values of solutions {rows} exceed float32's range (3.4e38), {refuse_beyond}")
        rewards = np.ldexp(rewards, 127 - math.frexp(big)[1])  # |rewards| < 2^127
    return rewards.astype(np.float32)


def check_positive(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be > 0 and finite, got {value!r}")
    return value


def check_int(name: str, value, lowest: int, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lowest:
        raise ValueError(f"{name} must be an integer >= {lowest}, got {value!r}")
    return int(value)


class TrackedStrategy(AskTellStrategy):
    """The bookkeeping GA and OpenES add to the shared ask / tell contract
    (minimisation): evaluation counts, the best solution and the stop criteria.

    Stop criteria (``stop()`` returns the met ones, name -> threshold): the
    core's, pycma's definitions (evokit/termination.h), the same code as
    CMAES's: ``max_evaluations`` and ``max_iterations`` (None: no limit),
    ``ftarget`` (fbest <= ftarget; None: none), ``tolfun`` (the f-values of
    the last iteration, and the best f-values of the last 10 + ceil(30 n /
    population) iterations, each span less than tolfun), ``tolfunhist``
    (those best f-values span less than tolfunhist; GA, OpenES and ARS
    default to 0, off: a fixed-width search's best f-value can stay flat
    for many iterations while it still improves) and ``tolstagnation``
    (after ``stagnation_iterations`` iterations, default 100 + 100 n^1.5 /
    population, the medians of the recent best and median f-values are no
    better than the older ones').
    """

    _wording = GA_WORDING
    _ask_returns_copy = True

    def __init__(self, x0, sigma, *, population_size: int, nan_policy: str,
                 max_evaluations: Optional[int], max_iterations: Optional[int],
                 ftarget: Optional[float], tolfun: float, stagnation_iterations: Optional[int],
                 num_threads: int, tolfunhist: float = STOP["tolfunhist"]):
        self._x0 = check_x0(x0)
        self._sigma = float(check_positive("sigma", sigma))
        super().__init__(self._x0.size, nan_policy)
        self._num_threads = check_int("num_threads", num_threads, 1)
        self._max_evaluations = check_int("max_evaluations", max_evaluations, 1, allow_none=True)
        self._max_iterations = check_int("max_iterations", max_iterations, 1, allow_none=True)
        if ftarget is not None and (isinstance(ftarget, bool) or math.isnan(ftarget)):
            raise ValueError(f"ftarget must be a number or None, got {ftarget!r}")
        self._ftarget = None if ftarget is None else float(ftarget)
        if not (isinstance(tolfun, (int, float)) and tolfun >= 0):
            raise ValueError(f"tolfun must be >= 0, got {tolfun!r}")
        self._tolfun = float(tolfun)
        if not (isinstance(tolfunhist, (int, float)) and tolfunhist >= 0):
            raise ValueError(f"tolfunhist must be >= 0, got {tolfunhist!r}")
        self._tolfunhist = float(tolfunhist)
        self._stagnation_iterations = check_int("stagnation_iterations", given(stagnation_iterations), 1,
                                                allow_none=True)
        self._population_size = population_size  # the windows of the stop criteria
        self._history = _core.FValueHistory()  # pickles as the core's own entries

        self._evaluations = 0
        self._iterations = 0
        self._xbest: Optional[np.ndarray] = None
        self._fbest = math.inf
        self._iteration_values: List[np.ndarray] = []

    # ---- the hooks --------------------------------------------------------
    def _tell_strategy(self, values: np.ndarray) -> bool:
        """Update from the f-values of _ask's solutions (checked, NaN
        handled). Validate before changing state. True when an iteration ended."""
        raise NotImplementedError

    def _favorite(self) -> np.ndarray:
        raise NotImplementedError

    def _nan_replacement(self, values: np.ndarray) -> float:
        """The worst value, given the batch's non-NaN values."""
        return math.inf

    def _constraints_started(self) -> None:
        # the criteria that judge the spread of h, not f's precision: off
        self._stagnation_iterations = 2 ** 62
        self._tolfun = 0.0
        self._tolfunhist = 0.0

    # ---- bookkeeping --------------------------------------------------------
    @property
    def sigma(self) -> float:
        return self._sigma

    @property
    def evaluations(self) -> int:
        return self._evaluations

    @property
    def iterations(self) -> int:
        return self._iterations

    def _tell(self, values: np.ndarray) -> None:
        asked = self._asked
        ended = self._tell_strategy(values)  # raises before changing anything
        self._evaluations += len(values)
        best = int(np.argmin(values))
        if values[best] < self._fbest:
            self._fbest = float(values[best])
            self._xbest = asked[best].copy()
        self._iteration_values.append(values)
        if ended:
            self._iterations += 1
            self._history.record(np.concatenate(self._iteration_values), self.num_params, self._population_size)
            self._iteration_values = []

    def _stop(self) -> Dict[str, Any]:
        met = self._history.check(
            self._evaluations, self._fbest, max_evaluations=self._max_evaluations,
            max_iterations=self._max_iterations, ftarget=-math.inf if self._ftarget is None else self._ftarget,
            tolfun=self._tolfun, tolfunhist=self._tolfunhist, tolstagnation=self._stagnation_iterations)
        names = {"maxfevals": "max_evaluations", "maxiter": "max_iterations"}  # this wording's names
        return {names.get(name, name): (int(t) if name in ("maxfevals", "maxiter", "tolstagnation") else t)
                for name, t in met.items()}

    def _count_evaluations(self, n: int) -> None:
        self._evaluations += n

    def _result(self) -> Result:
        return Result(xbest=None if self._xbest is None else self._xbest.copy(), fbest=self._fbest,
                      evaluations=self._evaluations, iterations=self._iterations,
                      xfavorite=self._favorite())
