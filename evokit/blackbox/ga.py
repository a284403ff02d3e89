"""``GA``: the simple genetic algorithm of Such et al. 2017, "Deep
Neuroevolution" (arXiv:1712.06567), run by the C++ core
(``_core.GeneticAlgorithm``): truncation selection, elitism, optional elite
re-evaluation for noisy functions, individuals encoded as lists of seeds.

It minimises ``f`` (the C++ GA maximises fitness; values are negated here),
with pycma's ask / tell / stop / result contract::

    es = evokit.GA(x0, 0.1, seed=1)
    while not es.stop():
        X = es.ask()                          # [population, n] float64
        es.tell(X, [f(x) for x in X])
    es.result.xbest

or ``es.optimize(f)``. The bookkeeping (evaluation counts, the best solution,
the stop criteria) is :class:`~evokit.blackbox.tracked.TrackedStrategy`'s,
shared with OpenES.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .. import _core
from .replay import is_replay_state, replay
from ..solvers.options import given, proto_default
from .tracked import ASK_TELL, STOP, TOLSTAGNATION, TrackedStrategy, check_float32, check_int, check_x0

__all__ = ["GA"]



class GA(TrackedStrategy):
    """The simple GA of Such et al. 2017 (Algorithm 1), minimising f.

    Generation 0 is x0 + sigma * eps(seed_i) for population_size seeds; every
    later generation keeps the ``num_elites`` elites unchanged and fills the
    rest with a uniformly chosen parent from the best ``truncation_size``
    (default max(1, population_size // 5)) plus one Gaussian mutation of power sigma.
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

    def __init__(self, x0, sigma, *, population_size: int = proto_default("population_size"),
                 truncation_size: Optional[int] = proto_default("sampling.ga_sampling.truncation_size"),
                 num_elites: int = proto_default("sampling.ga_sampling.num_elites"),
                 elite_candidates: Optional[int] = proto_default("sampling.ga_sampling.elite_candidates"),
                 elite_evaluations: int = proto_default("sampling.ga_sampling.elite_evaluations"),
                 seed: int = ASK_TELL["seed"], nan_policy: str = ASK_TELL["nan_policy"],
                 num_threads: int = ASK_TELL["num_threads"],
                 max_evaluations: Optional[int] = None, max_iterations: Optional[int] = None,
                 ftarget: Optional[float] = None, tolfun: float = STOP["tolfun"],
                 tolfunhist: float = ASK_TELL["fixed_scale_tolfunhist"],
                 stagnation_iterations: Optional[int] = TOLSTAGNATION):
        population_size = check_int("population_size", population_size, 2)
        check_float32("GA", check_x0(x0), sigma)  # the core's individuals are float32
        super().__init__(x0, sigma, population_size=population_size, nan_policy=nan_policy,
                         max_evaluations=max_evaluations, max_iterations=max_iterations,
                         ftarget=ftarget, tolfun=tolfun,
                         stagnation_iterations=stagnation_iterations, num_threads=num_threads,
                         tolfunhist=tolfunhist)
        # The core validates the options and names them in its messages; 0
        # selects the formula of a Rule default (the core computes it).
        self._core_options = dict(
            population_size=population_size,
            truncation_size=check_int("truncation_size", given(truncation_size) or 0, 0),
            num_elites=check_int("num_elites", num_elites, 0),
            mutation_power=self._sigma, init_sigma=self._sigma,
            elite_candidates=check_int("elite_candidates", given(elite_candidates) or 0, 0),
            elite_evaluations=check_int("elite_evaluations", elite_evaluations, 0),
            seed=check_int("seed", seed, 0), num_threads=self._num_threads)
        self._core = _core.GeneticAlgorithm(self._x0.astype(np.float32), **self._core_options)
        self._asked_infos: List[Any] = []

    # ---- pickling: the GA's state (its seed lists), never a replay ----------------
    def __getstate__(self):
        d = self.__dict__.copy()
        core = d.pop("_core")
        d["_core_state"] = (core.generation, _seeds(core.ask()), _seeds(core.elites), list(core.elite_scores),
                            list(core.pending_order))
        d["_asked_infos"] = _seeds(self._asked_infos)
        return d

    def __setstate__(self, d):
        if is_replay_state(d):  # pickled by replay, before GA pickled its state
            replay(self, d)
            return
        generation, population, elites, scores, order = d.pop("_core_state")
        asked = d.pop("_asked_infos")
        self.__dict__.update(d)
        self._core = _core.GeneticAlgorithm(self._x0.astype(np.float32), **self._core_options)
        self._core.set_state(generation, _infos(population), _infos(elites), scores, order)
        self._asked_infos = _infos(asked)

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


def _seeds(infos) -> List[tuple]:
    return [(list(i.key), i.model_iter_id) for i in infos]


def _infos(seeds) -> List[Any]:
    return [_core.SamplingInfo(key, model_iter_id=it) for key, it in seeds]
