"""Loading and validating EvoKit configs (protobuf text format, ``.prototxt``).

The schema is ``proto/evokit.proto`` (message ``EvoKitConfig``); every default is
written there. A config that does not parse or holds a value out of range raises
:class:`ConfigError`, whose message names the file, the line where it is known and
the field, e.g.::

    configs/bad.prototxt:7:8: solver.sampling.gaussian_sampling.std: Couldn't parse float: abc
    configs/bad.prototxt:7: solver.sampling.gaussian_sampling.std must be > 0, got -0.5

A file in PARL EvoKit's flat layout (``seed``, ``gaussian_sampling``,
``optimizer`` at the top level) is read through :mod:`evokit.parl_config`.
Every rule (the text walk that finds a field's line, the literals both
protobuf runtimes read alike, the layout, the checks and their messages) is
the core's (cpp/src/formats), which the C++ io library uses too.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Collection, List, Mapping, Optional, Union

import numpy as np
from google.protobuf import text_format

from . import _core
from . import evokit_pb2 as pb
from . import parl_config
from .errors import ConfigError
from .solvers.options import message_fields

__all__ = ["load_config", "parse_config", "validate_config", "config_to_text",
           "solver_config_error"]

PathLike = Union[str, "os.PathLike[str]"]

#: What errors in fields set by ``overrides`` (command-line options) name as their source.
OVERRIDES_SOURCE = "config (with command-line overrides)"

#: solver.fitness_shaping -> the name the core (and OpenES) know it by.
FITNESS_SHAPING_NAMES = {
    pb.CENTERED_RANK: "centered_rank",
    pb.Z_SCORE: "z_score",
    pb.RAW: "raw",
}


# --------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------
# The text walk (which field a name or a position is in, on which line), the
# literals both protobuf runtimes read alike, the layout and the checks are
# the core's (cpp/src/formats), which the C++ io library uses too; here
# Python's protobuf only turns text into a message.


def _problem_error(source: str, problem) -> ConfigError:
    field, message, line, column = problem
    return ConfigError(source, message, line=line, column=column, field=field)


@functools.lru_cache(maxsize=None)
def _literal_schema():
    """The dotted paths of the enum and bool fields of both layouts' root
    messages (what the core's literal check needs of the schema)."""
    from google.protobuf.descriptor import FieldDescriptor

    enums, bools = set(), set()

    def walk(descriptor, prefix):
        for field in descriptor.fields:
            path = prefix + field.name
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                walk(field.message_type, path + ".")
            elif field.type == FieldDescriptor.TYPE_ENUM:
                enums.add(path)
            elif field.type == FieldDescriptor.TYPE_BOOL:
                bools.add(path)

    walk(pb.EvoKitConfig.DESCRIPTOR, "")
    walk(pb.ParlEvoKitConfig.DESCRIPTOR, "")
    return frozenset(enums), frozenset(bools)


def parse_error(text: str, source: str, exc: text_format.ParseError) -> ConfigError:
    """The :class:`ConfigError` for protobuf's ``ParseError`` of ``text``:
    ``file:line:column: field: message``, the field being the one the parser
    was in (``at top level`` before any field), protobuf's echo of the line
    dropped and an unknown enum value reworded to list the values."""
    # protobuf says "line:column : 'the line': message"
    msg = re.sub(r"^\d+:\d+\s*:\s*", "", str(exc))
    msg = re.sub(r"^'.*?':\s*", "", msg)
    line, column = exc.GetLine(), exc.GetColumn()
    enum = re.search(r'Enum type "([\w.]+)" has no value (?:named|with number) (\S+?)\.?$', msg)
    if enum:
        values = [v.name for v in pb.DESCRIPTOR.pool.FindEnumTypeByName(enum.group(1)).values]
        msg = _core.config_unknown_enum_value(enum.group(2), values)
    if line is None:
        return ConfigError(source, f"at top level: {msg}")
    return _problem_error(source, _core.config_parse_problem(text, line, column, msg))


def _parse_text(text: str, source: str) -> pb.EvoKitConfig:
    """``text`` as an EvoKitConfig, in EvoKit's layout or PARL EvoKit's
    (mapped by :mod:`evokit.parl_config`, with one ConfigLayoutWarning)."""
    problem = _core.config_check_literals(text, *_literal_schema())
    if problem is not None:
        raise _problem_error(source, problem)
    layout = parl_config.detect_layout(text, source)
    message = pb.ParlEvoKitConfig() if layout == parl_config.PARL else pb.EvoKitConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise parse_error(text, source, exc) from None
    if layout == parl_config.PARL:
        return parl_config.to_evokit(message, text, source)
    return message


def parse_config(text: str, source: str = "<string>", validate: bool = True,
                 overrides: Optional[Mapping[str, Any]] = None) -> pb.EvoKitConfig:
    """Parse a config from text-format ``text``; ``source`` names it in errors.

    ``overrides`` maps dotted field paths (``"train.num_workers"``) to values
    set after parsing, before the one validation; an error in one of those
    fields names :data:`OVERRIDES_SOURCE`, an error elsewhere the line of
    ``source``. ``validate=False`` leaves the validation to the caller (e.g.
    :meth:`evokit.ESAgent.init_solver`, or a comparison with a config that
    has been validated)."""
    config = _parse_text(text, source)
    _override(config, overrides)
    if validate:
        validate_config(config, source=source, text=text, overridden=overrides or ())
    return config


def load_config(path: Union[PathLike, pb.EvoKitConfig], validate: bool = True,
                overrides: Optional[Mapping[str, Any]] = None) -> pb.EvoKitConfig:
    """Load an ``EvoKitConfig`` from a ``.prototxt`` file (or return a copy of a
    config message), with ``overrides`` set, validated once (see
    :func:`parse_config`)."""
    if isinstance(path, pb.EvoKitConfig):
        config = pb.EvoKitConfig()
        config.CopyFrom(path)
        _override(config, overrides)
        if validate:
            validate_config(config, overridden=overrides or ())
        return config
    source = os.fspath(path)
    if not os.path.exists(source):
        raise ConfigError(source, "no such config file")
    if os.path.isdir(source):
        raise ConfigError(source, "is a directory, expected a .prototxt config file")
    try:
        with open(source, "r", encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as exc:
        raise ConfigError(source, f"not a text file (byte offset {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(source, f"cannot read: {exc.strerror}") from None
    return parse_config(text, source=source, validate=validate, overrides=overrides)


def _override(config: pb.EvoKitConfig, overrides: Optional[Mapping[str, Any]]) -> None:
    for path, value in (overrides or {}).items():
        *parents, name = path.split(".")
        message = config
        for parent in parents:
            message = getattr(message, parent)
        setattr(message, name, value)


def config_to_text(config: pb.EvoKitConfig) -> str:
    """The config in text format (what ``save_solver`` stores)."""
    return text_format.MessageToString(config)


def config_with_defaults(config: pb.EvoKitConfig) -> str:
    """Every field of the config in text format, the ones left unset with
    their defaults and ``  # default`` after them (``check-config --show``);
    it parses back to a config that means the same."""
    from google.protobuf import text_encoding
    from google.protobuf.descriptor import FieldDescriptor

    lines: List[str] = []

    def scalar(field, value) -> str:
        if field.type == FieldDescriptor.TYPE_ENUM:
            number = field.enum_type.values_by_number.get(value)
            return number.name if number is not None else str(value)
        if field.type == FieldDescriptor.TYPE_STRING:
            return '"' + text_encoding.CEscape(value, as_utf8=True) + '"'
        if field.type == FieldDescriptor.TYPE_BOOL:
            return "true" if value else "false"
        if field.type == FieldDescriptor.TYPE_FLOAT:
            return str(np.float32(value))  # the shortest text of the float32
        if field.type == FieldDescriptor.TYPE_DOUBLE:
            return repr(float(value))
        return str(value)

    def walk(message, indent: str) -> None:
        for field in message.DESCRIPTOR.fields:
            if field.is_repeated:
                for item in getattr(message, field.name):
                    if field.type == FieldDescriptor.TYPE_MESSAGE:
                        lines.append(f"{indent}{field.name} {{")
                        walk(item, indent + "  ")
                        lines.append(f"{indent}}}")
                    else:
                        lines.append(f"{indent}{field.name}: {scalar(field, item)}")
                continue
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                lines.append(f"{indent}{field.name} {{")
                walk(getattr(message, field.name), indent + "  ")
                lines.append(f"{indent}}}")
                continue
            mark = "" if message.HasField(field.name) else "  # default"
            lines.append(f"{indent}{field.name}: {scalar(field, getattr(message, field.name))}{mark}")

    walk(config, "")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

#: Upper bounds of train.eval_episodes / episodes_per_sample and of train.num_workers.
MAX_EPISODES = _core.CONFIG_MAX_EPISODES
MAX_WORKERS = _core.CONFIG_MAX_WORKERS


def _field_error(source: str, problem, overridden: Collection[str]) -> ConfigError:
    """The error of a problem; one in a field set from the command line names
    :data:`OVERRIDES_SOURCE` and no line."""
    field, message, line, column = problem
    if field in overridden:
        return ConfigError(OVERRIDES_SOURCE, message, field=field)
    return ConfigError(source, message, line=line, column=column, field=field)


def validate_config(config: pb.EvoKitConfig, source: str = "<config>",
                    text: Optional[str] = None, num_params: Optional[int] = None,
                    overridden: Collection[str] = ()) -> None:
    """Check every value of ``config``; raise :class:`ConfigError` on the first
    bad one, at the line of its field in ``text``. With ``num_params`` (the
    model's parameter count) also check that the noise table is large enough
    (:meth:`evokit.ESAgent.init_solver` leaves that to the core's solver
    constructor, which checks the solver options with the parameter count
    anyway: see :func:`solver_config_error`). ``overridden``: the fields set
    from the command line, named as such in errors. The checks are the
    core's (the C++ io library makes the same ones)."""
    problem = _core.validate_config(message_fields(config), num_params, text or "")
    if problem is not None:
        raise _field_error(source, problem, overridden)


def solver_config_error(exc: ValueError, source: str = "config") -> ValueError:
    """The :class:`ConfigError` that :func:`validate_config` raises for an
    error of the core's check of the solver options (``"solver.<name> <what>,
    got <value>"``), here raised by the core's solver constructor, which runs
    that check with the parameter count; any other error as it is."""
    field, _, message = str(exc).partition(" ")
    if not field.startswith("solver."):
        return exc
    return _problem_error(source, _core.config_problem(field, message))
