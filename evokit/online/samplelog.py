"""Sampling logs: append-only files of framed ``SampleRecord`` messages.

Online samplers append one record per sample; the offline update job
(``evokit update``) reads the logs. The format is specified in
``proto/evokit.proto`` (section "Sampling logs"). In brief, a log is a sequence
of records, each a 16-byte little-endian header followed by the payload::

    offset  size  field
         0     4  magic b"EKR1"
         4     4  payload length (uint32, at most MAX_PAYLOAD = 16 MiB)
         8     4  CRC-32 (zlib / IEEE) of the payload
        12     4  CRC-32 of header bytes 0..11 (guards the length)
        16     n  payload: a serialized evokit.SampleRecord

Concurrency: a writer opens the log with ``O_WRONLY | O_APPEND | O_CREAT``,
takes an exclusive ``flock()`` for the duration of an append, writes the
whole batch of framed records with one ``os.write()`` (looping on a partial
write while still holding the lock), fsyncs (:class:`LogWriter` can skip
that) and unlocks. Any number of processes and threads appending to one log
through this module therefore never interleave bytes. A batch is appended
whole or not at all: if the write or the fsync fails (a full disk, a file
size limit), the writer cuts the file back to the length it had before the
batch, still under the lock, and raises :class:`LogError` naming the log;
it never truncates or rewrites anything else. A writer killed mid-write
leaves at most part of one batch, ending in a torn record, which readers
skip and report.

Readers never modify a log: :func:`read_log` opens it read-only (holding a
shared ``flock()`` while it reads, so it sees only whole appends of writers
that use this module), keeps every record whose header and payload checksums
hold and whose payload parses, and after a bad stretch resynchronises on the
next magic whose header checksum holds, reporting each skipped stretch as a
:class:`Skipped` (file, byte offset, length, reason).

The framing and the reader's resynchronisation are the C++ core's
(``cpp/include/evokit/record_log.h``, through ``evokit._core``), which the
C++ io component uses too: one implementation, linear in the size of a log
whatever it holds. This module keeps the protobuf payloads, the files and
their locks.

Each record is identified by :attr:`LogRecord.record_id`, the first 16 bytes
of sha256(payload): the "already applied" bookkeeping of the update job
(``ConsumedSamples.record_ids``).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import threading
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

from google.protobuf.message import DecodeError

from .. import _core, evokit_pb2
from ..errors import LogError

__all__ = [
    "HEADER_SIZE", "MAGIC", "MAX_PAYLOAD", "LogRecord", "LogWriter", "ReadResult",
    "Skipped", "append_records", "append_sampler_chunk", "encode_record", "iter_log", "read_log", "read_logs",
]

MAGIC: bytes = _core.RECORD_MAGIC  # b"EKR1"
MAX_PAYLOAD: int = _core.MAX_RECORD_PAYLOAD  # 16 MiB
HEADER_SIZE: int = _core.RECORD_HEADER_SIZE  # 16

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Skipped:
    """One stretch of bad bytes the reader skipped."""

    path: str
    offset: int  # byte offset where the bad stretch starts
    length: int  # bytes skipped
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: skipped {self.length} bytes at offset {self.offset}: {self.reason}"


@dataclass
class LogRecord:
    """A record read back from a log, with where it was found."""

    record: evokit_pb2.SampleRecord
    path: str
    offset: int  # byte offset of the record's header
    record_id: bytes  # sha256(payload)[:16]

    @property
    def identity(self):
        """What tells this evaluation from every other: (sampler_id,
        model_iter_id, sample_index) for a numbered record, else its
        record_id. Two records of one identity are one record appended twice."""
        r = self.record
        if r.HasField("sample_index"):
            return (r.sampler_id, r.info.model_iter_id, r.sample_index)
        return self.record_id


@dataclass
class ReadResult:
    records: list[LogRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _record_id(payload: bytes) -> bytes:
    return hashlib.sha256(payload).digest()[:16]


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def encode_record(record: evokit_pb2.SampleRecord) -> bytes:
    """The framed bytes of ``record``: the 16-byte header and the payload."""
    if not isinstance(record, evokit_pb2.SampleRecord):
        raise TypeError(f"expected an evokit.SampleRecord, got {type(record).__name__}")
    return _core.frame_record(record.SerializeToString(deterministic=True))


# Opening, appending (whole or not at all, under the flock) and reading are
# the core's (cpp/include/evokit/formats/log_file.h), the C++ io library's too.


def _open_for_append(path: str) -> int:
    """Open (creating it and its parent directories) a log for appending."""
    try:
        return _core.log_open_for_append(path)
    except ValueError as exc:
        raise LogError(str(exc)) from None


def _append_locked(fd: int, path: str, data: bytes, count: int, fsync: bool) -> None:
    """Append ``count`` framed records, ``data``, whole or not at all (a
    refusal is one :class:`LogError` naming the log, which is then back to
    its length)."""
    try:
        _core.log_append(fd, path, data, count, fsync)
    except ValueError as exc:
        raise LogError(str(exc)) from None


def _append_once(path: str, data: bytes, count: int) -> None:
    """Open (creating) the log, append ``count`` framed records whole,
    fsynced, and close it."""
    fd = _open_for_append(path)
    try:
        if count:
            _append_locked(fd, path, data, count, fsync=True)
    finally:
        os.close(fd)


def append_records(path: PathLike, records: Iterable[evokit_pb2.SampleRecord]) -> None:
    """Append ``records`` to the log at ``path`` (created with its parent
    directories if missing) under an exclusive flock, one write for the
    batch, fsynced before the lock is released: whole or not at all.

    Every record is encoded before the file is touched, so a bad record
    (wrong type, too large) appends nothing. Failing to open the log, or to
    write or fsync the batch (the log is then cut back to its length before
    the batch), raises :class:`LogError` naming the log.
    """
    frames = [encode_record(r) for r in records]
    _append_once(os.fspath(path), b"".join(frames), len(frames))


def append_sampler_chunk(path: PathLike, infos, rewards, env_steps, *, config_fingerprint: str,
                         model_fingerprint: str, sampler_id: int, time: float, first_index: int) -> None:
    """Append a sampler's chunk as :func:`append_records` appends records
    (created if missing, one write under the flock, fsynced, whole or not at
    all): record i is infos[i] (the core's SamplingInfo) with rewards[i],
    env_steps[i], sample_index first_index + i and the shared fields. The
    core encodes the chunk in one call (evokit/formats/sample_record.h: the
    bytes protobuf gives for the same records)."""
    data = _core.encode_sample_records(infos, rewards, env_steps, config_fingerprint, model_fingerprint,
                                       sampler_id, time, first_index)
    _append_once(os.fspath(path), data, len(infos))


class LogWriter:
    """An open log for a long-running sampler: each :meth:`append` /
    :meth:`append_many` is lock + one write of the batch + fsync (unless
    ``fsync=False``) + unlock, whole or not at all, exactly like
    :func:`append_records`.

    One writer may be shared by threads (appends are serialised by a thread
    lock as well as the flock). A flock belongs to the open file, which a
    forked child shares with its parent, so a child process that inherits a
    writer reopens the log on its first append.
    """

    def __init__(self, path: PathLike, *, fsync: bool = True) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._fd: Optional[int] = _open_for_append(self.path)
        self._pid = os.getpid()

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, record: evokit_pb2.SampleRecord) -> None:
        self.append_many([record])

    def append_many(self, records: Iterable[evokit_pb2.SampleRecord]) -> None:
        frames = [encode_record(r) for r in records]
        with self._lock:
            fd = self._fd_for_this_process()
            if frames:
                _append_locked(fd, self.path, b"".join(frames), len(frames), self.fsync)

    def _fd_for_this_process(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path}: append to a closed LogWriter")
        if self._pid != os.getpid():
            os.close(self._fd)  # the child's copy; the parent's stays open
            self._fd = None
            self._fd = _open_for_append(self.path)
            self._pid = os.getpid()
        return self._fd

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"LogWriter({self.path!r}, fsync={self.fsync}{', closed' if self.closed else ''})"


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _read_bytes(path: str) -> bytes:
    try:
        return _core.log_read(path)
    except ValueError as exc:
        raise LogError(str(exc)) from None


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector off while a log's spans become
    objects: none of them forms a cycle, and with it on, the collections
    that millions of new objects trigger took 90% of the time to read a
    64 MiB log of 4 million bad stretches."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_records(data: bytes, path: str, result: ReadResult) -> None:
    with _gc_paused():
        _parse_spans(data, path, result)


def _parse_spans(data: bytes, path: str, result: ReadResult) -> None:
    result.records.extend(_records(data, path, result.skipped))


def _records(data: bytes, path: str, skipped: list):
    """The good records of a log's bytes, one at a time; each bad stretch is
    appended to ``skipped`` as it is met."""
    spans, _ = _core.scan_record_log(data)
    for offset, length, reason in spans:
        if reason is not None:
            skipped.append(Skipped(path, offset, length, reason))
            continue
        payload = data[offset + HEADER_SIZE:offset + length]
        record = evokit_pb2.SampleRecord()
        try:
            record.ParseFromString(payload)
        except DecodeError as exc:
            # Both checksums hold, so the frame itself is sound: skip exactly
            # this record.
            skipped.append(Skipped(path, offset, length, f"payload is not a SampleRecord: {exc}"))
        else:
            yield LogRecord(record, path, offset, _record_id(payload))


def read_log(path: PathLike) -> ReadResult:
    """Read every good record of the log at ``path``, in file order, and
    report every skipped stretch. Never modifies the file. An empty file gives
    no records and no skips; a missing file, a directory or an unreadable
    file raises :class:`LogError`."""
    path = os.fspath(path)
    result = ReadResult()
    _parse_records(_read_bytes(path), path, result)
    return result


def iter_log(path: PathLike, skipped: list):
    """:func:`read_log`'s records one at a time, for a reader that keeps only
    what it needs of each: the file is read now (:class:`LogError` as
    read_log raises it), each record parsed as the iterator reaches it, and
    each skipped stretch appended to ``skipped`` as it is met."""
    path = os.fspath(path)
    return _records(_read_bytes(path), path, skipped)


def read_logs(paths: Iterable[PathLike]) -> ReadResult:
    """:func:`read_log` of each path, concatenated in the order given."""
    result = ReadResult()
    for path in paths:
        one = read_log(path)
        result.records.extend(one.records)
        result.skipped.extend(one.skipped)
    return result
