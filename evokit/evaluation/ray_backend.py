"""Evaluation on Ray workers: :class:`RayEvaluator`.

The driver (the process running :func:`evokit.train`) keeps the solver. Each
generation it

1. puts the solver's sampling state into the Ray object store once
   (``ray.put``): what a replica needs to rebuild the members (for Gaussian
   sampling the centre and the iteration; for CMA-ES or the GA the
   strategy's state, see docs/ray.md for its size);
2. splits the population into chunks of (noise key, episode seeds) and hands
   them to actors, one chunk at a time per actor, the next chunk to whichever
   actor is free first;
3. gets back, per chunk, the rewards and the step count, nothing else
   (and, with observation normalisation, the chunk's per-sample observation
   statistics: three numbers per sample and observation value).

Each actor builds its own replica agent from the config once (for Gaussian
sampling the sampler, its noise rebuilt from the seed: no noise table
travels), takes each new sampling state, and evaluates its chunk with the
local evaluator :func:`~evokit.evaluation.factory.make_evaluator` picks for one core
(the batched native lockstep evaluator for a native policy). Rewards are a
pure function of (sampling state, key, episode seeds), so they do not depend
on which actor ran a chunk, nor on how many actors there are.

Fault tolerance. A chunk whose actor dies (the process is killed, the node is
lost) is put back at the head of the queue and re-run on another actor; a
replacement actor is started so that the pool keeps its size. Results are
stored by chunk index, so a chunk counts exactly once however often it ran,
and the generation's rewards are the bits an uninterrupted run gets. After
``max_worker_failures`` deaths in one call, :meth:`RayEvaluator.evaluate`
gives up with a RuntimeError. An error raised by the evaluation itself (e.g.
an environment that cannot be made) is not a death: it is raised unchanged.

Ray is an optional dependency (``pip install 'evokit-es[ray]'``).
"""

from __future__ import annotations

import collections
import logging
import os
import time
from typing import List, Optional, Sequence

import numpy as np

from .. import evokit_pb2 as pb
from ..agent import ESAgent
from ..workers import import_ray, init_ray
from .base import EvalResult, Evaluator
from .envs import check_policy_fits, make_env
from .factory import make_evaluator

_log = logging.getLogger("evokit.ray")

__all__ = ["RayEvaluator", "import_ray", "init_ray"]


class _Worker:
    """One Ray actor: an environment, the policy and a replica agent."""

    def __init__(self, config_bytes: bytes, policy, env_id: str, kind: str):
        self.config = pb.EvoKitConfig.FromString(config_bytes)
        self.policy = policy
        self.evaluator = make_evaluator(env_id, 1, kind=kind, policy=policy)
        self.agent = None
        self.state = None

    def pid(self) -> int:
        return os.getpid()

    def evaluate(self, state: bytes, infos: List[Optional[bytes]], seeds: List[List[int]],
                 norm=None):
        """(EvalResult, seconds spent evaluating) for one chunk of the
        members of sampling state ``state``."""
        t0 = time.perf_counter()
        if self.agent is None:
            self.agent = ESAgent.replica(self.config, self.policy)
        if self.state != state:
            self.agent.load_sampling_state(state)
            self.state = state
        decoded = [None if b is None else pb.SamplingInfo.FromString(b) for b in infos]
        self.evaluator.obs_norm = norm
        result = self.evaluator.evaluate(self.agent, decoded, seeds)
        return result, time.perf_counter() - t0


class RayEvaluator(Evaluator):
    """Evaluates on ``num_workers`` Ray actors (one CPU each).

    ``address=None`` starts a local Ray instance with ``num_workers`` CPUs
    (unless this process is already connected to one); otherwise
    ``ray.init(address=address)`` joins that cluster (``"auto"`` for the
    one this machine belongs to, or ``HOST:PORT`` of the head node). A Ray
    instance the evaluator started is shut down by :meth:`close`.

    ``kind`` is the local evaluator each actor uses (see
    :func:`~evokit.evaluation.factory.make_evaluator`); ``chunks_per_worker``
    chunks per actor and generation balance the load.

    After each :meth:`evaluate`, :attr:`last_timing` holds the wall time of
    the call, of the ``ray.put`` of the sampling state, and the evaluation time summed
    over chunks, as measured inside the actors; :attr:`worker_failures`
    counts the actors that died so far.
    """

    def __init__(self, env_id: str, num_workers: int, *, address: Optional[str] = None,
                 kind: str = "auto", chunks_per_worker: int = 2, max_worker_failures: int = 4,
                 actor_start_timeout: float = 30.0):
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if chunks_per_worker < 1:
            raise ValueError(f"chunks_per_worker must be >= 1, got {chunks_per_worker}")
        ray = import_ray()
        self.env_id = env_id
        self.num_workers = num_workers
        self.kind = kind
        self.chunks_per_worker = chunks_per_worker
        self.max_worker_failures = max_worker_failures
        # An actor the cluster cannot place (no free CPU) would hold its chunks
        # forever: actors not running after this many seconds are given up.
        self.actor_start_timeout = actor_start_timeout
        self._env = make_env(env_id)  # fail here, not in an actor, for a bad id
        self._started_ray = False
        if not ray.is_initialized():
            try:
                init_ray(address, num_workers if address is None else None)
            except BaseException:
                self._env.close()
                raise
            self._started_ray = True
        self._actor_cls = ray.remote(num_cpus=1, max_restarts=0)(_Worker)
        self._actors: list = []
        self._actor_key = None
        self._actor_args = None
        self.worker_failures = 0
        self.last_timing: dict = {}
        # Test hook: called once per evaluate() with the in-flight tasks'
        # actors, right after the first chunks are submitted.
        self._after_submit = None
        self._state_ref = None
        self._state_key = None
        self.state_puts = 0  # ray.put calls of a sampling state so far

    @property
    def actors(self) -> list:
        return list(self._actors)

    def _ensure_actors(self, agent) -> None:
        ray = import_ray()
        key = (id(agent.policy), agent.config.SerializeToString())
        if self._actors and self._actor_key == key:
            return
        self._kill_actors()
        check_policy_fits(agent.policy, self._env)
        self._actor_args = (agent.config.SerializeToString(), ray.put(agent.policy), self.env_id,
                            self.kind)
        self._actors = self._started([self._new_actor() for _ in range(self.num_workers)])
        if not self._actors:
            raise RuntimeError(
                f"none of the {self.num_workers} Ray workers started within "
                f"{self.actor_start_timeout:g} s (each needs 1 CPU; the cluster has "
                f"{ray.available_resources().get('CPU', 0):g} free)")
        if len(self._actors) < self.num_workers:
            _log.warning("only %d of %d Ray workers started within %g s; evaluating with those",
                         len(self._actors), self.num_workers, self.actor_start_timeout)
        self._actor_key = key

    def _new_actor(self):
        return self._actor_cls.remote(*self._actor_args)

    def _started(self, actors: list) -> list:
        """The actors of ``actors`` running within ``actor_start_timeout``
        seconds, in order; the others are killed. An actor whose constructor
        fails is an error (it would fail again anywhere)."""
        ray = import_ray()
        refs = [a.pid.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.actor_start_timeout)
        ready = set(ready)
        started = []
        for ref, actor in zip(refs, actors):
            if ref in ready:
                try:
                    ray.get(ref)
                    started.append(actor)
                    continue
                except ray.exceptions.RayActorError as exc:
                    if getattr(exc, "actor_init_failed", False):
                        for a in actors:
                            ray.kill(a, no_restart=True)
                        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
                        raise RuntimeError(f"a Ray worker could not start ({self.env_id}): "
                                           f"{lines[-1].strip()}") from None
            ray.kill(actor, no_restart=True)
        return started

    def evaluate(self, agent, infos: Sequence[Optional[pb.SamplingInfo]],
                 seeds: Sequence[Sequence[int]]) -> EvalResult:
        ray = import_ray()
        if len(infos) != len(seeds):
            raise ValueError(f"got {len(infos)} sampling infos and {len(seeds)} seed lists")
        t0 = time.perf_counter()
        self._ensure_actors(agent)
        state_bytes = agent.sampling_state()
        if self._state_key != state_bytes:
            # One put per state: the centre evaluation after an update and the
            # next generation's samples share it.
            self._state_ref = ray.put(state_bytes)
            self._state_key = state_bytes
            self.state_puts += 1
        state = self._state_ref
        t_put = time.perf_counter() - t0
        items_infos = [None if i is None else i.SerializeToString() for i in infos]
        items_seeds = [list(map(int, s)) for s in seeds]
        n_chunks = max(1, min(len(infos), self.num_workers * self.chunks_per_worker))
        bounds = np.linspace(0, len(infos), n_chunks + 1).astype(int)
        chunks = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        results: List[Optional[tuple]] = [None] * len(chunks)
        queue = collections.deque(range(len(chunks)))
        idle = collections.deque(self._actors)
        pending = {}  # ObjectRef -> (chunk index, actor)
        failures = 0
        hook = self._after_submit
        while queue or pending:
            while queue and idle:
                idx = queue.popleft()
                actor = idle.popleft()
                a, b = chunks[idx]
                ref = actor.evaluate.remote(state, items_infos[a:b], items_seeds[a:b],
                                            self.obs_norm)
                pending[ref] = (idx, actor)
            if hook is not None:
                hook([actor for _, actor in pending.values()])
                hook = None
            done, _ = ray.wait(list(pending), num_returns=1)
            idx, actor = pending.pop(done[0])
            try:
                results[idx] = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                if getattr(exc, "actor_init_failed", False):  # not a death: it would fail again
                    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
                    raise RuntimeError(f"a Ray worker could not start ({self.env_id}): "
                                       f"{lines[-1].strip()}") from None
                failures += 1
                self.worker_failures += 1
                self._actors.remove(actor)
                if failures > self.max_worker_failures:
                    raise RuntimeError(
                        f"{failures} Ray workers died in one evaluation (max_worker_failures="
                        f"{self.max_worker_failures}); the last: {str(exc).splitlines()[0]}") from None
                queue.appendleft(idx)  # re-run elsewhere; its result was never stored
                for replacement in self._started([self._new_actor()]):
                    self._actors.append(replacement)
                    idle.append(replacement)
                if not idle and not pending:
                    raise RuntimeError(f"every Ray worker died and no replacement started within "
                                       f"{self.actor_start_timeout:g} s") from None
                continue
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None
            idle.append(actor)
        busy = sum(seconds for _, seconds in results)
        self.last_timing = {"wall": time.perf_counter() - t0, "put": t_put, "worker_busy": busy,
                            "chunks": len(chunks), "failures": failures}
        return EvalResult.concat([result for result, _ in results])

    def _kill_actors(self) -> None:
        if not self._actors:
            return
        ray = import_ray()
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []

    def close(self) -> None:
        ray = import_ray()
        self._kill_actors()
        self._state_ref = self._state_key = None
        self._env.close()
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
            self._started_ray = False

    def __repr__(self) -> str:
        return f"RayEvaluator({self.env_id!r}, num_workers={self.num_workers}, kind={self.kind!r})"
