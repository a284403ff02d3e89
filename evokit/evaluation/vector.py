"""Lockstep evaluation of a population with the native backend:
:class:`VectorEvaluator` (every episode in C++ for the environments the core
implements: CartPole and gymnasium's MuJoCo locomotion tasks; else on a
gymnasium vector environment, in this process or in worker processes each
running a slice)."""

from __future__ import annotations

import concurrent.futures as cf
from typing import Optional

import numpy as np

from .. import _core
from .. import evokit_pb2 as pb
from ..errors import EnvError
from ..agent import ESAgent
from .base import EvalResult, PooledEvaluator, take_sampling_state
from . import native_mujoco
from .envs import has_vector_entry_point, make_env, native_env
from .lockstep import Lockstep
from .obsnorm import ObsStats

__all__ = ["VectorEvaluator"]

_NATIVE_ENVS = ("only the environments the extension registers (evokit.evaluation.registry) with "
                "their default arguments and a time limit are")


def _native_policy(policy):
    if policy.native is None:
        raise ValueError(
            f"{policy.source}: the vector evaluator needs a policy on the native backend, this one "
            f"runs on onnxruntime ({policy.fallback_reason or 'backend=onnxruntime'}); use "
            f"make_evaluator(..., kind='auto'), SerialEvaluator or ProcessEvaluator")
    return policy.native


_vworker = {}


def _vector_worker_init(config_bytes: bytes, policy, env_id: str, mode: str) -> None:
    config = pb.EvoKitConfig.FromString(config_bytes)
    env = make_env(env_id)
    runner = Lockstep(env_id, mode)
    runner.fit(policy, env)
    env.close()
    _vworker.update(policy=policy, runner=runner, agent=ESAgent.replica(config, policy), state=None)


def _vector_worker_run(state: bytes, infos, seeds, norm=None):
    w = _vworker
    take_sampling_state(w, state)
    population = w["agent"].population([None if b is None else pb.SamplingInfo.FromString(b)
                                        for b in infos])
    return w["runner"].run(w["policy"].native.graph, population, seeds, 1, norm)


class VectorEvaluator(PooledEvaluator):
    """Lockstep evaluation: every member of the population on one gymnasium
    vector environment, one batched native policy call per step; or, for an
    environment the core implements, every episode in C++.

    ``vectorization_mode="native"`` (what ``"auto"`` picks for the
    environments the core implements, see
    :func:`~evokit.evaluation.envs.native_env`): each episode runs start to
    end in the core, with the member's perturbed parameters materialised once
    per episode, episodes spread over ``max(num_threads, num_workers)``
    OpenMP threads (no worker processes: they would only add copying). No
    Python runs per step: ``evokit._core.env_rollouts`` on the environment the
    extension registers (:mod:`~evokit.evaluation.registry`). For the core's
    own environments (CartPole-v0 and v1, Pendulum-v1) the env's dynamics in
    the same float64 / float32 operations, its seeding (numpy's SeedSequence
    and PCG64, reimplemented) and its time limit. For gymnasium's Hopper-v5,
    HalfCheetah-v5, Walker2d-v5, Ant-v5, Swimmer-v5 and Humanoid-v5 with their
    default arguments (:mod:`~evokit.evaluation.native_mujoco`): the env's
    step, observation, reward and termination ported to C++ on the libmujoco
    the ``mujoco`` package loaded (one ``mjData`` per thread), the episode's
    initial state drawn in Python from its seed as ``reset(seed=s)`` draws
    it. Either way the policy's output is the action (its argmax for a
    discrete env, as the other paths take it), the time limit, and with
    :attr:`obs_norm` the normalisation and the observation statistics
    (per episode, added up per sample in episode order: counts equal the
    other evaluators', sums agree to rounding). Rewards equal
    :class:`~evokit.evaluation.serial.SerialEvaluator`'s bit for bit, and
    results are the same for any number of threads. Where native MuJoCo
    cannot run (EvoKit built without it, another MuJoCo version than its
    headers', a trajectory check that failed), ``"auto"`` takes the path
    below and says why once (:class:`~evokit.errors.NativeFallbackWarning`).

    ``gymnasium.make_vec(env_id, num_envs=N, vectorization_mode=...)`` with
    ``vectorization_mode="auto"``: ``"native"`` when the core runs the
    environment, else the environment's own vectorised form
    (``"vector_entry_point"``, e.g. ``CartPoleVectorEnv``) when it has one,
    else ``"sync"``. Each step calls ``PolicyGraph.run_population`` once for
    all members still running, with their perturbed parameters read from the
    noise keys (no parameter copies) on ``num_threads`` OpenMP threads, takes
    the argmax (discrete) or the output itself (continuous) as the actions,
    and steps the environments. Finished members are masked out of the policy
    call and of the returns. On a vectorised env every member is stepped
    together; gymnasium 1.x restarts a finished member at the next step
    (next-step autoreset), and that step's reward and the new episode never
    reach its return. In ``"sync"`` mode the SyncVectorEnv's sub-environments
    are stepped one by one, only those still running (stepping a finished one
    would cost a Python-level step for nothing).

    Seeding. Member i's episode j starts from ``seeds[i][j]`` exactly as the
    other evaluators start it, so where the environment is deterministic per
    seed the rewards equal :class:`~evokit.evaluation.serial.SerialEvaluator`'s
    bit for bit (the native forward pass of a member gives the bits of the
    clone's own prediction):
    in ``"sync"`` (and ``"async"``) mode each member's environment is reset
    with its seed. A vectorised environment takes one seed for all members;
    for ``CartPoleVectorEnv`` the evaluator starts each member from its own
    seed (the state ``CartPoleEnv.reset(seed)`` draws, verified once per
    process against the single environment), which reproduces the single
    environment's trajectories exactly. Other vectorised environments are
    reset with the first member's seed: their rewards are deterministic but
    differ from SerialEvaluator's (``per_member_seeds`` is then False).

    ``num_workers > 1`` runs worker processes (spawned), each with a contiguous
    slice of the population on its own vector environment with the same
    batched call: the way to spread environments without a vectorised form
    over cores. Only the solver's sampling state, the infos and the seeds
    travel to the workers.

    The policy must run natively (``agent.policy.backend == "native"``).
    """

    def __init__(self, env_id: str, num_workers: int = 1, *, num_threads: int = 1,
                 vectorization_mode: str = "auto"):
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        modes = ("auto", "native", "vector_entry_point", "sync", "async")
        if vectorization_mode not in modes:
            raise ValueError(f"vectorization_mode must be one of {', '.join(modes)}, "
                             f"got {vectorization_mode!r}")
        self.env_id = env_id
        self._env = make_env(env_id)  # fail here for a bad id
        vector = has_vector_entry_point(env_id)
        self._native, why = native_env(env_id)
        if self._native is not None and self._native.unavailable is not None:
            why, self._native = self._native.unavailable, None
        if vectorization_mode == "auto":
            if self._native is not None:
                vectorization_mode = "native"
            else:
                vectorization_mode = "vector_entry_point" if vector else "sync"
        elif vectorization_mode == "native" and self._native is None:
            raise EnvError(
                f"{env_id} is not implemented natively ({why or _NATIVE_ENVS}); use "
                f"vectorization_mode='auto'")
        elif vectorization_mode == "vector_entry_point" and not vector:
            raise EnvError(f"{env_id} has no vectorised form (no vector_entry_point); use "
                           f"vectorization_mode='sync'")
        self.vectorization_mode = vectorization_mode
        self.num_workers = num_workers
        self.num_threads = num_threads
        # The lockstep runner; in native mode it checks the policy fits (Lockstep.fit).
        self._runner = Lockstep(env_id, vectorization_mode if vectorization_mode != "native"
                                else "vector_entry_point" if vector else "sync")
        self._fitted_policy = None
        self._core_env = None  # the core's env of a native environment, made at first use
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._pool_key = None

    @property
    def per_member_seeds(self) -> bool:
        """Whether members start from their own episode seeds (see Seeding);
        for a vectorised env, known once the first evaluate() has made it."""
        return self.vectorization_mode == "native" or self._runner.per_member_seeds

    def _ensure_pool(self, agent) -> None:
        key = (id(agent.policy), agent.config.SerializeToString())
        if self._pool is not None and self._pool_key == key:
            return
        self.close_pool()
        self._pool = self._new_pool(self.num_workers, _vector_worker_init,
                                    (agent.config.SerializeToString(), agent.policy, self.env_id,
                                     self.vectorization_mode))
        self._pool_key = key

    def evaluate(self, agent, infos, seeds) -> EvalResult:
        policy = agent.policy
        native = _native_policy(policy)
        if self._fitted_policy is not policy:
            self._runner.fit(policy, self._env)
            self._fitted_policy = policy
        if isinstance(seeds, np.ndarray) and seeds.ndim == 2:  # a table: every sample the same episodes
            seeds = seeds.astype(np.int64, copy=False)
        else:
            seeds = [list(map(int, s)) for s in seeds]
        if len(seeds) != len(infos):
            raise ValueError(f"got {len(infos)} sampling infos and {len(seeds)} seed lists")
        if self.vectorization_mode != "native" and isinstance(seeds, np.ndarray):
            seeds = seeds.tolist()
        in_process = (self.vectorization_mode == "native" or self.num_workers == 1
                      or len(infos) == 1)
        if in_process:
            # Gaussian members are read from the noise keys in place; CMA /
            # GA members are rebuilt as rows once (the solver decides).
            population = agent.population(infos, self.num_threads)
        if self.vectorization_mode == "native":
            return self._native_rollouts(native, population, seeds)
        if in_process:
            return self._runner.run(native.graph, population, seeds, self.num_threads,
                                    self.obs_norm)
        self._ensure_pool(agent)
        state = agent.sampling_state()
        items = [None if i is None else i.SerializeToString() for i in infos]
        n_slices = min(len(items), self.num_workers)
        bounds = np.linspace(0, len(items), n_slices + 1).astype(int)
        futures = [self._pool.submit(_vector_worker_run, state, items[a:b], seeds[a:b],
                                     self.obs_norm)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        return self._collect(futures)

    def _native_rollouts(self, native, population, seeds) -> EvalResult:
        """Every episode in the core; sample i's reward is the mean of its
        episodes' float64 returns (each summed step by step, in order), its
        observation statistics the sum of its episodes' in episode order."""
        if isinstance(seeds, np.ndarray):
            counts = np.full(len(seeds), seeds.shape[1], np.int64)
            flat = seeds.reshape(-1)
        else:
            counts = np.fromiter((len(s) for s in seeds), np.int64, len(seeds))
            flat = [x for s in seeds for x in s]
        members = np.repeat(np.arange(len(seeds), dtype=np.int64), counts)
        threads = max(self.num_threads, self.num_workers)
        max_steps = self._native.max_steps
        norm = self.obs_norm
        normalise = {} if norm is None else dict(obs_mean=norm.mean, obs_std=norm.std,
                                                 obs_clip=norm.clip)
        if self._native.mujoco_task is None:
            # The core's own environments start from the episodes' seeds.
            if self._core_env is None:
                self._core_env = _core.NativeEnv(self._native.task)
            env, starts = self._core_env, dict(seeds=np.asarray(flat, np.int64))
        else:
            # A MuJoCo task's initial states are drawn here, as reset(seed=s) draws them.
            task = native_mujoco.load(self._native.mujoco_task)
            env, starts = task.env, dict(states=native_mujoco.initial_state_rows(task, flat))
        returns, lengths, sums, sumsqs, (wall, busy) = _core.env_rollouts(
            env, native.graph, population, members, max_steps, threads, **starts, **normalise, timing=True)
        timing = dict(thread_seconds=wall * len(busy), busy_seconds=float(sum(busy)))
        n = len(seeds)
        stats = None if sums is None else ObsStats(n, native.graph.obs_size)
        if n and (counts == counts[0]).all() and counts[0] > 0:
            # Every sample the same number of episodes: its mean, steps and
            # sums along rows (numpy reduces each row as it reduces a slice).
            c = int(counts[0])
            rewards = returns.reshape(n, c).mean(axis=1)
            sample_steps = lengths.reshape(n, c).sum(axis=1).astype(np.int64)
            if stats is not None:
                stats.count[:] = sample_steps
                stats.sum[:] = 0.0 + sums.reshape(n, c, -1).sum(axis=1)
                stats.sumsq[:] = 0.0 + sumsqs.reshape(n, c, -1).sum(axis=1)
            return EvalResult(rewards, int(lengths.sum()), stats, sample_steps, **timing)
        rewards = np.zeros(n)
        sample_steps = np.zeros(n, np.int64)
        start = 0
        for i, c in enumerate(counts):
            if c:
                rewards[i] = np.mean(returns[start:start + c])
                sample_steps[i] = lengths[start:start + c].sum()
                if stats is not None:
                    stats.count[i] = sample_steps[i]
                    for e in range(start, start + c):
                        stats.sum[i] += sums[e]
                        stats.sumsq[i] += sumsqs[e]
            start += c
        return EvalResult(rewards, int(lengths.sum()), stats, sample_steps, **timing)

    def close(self) -> None:
        self.close_pool()
        self._runner.close()
        self._env.close()

    def __repr__(self) -> str:
        return (f"VectorEvaluator({self.env_id!r}, mode={self.vectorization_mode!r}, "
                f"num_workers={self.num_workers}, num_threads={self.num_threads})")
