"""Loading what older EvoKit releases pickled by replay.

CMAES / SepCMAES, GA and OpenES used to pickle as their constructor call and
every tell and inject (the values as given, the solutions only when they
differed from the asked ones, the constraints), and an unpickled strategy was
constructed again and replayed them. Every strategy now pickles its state;
:func:`replay` still loads such a pickle of CMAES, SepCMAES or GA, so that it
continues bit for bit. OpenES is the training family GAUSSIAN_SAMPLING, whose
keys differ from the ones the replayed tells saw: its replay pickles are
refused, saying what to do (:mod:`evokit.blackbox.openes`).
"""

from __future__ import annotations

import warnings
from typing import Any, Dict

__all__ = ["is_replay_state", "replay"]


def is_replay_state(state) -> bool:
    """Whether a pickled state is a replay record (constructor call and operations)."""
    return isinstance(state, dict) and set(state) == {"call", "log", "pending", "extra_stop"}


def replay(self, state: Dict[str, Any]) -> None:
    """Restores ``self`` from a replay record: constructs it again and
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
