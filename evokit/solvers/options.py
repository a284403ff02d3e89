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

import functools
import os
import re
from typing import Dict, List, Mapping, Optional, Set, Union

import numpy as np
from google.protobuf.descriptor import FieldDescriptor

from .. import _core

__all__ = ["Rule", "field_comments", "field_default", "given", "message_fields", "proto_default", "rule_in_comment",
           "set_fields", "solver_options", "validate_solver_options"]

Option = Union[bool, int, float, str, List[int]]


def message_fields(message, present: Optional[Set[str]] = None) -> Dict[str, Option]:
    """Every scalar field of ``message`` by dotted name (unset ones with their
    defaults; a repeated scalar field as a list; enums as their value names;
    uint64 as the core's int64 bits): the form in which the core reads a
    message. ``present`` collects the fields the message sets (a repeated one
    when not empty). The C++ io library walks messages the same way."""
    out: Dict[str, Option] = {}
    _walk(message, "", out, present)
    return out


def solver_options(solver) -> Dict[str, Option]:
    """Every field of ``solver`` (an ``evokit_pb2.SolverConfig``), by dotted name."""
    return message_fields(solver)


def _scalar(field, value) -> Option:
    if field.type == FieldDescriptor.TYPE_ENUM:
        number = field.enum_type.values_by_number.get(value)
        return number.name if number is not None else str(value)
    if field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return value - (1 << 64) if value >= 1 << 63 else value  # the core's int64 bits
    return value


def _walk(message, prefix: str, out: Dict[str, Option], present: Optional[Set[str]]) -> None:
    for field in message.DESCRIPTOR.fields:
        name = prefix + field.name
        value = getattr(message, field.name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                continue  # no message the core reads has a repeated message
            if present is not None and message.HasField(field.name):
                present.add(name)
            _walk(value, name + ".", out, present)
            continue
        if field.is_repeated:
            out[name] = [_scalar(field, v) for v in value]
            if present is not None and len(value):
                present.add(name)
            continue
        out[name] = _scalar(field, value)
        if present is not None and message.HasField(field.name):
            present.add(name)


def set_fields(message, values: Mapping[str, Option]) -> None:
    """Set the fields of ``message`` named by dotted names (the inverse of
    :func:`message_fields`: enums by value name, uint64 from int64 bits)."""
    for path, value in values.items():
        *parents, name = path.split(".")
        target = message
        for parent in parents:
            target = getattr(target, parent)
        field = target.DESCRIPTOR.fields_by_name[name]
        if field.type == FieldDescriptor.TYPE_ENUM and isinstance(value, str):
            value = field.enum_type.values_by_name[value].number
        elif field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64) and value < 0:
            value += 1 << 64
        if field.is_repeated:
            del getattr(target, name)[:]
            getattr(target, name).extend(value)
        else:
            setattr(target, name, value)


def validate_solver_options(solver, num_params: Optional[int] = None) -> None:
    """The core's checks of the options of ``solver`` (the ones ``make_solver``
    applies): ``ValueError("solver.<name> <what>, got <value>")``."""
    _core.validate_solver_options(solver_options(solver), num_params)


@functools.lru_cache(maxsize=None)
def _schema_comments() -> Dict[str, Dict[str, str]]:
    """Each message's field comments in proto/evokit.proto, by full message name."""
    from google.protobuf import descriptor_pb2

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "evokit_proto.desc")
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    out: Dict[str, Dict[str, str]] = {}
    for file in files.file:
        comments = {tuple(loc.path): loc.leading_comments for loc in file.source_code_info.location
                    if loc.leading_comments}

        def visit(messages, path, prefix):
            for i, message in enumerate(messages):
                here = path + (i,)
                name = prefix + message.name
                out[name] = {field.name: " ".join(comments.get(here + (2, j), "").split())
                             for j, field in enumerate(message.field)}
                visit(message.nested_type, here + (3,), name + ".")

        visit(file.message_type, (4,), (file.package + ".") if file.package else "")
    return out


def field_comments(descriptor) -> Dict[str, str]:
    """The comment above each field of the message ``descriptor`` in
    proto/evokit.proto, on one line ("" for a field without one): the one
    documentation of an option, which the Python classes built from a message
    show. Read from evokit_proto.desc, which the build installs beside
    evokit_pb2."""
    return dict(_schema_comments().get(descriptor.full_name, {}))


class Rule:
    """A default computed from the problem (the dimension n, the population
    size, ...), shown in signatures and ``help()`` as its formula: the
    default of ``CMAES(population_size=...)`` reads ``4 + floor(3 ln n)``.
    Passing the rule itself, or None, selects that default."""

    __slots__ = ("formula",)

    def __init__(self, formula: str):
        self.formula = formula

    def __repr__(self) -> str:
        return self.formula

    def __eq__(self, other) -> bool:
        return isinstance(other, Rule) and other.formula == self.formula

    def __hash__(self) -> int:
        return hash(self.formula)

    def __reduce__(self):
        return Rule, (self.formula,)


def given(value):
    """``value``, or None where it selects a computed default (None or a :class:`Rule`)."""
    return None if isinstance(value, Rule) else value


def rule_in_comment(comment: str) -> Optional[Rule]:
    """The computed default a field's comment names by the convention of
    proto/evokit.proto, ``(0: <formula>)`` or ``(...; 0: <formula>)``: the
    option's 0 selects the formula, which the core computes."""
    for start in (m.end() for m in re.finditer(r"[(;] ?0: ", comment)):
        depth = 0
        for i in range(start, len(comment)):
            if comment[i] == "(":
                depth += 1
            elif comment[i] == ")":
                if depth == 0:
                    return Rule(comment[start:i].strip())
                depth -= 1
    return None


def proto_default(path: str, message=None):
    """The default of the option at dotted ``path`` below ``message`` (a
    message class; ``evokit_pb2.SolverConfig`` when None) as the ask / tell
    classes take it (:func:`field_default`): written once, in
    proto/evokit.proto."""
    if message is None:
        from .. import evokit_pb2
        message = evokit_pb2.SolverConfig
    descriptor = message.DESCRIPTOR
    *parents, name = path.split(".")
    for parent in parents:
        descriptor = descriptor.fields_by_name[parent].message_type
    field = descriptor.fields_by_name.get(name)
    if field is None or field.type == FieldDescriptor.TYPE_MESSAGE:
        raise KeyError(f"{path!r} is not an option of {message.DESCRIPTOR.name} in proto/evokit.proto")
    return field_default(descriptor, name)


def field_default(descriptor, name: str):
    """The default of scalar field ``name`` of the message ``descriptor`` as
    the ask / tell classes show and take it: a float32 field's as the
    shortest decimal that rounds to it (0.01, not 0.009999999776), an enum's
    as its value name in lower case, and a 0 whose comment names a formula
    (``(0: <formula>)``) as that :class:`Rule`."""
    field = descriptor.fields_by_name[name]
    value = field.default_value
    if field.type == FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name.lower()
    if field.type == FieldDescriptor.TYPE_FLOAT:
        return float(str(np.float32(value)))  # numpy prints a float32's shortest round-trip decimal
    if field.type != FieldDescriptor.TYPE_BOOL and value == 0:
        rule = rule_in_comment(field_comments(descriptor).get(name, ""))
        if rule is not None:
            return rule
    return value
