"""CMA-ES and the GA as samplers of :class:`~evokit.ESAgent` (``CMA_SAMPLING``,
``GA_SAMPLING``).

The logic is the C++ core's ``StrategySampler`` (cpp/include/evokit/
strategy_sampler.h: ``_core.CMASampler`` over CMAES / SepCMAES,
``_core.GASampler`` over GeneticAlgorithm), which documents how members are
handed out, rebuilt from their keys and told. This module adapts it to the
interface of the Gaussian ``_core.ESAgent`` that ``ESAgent`` drives (clones
with their own parameter vector, ``add_noise``, ``set_noise``, ``update``)
and reads / writes its state in ``solver.pb``.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from . import _core
from . import evokit_pb2 as pb
from .errors import SampleError, SolverFileError

__all__ = ["PolicySampler", "SampleError", "make_policy_sampler"]


def _sample_error(call, *args):
    try:
        return call(*args)
    except ValueError as exc:
        raise SampleError(str(exc)) from None


class _Clone:
    """A sampling agent's core: its own parameter vector, the rest shared."""

    def __init__(self, root: "PolicySampler"):
        self._root = root
        self._params = np.zeros(root.num_params, dtype=np.float32)
        self._view = self._params.view()
        self._view.flags.writeable = False
        self.has_noise = False

    @property
    def params(self) -> np.ndarray:
        return self._view

    def clone(self) -> "_Clone":
        return _Clone(self._root)

    def add_noise(self):
        info = self._root.core.next_member()
        self._root.core.rebuild(info, self._params)
        self.has_noise = True
        return info

    def set_noise(self, info) -> None:
        _sample_error(self._root.core.rebuild, info, self._params)
        self.has_noise = True


class PolicySampler:
    """The agent core for CMA_SAMPLING / GA_SAMPLING: ``core`` is the C++
    ``_core.CMASampler`` or ``_core.GASampler``."""

    def __init__(self, cfg: pb.SolverConfig, x0: np.ndarray, num_threads: int):
        x0 = np.ascontiguousarray(x0, dtype=np.float32)
        if cfg.sampling.type == pb.SamplingConfig.CMA_SAMPLING:
            c = cfg.sampling.cma_sampling
            self.core = _core.CMASampler(x0, c.sigma0, cfg.population_size, separable=c.separable,
                                         seed=c.seed, num_threads=num_threads)
        else:
            g = cfg.sampling.ga_sampling
            self.core = _core.GASampler(
                x0, cfg.population_size, g.truncation_size, g.num_elites, g.mutation_power,
                g.init_sigma, g.elite_candidates, g.elite_evaluations, seed=g.seed,
                num_threads=num_threads)
        self.kind = self.core.kind
        self.num_params = x0.size
        self.center = self.core.center  # a view that follows every update
        self.sampling_stream = 0  # keys of CMA / GA are the strategy's own; kept for the interface

    @property
    def model_iter_id(self) -> int:
        return self.core.model_iter_id

    @property
    def draws(self) -> int:
        return self.core.draws

    def clone(self) -> _Clone:
        return _Clone(self)

    def is_member(self, info) -> bool:
        return self.core.is_member(_to_core(info))

    def rewards_shortfall(self, infos, rewards) -> Optional[str]:
        return _sample_error(self.core.shortfall, [_to_core(i) for i in infos],
                             np.asarray(rewards, dtype=np.float64))

    def update(self, infos, rewards, history=None) -> Dict[str, int]:
        it = _sample_error(self.core.update, list(infos), np.asarray(rewards, dtype=np.float64))
        return {"num_samples": len(infos), "num_corrected": 0, "model_iter_id": it}

    # ---- solver.pb

    _CMA_VECTORS = ("mean", "p_sigma", "p_c", "cov", "eigenvalues", "eigenvectors")

    def save(self, state: pb.SolverState) -> None:
        if self.kind == "CMA":
            s = self.core.cma.get_state()
            state.cma.sigma = float(s["sigma"])
            state.cma.generation = int(s["generation"])
            state.cma.eigen_generation = int(s["eigen_generation"])
            for name in self._CMA_VECTORS:
                state.vectors.add(name=f"cma.{name}",
                                  data=np.ascontiguousarray(s[name], dtype="<f8").tobytes())
            return
        ga = self.core.ga
        g = state.ga
        g.generation = ga.generation
        for info in ga.ask():
            g.population.add(key=list(info.key), model_iter_id=int(info.model_iter_id))
        for info in ga.elites:
            g.elites.add(key=list(info.key), model_iter_id=int(info.model_iter_id))
        g.elite_scores.extend(float(x) for x in ga.elite_scores)
        g.order.extend(int(i) for i in ga.pending_order)
        state.vectors.add(name="ga.x0", data=np.ascontiguousarray(ga.x0, dtype="<f4").tobytes())

    def load(self, state: pb.SolverState, path: str) -> None:
        n = self.num_params
        field = self.kind.lower()
        if not state.HasField(field):
            raise SolverFileError(f"{path}: solver state has no {self.kind} state (saved by another "
                                  f"sampler?)")
        try:
            if self.kind == "CMA":
                cma = self.core.cma
                full = not cma.params["separable"]
                sizes = {"mean": n, "p_sigma": n, "p_c": n, "cov": n * n if full else n,
                         "eigenvalues": n if full else 0, "eigenvectors": n * n if full else 0}
                v = {k: _vector(state, f"cma.{k}", sizes[k], path) for k in self._CMA_VECTORS}
                cma.set_state(v["mean"], state.cma.sigma, v["p_sigma"], v["p_c"],
                              v["cov"].reshape(n, n) if full else v["cov"], state.cma.generation,
                              v["eigenvalues"] if full else None,
                              v["eigenvectors"].reshape(n, n) if full else None,
                              state.cma.eigen_generation if full else None)
            else:
                self.core.reset(_vector(state, "ga.x0", n, path, dtype="<f4"))
                g = state.ga
                self.core.ga.set_state(g.generation, [_to_core(m) for m in g.population],
                                       [_to_core(m) for m in g.elites], list(g.elite_scores),
                                       list(g.order))
            self.core.set_progress(int(state.steps), int(state.draws))
        except SolverFileError:
            raise
        except ValueError as exc:
            raise SolverFileError(f"{path}: invalid {self.kind} state: {exc}") from None
        self.core.refresh()


def _to_core(info):
    return _core.SamplingInfo(key=list(info.key), model_iter_id=int(info.model_iter_id), mirrored=False)


def _vector(state: pb.SolverState, name: str, size: int, path: str, dtype: str = "<f8") -> np.ndarray:
    for v in state.vectors:
        if v.name == name:
            arr = np.frombuffer(v.data, dtype=dtype)
            if arr.size != size:
                raise SolverFileError(f"{path}: state vector {name!r} holds {arr.size} values, "
                                      f"expected {size}")
            return arr.copy()
    raise SolverFileError(f"{path}: state vectors ['{name}'] are missing")


def make_policy_sampler(cfg: pb.SolverConfig, x0: np.ndarray, num_threads: int) -> PolicySampler:
    return PolicySampler(cfg, x0, num_threads)
