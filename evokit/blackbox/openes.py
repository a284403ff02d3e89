"""``OpenES``: OpenAI-ES (Salimans et al. 2017, arXiv:1703.03864) on the
core's uncached Gaussian sampler and its SGD / momentum / Adam optimizers.

It minimises ``f`` with pycma's ask / tell / stop / result contract (see
:mod:`evokit.blackbox.ga` for the loop); the bookkeeping (evaluation counts,
the best solution, the stop criteria) is
:class:`~evokit.blackbox.tracked.TrackedStrategy`'s, shared with GA.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import _core
from ..config import FITNESS_SHAPING_NAMES
from .replay import is_replay_state, replay
from ..solvers.options import given
from .tracked import (EVEN_POPULATION_SIZE, STOP, TOLSTAGNATION, TrackedStrategy, check_float32, check_int,
                      check_positive, check_x0, default_population_size, float32_rewards)

__all__ = ["OpenES"]

_OPTIMIZERS = ("adam", "sgd", "momentum")
_FITNESS_SHAPINGS = tuple(FITNESS_SHAPING_NAMES.values())


class OpenES(TrackedStrategy):
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
    antithetic (odd when not: 4 + floor(3 ln n) as it is). f-values must be finite (NaNs under nan_policy="worst" take
    the largest f-value of the batch).

    Convergence. With its published defaults (a fixed sigma, Adam at a fixed
    learning rate) OpenAI-ES does not converge to a point: it follows the
    gradient of the Gaussian-smoothed f, and Adam's steps stay about
    ``learning_rate`` long per coordinate whatever the gradient's size, so on
    the 10-D sphere from x0 = 1 the centre keeps circling the optimum at
    f of about n * learning_rate**2 / 5 (0.2 for the defaults). That is what
    policy search wants (it keeps exploring) and what EvoKit's defaults keep.
    To converge, decay both: ``sigma_decay`` and ``learning_rate_decay``
    multiply sigma and the learning rate after every tell (default 1: no
    decay); CMAES adapts its step size and needs no schedule.
    """

    _accepts_infinite = False

    def __init__(self, x0, sigma, *, population_size: Optional[int] = EVEN_POPULATION_SIZE,
                 learning_rate: float = 0.1, optimizer: str = "adam", antithetic: bool = True,
                 fitness_shaping: str = "centered_rank", weight_decay: float = 0.0,
                 seed: int = 0, nan_policy: str = "error", num_threads: int = 1,
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = STOP["tolfun"], tolfunhist: float = 0.0,
                 stagnation_iterations: Optional[int] = TOLSTAGNATION, sigma_decay: float = 1.0,
                 learning_rate_decay: float = 1.0):
        x = check_x0(x0)
        n = x.size
        check_float32("OpenES", x, sigma)  # the centre and the noise live in float32
        for name, decay in (("sigma_decay", sigma_decay), ("learning_rate_decay", learning_rate_decay)):
            if isinstance(decay, bool) or not (0 < decay <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {decay!r}")
        if given(population_size) is None:
            population_size = default_population_size(n, even=antithetic)
        population_size = check_int("population_size", population_size, 2)
        if antithetic and population_size % 2:
            raise ValueError(f"population_size must be even with antithetic=True (mirrored pairs), "
                             f"got {population_size}")
        super().__init__(x0, sigma, population_size=population_size, nan_policy=nan_policy,
                         max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads,
                         tolfunhist=tolfunhist)
        if optimizer not in _OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, _OPTIMIZERS))}, "
                             f"got {optimizer!r}")
        if fitness_shaping not in _FITNESS_SHAPINGS:
            raise ValueError(f"fitness_shaping must be one of "
                             f"{', '.join(map(repr, _FITNESS_SHAPINGS))}, got {fitness_shaping!r}")
        learning_rate = float(check_positive("learning_rate", learning_rate))
        if isinstance(weight_decay, bool) or not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0 and finite, got {weight_decay!r}")
        self._sigma_decay = float(sigma_decay)
        self._learning_rate_decay = float(learning_rate_decay)
        self._seed = check_int("seed", seed, 0)
        self._antithetic = bool(antithetic)
        self._fitness_shaping = fitness_shaping
        self._weight_decay = float(weight_decay)
        self._theta = self._x0.astype(np.float32)
        self._sampler = self._make_sampler()
        self._optimizer_name = optimizer
        self._optimizer = self._make_optimizer(learning_rate)
        self._keys = np.zeros(0, dtype=np.int64)
        self._signs = np.zeros(0, dtype=np.float32)

    def _make_optimizer(self, learning_rate: float):
        if self._optimizer_name == "adam":
            return _core.Adam(learning_rate, 0.9, 0.999, 1e-8, self.num_params)
        if self._optimizer_name == "sgd":
            return _core.SGD(learning_rate, self.num_params)
        return _core.Momentum(learning_rate, 0.9, self.num_params)

    # ---- pickling: the centre, sigma and the optimizer's state, never a replay ----
    def __getstate__(self):
        d = self.__dict__.copy()
        d.pop("_sampler")
        o = d.pop("_optimizer")
        d["_optimizer_state"] = (o.learning_rate, o.steps, {name: np.array(o.get_state(name))
                                                            for name in o.state_names})
        return d

    def __setstate__(self, d):
        if is_replay_state(d):  # pickled by replay, before OpenES pickled its state
            replay(self, d)
            return
        learning_rate, steps, state = d.pop("_optimizer_state")
        self.__dict__.update(d)
        self._sampler = self._make_sampler()
        self._optimizer = self._make_optimizer(learning_rate)
        self._optimizer.steps = steps
        for name, value in state.items():
            self._optimizer.set_state(name, value)

    def _make_sampler(self):
        return _core.GaussianSampler(seed=self._seed, sigma=self._sigma, cached=False,
                                     cache_size=0, num_params=self.num_params)

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
        # 'raw' refuses f-values beyond float32 (its step is proportional to them)
        rewards = float32_rewards(values, "in which OpenES with fitness_shaping='raw' computes its step; scale "
                                          "f, or use 'centered_rank' or 'z_score'"
                                  if self._fitness_shaping == "raw" else None)
        weights = _core.shape_fitness(rewards, self._fitness_shaping)
        direction = self._sampler.descent_direction(self._keys, self._signs, weights, self._theta,
                                                    self._weight_decay, self._num_threads)
        self._optimizer.step(self._theta, direction, self._num_threads)
        if self._sigma_decay != 1.0:  # the noise of a key is eps(key): only its scale changes
            self._sigma *= self._sigma_decay
            self._sampler = self._make_sampler()
        if self._learning_rate_decay != 1.0:
            self._optimizer.learning_rate = self._optimizer.learning_rate * self._learning_rate_decay
        return True

    def _favorite(self) -> np.ndarray:
        return self.theta
