"""Per-generation metrics of a training run: a CSV or JSONL file, TensorBoard.

A run writes one row per generation (the fields of ``GenerationMetrics`` in
``proto/evokit.proto``): to ``RUN_DIR/metrics.csv`` by default, or to a JSONL
file (one JSON object per line), chosen by ``--metrics-format`` or by the
file's extension. Each row is appended and flushed as soon as its generation
ends, so a killed run keeps its metrics; a resumed run rewrites the file from
its checkpoint first. TensorBoard event files are written through
tensorboardX (the optional extra ``evokit-es[tensorboard]``), never by hand.
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Dict, Iterable, List, Optional, Union

from .. import evokit_pb2 as pb
from ..errors import MetricsError
from ..util import atomic_write_bytes, install_hint

__all__ = ["COLUMNS", "FORMATS", "MetricsFile", "TensorBoardWriter",
           "metrics_format", "read_metrics", "row_to_proto", "row_from_proto"]

COLUMNS = ["generation", "model_iter_id", "env_steps", "wall_time", "reward_mean",
           "reward_max", "reward_min", "eval_mean"]
FORMATS = ("csv", "jsonl")
_INT_COLUMNS = ("generation", "model_iter_id", "env_steps")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl"}

Row = Dict[str, Union[int, float, None]]


def metrics_format(path: Union[str, "os.PathLike[str]"], fmt: Optional[str] = None) -> str:
    """The format of the metrics file ``path``: ``fmt`` if given, else from
    the extension (``.csv`` or ``.jsonl``)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise MetricsError(f"metrics format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in _EXTENSIONS:
        raise MetricsError(f"{os.fspath(path)}: cannot tell the metrics format from the extension "
                           f"{ext or '(none)'!r}: name the file .csv or .jsonl, or give --metrics-format")
    return _EXTENSIONS[ext]


def row_to_proto(row: Row) -> pb.GenerationMetrics:
    msg = pb.GenerationMetrics()
    for name in COLUMNS:
        if row.get(name) is not None:
            setattr(msg, name, row[name])
    return msg


def row_from_proto(msg: pb.GenerationMetrics) -> Row:
    return {name: (getattr(msg, name) if msg.HasField(name) else None) for name in COLUMNS}


def _encode(rows: Iterable[Row], fmt: str, header: bool) -> str:
    if fmt == "jsonl":
        return "".join(json.dumps({k: row.get(k) for k in COLUMNS}) + "\n" for row in rows)
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows({k: ("" if row.get(k) is None else row[k]) for k in COLUMNS} for row in rows)
    return buf.getvalue()


class MetricsFile:
    """The metrics file of a run, open for appending. It starts with ``rows``
    (those of a checkpoint being resumed, or none), written atomically."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], fmt: Optional[str] = None,
                 rows: Iterable[Row] = ()):
        self.path = os.fspath(path)
        self.format = metrics_format(self.path, fmt)
        atomic_write_bytes(self.path, _encode(list(rows), self.format, header=True).encode())
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, row: Row) -> None:
        self._file.write(_encode([row], self.format, header=False))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "MetricsFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _number(path: str, line: int, name: str, value, integer: bool):
    if value is None or value == "":
        if name == "eval_mean":
            return None
        raise MetricsError(f"{path}:{line}: {name} is missing")
    try:
        number = int(value) if integer else float(value)
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a number"
        raise MetricsError(f"{path}:{line}: {name} must be {kind}, got {value!r}") from None
    if not integer and math.isnan(number) and name != "eval_mean":
        raise MetricsError(f"{path}:{line}: {name} is NaN")
    return number


def read_metrics(path: Union[str, "os.PathLike[str]"], fmt: Optional[str] = None) -> List[Row]:
    """The rows of a metrics file written by :class:`MetricsFile`."""
    path = os.fspath(path)
    fmt = metrics_format(path, fmt)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    raw = []  # (line number, dict)
    if fmt == "csv":
        reader = csv.DictReader(text.splitlines())
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise MetricsError(f"{path}:1: not a metrics file: the header lacks {', '.join(missing)}")
        raw = [(i + 2, r) for i, r in enumerate(reader)]
    else:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise MetricsError(f"{path}:{i}: not a JSON object ({exc})") from None
            if not isinstance(obj, dict):
                raise MetricsError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
            raw.append((i, obj))
    return [{name: _number(path, line, name, r.get(name), name in _INT_COLUMNS) for name in COLUMNS}
            for line, r in raw]


class TensorBoardWriter:
    """Scalars of each generation as TensorBoard event files in ``logdir``
    (through tensorboardX). Tags: ``reward/mean``, ``reward/max``,
    ``reward/min``, ``reward/centre`` (generations with a centre evaluation),
    ``env_steps``, ``env_steps_per_second``; the step is the generation.
    ``first_generation`` is the first generation this writer sees: TensorBoard
    drops the events earlier files hold at or after it (those a killed run
    wrote past its checkpoint, or those of an older run in the same place)."""

    def __init__(self, logdir: Union[str, "os.PathLike[str]"], first_generation: int = 1):
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise RuntimeError("TensorBoard output needs the tensorboardX package: "
                               f"{install_hint('tensorboard')}") from None
        self.logdir = os.fspath(logdir)
        # Event files are named by the second they are opened in, and read in the
        # order of their names: the suffix keeps a resume within the same second
        # from overwriting the earlier file, and sorts it after that file.
        self._writer = SummaryWriter(logdir=self.logdir, purge_step=first_generation,
                                     filename_suffix=f".gen{first_generation:010d}.{os.getpid()}")

    def write(self, row: Row, steps_per_second: Optional[float] = None) -> None:
        step = int(row["generation"])
        add = self._writer.add_scalar
        add("reward/mean", row["reward_mean"], step)
        add("reward/max", row["reward_max"], step)
        add("reward/min", row["reward_min"], step)
        if row.get("eval_mean") is not None:
            add("reward/centre", row["eval_mean"], step)
        add("env_steps", row["env_steps"], step)
        if steps_per_second is not None:
            add("env_steps_per_second", steps_per_second, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
