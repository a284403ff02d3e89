"""Pickling by replay, for the strategies whose compiled core keeps more
state than it exports (CMAES / SepCMAES with their restarts, histories and
injections). GA and OpenES pickle their state; :func:`replay` still loads
what they pickled by replay before.

A strategy is a pure function of its constructor's arguments and of what it
was told: every draw comes from the counter-based noise of the core. So
``ReplayPickling`` records the constructor call and every tell (the values
as given, the solutions only when they differ from the asked ones, the
constraints) and inject, and an unpickled strategy is constructed again and
replays them: it continues bit for bit, a pending ask() included. The cost
is the updates' time (no f is evaluated) and the told values' memory
(solutions only for repaired or injected rows).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Dict, List

import numpy as np

__all__ = ["ReplayPickling", "is_replay_state", "replay"]


class ReplayPickling:
    """Mixin: records the outermost __init__ call and the operations (via
    :meth:`_record`), and pickles as (constructor call, operations)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def recording_init(self, *args, **kw):
            if "_replay_call" not in self.__dict__:  # the outermost constructor
                self._replay_call = (args, kw)
                self._replay_log: List[tuple] = []
            init(self, *args, **kw)

        cls.__init__ = recording_init

    def _record(self, *operation) -> None:
        log = self.__dict__.get("_replay_log")
        if log is not None:
            log.append(operation)

    def __getstate__(self) -> Dict[str, Any]:
        return {"call": self._replay_call, "log": list(self._replay_log),
                "pending": self._asked is not None, "extra_stop": dict(self._extra_stop)}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        replay(self, state)


def is_replay_state(state) -> bool:
    """Whether a pickled state is a replay record (ReplayPickling's)."""
    return isinstance(state, dict) and set(state) == {"call", "log", "pending", "extra_stop"}


def replay(self, state: Dict[str, Any]) -> None:
    """Restores ``self`` from ReplayPickling's state: constructs it again and
    replays the operations. Strategies that now pickle their state use it for
    the pickles made while they pickled by replay."""
    args, kw = state["call"]
    self.__init__(*args, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warnings of the original tells were given then
        for op in state["log"]:
            if op[0] == "inject":
                self.inject(op[1], force=op[2])
                continue
            _, solutions, values, constraints = op
            asked = self.ask()
            self.tell(asked if solutions is None else solutions, values, constraints=constraints)
    if state["pending"]:
        self.ask()
    self._extra_stop = dict(state["extra_stop"])


def told(solutions: np.ndarray, differ: np.ndarray, values, constraints, owned: bool = False) -> tuple:
    """The record of one tell: the solutions only when some differ (owned:
    values is already a float64 array of the caller's that nothing changes)."""
    return ("tell", None if differ.size == 0 else np.array(solutions, copy=True),
            values if owned else np.array(values, dtype=np.float64, copy=True),
            None if constraints is None else np.array(constraints, dtype=np.float64, copy=True))
