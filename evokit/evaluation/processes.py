"""Evaluation in worker processes: :class:`ProcessEvaluator`, the serial
evaluation spread over a pool (spawned, so that each worker has its own
onnxruntime session)."""

from __future__ import annotations

import concurrent.futures as cf
from typing import Optional

import numpy as np

from .. import evokit_pb2 as pb
from ..agent import ESAgent
from .base import EvalResult, PooledEvaluator, take_sampling_state
from .envs import check_policy_fits, make_env
from .serial import evaluate_items

__all__ = ["ProcessEvaluator"]

_worker = {}


def _worker_init(config_bytes: bytes, policy, env_id: str) -> None:
    config = pb.EvoKitConfig.FromString(config_bytes)
    env = make_env(env_id)
    agent = ESAgent.replica(config, policy)
    _worker.update(env=env, discrete=check_policy_fits(policy, env), agent=agent,
                   clone=agent.clone(), state=None)


def _worker_run(state: bytes, items, norm=None):
    w = _worker
    take_sampling_state(w, state)
    decoded = [(None if b is None else pb.SamplingInfo.FromString(b), s) for b, s in items]
    return evaluate_items(w["agent"], w["clone"], w["env"], w["discrete"], decoded, norm)


class ProcessEvaluator(PooledEvaluator):
    """Evaluates in ``num_workers`` worker processes (spawned, so that each
    has its own onnxruntime session). Only the solver's sampling state (for
    Gaussian sampling the centre and the iteration), the infos and the seeds
    travel to the workers; each member is rebuilt there by a replica of the
    solver, whatever its family."""

    def __init__(self, env_id: str, num_workers: int, chunks_per_worker: int = 4):
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        self.env_id = env_id
        self.num_workers = num_workers
        self.chunks_per_worker = chunks_per_worker
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._pool_key = None
        self._env = make_env(env_id)  # fail here, not in a worker, for a bad id

    def _ensure_pool(self, agent) -> None:
        key = (id(agent.policy), agent.config.SerializeToString())
        if self._pool is not None and self._pool_key == key:
            return
        self.close_pool()
        check_policy_fits(agent.policy, self._env)
        self._pool = self._new_pool(self.num_workers, _worker_init,
                                    (agent.config.SerializeToString(), agent.policy, self.env_id))
        self._pool_key = key

    def evaluate(self, agent, infos, seeds) -> EvalResult:
        self._ensure_pool(agent)
        state = agent.sampling_state()
        items = [(None if i is None else i.SerializeToString(), list(map(int, s)))
                 for i, s in zip(infos, seeds)]
        n_chunks = max(1, min(len(items), self.num_workers * self.chunks_per_worker))
        bounds = np.linspace(0, len(items), n_chunks + 1).astype(int)
        futures = [self._pool.submit(_worker_run, state, items[a:b], self.obs_norm)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        return self._collect(futures)

    def close(self) -> None:
        self.close_pool()
        self._env.close()
