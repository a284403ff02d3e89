"""Evaluating sampling agents on gymnasium environments.

Training talks to evaluation through one small interface, :class:`Evaluator`:
given the agent and its samples' infos (``None`` for the centre policy) and an
episode seed per sample, return the rewards. Backends plug in behind it without
touching the training loop:

- :class:`SerialEvaluator`: one environment in this process, one policy call
  per member and step;
- :class:`ProcessEvaluator`: the same in worker processes;
- :class:`VectorEvaluator`: for environments EvoKit's core implements
  (CartPole-v0/v1), every episode of the population runs in C++
  (``evokit._core.cartpole_rollouts``), threaded over episodes; otherwise
  the whole population in lockstep on a gymnasium vector environment, one
  batched native policy call per step for every member
  (``evokit._core.PolicyGraph.run_population``), finished members masked
  out; for environments without a vectorised form, worker processes each run
  a slice of the population the same way.

:func:`make_evaluator` picks one. A reward depends only on (parameters, seed):
where the environment is deterministic per seed, every evaluator gives the
same rewards (for the vector evaluator, see its notes on seeding).
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import multiprocessing
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _core
from . import evokit_pb2 as pb
from .errors import EnvError
from .obsnorm import ObsNorm, ObsStats, merged_stats

__all__ = ["EvalResult", "Evaluator", "SerialEvaluator", "ProcessEvaluator",
           "VectorEvaluator", "EVALUATOR_KINDS", "make_env", "make_evaluator", "check_policy_fits",
           "run_episode", "has_vector_entry_point", "native_env_steps"]

#: What :func:`make_evaluator` accepts as ``kind``.
EVALUATOR_KINDS = ("auto", "vector", "process", "serial")


@dataclass
class EvalResult:
    rewards: np.ndarray  # float64, one per sample: mean return over its episodes
    steps: int           # environment steps taken
    # With Evaluator.obs_norm set: each sample's raw observation statistics.
    obs_stats: Optional[ObsStats] = None


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


def run_episode(env, agent, seed: int, discrete: bool, norm: Optional[ObsNorm] = None,
                stats: Optional[ObsStats] = None, index: int = 0) -> Tuple[float, int]:
    """One episode of ``agent`` (its current parameters) from ``env.reset(seed=seed)``;
    with ``norm``, the policy sees normalised observations, and the raw ones
    are added to ``stats`` as sample ``index``'s."""
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


def _evaluate_items(agent, clone, env, discrete: bool, items, norm: Optional[ObsNorm] = None):
    """Rewards, steps and observation statistics (with ``norm``) for ``items`` =
    [(info or None, [episode seeds]), ...]; ``clone`` (a clone of ``agent``) carries the noise."""
    rewards, steps = [], 0
    stats = None if norm is None else ObsStats(len(items), int(norm.mean.size))
    for index, (info, seeds) in enumerate(items):
        target = agent
        if info is not None:
            clone.set_noise(info)
            target = clone
        returns = []
        for s in seeds:
            r, n = run_episode(env, target, s, discrete, norm, stats, index)
            returns.append(r)
            steps += n
        rewards.append(float(np.mean(returns)))
    return rewards, steps, stats


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
        rewards, steps, stats = _evaluate_items(agent, self._clone, self._env, self._discrete,
                                                list(zip(infos, seeds)), self.obs_norm)
        return EvalResult(np.asarray(rewards, dtype=np.float64), steps, stats)

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


def _worker_run(params: bytes, model_iter_id: int, items, norm=None):
    from .agent import ESAgent

    w = _worker
    if w["key"] != (params, model_iter_id):
        w["agent"] = ESAgent._replica(w["config"], w["policy"], np.frombuffer(params, np.float32),
                                      model_iter_id)
        w["clone"] = w["agent"].clone()
        w["key"] = (params, model_iter_id)
    decoded = [(None if b is None else pb.SamplingInfo.FromString(b), s) for b, s in items]
    return _evaluate_items(w["agent"], w["clone"], w["env"], w["discrete"], decoded, norm)


class _PooledEvaluator(Evaluator):
    """The worker-pool bookkeeping shared by the evaluators that use processes."""

    _pool: Optional[cf.ProcessPoolExecutor] = None

    def _collect(self, futures) -> EvalResult:
        """The futures' (rewards, steps) joined in submission order, which is
        the sample order."""
        rewards: List[float] = []
        steps = 0
        stats = []
        try:
            for f in futures:
                r, n, st = f.result()
                rewards.extend(r)
                steps += n
                stats.append(st)
        except cf.process.BrokenProcessPool as exc:
            self.close_pool()
            raise RuntimeError(f"an evaluation worker died: {exc}") from None
        return EvalResult(np.asarray(rewards, dtype=np.float64), steps, merged_stats(stats))

    def close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class ProcessEvaluator(_PooledEvaluator):
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
        futures = [self._pool.submit(_worker_run, params, it, items[a:b], self.obs_norm)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        return self._collect(futures)

    def close(self) -> None:
        self.close_pool()
        self._env.close()


# ---- lockstep evaluation on vector environments ------------------------------------


def has_vector_entry_point(env_id: str) -> bool:
    """Whether gymnasium registers a vectorised implementation of ``env_id``
    (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``)."""
    import gymnasium

    try:
        return gymnasium.spec(env_id).vector_entry_point is not None
    except gymnasium.error.Error:
        return False


_CARTPOLE_ENTRY_POINT = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"


def native_env_steps(env_id: str) -> Optional[int]:
    """The episode length limit if EvoKit's core runs ``env_id`` natively,
    else None. That is gymnasium's ``CartPoleEnv`` with its default reward
    and a time limit (CartPole-v1: 500, CartPole-v0: 200), whose dynamics and
    seeding ``evokit._core.cartpole_rollouts`` reproduces bit for bit."""
    import gymnasium

    try:
        spec = gymnasium.spec(env_id)
    except gymnasium.error.Error:
        return None
    if spec.entry_point != _CARTPOLE_ENTRY_POINT or spec.max_episode_steps is None:
        return None
    kwargs = {k: v for k, v in (spec.kwargs or {}).items() if k != "render_mode"}
    if set(kwargs) - {"sutton_barto_reward"} or kwargs.get("sutton_barto_reward", False):
        return None
    return int(spec.max_episode_steps)


def _cartpole_seeded_reset(env, seeds: Sequence[int]) -> np.ndarray:
    """Start member i of a ``CartPoleVectorEnv`` where ``CartPoleEnv.reset(
    seed=seeds[i])`` starts: its state drawn by its own seeded generator,
    uniform(-0.05, 0.05) in each of the 4 coordinates. The dynamics of the two
    classes are the same float64 arithmetic, so trajectories are the same bits."""
    from gymnasium.utils import seeding

    base = env.unwrapped
    env.reset(seed=int(seeds[0]))  # clears the step counters and autoreset flags
    base.state = np.stack([seeding.np_random(int(s))[0].uniform(low=-0.05, high=0.05, size=(4,))
                           for s in seeds], axis=1)
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


class _Lockstep:
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
        steps = 0
        stats = None if norm is None else ObsStats(n, graph.obs_size)
        episode = self._episode_sync if self.mode == "sync" else self._episode_vector
        for r in range(max((len(s) for s in seeds), default=0)):
            active = np.array([len(s) > r for s in seeds])
            if not active.any():
                break
            first = next(int(s[r]) for s in seeds if len(s) > r)
            round_seeds = [int(s[r]) if len(s) > r else first for s in seeds]
            total, round_steps = episode(env, graph, population, round_seeds, active, num_threads, out,
                                         norm, stats)
            steps += round_steps
            for i, s in enumerate(seeds):
                if len(s) > r:
                    returns[i].append(float(total[i]))
        return [float(np.mean(x)) for x in returns], steps, stats

    def _episode_vector(self, env, graph, population, seeds, active, num_threads, out,
                        norm=None, stats=None):
        """One episode per active member on the vector env's own step(). A
        member is masked out from the step its episode ends: gymnasium 1.x
        restarts it at the following step (next-step autoreset), and neither
        that step's reward nor the new episode is counted."""
        n = len(seeds)
        action_batch = (n,) + self.action_shape
        obs = self._reset(env, seeds)
        total = np.zeros(n)
        steps = 0
        while True:
            x = np.ascontiguousarray(obs, dtype=np.float32).reshape(n, -1)
            if norm is not None:
                stats.add_rows(active, x)
                x = np.ascontiguousarray(norm(x))
            graph.run_population(x, population, active, num_threads, out)
            actions = out.argmax(axis=1) if self.discrete else out.reshape(action_batch)
            obs, reward, terminated, truncated, _ = env.step(actions)
            np.add(total, reward, out=total, where=active)
            steps += int(np.count_nonzero(active))
            active &= ~(np.asarray(terminated) | np.asarray(truncated))
            if not active.any():
                return total, steps

    def _episode_sync(self, env, graph, population, seeds, active, num_threads, out,
                      norm=None, stats=None):
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
        steps = 0
        while True:
            x = obs
            if norm is not None:
                stats.add_rows(active, obs)
                x = np.ascontiguousarray(norm(obs))
            graph.run_population(x, population, active, num_threads, out)
            actions = out.argmax(axis=1) if self.discrete else None
            for i in np.flatnonzero(active):
                a = int(actions[i]) if self.discrete else out[i].reshape(self.action_shape)
                o, reward, terminated, truncated, _ = envs[i].step(a)
                obs[i] = np.asarray(o, dtype=np.float32).reshape(-1)
                total[i] += float(reward)
                steps += 1
                if terminated or truncated:
                    active[i] = False
            if not active.any():
                return total, steps

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def _keys_and_signs(infos) -> Tuple[np.ndarray, np.ndarray]:
    """The population's keys and signs (+1, -1 for a mirrored sample, 0 for the
    centre), from SamplingInfos (None = the centre)."""
    keys = np.zeros(len(infos), np.int64)
    signs = np.zeros(len(infos), np.float32)
    for i, info in enumerate(infos):
        if info is None:
            continue
        if len(info.key) != 1:
            raise ValueError(f"sampling info {i}: expected exactly one key, got {len(info.key)}")
        keys[i] = info.key[0]
        signs[i] = -1.0 if info.mirrored else 1.0
    return keys, signs


def _strategy_members(agent, strategy, infos) -> np.ndarray:
    """The parameters of CMA / GA members (None = the centre), one row each."""
    rows = np.empty((len(infos), agent.num_params), dtype=np.float32)
    for i, info in enumerate(infos):
        if info is None:
            rows[i] = agent.center
        else:
            try:
                strategy.core.rebuild(_core.SamplingInfo(key=list(info.key),
                                                         model_iter_id=int(info.model_iter_id)),
                                      rows[i])
            except (ValueError, IndexError) as exc:
                raise ValueError(f"sampling info {i}: {exc}") from None
    return rows


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
    g = config.solver.sampling.gaussian_sampling
    env = make_env(env_id)
    runner = _Lockstep(env_id, mode)
    runner.fit(policy, env)
    env.close()
    _vworker.update(policy=policy, runner=runner,
                    sampler=_core.GaussianSampler(g.seed, g.std, g.cached, g.cache_size,
                                                  policy.num_params))


def _vector_worker_run(centre: bytes, keys, signs, seeds, norm=None):
    w = _vworker
    population = _core.Population(w["sampler"], np.frombuffer(centre, np.float32), keys, signs)
    return w["runner"].run(w["policy"].native.graph, population, seeds, 1, norm)


class VectorEvaluator(_PooledEvaluator):
    """Lockstep evaluation: every member of the population on one gymnasium
    vector environment, one batched native policy call per step; or, for an
    environment the core implements, every episode in C++.

    ``vectorization_mode="native"`` (what ``"auto"`` picks for CartPole-v0
    and v1, see :func:`native_env_steps`): each episode runs start to end in
    ``evokit._core.cartpole_rollouts``, with the member's perturbed
    parameters materialised once per episode, the forward pass, gymnasium's
    CartPoleEnv dynamics (float64, same operations), its seeding (numpy's
    SeedSequence and PCG64, reimplemented) and its time limit, episodes
    spread over ``max(num_threads, num_workers)`` OpenMP threads (no worker
    processes: they would only add copying). No Python runs per step.
    Rewards equal :class:`SerialEvaluator`'s bit for bit.

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
    seed the rewards equal :class:`SerialEvaluator`'s bit for bit (the native
    forward pass of a member gives the bits of the clone's own prediction):
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
    over cores. Only the centre, keys and seeds travel to the workers.

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
        self._max_steps = native_env_steps(env_id)
        if vectorization_mode == "auto":
            if self._max_steps is not None:
                vectorization_mode = "native"
            else:
                vectorization_mode = "vector_entry_point" if vector else "sync"
        elif vectorization_mode == "native" and self._max_steps is None:
            raise EnvError(f"{env_id} is not implemented natively (only gymnasium's CartPole with "
                           f"a time limit is); use vectorization_mode='auto'")
        elif vectorization_mode == "vector_entry_point" and not vector:
            raise EnvError(f"{env_id} has no vectorised form (no vector_entry_point); use "
                           f"vectorization_mode='sync'")
        self.vectorization_mode = vectorization_mode
        self.num_workers = num_workers
        self.num_threads = num_threads
        self._runner = _Lockstep(env_id, "vector_entry_point" if vectorization_mode == "native"
                                 else vectorization_mode)
        self._fitted_policy = None
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
        ctx = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(
            max_workers=self.num_workers, mp_context=ctx, initializer=_vector_worker_init,
            initargs=(agent.config.SerializeToString(), agent.policy, self.env_id,
                      self.vectorization_mode))
        self._pool_key = key

    def evaluate(self, agent, infos, seeds) -> EvalResult:
        policy = agent.policy
        native = _native_policy(policy)
        if self._fitted_policy is not policy:
            self._runner.fit(policy, self._env)
            self._fitted_policy = policy
        seeds = [list(map(int, s)) for s in seeds]
        if len(seeds) != len(infos):
            raise ValueError(f"got {len(infos)} sampling infos and {len(seeds)} seed lists")
        strategy = getattr(agent, "strategy", None)
        if strategy is not None:
            # CMA / GA: members are rebuilt from the strategy's state, which
            # lives in this process only; they run here as explicit rows.
            population = _core.Population.from_params(_strategy_members(agent, strategy, infos))
        else:
            keys, signs = _keys_and_signs(infos)
        if self.vectorization_mode == "native" and self.obs_norm is None:
            if strategy is None:
                population = native.population(agent.center, keys, signs, agent.sampler,
                                               self.num_threads)
            return self._native_rollouts(native, population, seeds)
        # The core's CartPole does not normalise observations: with obs_norm,
        # native mode runs the lockstep runner (CartPoleVectorEnv) here.
        if (strategy is not None or self.num_workers == 1 or len(infos) == 1
                or self.vectorization_mode == "native"):
            if strategy is None:
                population = native.population(agent.center, keys, signs, agent.sampler,
                                               self.num_threads)
            rewards, steps, stats = self._runner.run(native.graph, population, seeds,
                                                     self.num_threads, self.obs_norm)
            return EvalResult(np.asarray(rewards, dtype=np.float64), steps, stats)
        self._ensure_pool(agent)
        centre = np.ascontiguousarray(agent.center, dtype=np.float32).tobytes()
        n_slices = min(len(keys), self.num_workers)
        bounds = np.linspace(0, len(keys), n_slices + 1).astype(int)
        futures = [self._pool.submit(_vector_worker_run, centre, keys[a:b], signs[a:b], seeds[a:b],
                                     self.obs_norm)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        return self._collect(futures)

    def _native_rollouts(self, native, population, seeds) -> EvalResult:
        """Every episode in the core; member i's reward is the mean of its
        episodes' returns (each a float64 sum of 1.0 per step)."""
        counts = np.fromiter((len(s) for s in seeds), np.int64, len(seeds))
        members = np.repeat(np.arange(len(seeds), dtype=np.int64), counts)
        flat = np.fromiter((x for s in seeds for x in s), np.int64, int(counts.sum()))
        workers = max(self.num_threads, self.num_workers)
        lengths = _core.cartpole_rollouts(native.graph, population, members, flat,
                                          self._max_steps, workers)
        rewards = np.zeros(len(seeds))
        start = 0
        for i, c in enumerate(counts):
            if c:
                rewards[i] = np.mean(lengths[start:start + c].astype(np.float64))
            start += c
        return EvalResult(rewards, int(lengths.sum()))

    def close(self) -> None:
        self.close_pool()
        self._runner.close()
        self._env.close()

    def __repr__(self) -> str:
        return (f"VectorEvaluator({self.env_id!r}, mode={self.vectorization_mode!r}, "
                f"num_workers={self.num_workers}, num_threads={self.num_threads})")


def make_evaluator(env_id: str, num_workers: int, kind: str = "auto", policy=None) -> Evaluator:
    """The evaluator ``kind`` names, for ``num_workers`` cores:

    - ``"serial"``: :class:`SerialEvaluator`;
    - ``"process"``: :class:`ProcessEvaluator` with ``num_workers`` processes;
    - ``"vector"``: :class:`VectorEvaluator`; natively in the core
      (CartPole) or on the environment's own vectorised form, in this process
      with ``num_workers`` OpenMP threads, else on ``"sync"`` vector
      environments in ``num_workers`` worker processes (in this process for 1);
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
