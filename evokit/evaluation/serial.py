"""Evaluation one member and one step at a time: :func:`run_episode`, and
:class:`SerialEvaluator` (one environment in this process)."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .base import EvalResult, Evaluator
from .envs import check_policy_fits, make_env
from .obsnorm import ObsNorm, ObsStats

__all__ = ["SerialEvaluator", "evaluate_items", "run_episode"]


def run_episode(env, agent, seed: int, discrete: bool, norm: Optional[ObsNorm] = None,
                stats: Optional[ObsStats] = None, index: int = 0) -> Tuple[float, int]:
    """One episode of ``agent`` (its current parameters) from ``env.reset(seed=seed)``;
    with ``norm``, the policy sees normalised observations, and the raw ones
    are added to ``stats`` as sample ``index``'s. A recurrent policy starts
    the episode from a zero state and carries it from step to step."""
    agent.reset_state()
    obs, _ = env.reset(seed=int(seed))
    total, steps = 0.0, 0
    shape = getattr(env.action_space, "shape", None)
    while True:
        x = np.asarray(obs, dtype=np.float32).reshape(-1)
        if norm is not None:
            stats.add(index, x)
            x = norm(x)
        out = agent.predict(x)
        action = int(np.argmax(out)) if discrete else np.asarray(out, dtype=np.float32).reshape(shape)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        steps += 1
        if terminated or truncated:
            return total, steps


def evaluate_items(agent, clone, env, discrete: bool, items,
                   norm: Optional[ObsNorm] = None) -> EvalResult:
    """The result for ``items`` = [(info or None, [episode seeds]), ...]
    (observation statistics with ``norm``); ``clone`` (a clone of
    ``agent``) carries the noise."""
    rewards, sample_steps = [], []
    stats = None if norm is None else ObsStats(len(items), int(norm.mean.size))
    for index, (info, seeds) in enumerate(items):
        target = agent
        if info is not None:
            clone.set_noise(info)
            target = clone
        returns, steps = [], 0
        for s in seeds:
            r, n = run_episode(env, target, s, discrete, norm, stats, index)
            returns.append(r)
            steps += n
        rewards.append(float(np.mean(returns)))
        sample_steps.append(steps)
    counts = np.asarray(sample_steps, dtype=np.int64)
    return EvalResult(np.asarray(rewards, dtype=np.float64), int(counts.sum()), stats, counts)


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
        return evaluate_items(agent, self._clone, self._env, self._discrete,
                              list(zip(infos, seeds)), self.obs_norm)

    def close(self) -> None:
        self._env.close()
