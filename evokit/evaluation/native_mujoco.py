"""Gymnasium's MuJoCo locomotion tasks run natively: whole episodes in
EvoKit's core (``evokit._core.env_rollouts``), the policy on the native
backend, episodes spread over OpenMP threads, no Python per step.

The tasks are gymnasium's Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5,
Swimmer-v5 and Humanoid-v5, as the extension registers them
(``evokit._core.mujoco_tasks()``, :data:`TASK_OF_ENTRY_POINT`), with their constructor defaults (an
environment registered with other arguments, rendering aside, runs on the
general path) and a time limit. The core ports each env's ``step`` (ctrl <-
action, ``mj_step`` frame_skip times, ``mj_rnePostConstraint``), its
observation, reward terms and termination in numpy's dtypes and order of
operations, so observations, rewards, terminations and truncations are
gymnasium's bits. An episode starts where ``env.reset(seed=s)`` starts it:
the initial qpos and qvel are drawn here, once per episode, by the
expressions of the env's ``reset_model`` on ``gymnasium.utils.seeding.
np_random(s)`` (:func:`initial_states`); the core then does ``mj_resetData``,
sets them and calls ``mj_forward``, as ``set_state`` does.

MuJoCo itself is the library the ``mujoco`` package loaded: the core opens it
at run time (it is never linked) and refuses one of another version than the
headers EvoKit was built with, and the model is a copy of gymnasium's own
(``env.unwrapped.model``). Before a task is first used in a process, a short
trajectory of the native task is compared with gymnasium's step by step
(:func:`load`); any refusal is a reason, and the evaluators then take the
general path with one :class:`~evokit.errors.NativeFallbackWarning`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import warnings
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _core
from ..errors import EnvError, NativeFallbackWarning
from . import registry

__all__ = ["NativeMujocoEnv", "NativeTask", "TASK_OF_ENTRY_POINT", "check", "headers_release", "initial_state_rows", "initial_states", "load",
           "mujoco_library", "mujoco_task", "note_fallback"]

def _tasks() -> Dict[str, dict]:
    """The registry's MuJoCo tasks by name (:mod:`~evokit.evaluation.registry`)."""
    return {e["name"]: e for e in registry.entries().values() if e["component"] == "mujoco"}


#: gymnasium's entry points of the tasks the core implements -> task name
#: (the extension's registry; empty where EvoKit was built without MuJoCo).
TASK_OF_ENTRY_POINT = {e["entry_point"]: name for name, e in _tasks().items()}


def mujoco_task(env_id: str) -> Tuple[Optional[str], Optional[int], str]:
    """``(task, max_episode_steps, "")`` when ``env_id`` is one of the tasks
    the core implements, registered with its default arguments and a time
    limit; else ``(None, None, why not)``, the reason being ``""`` for an
    environment that is no such task at all. Needs no MuJoCo."""
    entry, max_steps, why = registry.native_entry(env_id)
    if entry is None or entry["component"] != "mujoco":
        return None, None, why
    return entry["name"], max_steps, ""


def mujoco_library() -> str:
    """The path of the libmujoco the ``mujoco`` package loaded (the mapped
    file, on Linux; else the one in the package directory). Raises
    RuntimeError when there is none."""
    import mujoco

    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith("libmujoco"):
                    return path
    except OSError:
        pass
    folder = os.path.dirname(mujoco.__file__)
    names = sorted({os.path.realpath(os.path.join(folder, n)) for n in os.listdir(folder)
                    if n.startswith("libmujoco") and (".so" in n or n.endswith(".dylib"))})
    if not names:
        raise RuntimeError(f"no libmujoco in {folder}")
    return names[-1]


@dataclass
class NativeTask:
    """A task the core runs here: the core's env, and what drawing its
    episodes' initial states needs (gymnasium's ``init_qpos``, ``init_qvel``
    and ``reset_noise_scale``)."""

    task: str
    env: object  # evokit._core.MujocoEnv (a NativeEnv)
    init_qpos: np.ndarray
    init_qvel: np.ndarray
    noise_scale: float
    normal_qvel: bool


_loaded: Dict[str, Union[NativeTask, str]] = {}


def load(task: str) -> NativeTask:
    """The core's ``task`` for this process (made once, then cached): the
    libmujoco the ``mujoco`` package loaded, a copy of the model gymnasium's
    env class makes with its defaults, and a check that 2 episodes of 25
    steps (random actions, some beyond the action bounds) give gymnasium's
    bits. Raises :class:`~evokit.errors.EnvError` with the reason when
    native MuJoCo cannot run the task here (that reason is cached too)."""
    if task not in _loaded:
        try:
            _loaded[task] = _load(task)
        except Exception as exc:  # any failure is a reason to take the general path
            _loaded[task] = f"native MuJoCo cannot run {task}: {exc}"
    found = _loaded[task]
    if isinstance(found, str):
        raise EnvError(found)
    return found


def _load(task: str) -> NativeTask:
    if _core.mujoco_header_version() == 0:
        _core.MujocoEnv(task, "", 1)  # raises the component's own reason
    entry = _tasks()[task]
    module, name = entry["entry_point"].split(":")
    cls = getattr(importlib.import_module(module), name)
    defaults = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
                if k in entry["defaults"]}
    for key, value in entry["defaults"].items():
        if key not in defaults or not registry.same_value(defaults[key], value):
            raise RuntimeError(f"this gymnasium's {name} has {key}={defaults.get(key)!r} by "
                               f"default, the core implements {value!r}")
    gym_env = cls()
    try:
        native = NativeTask(task, _core.MujocoEnv(task, mujoco_library(), gym_env.model._address),
                            gym_env.init_qpos.copy(), gym_env.init_qvel.copy(),
                            entry["reset_noise_scale"], entry["normal_qvel"])
        _verify(native, gym_env)
    finally:
        gym_env.close()
    return native


def _verify(native: NativeTask, gym_env, seeds: Sequence[int] = (0, 12345), steps: int = 25,
            action_scale: float = 1.5) -> int:
    """Raises RuntimeError unless episodes from ``reset(seed=s)`` for each of
    ``seeds``, at most ``steps`` steps of random actions each (uniform in
    +-``action_scale``, some beyond the action bounds), equal gymnasium's;
    returns the steps compared."""
    rng = np.random.default_rng(2024)
    episode = native.env.episode()
    compared = 0
    for seed in seeds:
        want, _ = gym_env.reset(seed=seed)
        got = episode.reset_state(initial_state_rows(native, [seed])[0])
        if not np.array_equal(got, want):
            raise RuntimeError(f"its reset(seed={seed}) differs from gymnasium's")
        for t in range(steps):
            action = rng.uniform(-action_scale, action_scale,
                                 native.env.action_size).astype(np.float32)
            want, reward, terminated, _, _ = gym_env.step(action)
            got, got_reward, got_terminated = episode.step(action)
            compared += 1
            if not (np.array_equal(got, want) and got_reward == reward
                    and got_terminated == terminated):
                raise RuntimeError(f"step {t} after reset(seed={seed}) differs from gymnasium's")
            if terminated:
                break
    return compared


def check(env_id: str, episodes: int = 3, max_steps: int = 1000) -> str:
    """What ``evokit check-native`` reports: ``env_id`` loaded natively as
    ``evokit train`` loads it (:func:`load`), then ``episodes`` more
    episodes of up to ``max_steps`` steps compared with gymnasium's step for
    step (observation, reward, termination). Raises
    :class:`~evokit.errors.EnvError` with the reason when the native path
    cannot run it or differs."""
    task, _, why = mujoco_task(env_id)
    if task is None:
        raise EnvError(why or f"{env_id} is not a MuJoCo task EvoKit runs natively (those are "
                              f"{', '.join(_tasks())} with default arguments)")
    native = load(task)
    module, name = _tasks()[task]["entry_point"].split(":")
    gym_env = getattr(importlib.import_module(module), name)()
    try:
        # Small actions: the episodes run long enough to leave the reset's neighbourhood.
        compared = _verify(native, gym_env, seeds=range(1, episodes + 1), steps=max_steps,
                           action_scale=0.2)
    except RuntimeError as exc:
        raise EnvError(f"native {task} differs from gymnasium: {exc}") from None
    finally:
        gym_env.close()
    import mujoco

    return (f"{env_id}: native, MuJoCo {mujoco.__version__} ({mujoco_library()}), EvoKit built "
            f"with the headers of MuJoCo {headers_release()}; {episodes} episodes, {compared} "
            f"steps equal to gymnasium's step for step")


def headers_release() -> str:
    """The MuJoCo release whose headers EvoKit was built with ("4.0.0"), or
    "" when it was built without native MuJoCo."""
    v = _core.mujoco_header_version()
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}" if v else ""


def initial_states(native: NativeTask, seeds: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
    """Each episode's initial qpos and qvel, float64 rows (episodes x nq,
    episodes x nv): what the env's ``reset(seed=s)`` draws, by the
    expressions of its ``reset_model`` on ``seeding.np_random(s)``."""
    from gymnasium.utils import seeding

    qpos = np.empty((len(seeds), native.env.nq))
    qvel = np.empty((len(seeds), native.env.nv))
    scale = native.noise_scale
    noise_low, noise_high = -scale, scale
    for e, seed in enumerate(seeds):
        rng = seeding.np_random(int(seed))[0]
        qpos[e] = native.init_qpos + rng.uniform(low=noise_low, high=noise_high,
                                                 size=native.env.nq)
        if native.normal_qvel:
            qvel[e] = native.init_qvel + scale * rng.standard_normal(native.env.nv)
        else:
            qvel[e] = native.init_qvel + rng.uniform(low=noise_low, high=noise_high,
                                                     size=native.env.nv)
    return qpos, qvel


def initial_state_rows(native: NativeTask, seeds: Sequence[int]) -> np.ndarray:
    """:func:`initial_states` as the core's episodes start: one row of qpos
    then qvel per episode (episodes x (nq + nv))."""
    return np.hstack(initial_states(native, seeds))


_noted = set()


def note_fallback(env_id: str, reason: str) -> None:
    """Say once per process and reason that ``env_id`` takes the general
    path (a :class:`~evokit.errors.NativeFallbackWarning`)."""
    if reason not in _noted:
        _noted.add(reason)
        warnings.warn(f"{reason}; {env_id} runs on gymnasium's environments instead",
                      NativeFallbackWarning, stacklevel=3)


class NativeMujocoEnv:
    """One native episode at a time of a MuJoCo task, stepped by hand like
    gymnasium's env: ``reset(seed)`` gives the observation, ``step(action)``
    ``(observation, reward, terminated, truncated)``, truncated after the
    registered time limit. For tests and checks; the evaluators run whole
    episodes with ``evokit._core.env_rollouts``. Raises
    :class:`~evokit.errors.EnvError` with the reason for an environment the
    core does not run (another env, other arguments) or cannot run here."""

    def __init__(self, env_id: str):
        task, max_steps, why = mujoco_task(env_id)
        if task is None:
            raise EnvError(why or f"{env_id} is not a MuJoCo task EvoKit runs natively (those are "
                                  f"{', '.join(_tasks())} with default arguments)")
        self.env_id = env_id
        self.native = load(task)
        self.max_episode_steps = max_steps
        self._episode = self.native.env.episode()
        self._elapsed: Optional[int] = None

    def reset(self, seed: int) -> np.ndarray:
        state = initial_state_rows(self.native, [seed])[0]
        self._elapsed = None
        obs = self._episode.reset_state(state)
        self._elapsed = 0
        return obs

    def step(self, action) -> Tuple[np.ndarray, float, bool, bool]:
        if self._elapsed is None:
            raise RuntimeError("step() before reset()")
        obs, reward, terminated = self._episode.step(np.asarray(action, np.float32).reshape(-1))
        self._elapsed += 1
        return obs, reward, terminated, self._elapsed >= self.max_episode_steps
