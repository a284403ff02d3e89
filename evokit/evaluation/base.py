"""The interface between training and evaluation: :class:`Evaluator` returns
an :class:`EvalResult`; :class:`PooledEvaluator` is the worker-pool
bookkeeping of the evaluators that use processes."""

from __future__ import annotations

import abc
import concurrent.futures as cf
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .. import evokit_pb2 as pb
from ..workers import new_process_pool
from .obsnorm import ObsNorm, ObsStats, merged_stats

__all__ = ["EvalResult", "Evaluator", "PooledEvaluator"]


@dataclass
class EvalResult:
    rewards: np.ndarray  # float64, one per sample: mean return over its episodes
    steps: int           # environment steps taken
    # With Evaluator.obs_norm set: each sample's raw observation statistics.
    obs_stats: Optional[ObsStats] = None
    # Environment steps of each sample's episodes (int64, one per sample),
    # for rewards that depend on episode length (train.alive_bonus_offset).
    sample_steps: Optional[np.ndarray] = None
    # The native rollouts' worker time (threads x the call's wall time) and
    # the part of it spent inside episodes; 0 where not measured.
    thread_seconds: float = 0.0
    busy_seconds: float = 0.0

    @property
    def idle_share(self) -> Optional[float]:
        """The share of the native rollouts' worker time no episode used
        (the threads waiting for the last episodes), or None where not
        measured."""
        return 1.0 - self.busy_seconds / self.thread_seconds if self.thread_seconds > 0 else None

    @classmethod
    def concat(cls, parts: Sequence["EvalResult"]) -> "EvalResult":
        """The parts' samples, in order (the chunks of one population)."""
        steps = [p.sample_steps for p in parts]
        return cls(np.concatenate([np.asarray(p.rewards, np.float64) for p in parts])
                   if parts else np.zeros(0),
                   sum(int(p.steps) for p in parts),
                   merged_stats([p.obs_stats for p in parts]),
                   None if not parts or any(s is None for s in steps)
                   else np.concatenate(steps).astype(np.int64),
                   sum(p.thread_seconds for p in parts), sum(p.busy_seconds for p in parts))


class Evaluator(abc.ABC):
    """Given the agent's samples, return their rewards."""

    #: Set by the caller (e.g. :func:`evokit.train`) for observation
    #: normalisation: the policy sees ``obs_norm(obs)``, and evaluate()
    #: returns the raw observations' statistics in ``EvalResult.obs_stats``.
    obs_norm: Optional[ObsNorm] = None

    @abc.abstractmethod
    def evaluate(self, agent, infos: Sequence[Optional[pb.SamplingInfo]],
                 seeds: Sequence[Sequence[int]]) -> EvalResult:
        """Rewards of ``infos`` (``None`` = the centre policy) under
        ``agent``'s current centre parameters; ``seeds[i]`` lists the episode
        seeds of sample i (the reward is their mean return)."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PooledEvaluator(Evaluator):
    """The worker-pool bookkeeping shared by the evaluators that use processes."""

    _pool: Optional[cf.ProcessPoolExecutor] = None

    @staticmethod
    def _new_pool(num_workers: int, initializer, initargs) -> cf.ProcessPoolExecutor:
        """evokit.workers.new_process_pool: spawned workers that ignore
        SIGINT and die with their parent."""
        return new_process_pool(num_workers, initializer, initargs)

    def _collect(self, futures) -> EvalResult:
        """The futures' EvalResults joined in submission order, which is
        the sample order."""
        try:
            return EvalResult.concat([f.result() for f in futures])
        except cf.process.BrokenProcessPool as exc:
            self.close_pool()
            raise RuntimeError(f"an evaluation worker died: {exc}") from None

    def close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def take_sampling_state(worker: dict, state: bytes) -> None:
    """Bring a worker's replica agent (``worker["agent"]``) to the owner's
    sampling state, once per state (``worker["state"]`` is the last one)."""
    if worker["state"] != state:
        worker["agent"].load_sampling_state(state)
        worker["state"] = state
