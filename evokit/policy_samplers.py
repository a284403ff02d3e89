"""CMA-ES and the GA as samplers of :class:`~evokit.ESAgent` (``CMA_SAMPLING``,
``GA_SAMPLING``).

Each is the agent's core for its sampling type, with the interface of the
Gaussian ``evokit._core.ESAgent`` that ``ESAgent`` drives (``clone``,
``add_noise``, ``set_noise``, ``update``, ``center``, ``model_iter_id``); the
numerics are the C++ strategies' (``_core.CMAES`` / ``_core.SepCMAES``:
``regenerate`` and ``tell_keys``; ``_core.GeneticAlgorithm``: ``rebuild`` and
truncation selection). This layer only hands members out and matches rewards
back to them.

One generation is ``population_size`` members: CMA's lambda samples, whose
``SamplingInfo.key`` is the one noise-stream key ``regenerate`` rebuilds the
sample from; or the GA's individuals, whose key is the individual's seed list.
The k-th ``add_noise`` of a generation (counted over all clones) hands out
member ``k mod population_size``; ``update`` needs at least one reward for
every member (several rewards of one member are averaged), then runs CMA's
tell / the GA's selection, and the next generation begins. A sample can be
rebuilt only at the iteration that drew it: ``set_noise`` and ``update``
refuse a sample of another iteration, naming both.

GA elite re-evaluation: after a generation's ``update`` the members handed out
are the elite candidates, and the next ``update`` takes the first
``elite_evaluations`` rewards of each (so a GA generation is two updates).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _core
from . import evokit_pb2 as pb

__all__ = ["CMAPolicySampler", "GAPolicySampler", "make_policy_sampler"]

# CMA termination criteria meant for functions, turned off for policies: a
# reward plateau (every member solving the task) is not convergence, and
# training stops by train.max_generations / target_return.
_NO_TERMINATION = dict(tolfun=0.0, tolfunhist=0.0, tolx=0.0, tolstagnation=2**62,
                       conditioncov=1e300, tolupsigma=1e300, noeffectaxis=False,
                       noeffectcoord=False, restarts=0)


class SampleError(ValueError):
    """A SamplingInfo that cannot be rebuilt or told at the current iteration."""


class _Clone:
    """A sampling agent's core: its own parameter vector, the rest shared."""

    def __init__(self, root: "_PolicySampler"):
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

    def add_noise(self) -> pb.SamplingInfo:
        info = self._root.next_member()
        self._root.fill(info, self._params)
        self.has_noise = True
        return info

    def set_noise(self, info) -> None:
        self._root.fill(info, self._params)
        self.has_noise = True


class _PolicySampler:
    """The bookkeeping CMA and GA share; hooks: ``_members``, ``_rebuild``,
    ``_tell``, ``_refresh_center``, ``save``/``load``."""

    kind = ""

    def __init__(self, num_params: int):
        self.num_params = num_params
        self._center = np.zeros(num_params, dtype=np.float32)
        self.center = self._center.view()
        self.center.flags.writeable = False
        self.model_iter_id = 0
        self.draws = 0
        self.sampling_stream = 0  # keys of CMA / GA are the strategy's own; kept for the interface

    def clone(self) -> _Clone:
        return _Clone(self)

    # ---- members

    def member_keys(self) -> List[Tuple[int, ...]]:
        """The keys of the members of the current generation, in order."""
        return [tuple(k) for k in self._members()]

    def next_member(self) -> pb.SamplingInfo:
        members = self._members()
        key = members[self.draws % len(members)]
        self.draws += 1
        return pb.SamplingInfo(key=list(key), model_iter_id=self.model_iter_id)

    def fill(self, info, out: np.ndarray) -> None:
        self.check_current(info)
        self._rebuild(info, out)

    def check_current(self, info, index: Optional[int] = None) -> None:
        where = "" if index is None else f"sampling info {index}: "
        if int(info.model_iter_id) != self.model_iter_id:
            raise SampleError(
                f"{where}a {self.kind} sample of iteration {info.model_iter_id} cannot be rebuilt at "
                f"iteration {self.model_iter_id}: its distribution is gone (only samples of the "
                f"current iteration are usable)")

    # ---- update

    def update(self, infos: Sequence, rewards: np.ndarray, history=None) -> Dict[str, int]:
        if len(infos) != len(rewards):
            raise ValueError(f"got {len(infos)} sampling infos and {len(rewards)} rewards")
        if not np.all(np.isfinite(rewards)):
            bad = int(np.flatnonzero(~np.isfinite(rewards))[0])
            raise ValueError(f"reward {bad} is {rewards[bad]}, expected a finite value")
        per_member = self._group(infos, rewards)
        message = self.shortfall(per_member)
        if message:
            raise SampleError(message)
        self._tell(per_member)
        self.model_iter_id += 1
        self.draws = 0
        self._refresh_center()
        return {"num_samples": len(infos), "num_corrected": 0, "model_iter_id": self.model_iter_id}

    def is_member(self, info) -> bool:
        """Whether ``info`` names a member of the current generation."""
        return int(info.model_iter_id) == self.model_iter_id and tuple(info.key) in set(self.member_keys())

    def _group(self, infos: Sequence, rewards: Sequence[float]) -> List[List[float]]:
        """The rewards of each member, in member order (checking every info)."""
        index = {k: i for i, k in enumerate(self.member_keys())}
        per_member: List[List[float]] = [[] for _ in index]
        for i, (info, r) in enumerate(zip(infos, rewards)):
            self.check_current(info, i)
            m = index.get(tuple(info.key))
            if m is None:
                raise SampleError(f"sampling info {i}: key {list(info.key)} is not a member of "
                                  f"iteration {self.model_iter_id}")
            per_member[m].append(float(r))
        return per_member

    def shortfall(self, per_member: List[List[float]]) -> Optional[str]:
        """Why these rewards are not yet enough for an update (None if they are)."""
        need, what = self._requirement()
        short = [i for i, r in enumerate(per_member) if len(r) < need]
        if not short:
            return None
        return (f"{self.kind} update needs {need} reward(s) for each of the {len(per_member)} "
                f"{what} of iteration {self.model_iter_id}; {len(short)} have fewer "
                f"(first: member {short[0]} with {len(per_member[short[0]])})")

    def rewards_shortfall(self, infos: Sequence, rewards: Sequence[float]) -> Optional[str]:
        return self.shortfall(self._group(infos, rewards))

    # ---- hooks

    def _members(self) -> List[Sequence[int]]:
        raise NotImplementedError

    def _requirement(self) -> Tuple[int, str]:
        """(rewards needed per member, what the members are)."""
        return 1, "members"

    def _rebuild(self, info, out: np.ndarray) -> None:
        raise NotImplementedError

    def _tell(self, per_member: List[List[float]]) -> None:
        raise NotImplementedError

    def _refresh_center(self) -> None:
        raise NotImplementedError

    def save(self, state: pb.SolverState) -> None:
        raise NotImplementedError

    def load(self, state: pb.SolverState, path: str) -> None:
        raise NotImplementedError


def _vector(state: pb.SolverState, name: str, size: int, path: str, dtype: str = "<f8") -> np.ndarray:
    from .agent import SolverFileError

    for v in state.vectors:
        if v.name == name:
            arr = np.frombuffer(v.data, dtype=dtype)
            if arr.size != size:
                raise SolverFileError(f"{path}: state vector {name!r} holds {arr.size} values, "
                                      f"expected {size}")
            return arr.copy()
    raise SolverFileError(f"{path}: state vectors ['{name}'] are missing")


class CMAPolicySampler(_PolicySampler):
    """CMA-ES (full or separable) over the policy parameters; the centre is the mean."""

    kind = "CMA"

    def __init__(self, cfg: pb.SolverConfig, x0: np.ndarray, num_threads: int):
        super().__init__(x0.size)
        c = cfg.sampling.cma_sampling
        cls = _core.SepCMAES if c.separable else _core.CMAES
        self.cma = cls(np.asarray(x0, dtype=np.float64), c.sigma0, population_size=cfg.population_size,
                       seed=c.seed, num_threads=num_threads, **_NO_TERMINATION)
        self._keys: Optional[List[Tuple[int]]] = None
        self._refresh_center()

    def _members(self):
        if self._keys is None:
            self._keys = [(int(self.cma.sample_key(k)),) for k in range(self.cma.population_size)]
        return self._keys

    def _rebuild(self, info, out):
        if len(info.key) != 1:
            raise SampleError(f"a CMA sample has one key, got {len(info.key)}")
        out[:] = self.cma.regenerate(int(info.key[0]))

    def _tell(self, per_member):
        if self.cma.stopped:
            raise RuntimeError(f"CMA-ES has stopped ({self.cma.stop()}): no further updates")
        keys = np.array([k[0] for k in self._members()], dtype=np.int64)
        # CMA minimises; rewards are maximised.
        values = np.array([-np.mean(r) for r in per_member], dtype=np.float64)
        self.cma.tell_keys(keys, values)

    def _refresh_center(self):
        self._keys = None
        self._center[:] = self.cma.mean_solution

    _VECTORS = ("mean", "p_sigma", "p_c", "cov", "eigenvalues", "eigenvectors")

    def save(self, state):
        s = self.cma.get_state()
        state.cma.sigma = float(s["sigma"])
        state.cma.generation = int(s["generation"])
        state.cma.eigen_generation = int(s["eigen_generation"])
        for name in self._VECTORS:
            state.vectors.add(name=f"cma.{name}",
                              data=np.ascontiguousarray(s[name], dtype="<f8").tobytes())

    def load(self, state, path):
        from .agent import SolverFileError

        if not state.HasField("cma"):
            raise SolverFileError(f"{path}: solver state has no CMA state (saved by another sampler?)")
        n = self.num_params
        full = not self.cma.params["separable"]
        sizes = {"mean": n, "p_sigma": n, "p_c": n, "cov": n * n if full else n,
                 "eigenvalues": n if full else 0, "eigenvectors": n * n if full else 0}
        v = {name: _vector(state, f"cma.{name}", sizes[name], path) for name in self._VECTORS}
        try:
            self.cma.set_state(v["mean"], state.cma.sigma, v["p_sigma"], v["p_c"],
                               v["cov"].reshape(n, n) if full else v["cov"], state.cma.generation,
                               v["eigenvalues"] if full else None,
                               v["eigenvectors"].reshape(n, n) if full else None,
                               state.cma.eigen_generation if full else None)
        except ValueError as exc:
            raise SolverFileError(f"{path}: invalid CMA state: {exc}") from None
        self._refresh_center()


class GAPolicySampler(_PolicySampler):
    """The GA of Such et al. over the policy parameters; the centre is the best elite."""

    kind = "GA"

    def __init__(self, cfg: pb.SolverConfig, x0: np.ndarray, num_threads: int):
        super().__init__(x0.size)
        self._cfg = cfg
        self._num_threads = num_threads
        self._make(np.asarray(x0, dtype=np.float32))

    def _make(self, x0: np.ndarray) -> None:
        g = self._cfg.sampling.ga_sampling
        self.ga = _core.GeneticAlgorithm(
            x0, population_size=self._cfg.population_size, truncation_size=g.truncation_size,
            num_elites=g.num_elites, mutation_power=g.mutation_power, init_sigma=g.init_sigma,
            elite_candidates=g.elite_candidates, elite_evaluations=g.elite_evaluations,
            seed=g.seed, num_threads=self._num_threads)
        self._refresh_center()

    def _members(self):
        if self._cached is None:
            infos = self.ga.ask() if self.ga.phase == "fitness" else self.ga.ask_elite_candidates()
            self._cached = [tuple(i.key) for i in infos]
        return self._cached

    def _rebuild(self, info, out):
        out[:] = self.ga.rebuild([int(s) for s in info.key])

    def _requirement(self):
        if self.ga.phase == "fitness":
            return 1, "individuals"
        return self.ga.elite_evaluations, "elite candidates"

    def _tell(self, per_member):
        if self.ga.phase == "fitness":
            self.ga.tell(np.array([np.mean(r) for r in per_member], dtype=np.float64))
        else:
            k = self.ga.elite_evaluations
            self.ga.tell_elite_candidates(np.array([r[:k] for r in per_member], dtype=np.float64).ravel())

    def _refresh_center(self):
        self._cached = None
        elites = self.ga.elites
        self._center[:] = self.ga.rebuild(list(elites[0].key)) if elites else self.ga.x0

    def save(self, state):
        ga = self.ga
        s = state.ga
        s.generation = ga.generation
        for info in ga.ask():
            s.population.add(key=list(info.key), model_iter_id=int(info.model_iter_id))
        for info in ga.elites:
            s.elites.add(key=list(info.key), model_iter_id=int(info.model_iter_id))
        s.elite_scores.extend(float(x) for x in ga.elite_scores)
        s.order.extend(int(i) for i in ga.pending_order)
        state.vectors.add(name="ga.x0", data=np.ascontiguousarray(ga.x0, dtype="<f4").tobytes())

    def load(self, state, path):
        from .agent import SolverFileError

        if not state.HasField("ga"):
            raise SolverFileError(f"{path}: solver state has no GA state (saved by another sampler?)")
        self._make(_vector(state, "ga.x0", self.num_params, path, dtype="<f4"))
        s = state.ga

        def infos(msgs):
            return [_core.SamplingInfo(key=list(m.key), model_iter_id=int(m.model_iter_id), mirrored=False)
                    for m in msgs]
        try:
            self.ga.set_state(s.generation, infos(s.population), infos(s.elites), list(s.elite_scores),
                              list(s.order))
        except ValueError as exc:
            raise SolverFileError(f"{path}: invalid GA state: {exc}") from None
        self._refresh_center()


def make_policy_sampler(cfg: pb.SolverConfig, x0: np.ndarray, num_threads: int) -> _PolicySampler:
    if cfg.sampling.type == pb.SamplingConfig.CMA_SAMPLING:
        return CMAPolicySampler(cfg, x0, num_threads)
    return GAPolicySampler(cfg, x0, num_threads)
