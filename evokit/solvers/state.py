"""The core's ``SolverState`` and the ``SolverState`` message of ``solver.pb``.

State version 2 stores every entry of the core's state as a typed
``NamedVector`` (float32, float64 or int64, little-endian) and the family by
name; nothing here knows a family. Version 1 (EvoKit before the one Solver
interface) stored Gaussian optimizer vectors under their bare names, which
still load; its CMA and GA layouts are refused by name. The C++ io component
reads and writes the same layout (cpp/io/src/solver_state.cc); the
conformance tests run both on the same files.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from .. import evokit_pb2 as pb

__all__ = ["STATE_VERSION", "state_to_proto", "state_from_proto"]

#: The layout of SolverState.vectors this EvoKit writes.
STATE_VERSION = 2

_TYPES = (  # (element type, dtype, SolverState attribute)
    (pb.NamedVector.FLOAT32, "<f4", "floats"),
    (pb.NamedVector.FLOAT64, "<f8", "doubles"),
    (pb.NamedVector.INT64, "<i8", "ints"),
)


def state_to_proto(state, out: pb.SolverState) -> pb.SolverState:
    """Write the core ``state`` into ``out`` (family, steps, noise version,
    typed vectors in name order); returns ``out``."""
    out.state_version = STATE_VERSION
    out.family = state.family
    out.steps = state.model_iter_id
    out.noise_version = state.noise_version
    for kind, dtype, attr in _TYPES:
        for name, values in sorted(getattr(state, attr).items()):
            out.vectors.add(name=name, type=kind,
                            data=np.ascontiguousarray(values, dtype=dtype).tobytes())
    return out


def state_from_proto(message: pb.SolverState, path: str):
    """The core state ``message`` holds; ``ValueError`` starting with
    ``path`` for a layout this EvoKit does not read."""
    version = message.state_version
    family = message.family
    arrays = {attr: {} for _, _, attr in _TYPES}
    if version == 1:
        family = _version1_family(message, path)
        for v in message.vectors:  # Gaussian optimizer vectors, float32, bare names
            arrays["floats"][f"optimizer.{v.name}"] = _decode(v, "<f4", path)
        # Version 1 kept no draw counters: the clones count from 0 again.
        arrays["ints"]["draws.counters"] = np.zeros(0, np.int64)
    elif version == STATE_VERSION:
        dtypes = {kind: (dtype, attr) for kind, dtype, attr in _TYPES}
        for v in message.vectors:
            # An element type this EvoKit does not know parses as absent.
            if not v.HasField("type") or v.type not in dtypes:
                raise ValueError(f"{path}: state vector {v.name!r} has no element type this "
                                 f"EvoKit knows (FLOAT32, FLOAT64, INT64): a newer EvoKit wrote it?")
            dtype, attr = dtypes[v.type]
            if v.name in arrays[attr]:
                raise ValueError(f"{path}: state vector {v.name!r} appears twice")
            arrays[attr][v.name] = _decode(v, dtype, path)
    else:
        raise ValueError(f"{path}: solver state version {version}, this EvoKit reads versions 1 "
                         f"and {STATE_VERSION} (a newer EvoKit wrote it)")
    return _core.SolverState(family, model_iter_id=message.steps,
                             noise_version=message.noise_version, **arrays)


def _version1_family(message: pb.SolverState, path: str) -> str:
    for field, family in (("cma", "CMA_SAMPLING"), ("ga", "GA_SAMPLING")):
        if message.HasField(field):
            raise ValueError(f"{path}: a {family} solver state of state version 1 (an EvoKit "
                             f"before the one Solver interface): its layout is not read; finish "
                             f"it with the EvoKit that wrote it, or start afresh from its model "
                             f"with `evokit init-solver`")
    return "GAUSSIAN_SAMPLING"


def _decode(vector: pb.NamedVector, dtype: str, path: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    if len(vector.data) % width:
        raise ValueError(f"{path}: state vector {vector.name!r} holds {len(vector.data)} bytes, "
                         f"not a multiple of {width}")
    return np.frombuffer(vector.data, dtype=dtype)
