"""The core's ``SolverState`` and the ``SolverState`` message of ``solver.pb``.

The layout (state version 2: every entry of the core's state a typed
``NamedVector``, the family by name; what version 1 still loads, what it
refuses) is the core's (cpp/include/evokit/formats/solver_file.h), which the
C++ io library uses too; here Python's protobuf only copies the message's
fields in and out.
"""

from __future__ import annotations

from .. import _core
from .. import evokit_pb2 as pb

__all__ = ["STATE_VERSION", "state_to_proto", "state_from_proto"]

#: The layout of SolverState.vectors this EvoKit writes.
STATE_VERSION = _core.SOLVER_STATE_VERSION


def state_to_proto(state, out: pb.SolverState) -> pb.SolverState:
    """Write the core ``state`` into ``out`` (family, steps, noise version,
    typed vectors in name order); returns ``out``."""
    out.state_version = STATE_VERSION
    out.family = state.family
    out.steps = state.model_iter_id
    out.noise_version = state.noise_version
    del out.vectors[:]
    for name, kind, data in _core.solver_state_encode(state):
        out.vectors.add(name=name, type=kind, data=data)
    return out


def state_from_proto(message: pb.SolverState, path: str):
    """The core state ``message`` holds; ``ValueError`` starting with
    ``path`` for a layout this EvoKit does not read."""
    vectors = [(v.name, v.type if v.HasField("type") else None, v.data) for v in message.vectors]
    return _core.solver_state_decode(message.state_version, message.family, message.steps,
                                     message.noise_version, message.HasField("cma"), message.HasField("ga"),
                                     vectors, path)
