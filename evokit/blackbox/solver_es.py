"""Ask / tell over a training family of the core: :class:`SolverES` runs a
policy solver (``_core.make_solver``: the ``Solver`` that ``evokit train``,
the warehouse and the C++ service library run) as a black-box strategy, and
:class:`ARS` is ARS_SAMPLING through it (:class:`~evokit.blackbox.openes.OpenES`
is GAUSSIAN_SAMPLING through it). So the ask / tell class and the training
family are the same code: the same seed, population and options give the
same bits through either.

A generation is the solver's population: ``ask()`` draws it and
materialises its parameters (one call, ``ESAgent.draw_generation``),
``tell()`` hands the rewards -f to the solver's update (one call). Parameters live in float32, as in training.
A strategy pickles as the solver's own state (and the members of a pending
ask), never by replaying its history.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .. import _core, evokit_pb2
from ..solvers.options import given, proto_default, solver_options
from .tracked import (ASK_TELL, EVEN_POPULATION_SIZE, STOP, TOLSTAGNATION, TrackedStrategy, check_float32, check_int,
                      check_positive, check_x0, default_population_size, float32_rewards)

__all__ = ["SolverES", "ARS"]


class SolverES(TrackedStrategy):
    """The ask / tell strategy of a policy solver configured by a
    ``SolverConfig`` message (minimising: the solver's rewards are -f).
    Subclasses build the message from their arguments (``_solver_config``)."""

    _accepts_infinite = False
    #: None: f-values beyond float32's range are scaled by a power of two
    #: (the family's step is invariant to it); else the refusal's reason.
    _refuse_beyond_float32: Optional[str] = None

    def __init__(self, x0, sigma, *, population_size: int, seed: int, nan_policy: str, num_threads: int,
                 max_evaluations: Optional[int], max_iterations: Optional[int], ftarget: Optional[float],
                 tolfun: float, stagnation_iterations: Optional[int], tolfunhist: float = STOP["tolfunhist"]):
        check_float32(type(self).__name__, check_x0(x0), sigma)  # the centre and the noise live in float32
        super().__init__(x0, sigma, population_size=population_size, nan_policy=nan_policy,
                         max_evaluations=max_evaluations, max_iterations=max_iterations, ftarget=ftarget,
                         tolfun=tolfun, stagnation_iterations=stagnation_iterations, num_threads=num_threads,
                         tolfunhist=tolfunhist)
        self._seed = check_int("seed", seed, 0)
        if self._seed >= 2 ** 64:
            raise ValueError(f"seed must be < 2**64, got {seed}")
        self._options = solver_options(self._solver_config())
        self._agent = self._make_agent()
        self._infos = []

    def _solver_config(self) -> evokit_pb2.SolverConfig:
        raise NotImplementedError

    def _make_agent(self, centre: Optional[np.ndarray] = None):
        params = self._x0.astype(np.float32) if centre is None else centre
        return _core.ESAgent(params, self._options, num_threads=self._num_threads)

    # ---- the hooks --------------------------------------------------------
    def _ask(self) -> np.ndarray:
        self._infos, rows = self._agent.draw_generation(self._population_size, self._num_threads)
        return rows.astype(np.float64)

    def _tell_strategy(self, values: np.ndarray) -> bool:
        self._agent.update(self._infos, float32_rewards(values, self._refuse_beyond_float32))
        self._infos = []
        return True

    def _nan_replacement(self, values: np.ndarray) -> float:
        if values.size == 0:
            raise ValueError(f"all f-values of this batch are NaN: {type(self).__name__} has nothing to rank")
        return float(values.max())

    def _favorite(self) -> np.ndarray:
        return self.mean

    # ---- the solver's view --------------------------------------------------
    @property
    def population_size(self) -> int:
        return self._population_size

    @property
    def mean(self) -> np.ndarray:
        """The centre (float64 copy of the solver's float32 centre)."""
        return np.asarray(self._agent.center, dtype=np.float64)

    @property
    def stds(self) -> np.ndarray:
        """sigma in every coordinate, as the solver holds it (float32)."""
        return np.full(self.num_params, float(np.float32(self._sigma)))

    @property
    def keys(self) -> np.ndarray:
        """The noise keys of the members of the last ask()."""
        return np.array([i.key[0] for i in self._infos], dtype=np.int64)

    @property
    def solver(self):
        """The core's solver (an evokit._core.Solver)."""
        return self._agent.solver

    def state(self):
        """The solver's full state (an evokit._core.SolverState, draw counters
        included); the centre is not part of it (training keeps it in the
        model): it is :attr:`mean`."""
        return self._agent.solver.save()

    def load_state(self, state) -> None:
        """Continues from state() (checked first); the bookkeeping (best
        solution, counts) is this object's."""
        self._agent.solver.load(state)
        self._asked = None
        self._infos = []

    def __getstate__(self):
        d = self.__dict__.copy()
        s = self._agent.solver.save()
        d["_agent"] = (np.array(self._agent.center, dtype=np.float32), s.family, s.model_iter_id, s.noise_version,
                       s.floats, s.doubles, s.ints)
        d["_infos"] = [(list(i.key), i.model_iter_id, i.mirrored) for i in self._infos]
        return d

    def __setstate__(self, d):
        centre, family, it, version, floats, doubles, ints = d.pop("_agent")
        infos = d.pop("_infos")
        self.__dict__.update(d)
        self._agent = self._make_agent(centre)
        self._agent.solver.load(_core.SolverState(family, model_iter_id=it, noise_version=version,
                                                  floats=floats, doubles=doubles, ints=ints))
        self._infos = [_core.SamplingInfo(key, model_iter_id=i, mirrored=m) for key, i, m in infos]


class ARS(SolverES):
    """Augmented random search (Mania, Guy, Recht 2018, arXiv:1803.07055,
    Algorithm 2 without state normalisation: V1, or V1-t with
    top_directions), minimising: ARS_SAMPLING, the training family itself
    (mirrored pairs theta +- nu delta_k, the top b directions by max(r+, r-),
    theta += step_size / (b sigma_R) sum (r+ - r-) delta; noise from the
    counter-based Gaussian sampler, parameters in float32). The same seed
    and options give the same bits as `evokit train` with ARS_SAMPLING.

    sigma0: nu, the exploration noise (fixed; the config's ars_sampling.std).
    step_size: alpha (0.02). sigma_R normalises the rewards, so the step's
        size is set by alpha and by how the reward differences compare
        with their spread.
    top_directions: b (0: all population_size / 2 directions).
    population_size: even; the default is 4 + floor(3 ln n) rounded up to even.
    f-values must be finite.
    Other arguments: :class:`~evokit.blackbox.tracked.TrackedStrategy`'s
    stop criteria, nan_policy, seed, num_threads.
    """

    def __init__(self, x0, sigma0, *, step_size: float = proto_default("sampling.ars_sampling.step_size"),
                 top_directions: int = proto_default("sampling.ars_sampling.top_directions"),
                 population_size: Optional[int] = EVEN_POPULATION_SIZE, seed: int = ASK_TELL["seed"],
                 nan_policy: str = ASK_TELL["nan_policy"],
                 num_threads: int = ASK_TELL["num_threads"], max_evaluations: Optional[int] = None,
                 max_iterations: Optional[int] = None, ftarget: Optional[float] = None, tolfun: float = STOP["tolfun"],
                 tolfunhist: float = ASK_TELL["fixed_scale_tolfunhist"],
                 stagnation_iterations: Optional[int] = TOLSTAGNATION):
        n = check_x0(x0).size
        if given(population_size) is None:
            population_size = default_population_size(n, even=True)
        population_size = check_int("population_size", population_size, 2)
        if population_size % 2:
            raise ValueError(f"population_size must be even (mirrored pairs), got {population_size}")
        self._step_size = float(check_positive("step_size", step_size))
        top = check_int("top_directions", top_directions, 0)
        self._top_directions = population_size // 2 if top == 0 else min(top, population_size // 2)
        super().__init__(x0, sigma0, population_size=population_size, seed=seed, nan_policy=nan_policy,
                         num_threads=num_threads, max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun, stagnation_iterations=stagnation_iterations,
                         tolfunhist=tolfunhist)

    def _solver_config(self) -> evokit_pb2.SolverConfig:
        config = evokit_pb2.SolverConfig(population_size=self._population_size, antithetic=True,
                                         num_threads=self._num_threads)
        config.sampling.type = evokit_pb2.SamplingConfig.ARS_SAMPLING
        a = config.sampling.ars_sampling
        a.step_size, a.std, a.top_directions = self._step_size, self._sigma, self._top_directions
        a.cached, a.seed = False, self._seed
        return config

    @property
    def parameters(self) -> Dict[str, float]:
        """The hyper-parameters in use, as the solver holds them (float32)."""
        return {"population_size": float(self._population_size),
                "step_size": float(np.float32(self._step_size)),
                "top_directions": float(self._top_directions), "sigma": float(np.float32(self._sigma))}
