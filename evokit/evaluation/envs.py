"""Gymnasium environments: making one, a fresh policy for it, checking that a
policy fits it, and what EvoKit knows of it (a vectorised form; an
implementation in the core)."""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

import numpy as np
import onnx

from ..errors import EnvError
from ..policy.mlp import policy_for_spaces

__all__ = ["check_policy_fits", "has_vector_entry_point", "make_env", "native_env_steps",
           "policy_for_env"]


def make_env(env_id: str):
    """``gymnasium.make(env_id)`` with a clear error for an unknown id."""
    import gymnasium

    try:
        return gymnasium.make(env_id)
    except gymnasium.error.Error as exc:
        raise EnvError(f"cannot make environment {env_id!r}: {exc}") from None


def policy_for_env(env_id: str, hidden_sizes: Sequence[int] = (16,), activation: str = "tanh",
                   seed: int = 0, action_mapping: str = "clip") -> onnx.ModelProto:
    """A fresh MLP policy for ``env_id``'s observation and action spaces:
    :func:`~evokit.policy.mlp.policy_for_spaces` of the environment
    :func:`make_env` makes."""
    env = make_env(env_id)
    try:
        return policy_for_spaces(env.observation_space, env.action_space,
                                 hidden_sizes=tuple(hidden_sizes), activation=activation, seed=seed,
                                 action_mapping=action_mapping)
    finally:
        env.close()


def init_model(env_id: str, path: Union[str, "os.PathLike[str]"], hidden_sizes: Sequence[int] = (16,),
               activation: str = "tanh", seed: int = 0, action_mapping: str = "clip") -> str:
    """Write :func:`policy_for_env`'s model to ``path`` (what ``evokit
    init-model`` does); return the path."""
    from ..util import atomic_write_bytes

    model = policy_for_env(env_id, hidden_sizes, activation, seed, action_mapping)
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
