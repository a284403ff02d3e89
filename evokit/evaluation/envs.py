"""Gymnasium environments: making one, a fresh policy for it, checking that a
policy fits it, and what EvoKit knows of it (a vectorised form; an
implementation in the core)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import onnx

from .. import _core
from ..errors import EnvError
from ..policy.mlp import policy_for_spaces

__all__ = ["NativeEnv", "check_native", "check_policy_fits", "has_vector_entry_point", "make_env", "native_env",
           "native_env_steps", "policy_for_env"]


def make_env(env_id: str):
    """``gymnasium.make(env_id)`` with a clear error for an unknown id."""
    import gymnasium

    try:
        return gymnasium.make(env_id)
    except gymnasium.error.Error as exc:
        raise EnvError(f"cannot make environment {env_id!r}: {exc}") from None


def policy_for_env(env_id: str, hidden_sizes: Sequence[int] = (16,), activation: str = "tanh",
                   seed: int = 0, action_mapping: str = "clip",
                   recurrent: Optional[str] = None) -> onnx.ModelProto:
    """A fresh MLP policy for ``env_id``'s observation and action spaces:
    :func:`~evokit.policy.mlp.policy_for_spaces` of the environment
    :func:`make_env` makes."""
    env = make_env(env_id)
    try:
        return policy_for_spaces(env.observation_space, env.action_space,
                                 hidden_sizes=tuple(hidden_sizes), activation=activation, seed=seed,
                                 action_mapping=action_mapping, recurrent=recurrent)
    finally:
        env.close()


def init_model(env_id: str, path: Union[str, "os.PathLike[str]"], hidden_sizes: Sequence[int] = (16,),
               activation: str = "tanh", seed: int = 0, action_mapping: str = "clip",
               recurrent: Optional[str] = None) -> str:
    """Write :func:`policy_for_env`'s model to ``path`` (what ``evokit
    init-model`` does); return the path. ``recurrent="lstm"`` or ``"gru"``:
    the first hidden layer is that recurrent cell."""
    from ..util import atomic_write_bytes

    model = policy_for_env(env_id, hidden_sizes, activation, seed, action_mapping, recurrent)
    atomic_write_bytes(os.fspath(path), model.SerializeToString())
    return os.fspath(path)


def check_policy_fits(policy, env) -> bool:
    """Check the policy's input and output fit the env's spaces; return whether
    the action space is discrete. Raises :class:`~evokit.errors.EnvError`
    naming the mismatch."""
    from gymnasium import spaces

    obs_space, act_space = env.observation_space, env.action_space
    if not isinstance(obs_space, spaces.Box):
        raise EnvError(f"{env.spec.id if env.spec else env}: observation space {obs_space} is not a Box")
    obs_dim = int(np.prod(obs_space.shape))
    want = tuple(policy.obs_shape)
    if len(want) == 0:  # [n]: one observation, no batch dimension
        batch = getattr(policy, "_batch_dim", None)
        raise EnvError(f"the policy's input {policy.input_name!r} has shape "
                       f"[{'?' if batch is None else batch}], one observation without a batch "
                       f"dimension; EvoKit feeds [batch, {obs_dim}] (export the model with a "
                       f"batch axis, e.g. torch.onnx.export(..., dynamic_axes={{"
                       f"{policy.input_name!r}: {{0: 'batch'}}}}))")
    if len(want) != 1 or (want[0] is not None and want[0] != obs_dim):
        raise EnvError(f"the policy takes observations of shape {want}, "
                       f"the environment gives {obs_space.shape} ({obs_dim} values)")
    state = policy.initial_state() if getattr(policy, "recurrent", False) else None
    out = np.asarray(policy.run(np.zeros(obs_dim, np.float32), policy.initial_params(), state))
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


def has_vector_entry_point(env_id: str) -> bool:
    """Whether gymnasium registers a vectorised implementation of ``env_id``
    (``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``)."""
    import gymnasium

    try:
        return gymnasium.spec(env_id).vector_entry_point is not None
    except gymnasium.error.Error:
        return False


@dataclass(frozen=True)
class NativeEnv:
    """An environment EvoKit's core implements: ``max_steps`` is its time
    limit; ``task`` the registry's name of it ("CartPole-v1",
    "Pendulum-v1", "Hopper-v5", ...); ``mujoco_task`` names it again for a
    MuJoCo task (None for the core's own environments); ``unavailable`` says
    why it cannot run natively in this process (None when it can)."""

    max_steps: int
    mujoco_task: Optional[str] = None
    unavailable: Optional[str] = None
    task: Optional[str] = None


def native_env(env_id: str) -> Tuple[Optional[NativeEnv], str]:
    """``(NativeEnv, "")`` if EvoKit's core implements ``env_id``, else
    ``(None, why not)``, the reason being ``""`` when the core has no such
    environment at all. The core implements the environments the extension
    registers (:mod:`~evokit.evaluation.registry`) with their default
    arguments and a time limit: gymnasium's ``CartPoleEnv`` (CartPole-v1:
    500 steps, CartPole-v0: 200) and ``PendulumEnv`` (Pendulum-v1), whose
    dynamics and seeding ``evokit._core.env_rollouts`` reproduces bit for
    bit, and the MuJoCo tasks Hopper-v5, HalfCheetah-v5, Walker2d-v5, Ant-v5,
    Swimmer-v5 and Humanoid-v5 (:mod:`~evokit.evaluation.native_mujoco`),
    which run only where the extension was built with MuJoCo and the
    installed MuJoCo is that version (checked once per process:
    ``unavailable`` gives the reason, which a
    :class:`~evokit.errors.NativeFallbackWarning` states once)."""
    from . import registry

    entry, max_steps, why = registry.native_entry(env_id)
    if entry is None:
        built_without = _core.mujoco_unavailable_reason()
        if not why and built_without and registry.is_mujoco_task(env_id):
            from . import native_mujoco

            native_mujoco.note_fallback(env_id, built_without)  # once, as for a version mismatch
        return None, why
    if entry["component"] == "core":
        return NativeEnv(max_steps, task=entry["name"]), ""
    from . import native_mujoco

    task = entry["name"]
    try:
        native_mujoco.load(task)
    except EnvError as exc:
        # Whoever asks first (the evaluator a run makes at its start) says so, once.
        native_mujoco.note_fallback(env_id, str(exc))
        return NativeEnv(max_steps, task, str(exc), task), ""
    return NativeEnv(max_steps, task, task=task), ""


def check_native(env_id: str, episodes: int = 3, max_steps: int = 1000) -> str:
    """What ``evokit check-native`` reports for ``env_id``: its native
    episodes (from ``reset(seed=s)`` for s = 1 .. ``episodes``, random
    actions, continuous ones in +-3, some beyond the bounds, up to
    ``max_steps`` steps or the time limit) compared with
    gymnasium's step for step (observation, reward, termination,
    truncation); a MuJoCo task is first loaded as ``evokit train`` loads it
    (:func:`~evokit.evaluation.native_mujoco.check`). Raises
    :class:`~evokit.errors.EnvError` with the reason when the native path
    cannot run it or differs."""
    from . import registry

    entry, limit, why = registry.native_entry(env_id)
    if entry is None:
        known = ", ".join(e["name"] for e in registry.entries().values())
        raise EnvError(why or f"{env_id} is not an environment EvoKit runs natively (those are "
                              f"{known} with default arguments)")
    if entry["component"] == "mujoco":
        from . import native_mujoco

        return native_mujoco.check(env_id, episodes=episodes, max_steps=max_steps)
    from .. import _core

    episode = _core.NativeEnv(entry["name"]).episode()
    env = make_env(env_id)
    rng = np.random.default_rng(2024)
    compared = 0
    try:
        for seed in range(1, episodes + 1):
            want, _ = env.reset(seed=seed)
            if not np.array_equal(episode.reset(seed), want):
                raise EnvError(f"native {entry['name']} differs from gymnasium: its "
                               f"reset(seed={seed}) differs")
            for t in range(min(max_steps, limit)):
                action = (int(rng.integers(entry["action_size"])) if entry["discrete"] else
                          rng.uniform(-3.0, 3.0, entry["action_size"]).astype(np.float32))
                want, reward, terminated, truncated, _ = env.step(action)
                got, got_reward, got_terminated = episode.step(action)
                compared += 1
                if not (np.array_equal(got, want) and got_reward == reward
                        and got_terminated == terminated and (t + 1 >= limit) == truncated):
                    raise EnvError(f"native {entry['name']} differs from gymnasium: step {t} "
                                   f"after reset(seed={seed}) differs")
                if terminated or truncated:
                    break
    finally:
        env.close()
    return (f"{env_id}: native (EvoKit's core); {episodes} episodes, {compared} steps equal to "
            f"gymnasium's step for step")


def native_env_steps(env_id: str) -> Optional[int]:
    """The episode length limit if EvoKit's core runs ``env_id`` natively in
    this process (see :func:`native_env`), else None."""
    info, _ = native_env(env_id)
    return info.max_steps if info is not None and info.unavailable is None else None
