"""The native environments, as the extension registers them: the core's
(``evokit._core.native_envs()``: CartPole, Pendulum) and the MuJoCo
component's (``evokit._core.mujoco_tasks()``: Hopper, HalfCheetah, Walker2d,
Ant, Swimmer, Humanoid). Each entry names gymnasium's env class (its entry
point) and the constructor arguments native implements with their only
supported values; :func:`native_entry` decides whether a registered
environment id is one of them."""

from __future__ import annotations

import functools
from typing import Dict, Optional, Tuple

from .. import _core

__all__ = ["entries", "is_mujoco_task", "native_entry", "same_value"]

# Arguments that only change rendering: any value runs natively.
_RENDER_ARGS = frozenset({"render_mode", "width", "height", "camera_id", "camera_name",
                          "default_camera_config", "max_geom", "visual_options"})


@functools.lru_cache(maxsize=None)
def entries() -> Dict[str, dict]:
    """Every native environment, keyed by gymnasium's entry point: the
    registry's dict (``name``, ``entry_point``, ``defaults``, ``obs_size``,
    ``action_size``, ``discrete``, ``state_size``, ``seeded_reset``; the
    MuJoCo tasks' also ``nq``, ``nv``, ``reset_noise_scale``,
    ``normal_qvel``) and ``component``, ``"core"`` or ``"mujoco"``."""
    found = {}
    for component, specs in (("core", _core.native_envs()), ("mujoco", _core.mujoco_tasks())):
        for spec in specs:
            found[spec["entry_point"]] = dict(spec, component=component)
    return found


def same_value(a, b) -> bool:
    """Whether a constructor argument equals a native default (tuples and
    lists alike; a bool equals only a bool)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def is_mujoco_task(env_id: str) -> bool:
    """Whether ``env_id`` is one of gymnasium's MuJoCo environments (what a
    build without native MuJoCo says it runs on gymnasium instead)."""
    import gymnasium

    try:
        entry_point = gymnasium.spec(env_id).entry_point
    except gymnasium.error.Error:
        return False
    return isinstance(entry_point, str) and entry_point.startswith("gymnasium.envs.mujoco.")


def native_entry(env_id: str) -> Tuple[Optional[dict], Optional[int], str]:
    """``(entry, max_episode_steps, "")`` when ``env_id`` is a native
    environment registered with its default arguments (rendering aside) and
    a time limit; else ``(None, None, why not)``, the reason being ``""`` for
    an environment that is none at all. Needs no MuJoCo."""
    import gymnasium

    try:
        spec = gymnasium.spec(env_id)
    except gymnasium.error.Error:
        return None, None, ""
    entry = entries().get(spec.entry_point) if isinstance(spec.entry_point, str) else None
    if entry is None:
        return None, None, ""
    task, defaults = entry["name"], entry["defaults"]
    for name, value in sorted((spec.kwargs or {}).items()):
        if name in _RENDER_ARGS:
            continue
        if name not in defaults:
            return None, None, (f"{env_id}: argument {name}={value!r} is not one native {task} "
                                f"implements (only its defaults)")
        if not same_value(value, defaults[name]):
            return None, None, (f"{env_id}: {name}={value!r} is not {task}'s default "
                                f"{defaults[name]!r}; native {task} runs the defaults only")
    if spec.max_episode_steps is None:
        return None, None, f"{env_id} has no time limit (max_episode_steps)"
    if spec.additional_wrappers:
        names = ", ".join(w.name for w in spec.additional_wrappers)
        return None, None, f"{env_id} adds wrappers ({names}); native {task} runs the bare task"
    return entry, int(spec.max_episode_steps), ""
