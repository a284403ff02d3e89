"""Checksummed state files: every protobuf file EvoKit reads back as state.

``solver.pb``, ``warehouse.pb``, ``consumed.pb``, ``checkpoint.pb`` and
``obs_norm.pb`` end with a trailer: field 15 of their message (``sha256``,
``proto/evokit.proto``, "State files"), the SHA-256 of every byte before it::

    file = body + b"\\x7a\\x20" + sha256(body)      # tag (15 << 3 | 2), length 32

The file stays a valid protobuf (an EvoKit without the field skips it); the
reader checks the trailer over the bytes as stored, before parsing, so any
changed, added or removed byte is refused naming the file and both digests.
The trailer is the core's (cpp/src/formats/state_file.cc), which the C++ io
library seals and checks with too.

A file without the trailer is refused too: it is either cut short or damaged,
or written by an EvoKit before state files were checksummed, and nothing in
it could tell a damaged one from an intact one. ``evokit seal PATH`` adds the
trailer to an intact older file (:func:`seal_file`).

A model.onnx stays plain ONNX; every ``solver.pb`` records the sha256 of
the model bytes EvoKit writes for the state's centre (``model_sha256``,
compared with a warehouse iteration's model.onnx) and the fingerprint of the
exact model (``params_fingerprint``, compared whenever the model is loaded
with the state).
"""

from __future__ import annotations

import os
from typing import Callable, Type, TypeVar

from google.protobuf import message as _message

from . import _core
from . import evokit_pb2 as pb
from .util import atomic_write_bytes

__all__ = ["TRAILER_SIZE", "STATE_FILES", "seal", "unseal", "write_state_file", "read_state_file",
           "seal_file", "state_files"]

#: Bytes the trailer adds to a file: tag, length, digest.
TRAILER_SIZE = _core.STATE_TRAILER_SIZE

#: The message each state file holds, by file name.
STATE_FILES = {
    "solver.pb": pb.SolverState,
    "warehouse.pb": pb.WarehouseInfo,
    "consumed.pb": pb.ConsumedSamples,
    "checkpoint.pb": pb.TrainCheckpoint,
    "obs_norm.pb": pb.ObservationStats,
}

M = TypeVar("M", bound=_message.Message)


def seal(body: bytes) -> bytes:
    """``body`` (a serialized message) with its trailer appended."""
    return _core.state_seal(body)


def unseal(path: str, data: bytes) -> bytes:
    """The body of the file ``data`` read from ``path``; ``ValueError``
    (one line, starting with ``path``) if its trailer is missing or does not
    match."""
    return _core.state_unseal(path, data)


def write_state_file(path, message: _message.Message) -> str:
    """Write ``message`` with its trailer to ``path``, atomically."""
    path = os.fspath(path)
    if message.HasField("sha256"):  # parsed from a whole file: its old trailer is not written
        message = type(message).FromString(message.SerializeToString())
        message.ClearField("sha256")
    atomic_write_bytes(path, seal(message.SerializeToString()))
    return path


def read_state_file(path, message: M, error: Type[ValueError] = ValueError,
                    what: str = "state file") -> M:
    """``message`` parsed from the checksummed file at ``path``. Every
    refusal is ``error`` with one line starting with the path."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        body = unseal(path, data)
    except ValueError as exc:
        raise error(str(exc)) from None
    return _parse(path, body, message, error, what)


def _parse(path: str, body: bytes, message: M, error: Callable[[str], Exception], what: str) -> M:
    try:
        message.ParseFromString(body)
    except _message.DecodeError as exc:
        raise error(f"{path}: not a {what} ({exc})") from None
    return message


def state_files(directory) -> list:
    """The state files in ``directory`` and in its subdirectories (a
    warehouse's iterations), sorted; ``ValueError`` if there is none."""
    directory = os.fspath(directory)
    dirs = [directory] + sorted(os.path.join(directory, e) for e in os.listdir(directory)
                                if os.path.isdir(os.path.join(directory, e)))
    found = [os.path.join(d, name) for d in dirs for name in STATE_FILES
             if os.path.isfile(os.path.join(d, name))]
    if not found:
        raise ValueError(f"{directory}: holds no state file ({', '.join(STATE_FILES)})")
    return found


def seal_file(path) -> str:
    """``evokit seal``: add the trailer to a state file written by an EvoKit
    before state files were checksummed (the message by its file name: one of
    :data:`STATE_FILES`), after checking that it parses; a file that has a
    valid trailer already is left as it is. Returns what was done."""
    path = os.fspath(path)
    name = os.path.basename(path)
    if name not in STATE_FILES:
        raise ValueError(f"{path}: not a state file EvoKit checksums (expected one of "
                         f"{', '.join(STATE_FILES)})")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if _core.state_has_trailer(data) or not data:
        unseal(path, data)  # a trailer that does not match: damaged; an empty file: refused
        return f"{path}: has its sha256 trailer already"
    message = _parse(path, data, STATE_FILES[name](), ValueError, STATE_FILES[name].__name__)
    if message.HasField("sha256"):
        raise ValueError(f"{path}: holds a sha256 field that is not its trailer: damaged")
    atomic_write_bytes(path, seal(data))
    return f"{path}: sealed ({len(data)} bytes + {TRAILER_SIZE} of trailer)"
