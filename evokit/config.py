"""Loading and validating EvoKit configs (protobuf text format, ``.prototxt``).

The schema is ``proto/evokit.proto`` (message ``EvoKitConfig``); every default is
written there. A config that does not parse or holds a value out of range raises
:class:`ConfigError`, whose message names the file, the line where it is known and
the field, e.g.::

    configs/bad.prototxt:7:8: solver.sampling.gaussian_sampling.std: Couldn't parse float: abc
    configs/bad.prototxt:7: solver.sampling.gaussian_sampling.std must be > 0, got -0.5

A file in PARL EvoKit's flat layout (``seed``, ``gaussian_sampling``,
``optimizer`` at the top level) is read through :mod:`evokit.parl_config`.
cpp/io/src/config.cc makes the same checks with the same messages.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Collection, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
from google.protobuf import text_format

from . import evokit_pb2 as pb
from .errors import ConfigError
from .policy.mlp import ACTIVATIONS
from .policy.onnx_policy import BACKENDS
from .solvers.options import validate_solver_options

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

# A text-format lexer (the tokens of protobuf's own tokenizer, as far as the
# walk below needs them): strings (to the closing quote or the end of the
# line), comments, numbers with their exponent signs (1e-08; the sign of a
# negative number is a token of its own, as protobuf reads it), identifiers,
# and single punctuation characters. cpp/io/src/config.cc lexes the same way.
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|#[^\n]*'  # strings, comments
    r'|(?:\d|\.\d)(?:[\w.]|(?<=[eE])[-+])*'                          # numbers (1e-08, 0x1f, 1.5f)
    r'|[A-Za-z_][\w.]*|\S', re.ASCII)                                 # identifiers, punctuation


def _tokens(text: str):
    """(token, offset) of every token of ``text`` but comments."""
    for m in _TOKEN.finditer(text):
        if not m.group(0).startswith("#"):
            yield m.group(0), m.start()


def _is_word(token: str) -> bool:
    return token[0].isalnum() or token[0] in "_."


class _Walk:
    """The fields of a text-format message, walked as protobuf's parser
    reads it: which field each name token opens and which field a given
    offset is in. One token at a time through :meth:`step`."""

    FIELD, NAME, VALUE, LIST = range(4)

    def __init__(self) -> None:
        self.stack: List[Tuple[str, bool]] = []  # (path, opened inside a list)
        self.state = self.FIELD
        self.current: Optional[str] = None  # the field whose value comes next

    def path(self, name: Optional[str] = None) -> Optional[str]:
        parts = self.stack[-1][:1] if self.stack else ()  # the innermost path holds the outer ones
        parts += (name,) if name else ()
        return ".".join(parts) or None

    def step(self, token: str) -> Optional[str]:
        """Read ``token``; the dotted path of the field it names, if it names one."""
        state = self.state
        if state == self.FIELD:
            if token in ("}", ">"):
                if self.stack:
                    path, in_list = self.stack.pop()
                    if in_list:
                        self.state, self.current = self.LIST, path.rsplit(".", 1)[-1]
            elif _is_word(token):
                self.current, self.state = token, self.NAME
                return self.path(token)
        elif state == self.NAME:
            if token == ":":
                self.state = self.VALUE
            elif token in ("{", "<"):
                self._open(False)
            else:  # a scalar without its colon: protobuf stops here
                self.current, self.state = None, self.FIELD
        elif state == self.VALUE:
            if token in ("{", "<"):
                self._open(False)
            elif token == "[":
                self.state = self.LIST
            elif token != "-":  # a value (a string may be followed by more strings)
                self.current, self.state = None, self.FIELD
        else:  # LIST
            if token in ("{", "<"):
                self._open(True)
            elif token == "]":
                self.current, self.state = None, self.FIELD
        return None

    def _open(self, in_list: bool) -> None:
        self.stack.append((self.path(self.current), in_list))
        self.current, self.state = None, self.FIELD

    def field_at(self, token: Optional[str]) -> Optional[str]:
        """The field the parser is in when it stops at ``token`` (the token at
        the error's position, or None at the end of the text): the field whose
        value it reads, the field that ``token`` names, or the message it is in."""
        if self.state in (self.NAME, self.VALUE, self.LIST):
            return self.path(self.current)
        if token is not None and _is_word(token) and not token[0].isdigit():
            return self.path(token)
        return self.path()


def _field_tokens(text: str) -> List[Tuple[str, int, int]]:
    """Every field name in a text-format message as (dotted path, line,
    column), both 1-based, in order of appearance."""
    out: List[Tuple[str, int, int]] = []
    walk = _Walk()
    for tok, start in _tokens(text):
        path = walk.step(tok)
        if path is not None:
            line = text.count("\n", 0, start) + 1
            column = start - (text.rfind("\n", 0, start) + 1) + 1
            out.append((path, line, column))
    return out


def _field_lines(text: str) -> Dict[str, int]:
    """Map each dotted field path to the first line it appears on."""
    lines: Dict[str, int] = {}
    for path, line, _ in _field_tokens(text):
        lines.setdefault(path, line)
    return lines


def _offset(text: str, line: int, column: int) -> int:
    """The offset of 1-based (line, column) in ``text``."""
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return min(pos + max(column - 1, 0), len(text))


def _field_at(text: str, line: int, column: int) -> Optional[str]:
    """The dotted path of the field the parser was in at 1-based (line,
    column): see :meth:`_Walk.field_at`."""
    pos = _offset(text, line, column)
    walk = _Walk()
    for tok, start in _tokens(text):
        if start >= pos:
            return walk.field_at(tok if start == pos else None)
        walk.step(tok)
    return walk.field_at(None)


def parse_error(text: str, source: str, exc: text_format.ParseError,
                descriptor=None) -> ConfigError:
    """The :class:`ConfigError` for protobuf's ``ParseError`` of ``text``:
    ``file:line:column: field: message``, the field being the one the parser
    was in (:func:`_field_at`; ``at top level`` before any field), protobuf's
    echo of the line dropped and an unknown enum value reworded to list the
    values (cpp/io/src/config.cc words every error the same way)."""
    # protobuf says "line:column : 'the line': message"
    msg = re.sub(r"^\d+:\d+\s*:\s*", "", str(exc))
    msg = re.sub(r"^'.*?':\s*", "", msg)
    line, column = exc.GetLine(), exc.GetColumn()
    field = _field_at(text, line, column) if line is not None else None
    enum = re.search(r'Enum type "([\w.]+)" has no value (?:named|with number) (\S+?)\.?$', msg)
    if enum:
        values = ", ".join(v.name for v in pb.DESCRIPTOR.pool.FindEnumTypeByName(enum.group(1)).values)
        msg = f"unknown value {enum.group(2)}, expected one of {values}"
    msg = f"{field or 'at top level'}: {msg}"
    return ConfigError(source, msg, line=line, column=column, field=field)


def _parse_text(text: str, source: str) -> pb.EvoKitConfig:
    """``text`` as an EvoKitConfig, in EvoKit's layout or PARL EvoKit's
    (mapped by :mod:`evokit.parl_config`, with one ConfigLayoutWarning)."""
    from . import parl_config  # it uses this module's text walk

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

class _Checker:
    def __init__(self, source: str, text: Optional[str], overridden: Collection[str] = ()):
        self.source = source
        self.text = text  # tokenized for the lines of fields only when one is bad
        self.overridden = overridden

    def fail(self, field: str, message: str) -> None:
        raise self.error(field, message)

    def error(self, field: str, message: str) -> ConfigError:
        if field in self.overridden:
            return ConfigError(OVERRIDES_SOURCE, f"{field} {message}", field=field)
        lines = _field_lines(self.text) if self.text else {}
        named = field
        if self.text:
            from . import parl_config

            if parl_config.detect_layout(self.text) == parl_config.PARL:
                # the file names the field as PARL does: name both, find the line of PARL's
                parl = parl_config.parl_field(field)
                if parl is not None:
                    named, field = f"{parl} ({field})", parl
        line = lines.get(field)
        # fall back to the closest enclosing message that appears in the text
        parent = field
        while line is None and "." in parent:
            parent = parent.rsplit(".", 1)[0]
            line = lines.get(parent)
        return ConfigError(self.source, f"{named} {message}", line=line, field=field)

    def positive(self, field: str, value: float) -> None:
        if not (math.isfinite(value) and value > 0):
            self.fail(field, f"must be > 0, got {value:g}")

    def non_negative(self, field: str, value: float) -> None:
        if not (math.isfinite(value) and value >= 0):
            self.fail(field, f"must be >= 0, got {value:g}")

    def unit_interval(self, field: str, value: float) -> None:
        if not (0.0 <= value < 1.0):
            self.fail(field, f"must be in [0, 1), got {value:g}")

    def at_least(self, field: str, value: int, low: int) -> None:
        if value < low:
            self.fail(field, f"must be >= {low}, got {value}")

    def within(self, field: str, value: int, low: int, high: int) -> None:
        if not low <= value <= high:
            self.fail(field, f"must be in [{low:,}, {high:,}], got {value:,}")


#: Upper bounds of train.eval_episodes / episodes_per_sample and of train.num_workers.
MAX_EPISODES = 1_000_000
MAX_WORKERS = 4096


def validate_config(config: pb.EvoKitConfig, source: str = "<config>",
                    text: Optional[str] = None, num_params: Optional[int] = None,
                    overridden: Collection[str] = ()) -> None:
    """Check every value of ``config``; raise :class:`ConfigError` on the first
    bad one. With ``num_params`` (the model's parameter count) also check that
    the noise table is large enough (:meth:`evokit.ESAgent.init_solver` leaves
    that to the core's solver constructor, which checks the solver options
    with the parameter count anyway: see :func:`solver_config_error`).
    ``overridden``: the fields set from the command line, named as such in
    errors."""
    c = _Checker(source, text, overridden)
    solver = config.solver
    s = "solver"
    try:
        re.compile(solver.param_pattern)
    except re.error as exc:
        c.fail(f"{s}.param_pattern", f"is not a valid regular expression: {exc}")
    if solver.backend not in BACKENDS:
        c.fail(f"{s}.backend", f"must be one of {', '.join(BACKENDS)}, got {solver.backend!r}")
    # Every option the solver reads is checked by the core's registry, the
    # same checks the C++ io component runs: "solver.<name> <what>, got <value>".
    try:
        validate_solver_options(solver, num_params)
    except ValueError as exc:
        field, _, message = str(exc).partition(" ")
        c.fail(field, message)

    c.at_least("async_es.max_to_keep", config.async_es.max_to_keep, 1)

    t = config.train
    c.at_least("train.max_generations", t.max_generations, 1)
    c.at_least("train.eval_every", t.eval_every, 1)
    # Episode counts are lists in memory: bounded, so that a typo is refused here
    # rather than ending in a MemoryError.
    c.within("train.eval_episodes", t.eval_episodes, 1, MAX_EPISODES)
    c.within("train.num_workers", t.num_workers, 1, MAX_WORKERS)
    c.within("train.episodes_per_sample", t.episodes_per_sample, 1, MAX_EPISODES)
    for i, h in enumerate(t.hidden_sizes):
        if h < 1:
            c.fail("train.hidden_sizes", f"must all be >= 1, got {h} at position {i}")
    if t.activation not in ACTIVATIONS:
        c.fail("train.activation", f"must be one of {', '.join(ACTIVATIONS)}, got {t.activation!r}")
    if not (t.observation_clip > 0 and math.isfinite(t.observation_clip)):
        c.fail("train.observation_clip", f"must be finite and > 0, got {t.observation_clip:g}")
    if not math.isfinite(t.target_return):
        c.fail("train.target_return", f"must be finite, got {t.target_return}")
    c.at_least("train.max_env_steps", t.max_env_steps, 0)
    if not (t.alive_bonus_offset >= 0 and math.isfinite(t.alive_bonus_offset)):
        c.fail("train.alive_bonus_offset", f"must be finite and >= 0, got {t.alive_bonus_offset:g}")


def solver_config_error(exc: ValueError, source: str = "config") -> ValueError:
    """The :class:`ConfigError` that :func:`validate_config` raises for an
    error of the core's check of the solver options (``"solver.<name> <what>,
    got <value>"``), here raised by the core's solver constructor, which runs
    that check with the parameter count; any other error as it is."""
    field, _, message = str(exc).partition(" ")
    if not field.startswith("solver."):
        return exc
    return _Checker(source, None).error(field, message)
