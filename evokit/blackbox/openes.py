"""``OpenES``: OpenAI-ES (Salimans et al. 2017, arXiv:1703.03864) as ask /
tell: GAUSSIAN_SAMPLING, the training family itself
(:class:`~evokit.blackbox.solver_es.SolverES`), so the same seed and options
give the same bits as ``evokit train`` with that family.
"""

from __future__ import annotations

import contextlib
import math
from typing import Optional

import numpy as np

from .. import evokit_pb2
from ..config import FITNESS_SHAPING_NAMES
from ..solvers.options import given, proto_default, solver_options
from .replay import is_replay_state
from .solver_es import SolverES
from .tracked import ASK_TELL, EVEN_POPULATION_SIZE, STOP, TOLSTAGNATION, check_int, check_positive, check_x0, \
    default_population_size

__all__ = ["OpenES"]

_OPTIMIZERS = {"adam": evokit_pb2.OptimizerConfig.ADAM, "sgd": evokit_pb2.OptimizerConfig.SGD,
               "momentum": evokit_pb2.OptimizerConfig.MOMENTUM}
_FITNESS_SHAPINGS = {name: value for value, name in FITNESS_SHAPING_NAMES.items()}


class OpenES(SolverES):
    """OpenAI-ES (Salimans et al. 2017), minimising f: GAUSSIAN_SAMPLING, the
    training family (``evokit train``, the warehouse, the C++ service
    library) run as ask / tell, with the counter-based noise uncached.

    A generation is the members clones 0..N-1 of the training family draw
    (mirrored pairs theta +- sigma eps(k) when antithetic, the training
    family's keys: ``keys`` gives them). tell shapes the rewards -f
    (``fitness_shaping``), and the optimizer steps along
    -1/(N sigma) sum_i w_i s_i eps(k_i) + weight_decay * theta. The
    options and their defaults are the training config's
    (proto/evokit.proto, written there once): ``optimizer`` is
    ``solver.optimizer.type`` (SGD; momentum 0.9; Adam with beta1 0.9,
    beta2 0.999, epsilon 1e-8), ``learning_rate`` its ``base_lr``,
    ``antithetic``, ``fitness_shaping`` and ``weight_decay`` the
    ``solver`` fields of those names, sigma ``gaussian_sampling.std``.
    SGD's step scales with the gradient estimate in every coordinate alike;
    on an ill-conditioned f, pass ``optimizer="adam"`` (a step per
    coordinate): on the 4-D ellipsoid (condition 1e6) at 600 evaluations
    (tests/blackbox/recorded, seed 0), SGD at 0.01 ends at f = 16,235 and
    Adam at 0.1 at f = 130.
    population_size defaults to 4 + floor(3 ln n), rounded up to even when
    antithetic (odd when not: 4 + floor(3 ln n) as it is). f-values must be
    finite (NaNs under nan_policy="worst" take the largest f-value of the
    batch).

    Convergence. With a fixed sigma and learning rate, OpenAI-ES does not
    converge to a point: it follows the gradient of the Gaussian-smoothed
    f, and with rank-based fitness shaping the step does not shrink near
    the optimum (ranks do not scale with f), so the centre keeps moving
    about the optimum at a distance set by sigma and the learning rate.
    That is what policy search wants (it keeps exploring) and what the
    defaults keep. To converge, decay both: ``sigma_decay`` and
    ``learning_rate_decay`` multiply sigma and the learning rate after
    every tell (default 1: no decay; an ask / tell schedule over the
    training family: the next generation runs with the decayed options,
    the solver's state carried over); CMAES adapts its step size and needs
    no schedule.
    """

    def __init__(self, x0, sigma, *, population_size: Optional[int] = EVEN_POPULATION_SIZE,
                 learning_rate: float = proto_default("optimizer.base_lr"),
                 optimizer: str = proto_default("optimizer.type"), antithetic: bool = proto_default("antithetic"),
                 fitness_shaping: str = proto_default("fitness_shaping"),
                 weight_decay: float = proto_default("weight_decay"),
                 seed: int = ASK_TELL["seed"], nan_policy: str = ASK_TELL["nan_policy"],
                 num_threads: int = ASK_TELL["num_threads"],
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = STOP["tolfun"],
                 tolfunhist: float = ASK_TELL["fixed_scale_tolfunhist"],
                 stagnation_iterations: Optional[int] = TOLSTAGNATION, sigma_decay: float = 1.0,
                 learning_rate_decay: float = 1.0):
        n = check_x0(x0).size
        for name, decay in (("sigma_decay", sigma_decay), ("learning_rate_decay", learning_rate_decay)):
            if isinstance(decay, bool) or not (0 < decay <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {decay!r}")
        if given(population_size) is None:
            population_size = default_population_size(n, even=antithetic)
        population_size = check_int("population_size", population_size, 2)
        if antithetic and population_size % 2:
            raise ValueError(f"population_size must be even with antithetic=True (mirrored pairs), "
                             f"got {population_size}")
        if optimizer not in _OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, _OPTIMIZERS))}, "
                             f"got {optimizer!r}")
        if fitness_shaping not in _FITNESS_SHAPINGS:
            raise ValueError(f"fitness_shaping must be one of "
                             f"{', '.join(map(repr, _FITNESS_SHAPINGS))}, got {fitness_shaping!r}")
        if isinstance(weight_decay, bool) or not math.isfinite(weight_decay) or weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0 and finite, got {weight_decay!r}")
        self._learning_rate = float(check_positive("learning_rate", learning_rate))
        self._optimizer_name = optimizer
        self._antithetic = bool(antithetic)
        self._fitness_shaping = fitness_shaping
        self._weight_decay = float(weight_decay)
        self._sigma_decay = float(sigma_decay)
        self._learning_rate_decay = float(learning_rate_decay)
        if fitness_shaping == "raw":  # its step is proportional to the f-values
            self._refuse_beyond_float32 = ("in which OpenES with fitness_shaping='raw' computes its step; scale "
                                           "f, or use 'centered_rank' or 'z_score'")
        super().__init__(x0, sigma, population_size=population_size, seed=seed, nan_policy=nan_policy,
                         num_threads=num_threads, max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun, stagnation_iterations=stagnation_iterations,
                         tolfunhist=tolfunhist)

    def _solver_config(self) -> evokit_pb2.SolverConfig:
        config = evokit_pb2.SolverConfig(population_size=self._population_size, antithetic=self._antithetic,
                                         fitness_shaping=_FITNESS_SHAPINGS[self._fitness_shaping],
                                         weight_decay=self._weight_decay, num_threads=self._num_threads)
        config.sampling.type = evokit_pb2.SamplingConfig.GAUSSIAN_SAMPLING
        g = config.sampling.gaussian_sampling
        g.std, g.cached, g.seed = self._sigma, False, self._seed
        config.optimizer.type = _OPTIMIZERS[self._optimizer_name]
        config.optimizer.base_lr = self._learning_rate
        return config

    def _tell_strategy(self, values: np.ndarray) -> bool:
        super()._tell_strategy(values)
        if self._sigma_decay != 1.0 or self._learning_rate_decay != 1.0:
            # The next generation runs with the decayed options; the solver's
            # state (the optimizer's moments, the key counters) carries over.
            self._sigma *= self._sigma_decay
            self._learning_rate *= self._learning_rate_decay
            state = self._agent.solver.save()
            centre = np.array(self._agent.center, dtype=np.float32)
            self._options = solver_options(self._solver_config())
            self._agent = self._make_agent(centre)
            self._agent.solver.load(state)
        return True

    @property
    def theta(self) -> np.ndarray:
        """The centre of the search distribution (float64 copy): :attr:`mean`."""
        return self.mean

    @property
    def learning_rate(self) -> float:
        """The optimizer's learning rate of the next update (decayed by
        ``learning_rate_decay`` after every tell), as the solver holds it
        (float32)."""
        return float(np.float32(self._learning_rate))

    def __setstate__(self, d):
        if is_replay_state(d) or "_optimizer_state" in d:
            _refuse_pickle_of_the_python_openes(d)
        super().__setstate__(d)


def _refuse_pickle_of_the_python_openes(d) -> None:
    """An OpenES pickled while it ran its own update loop in Python (other
    noise keys) cannot continue: a one-line refusal that says what to do."""
    centre = None
    with contextlib.suppress(Exception):
        centre = [float(v) for v in (d["_theta"] if "_theta" in d else d["call"][0][0])]
    what = "its centre" if "_theta" in d else "its x0"
    raise ValueError("this OpenES was pickled by an EvoKit whose OpenES ran its own update loop (other noise "
                     "keys); evokit.OpenES is now the training family GAUSSIAN_SAMPLING, which cannot continue "
                     "that run: start a new evokit.OpenES(x0, sigma, ...) from " + what
                     + ("" if centre is None else f" {centre}"))
