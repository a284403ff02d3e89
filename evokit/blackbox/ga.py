"""Black-box minimisers with pycma's ask / tell / stop / result contract:

- ``GA``: the simple genetic algorithm of Such et al. 2017, "Deep
  Neuroevolution" (arXiv:1712.06567), run by the C++ core
  (``_core.GeneticAlgorithm``): truncation selection, elitism, optional elite
  re-evaluation for noisy functions, individuals encoded as lists of seeds.
- ``OpenES``: OpenAI-ES (Salimans et al. 2017, arXiv:1703.03864) on the core's
  uncached Gaussian sampler and its SGD / momentum / Adam optimizers.

Both minimise ``f`` (the C++ GA maximises fitness; values are negated here)::

    es = evokit.GA(x0, 0.1, seed=1)
    while not es.stop():
        X = es.ask()                          # [population, n] float64
        es.tell(X, [f(x) for x in X])
    es.result.xbest

or ``es.optimize(f)``. The ask / tell contract (value checks and NaN policy,
stop, result, ``optimize``) is :class:`evokit.blackbox.asktell.AskTellStrategy`'s, the
one base shared with CMAES; ``_Strategy`` adds what the C++ CMA core does for
itself (evaluation counts, the best solution, the stop criteria) and asks a
strategy for three hooks: ``_ask`` (the solutions to evaluate),
``_tell_strategy`` (update from the checked f-values; says whether an
iteration is complete) and ``_favorite`` (its current best guess).

Parameters live in float32 in the core: x0 is rounded to float32, and the
solutions handed out are float32 values stored in float64 arrays.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import _core
from .asktell import GA_WORDING, AskTellStrategy, Result

__all__ = ["GA", "OpenES"]


def _check_x0(x0) -> np.ndarray:
    x = np.array(x0, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x0 must be a non-empty 1-D sequence of numbers, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"x0[{bad[0]}] is {x[bad[0]]}")
    return x


def _check_positive(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be > 0 and finite, got {value!r}")
    return value


def _check_int(name: str, value, lowest: int, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lowest:
        raise ValueError(f"{name} must be an integer >= {lowest}, got {value!r}")
    return int(value)


class _Strategy(AskTellStrategy):
    """The bookkeeping GA and OpenES add to the shared ask / tell contract
    (minimisation): evaluation counts, the best solution and the stop criteria.

    Stop criteria (``stop()`` returns the met ones, name -> threshold):
    ``max_evaluations`` and ``max_iterations`` (None: no limit), ``ftarget``
    (fbest <= ftarget; None: none), ``tolfun`` (the f-values of the last
    iteration and the best f-values of the last 10 + ceil(30 n / population)
    iterations all lie within tolfun, as in pycma) and ``stagnation`` (fbest
    has not improved for ``stagnation_iterations`` iterations; None: pycma's
    tolstagnation, int(100 + 100 n^1.5 / population)).
    """

    _wording = GA_WORDING
    _ask_returns_copy = True

    def __init__(self, x0, sigma, *, population_size: int, nan_policy: str,
                 max_evaluations: Optional[int], max_iterations: Optional[int],
                 ftarget: Optional[float], tolfun: float, stagnation_iterations: Optional[int],
                 num_threads: int):
        self._x0 = _check_x0(x0)
        self._sigma = float(_check_positive("sigma", sigma))
        super().__init__(self._x0.size, nan_policy)
        self._num_threads = _check_int("num_threads", num_threads, 1)
        n = self._x0.size
        self._max_evaluations = _check_int("max_evaluations", max_evaluations, 1, allow_none=True)
        self._max_iterations = _check_int("max_iterations", max_iterations, 1, allow_none=True)
        if ftarget is not None and (isinstance(ftarget, bool) or math.isnan(ftarget)):
            raise ValueError(f"ftarget must be a number or None, got {ftarget!r}")
        self._ftarget = None if ftarget is None else float(ftarget)
        if not (isinstance(tolfun, (int, float)) and tolfun >= 0):
            raise ValueError(f"tolfun must be >= 0, got {tolfun!r}")
        self._tolfun = float(tolfun)
        if stagnation_iterations is None:
            stagnation_iterations = int(100 + 100 * n ** 1.5 / population_size)
        self._stagnation_iterations = _check_int("stagnation_iterations", stagnation_iterations, 1)
        self._tolfun_window = 10 + math.ceil(30 * n / population_size)

        self._evaluations = 0
        self._iterations = 0
        self._xbest: Optional[np.ndarray] = None
        self._fbest = math.inf
        self._improved_at = 0  # the (1-based) iteration in which fbest last improved
        self._iteration_values: List[np.ndarray] = []
        self._last_values: Optional[np.ndarray] = None  # all values of the last iteration
        self._best_history: List[float] = []  # best f-value of each iteration, newest last

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
            self._improved_at = self._iterations + 1  # the iteration this tell belongs to
        self._iteration_values.append(values)
        if ended:
            self._iterations += 1
            self._last_values = np.concatenate(self._iteration_values)
            self._iteration_values = []
            self._best_history.append(float(self._last_values.min()))
            del self._best_history[:-self._tolfun_window]

    def _stop(self) -> Dict[str, Any]:
        met: Dict[str, Any] = {}
        if self._max_evaluations is not None and self._evaluations >= self._max_evaluations:
            met["max_evaluations"] = self._max_evaluations
        if self._max_iterations is not None and self._iterations >= self._max_iterations:
            met["max_iterations"] = self._max_iterations
        if self._ftarget is not None and self._fbest <= self._ftarget:
            met["ftarget"] = self._ftarget
        if self._last_values is not None:
            recent = np.concatenate([self._last_values, self._best_history])
            if np.all(np.isfinite(recent)) and recent.max() - recent.min() <= self._tolfun:
                met["tolfun"] = self._tolfun
            if self._iterations - self._improved_at >= self._stagnation_iterations:
                met["stagnation"] = self._stagnation_iterations
        return met

    def _result(self) -> Result:
        return Result(xbest=None if self._xbest is None else self._xbest.copy(), fbest=self._fbest,
                      evaluations=self._evaluations, iterations=self._iterations,
                      xfavorite=self._favorite())


class GA(_Strategy):
    """The simple GA of Such et al. 2017 (Algorithm 1), minimising f.

    Generation 0 is x0 + sigma * eps(seed_i) for population_size seeds; every
    later generation keeps the ``num_elites`` elites unchanged and fills the
    rest with a uniformly chosen parent from the best ``truncation_size``
    (default population_size // 5) plus one Gaussian mutation of power sigma.
    Each individual is its list of seeds (``individuals``) and ``rebuild``
    gives its parameters from them alone.

    Elite re-evaluation (``elite_evaluations`` > 0, for noisy f): after the
    generation's f-values are told, the next ask() returns the elite
    candidates (the best ``elite_candidates`` of the generation, default
    min(10, population_size), and the previous elites), each repeated
    ``elite_evaluations`` times in a row, and the elites become those with
    the best mean of these values. Such et al. use 10 candidates and 30
    evaluations; it is off by default since it only helps when f is noisy.
    An iteration is a generation, including its re-evaluation batch.
    """

    def __init__(self, x0, sigma, *, population_size: int = 50,
                 truncation_size: Optional[int] = None, num_elites: int = 1,
                 elite_candidates: Optional[int] = None, elite_evaluations: int = 0,
                 seed: int = 0, nan_policy: str = "error", num_threads: int = 1,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = 1e-11,
                 stagnation_iterations: Optional[int] = None):
        population_size = _check_int("population_size", population_size, 2)
        super().__init__(x0, sigma, population_size=population_size, nan_policy=nan_policy,
                         max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads)
        if truncation_size is None:
            truncation_size = max(1, population_size // 5)
        if elite_candidates is None:
            elite_candidates = min(10, population_size)
        # The core validates the options and names them in its messages.
        self._core = _core.GeneticAlgorithm(
            self._x0.astype(np.float32), population_size=population_size,
            truncation_size=_check_int("truncation_size", truncation_size, 0),
            num_elites=_check_int("num_elites", num_elites, 0),
            mutation_power=self._sigma, init_sigma=self._sigma,
            elite_candidates=_check_int("elite_candidates", elite_candidates, 0),
            elite_evaluations=_check_int("elite_evaluations", elite_evaluations, 0),
            seed=_check_int("seed", seed, 0), num_threads=self._num_threads)
        self._asked_infos: List[Any] = []

    @property
    def core(self) -> _core.GeneticAlgorithm:
        """The C++ GeneticAlgorithm (maximises -f)."""
        return self._core

    @property
    def individuals(self) -> List[List[int]]:
        """The seeds of the solutions of the last ask(), row by row."""
        return [list(info.key) for info in self._asked_infos]

    def rebuild(self, seeds: Sequence[int]) -> np.ndarray:
        """The parameters (float64) of the individual with these seeds."""
        return self._core.rebuild(list(seeds), self._num_threads).astype(np.float64)

    def _ask(self) -> np.ndarray:
        if self._core.phase == "fitness":
            self._asked_infos = self._core.ask()
            return self._core.rebuild_population(self._asked_infos).astype(np.float64)
        candidates = self._core.ask_elite_candidates()
        repeats = self._core.elite_evaluations
        self._asked_infos = [info for info in candidates for _ in range(repeats)]
        X = self._core.rebuild_population(candidates).astype(np.float64)
        return np.repeat(X, repeats, axis=0)

    def _tell_strategy(self, values: np.ndarray) -> bool:
        if self._core.phase == "fitness":
            self._core.tell(-values)
            return self._core.phase == "fitness"
        self._core.tell_elite_candidates(-values)
        return True

    def _favorite(self) -> np.ndarray:
        elites = self._core.elites
        if elites:
            return self.rebuild(elites[0].key)
        return self._core.x0.astype(np.float64)


_OPTIMIZERS = ("adam", "sgd", "momentum")
_FITNESS_SHAPINGS = ("centered_rank", "z_score", "raw")


class OpenES(_Strategy):
    """OpenAI-ES (Salimans et al. 2017), minimising f, with the core's
    uncached counter-based noise.

    At iteration t, pair p has the key ``k = GaussianSampler(seed, sigma,
    cached=False).draw_key(t, p, 0)``; with antithetic sampling solutions 2p
    and 2p+1 are theta + sigma * eps(k) and theta - sigma * eps(k), else
    solution i is theta + sigma * eps(draw_key(t, i, 0)). tell shapes the
    rewards -f (``fitness_shaping``), and the optimizer (Adam with beta1 0.9,
    beta2 0.999, epsilon 1e-8; SGD; or momentum 0.9) steps along
        -1/(N sigma) sum_i w_i s_i eps(k_i) + weight_decay * theta.
    population_size defaults to 4 + floor(3 ln n), rounded up to even when
    antithetic. f-values must be finite (NaNs under nan_policy="worst" take
    the largest f-value of the batch).
    """

    _accepts_infinite = False

    def __init__(self, x0, sigma, *, population_size: Optional[int] = None,
                 learning_rate: float = 0.1, optimizer: str = "adam", antithetic: bool = True,
                 fitness_shaping: str = "centered_rank", weight_decay: float = 0.0,
                 seed: int = 0, nan_policy: str = "error", num_threads: int = 1,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = 1e-11,
                 stagnation_iterations: Optional[int] = None):
        n = _check_x0(x0).size
        if population_size is None:
            population_size = 4 + int(3 * math.log(n))
            if antithetic:
                population_size += population_size % 2
        population_size = _check_int("population_size", population_size, 2)
        if antithetic and population_size % 2:
            raise ValueError(f"population_size must be even with antithetic=True (mirrored pairs), "
                             f"got {population_size}")
        super().__init__(x0, sigma, population_size=population_size, nan_policy=nan_policy,
                         max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads)
        if optimizer not in _OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, _OPTIMIZERS))}, "
                             f"got {optimizer!r}")
        if fitness_shaping not in _FITNESS_SHAPINGS:
            raise ValueError(f"fitness_shaping must be one of "
                             f"{', '.join(map(repr, _FITNESS_SHAPINGS))}, got {fitness_shaping!r}")
        learning_rate = float(_check_positive("learning_rate", learning_rate))
        if isinstance(weight_decay, bool) or not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0 and finite, got {weight_decay!r}")
        self._population_size = population_size
        self._antithetic = bool(antithetic)
        self._fitness_shaping = fitness_shaping
        self._weight_decay = float(weight_decay)
        self._theta = self._x0.astype(np.float32)
        self._sampler = _core.GaussianSampler(seed=_check_int("seed", seed, 0), sigma=self._sigma,
                                              cached=False, cache_size=0, num_params=n)
        if optimizer == "adam":
            self._optimizer = _core.Adam(learning_rate, 0.9, 0.999, 1e-8, n)
        elif optimizer == "sgd":
            self._optimizer = _core.SGD(learning_rate, n)
        else:
            self._optimizer = _core.Momentum(learning_rate, 0.9, n)
        self._keys = np.zeros(0, dtype=np.int64)
        self._signs = np.zeros(0, dtype=np.float32)

    @property
    def theta(self) -> np.ndarray:
        """The centre of the search distribution (float64 copy)."""
        return self._theta.astype(np.float64)

    @property
    def optimizer(self):
        """The core optimizer (its state and step count)."""
        return self._optimizer

    def _ask(self) -> np.ndarray:
        t, count = self._iterations, self._population_size
        draw = self._sampler.draw_key
        if self._antithetic:
            pairs = [draw(t, p, 0) for p in range(count // 2)]
            self._keys = np.repeat(np.array(pairs, dtype=np.int64), 2)
            self._signs = np.tile(np.array([1.0, -1.0], dtype=np.float32), count // 2)
        else:
            self._keys = np.array([draw(t, i, 0) for i in range(count)], dtype=np.int64)
            self._signs = np.ones(count, dtype=np.float32)
        X = np.empty((count, self.num_params), dtype=np.float64)
        for i, (key, sign) in enumerate(zip(self._keys, self._signs)):
            X[i] = self._sampler.perturb(self._theta, int(key), float(sign),
                                         num_threads=self._num_threads)
        return X

    def _nan_replacement(self, values: np.ndarray) -> float:
        if values.size == 0:
            raise ValueError("all f-values of this batch are NaN: OpenES has nothing to rank")
        return float(values.max())

    def _tell_strategy(self, values: np.ndarray) -> bool:
        rewards = (-values).astype(np.float32)
        weights = _core.shape_fitness(rewards, self._fitness_shaping)
        direction = self._sampler.descent_direction(self._keys, self._signs, weights, self._theta,
                                                    self._weight_decay, self._num_threads)
        self._optimizer.step(self._theta, direction, self._num_threads)
        return True

    def _favorite(self) -> np.ndarray:
        return self.theta
