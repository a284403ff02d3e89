"""A ``SolverConfig`` message as the core's option set.

The core (``_core.make_solver``, ``_core.validate_solver_options``) reads its
options by dotted name below ``solver``: ``"population_size"``,
``"sampling.gaussian_sampling.std"``, ``"optimizer.adam.beta1"``, enums as
their value names. This walks the message generically (unset fields give
their defaults), so a new option needs only its field in proto/evokit.proto
and the line of C++ that reads it. The C++ io component walks the message the
same way with protobuf reflection.
"""

from __future__ import annotations

from typing import Dict, Optional, Union

from google.protobuf.descriptor import FieldDescriptor

from .. import _core

__all__ = ["solver_options", "validate_solver_options"]

Option = Union[bool, int, float, str]


def solver_options(solver) -> Dict[str, Option]:
    """Every field of ``solver`` (an ``evokit_pb2.SolverConfig``), by dotted name."""
    out: Dict[str, Option] = {}
    _walk(solver, "", out)
    return out


def _walk(message, prefix: str, out: Dict[str, Option]) -> None:
    for field in message.DESCRIPTOR.fields:
        if field.is_repeated:
            continue  # no solver option is a list
        name = prefix + field.name
        value = getattr(message, field.name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            _walk(value, name + ".", out)
        elif field.type == FieldDescriptor.TYPE_ENUM:
            number = field.enum_type.values_by_number.get(value)
            out[name] = number.name if number is not None else str(value)
        elif field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            out[name] = value - (1 << 64) if value >= 1 << 63 else value  # the core's int64 bits
        else:
            out[name] = value


def validate_solver_options(solver, num_params: Optional[int] = None) -> None:
    """The core's checks of the options of ``solver`` (the ones ``make_solver``
    applies): ``ValueError("solver.<name> <what>, got <value>")``."""
    _core.validate_solver_options(solver_options(solver), num_params)
