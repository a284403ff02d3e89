"""Evaluating sampling agents on gymnasium environments.

Training talks to evaluation through one small interface, :class:`Evaluator`:
given the agent and its samples' infos (``None`` for the centre policy) and an
episode seed per sample, return the rewards. Backends (in-process, worker
processes, and later batched native evaluation or Ray) plug in behind it
without touching the training loop.

A reward depends only on (parameters, seed): the same run gives the same
rewards whatever the backend or the number of workers.
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import multiprocessing
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import evokit_pb2 as pb

__all__ = ["EnvError", "EvalResult", "Evaluator", "SerialEvaluator", "ProcessEvaluator",
           "make_env", "make_evaluator", "check_policy_fits", "run_episode"]


class EnvError(ValueError):
    """An environment that cannot be made, or that the policy does not fit."""


@dataclass
class EvalResult:
    rewards: np.ndarray  # float64, one per sample: mean return over its episodes
    steps: int           # environment steps taken


def make_env(env_id: str):
    """``gymnasium.make(env_id)`` with a clear error for an unknown id."""
    import gymnasium

    try:
        return gymnasium.make(env_id)
    except gymnasium.error.Error as exc:
        raise EnvError(f"cannot make environment {env_id!r}: {exc}") from None


def check_policy_fits(policy, env) -> bool:
    """Check the policy's input and output fit the env's spaces; return whether
    the action space is discrete. Raises :class:`EnvError` naming the mismatch."""
    from gymnasium import spaces

    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, spaces.Box):
        raise EnvError(f"{env.spec.id if env.spec else env}: observation space {obs_space} is not a Box")
    obs_dim = int(np.prod(obs_space.shape))
    want = tuple(policy.obs_shape)
    if len(want) != 1 or (want[0] is not None and want[0] != obs_dim):
        raise EnvError(f"the policy takes observations of shape {want}, "
                       f"the environment gives {obs_space.shape} ({obs_dim} values)")
    out = np.asarray(policy.run(np.zeros(obs_dim, np.float32), policy.initial_params()))
    if isinstance(act_space, spaces.Discrete):
        if out.shape != (int(act_space.n),):
            raise EnvError(f"the policy outputs shape {out.shape}, the environment's action "
                           f"space {act_space} needs one score per action: ({int(act_space.n)},)")
        return True
    if isinstance(act_space, spaces.Box):
        if out.size != int(np.prod(act_space.shape)):
            raise EnvError(f"the policy outputs shape {out.shape}, the environment's action "
                           f"space needs {act_space.shape}")
        return False
    raise EnvError(f"action space {act_space} is not supported (Discrete or Box)")


def run_episode(env, agent, seed: int, discrete: bool) -> Tuple[float, int]:
    """One episode of ``agent`` (its current parameters) from ``env.reset(seed=seed)``."""
    obs, _ = env.reset(seed=int(seed))
    total, steps = 0.0, 0
    shape = getattr(env.action_space, "shape", None)
    while True:
        out = agent.predict(np.asarray(obs, dtype=np.float32).reshape(-1))
        action = int(np.argmax(out)) if discrete else np.asarray(out, dtype=np.float32).reshape(shape)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
        if terminated or truncated:
            return total, steps


def _evaluate_items(agent, clone, env, discrete: bool, items) -> Tuple[List[float], int]:
    """Rewards for ``items`` = [(info or None, [episode seeds]), ...]; ``clone``
    (a clone of ``agent``) carries the noise."""
    rewards, steps = [], 0
    for info, seeds in items:
        target = agent
        if info is not None:
            clone.set_noise(info)
            target = clone
        returns = []
        for s in seeds:
            r, n = run_episode(env, target, s, discrete)
            returns.append(r)
            steps += n
        rewards.append(float(np.mean(returns)))
    return rewards, steps


class Evaluator(abc.ABC):
    """Given the agent's samples, return their rewards."""

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


class SerialEvaluator(Evaluator):
    """Evaluates in this process, one environment."""

    def __init__(self, env_id: str):
        self.env_id = env_id
        self._env = make_env(env_id)
        self._agent = self._clone = None
        self._discrete = False

    def evaluate(self, agent, infos, seeds) -> EvalResult:
        if self._agent is not agent:
            self._discrete = check_policy_fits(agent.policy, self._env)
            self._agent, self._clone = agent, agent.clone()
        rewards, steps = _evaluate_items(agent, self._clone, self._env, self._discrete,
                                         list(zip(infos, seeds)))
        return EvalResult(np.asarray(rewards, dtype=np.float64), steps)

    def close(self) -> None:
        self._env.close()


# ---- worker processes -----------------------------------------------------------

_worker = {}


def _worker_init(config_bytes: bytes, policy, env_id: str) -> None:
    config = pb.EvoKitConfig()
    config.ParseFromString(config_bytes)
    env = make_env(env_id)
    _worker.update(config=config, policy=policy, env=env,
                   discrete=check_policy_fits(policy, env), agent=None, clone=None, key=None)


def _worker_run(params: bytes, model_iter_id: int, items) -> Tuple[List[float], int]:
    from .agent import ESAgent

    w = _worker
    if w["key"] != (params, model_iter_id):
        w["agent"] = ESAgent._replica(w["config"], w["policy"], np.frombuffer(params, np.float32),
                                      model_iter_id)
        w["clone"] = w["agent"].clone()
        w["key"] = (params, model_iter_id)
    decoded = [(None if b is None else pb.SamplingInfo.FromString(b), s) for b, s in items]
    return _evaluate_items(w["agent"], w["clone"], w["env"], w["discrete"], decoded)


class ProcessEvaluator(Evaluator):
    """Evaluates in ``num_workers`` worker processes (spawned, so that each
    has its own onnxruntime session). Only the centre parameters, the keys and
    the seeds travel to the workers; the noise is rebuilt there."""

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
        ctx = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(
            max_workers=self.num_workers, mp_context=ctx, initializer=_worker_init,
            initargs=(agent.config.SerializeToString(), agent.policy, self.env_id))
        self._pool_key = key

    def evaluate(self, agent, infos, seeds) -> EvalResult:
        self._ensure_pool(agent)
        params = np.ascontiguousarray(agent.center, dtype=np.float32).tobytes()
        it = agent.model_iter_id
        items = [(None if i is None else i.SerializeToString(), list(map(int, s)))
                 for i, s in zip(infos, seeds)]
        n_chunks = max(1, min(len(items), self.num_workers * self.chunks_per_worker))
        bounds = np.linspace(0, len(items), n_chunks + 1).astype(int)
        futures = [self._pool.submit(_worker_run, params, it, items[a:b])
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        rewards: List[float] = []
        steps = 0
        try:
            for f in futures:  # in submission order: results keep the sample order
                r, n = f.result()
                rewards.extend(r)
                steps += n
        except cf.process.BrokenProcessPool as exc:
            self.close_pool()
            raise RuntimeError(f"an evaluation worker died: {exc}") from None
        return EvalResult(np.asarray(rewards, dtype=np.float64), steps)

    def close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        self.close_pool()
        self._env.close()


def make_evaluator(env_id: str, num_workers: int) -> Evaluator:
    """Worker processes when ``num_workers > 1``, else in-process."""
    if num_workers > 1:
        return ProcessEvaluator(env_id, num_workers)
    return SerialEvaluator(env_id)
