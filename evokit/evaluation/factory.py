"""The evaluator a kind names: :func:`make_evaluator`."""

from __future__ import annotations

from .base import Evaluator
from .envs import has_vector_entry_point, native_env_steps
from .processes import ProcessEvaluator
from .serial import SerialEvaluator
from .vector import VectorEvaluator

__all__ = ["EVALUATOR_KINDS", "make_evaluator"]

#: What :func:`make_evaluator` accepts as ``kind``.
EVALUATOR_KINDS = ("auto", "vector", "process", "serial")


def make_evaluator(env_id: str, num_workers: int, kind: str = "auto", policy=None) -> Evaluator:
    """The evaluator ``kind`` names, for ``num_workers`` cores:

    - ``"serial"``: :class:`SerialEvaluator`;
    - ``"process"``: :class:`ProcessEvaluator` with ``num_workers`` processes;
    - ``"vector"``: :class:`VectorEvaluator`; natively in the core
      (CartPole, and the MuJoCo tasks where native MuJoCo runs: see
      :func:`~evokit.evaluation.envs.native_env`) or on the environment's own
      vectorised form, in this process with ``num_workers`` OpenMP threads,
      else on ``"sync"`` vector environments in ``num_workers`` worker
      processes (in this process for 1);
    - ``"auto"``: ``"vector"`` when ``policy`` (an OnnxPolicy) runs natively,
      else ``"process"`` for ``num_workers > 1`` and ``"serial"`` otherwise.
    """
    if kind not in EVALUATOR_KINDS:
        raise ValueError(f"kind must be one of {', '.join(EVALUATOR_KINDS)}, got {kind!r}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if kind == "auto":
        if policy is not None and getattr(policy, "native", None) is not None:
            kind = "vector"
        else:
            kind = "process" if num_workers > 1 else "serial"
    if kind == "vector":
        if native_env_steps(env_id) is not None or has_vector_entry_point(env_id):
            return VectorEvaluator(env_id, 1, num_threads=num_workers)
        return VectorEvaluator(env_id, num_workers, vectorization_mode="sync")
    if kind == "process" and num_workers > 1:
        return ProcessEvaluator(env_id, num_workers)
    return SerialEvaluator(env_id)
