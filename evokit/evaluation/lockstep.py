"""Rollouts of a whole population in lockstep on gymnasium vector
environments (:class:`Lockstep`), one batched native policy call per step, and
the per-member seeded resets that make a vectorised environment's members
start where the single environment starts from the same seed."""

from __future__ import annotations

import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import _core
from ..errors import EnvError
from .base import EvalResult
from .envs import check_policy_fits
from .obsnorm import ObsNorm, ObsStats

__all__ = ["Lockstep"]


def _cartpole_seeded_reset(env, seeds: Sequence[int]) -> np.ndarray:
    """Start member i of a ``CartPoleVectorEnv`` where ``CartPoleEnv.reset(
    seed=seeds[i])`` starts: the core's CartPole-v1 reset (``_core.cartpole_reset``,
    numpy's generator ported). The dynamics of the two classes are the same
    float64 arithmetic, so trajectories are the same bits."""
    base = env.unwrapped
    env.reset(seed=int(seeds[0]))  # clears the step counters and autoreset flags
    base.state = np.stack([_core.cartpole_reset(int(s)) for s in seeds], axis=1)
    return base.state.T.astype(np.float32)


# Vector environments whose members can be started from per-member seeds
# exactly as the single environment starts from that seed (class -> reset).
_SEEDED_RESETS: Dict[str, Callable] = {
    "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv": _cartpole_seeded_reset,
}
_seeded_reset_checked: Dict[str, bool] = {}


def _class_name(obj) -> str:
    return f"{type(obj).__module__}:{type(obj).__qualname__}"


def _check_seeded_reset(env_id: str, reset: Callable) -> bool:
    """Whether ``reset`` really reproduces the single environment: two seeds,
    60 steps of fixed actions, compared bit for bit (once per process)."""
    import gymnasium

    if env_id in _seeded_reset_checked:
        return _seeded_reset_checked[env_id]
    seeds = [12345, 678]
    actions = np.random.default_rng(0).integers(0, 2, size=(60, len(seeds)))
    venv = gymnasium.make_vec(env_id, num_envs=len(seeds), vectorization_mode="vector_entry_point")
    single = gymnasium.make(env_id)
    ok = True
    try:
        vobs = reset(venv, seeds)
        live = [True] * len(seeds)
        for i, s in enumerate(seeds):
            obs, _ = single.reset(seed=s)
            ok &= np.array_equal(obs, vobs[i])
        trajectories = []
        for i, s in enumerate(seeds):
            single.reset(seed=s)
            t = []
            for a in actions[:, i]:
                obs, r, term, trunc, _ = single.step(int(a))
                t.append((obs, r, term or trunc))
                if term or trunc:
                    break
            trajectories.append(t)
        for step, a in enumerate(actions):
            obs, r, term, trunc, _ = venv.step(a)
            for i in range(len(seeds)):
                if live[i]:
                    want = trajectories[i][step]
                    ok &= bool(np.array_equal(obs[i], want[0]) and float(r[i]) == float(want[1])
                               and bool(term[i] or trunc[i]) == want[2])
                    live[i] = not want[2]
    except Exception:  # an internal layout we do not know: no per-member seeds
        ok = False
    finally:
        venv.close()
        single.close()
    _seeded_reset_checked[env_id] = ok
    return ok


def _initial_state(graph, n: int):
    """Every member's recurrent state at the start of its episode (zeros, one
    row per member), or None for a feed-forward graph."""
    return np.zeros((n, graph.state_size), np.float32) if graph.recurrent else None


class Lockstep:
    """Rollouts of a population in lockstep on gymnasium vector environments
    of ``env_id`` (one per population size), with one batched native policy
    call per step."""

    def __init__(self, env_id: str, mode: str):
        self.env_id = env_id
        self.mode = mode
        self._envs: Dict[int, object] = {}
        self._seeded_reset: Optional[Callable] = None
        self.per_member_seeds = mode != "vector_entry_point"
        self.discrete = False
        self.action_shape: Tuple[int, ...] = ()

    def fit(self, policy, env) -> None:
        """Check the policy fits ``env`` (a single environment of env_id)."""
        from gymnasium import spaces

        self.discrete = check_policy_fits(policy, env)
        self.action_shape = tuple(getattr(env.action_space, "shape", ()) or ())
        if not self.discrete and not isinstance(env.action_space, spaces.Box):
            raise EnvError(f"action space {env.action_space} is not supported")

    def _env(self, n: int):
        import gymnasium

        env = self._envs.get(n)
        if env is None:
            env = gymnasium.make_vec(self.env_id, num_envs=n, vectorization_mode=self.mode)
            if self.mode == "vector_entry_point":
                reset = _SEEDED_RESETS.get(_class_name(env.unwrapped))
                if reset is not None and _check_seeded_reset(self.env_id, reset):
                    self._seeded_reset = reset
                    self.per_member_seeds = True
                elif reset is not None:
                    warnings.warn(f"{self.env_id}: this gymnasium's {type(env.unwrapped).__name__} "
                                  f"no longer reproduces the single environment from a seed; "
                                  f"members share one seeded generator, and rewards differ from "
                                  f"SerialEvaluator's", RuntimeWarning, stacklevel=2)
            self._envs[n] = env
        return env

    def _reset(self, env, seeds: List[int]) -> np.ndarray:
        if self.mode != "vector_entry_point":
            obs, _ = env.reset(seed=seeds)  # sync/async: each member's env gets its seed
            return obs
        if self._seeded_reset is not None:
            return self._seeded_reset(env, seeds)
        obs, _ = env.reset(seed=int(seeds[0]))  # one generator for all members
        return obs

    def run(self, graph, population, seeds: Sequence[Sequence[int]], num_threads: int,
            norm: Optional[ObsNorm] = None):
        """Rewards (mean return over each member's episodes), env steps and,
        with ``norm`` (applied to the observations), the observation statistics.
        Episode j of every member runs in round j, members with fewer
        episodes sitting out. Within a round, every step makes one batched
        policy call for the members still running."""
        n = len(seeds)
        env = self._env(n)
        out = np.zeros((n,) + tuple(graph.output_shape(1)[1:]), np.float32)
        returns: List[List[float]] = [[] for _ in range(n)]
        sample_steps = np.zeros(n, np.int64)
        stats = None if norm is None else ObsStats(n, graph.obs_size)
        episode = self._episode_sync if self.mode == "sync" else self._episode_vector
        for r in range(max((len(s) for s in seeds), default=0)):
            active = np.array([len(s) > r for s in seeds])
            if not active.any():
                break
            first = next(int(s[r]) for s in seeds if len(s) > r)
            round_seeds = [int(s[r]) if len(s) > r else first for s in seeds]
            total = episode(env, graph, population, round_seeds, active, num_threads, out,
                            norm, stats, sample_steps)
            for i, s in enumerate(seeds):
                if len(s) > r:
                    returns[i].append(float(total[i]))
        return EvalResult(np.asarray([float(np.mean(x)) for x in returns], dtype=np.float64),
                          int(sample_steps.sum()), stats, sample_steps)

    def _episode_vector(self, env, graph, population, seeds, active, num_threads, out,
                        norm, stats, sample_steps):
        """One episode per active member on the vector env's own step(). A
        member is masked out from the step its episode ends: gymnasium 1.x
        restarts it at the following step (next-step autoreset), and neither
        that step's reward nor the new episode is counted."""
        n = len(seeds)
        action_batch = (n,) + self.action_shape
        obs = self._reset(env, seeds)
        total = np.zeros(n)
        state = _initial_state(graph, n)
        while True:
            x = np.ascontiguousarray(obs, dtype=np.float32).reshape(n, -1)
            if norm is not None:
                stats.add_rows(active, x)
                x = np.ascontiguousarray(norm(x))
            graph.run_population(x, population, active, num_threads, out, state)
            actions = out.argmax(axis=1) if self.discrete else out.reshape(action_batch)
            obs, reward, terminated, truncated, _ = env.step(actions)
            np.add(total, reward, out=total, where=active)
            sample_steps += active
            active &= ~(np.asarray(terminated) | np.asarray(truncated))
            if not active.any():
                return total

    def _episode_sync(self, env, graph, population, seeds, active, num_threads, out,
                      norm, stats, sample_steps):
        """One episode per active member on the sub-environments of a
        SyncVectorEnv, each reset with its member's seed. Only members still
        running are stepped: a finished member's environment is left alone
        (stepping it into an autoreset would cost a Python step for nothing)."""
        envs = env.envs
        n = len(seeds)
        obs = np.zeros((n, graph.obs_size), np.float32)
        for i in np.flatnonzero(active):
            o, _ = envs[i].reset(seed=int(seeds[i]))
            obs[i] = np.asarray(o, dtype=np.float32).reshape(-1)
        total = [0.0] * n
        state = _initial_state(graph, n)
        while True:
            x = obs
            if norm is not None:
                stats.add_rows(active, obs)
                x = np.ascontiguousarray(norm(obs))
            graph.run_population(x, population, active, num_threads, out, state)
            actions = out.argmax(axis=1) if self.discrete else None
            for i in np.flatnonzero(active):
                a = int(actions[i]) if self.discrete else out[i].reshape(self.action_shape)
                o, reward, terminated, truncated, _ = envs[i].step(a)
                obs[i] = np.asarray(o, dtype=np.float32).reshape(-1)
                total[i] += float(reward)
                sample_steps[i] += 1
                if terminated or truncated:
                    active[i] = False
            if not active.any():
                return total

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
