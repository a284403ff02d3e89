"""Checkpoints of ``evokit train``: ``RUN_DIR/checkpoint.pb``.

One ``TrainCheckpoint`` message (``proto/evokit.proto``) written with one
atomic write (temporary file, fsync, rename): a run killed at any moment
leaves the previous checkpoint or the new one, never a mix. It ends with its
sha256 trailer (:mod:`evokit.statefile`): a damaged checkpoint is refused
before anything in the run directory is written. It holds the
centre model, the solver state (optimizer vectors and the step count, i.e.
the model_iter_id), the metrics so far and the counters; nothing else is
needed, because every random draw of a run is a pure function of the config,
the seed and the generation (see :mod:`evokit.training.loop`).
"""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

from .. import evokit_pb2 as pb
from ..config import parse_config
from ..errors import CheckpointError, ConfigError
from ..statefile import read_state_file, write_state_file

__all__ = ["CHECKPOINT_FILE", "read_checkpoint", "write_checkpoint",
           "config_differences", "check_resumable"]

CHECKPOINT_FILE = "checkpoint.pb"

# Fields a resumed run may change: they do not change what the run computes
# (results are identical for any number of workers), or they only move where
# it stops.
RESUME_MAY_CHANGE = ("train.num_workers", "train.max_generations")


def write_checkpoint(run_dir: str, ckpt: pb.TrainCheckpoint) -> str:
    return write_state_file(os.path.join(run_dir, CHECKPOINT_FILE), ckpt)


def read_checkpoint(run_dir: str) -> pb.TrainCheckpoint:
    """The checkpoint of ``run_dir``, checked for the fields a resume needs."""
    if not os.path.exists(run_dir):
        raise CheckpointError(f"{run_dir}: no such run directory")
    if not os.path.isdir(run_dir):
        raise CheckpointError(f"{run_dir}: is not a directory, expected the run directory of "
                              f"`evokit train`")
    path = os.path.join(run_dir, CHECKPOINT_FILE)
    if not os.path.isfile(path):
        raise CheckpointError(f"{run_dir}: no {CHECKPOINT_FILE}: not a run directory of "
                              f"`evokit train`, or the run ended before its first checkpoint")
    ckpt = read_state_file(path, pb.TrainCheckpoint(), CheckpointError, "training checkpoint")
    for name in ("generation", "config", "model", "solver"):
        if not ckpt.HasField(name):
            raise CheckpointError(f"{path}: not a training checkpoint (no {name})")
    if len(ckpt.metrics) != ckpt.generation:
        raise CheckpointError(f"{path}: holds {len(ckpt.metrics)} rows of metrics for "
                              f"{ckpt.generation} generations")
    return ckpt


def _float32_text(value: float) -> str:
    return format(value, ".7g")  # a float field's value as written (0.9, not 0.8999999761581421)


def _scalar_text(value) -> str:
    return repr(value) if not isinstance(value, bool) else str(value).lower()


def config_differences(a: pb.EvoKitConfig, b: pb.EvoKitConfig,
                       prefix: str = "") -> List[Tuple[str, str, str]]:
    """The fields (dotted paths) whose values differ between two configs,
    defaults included, as (path, value in a, value in b)."""
    out: List[Tuple[str, str, str]] = []
    for field in a.DESCRIPTOR.fields:
        name = prefix + field.name
        va, vb = getattr(a, field.name), getattr(b, field.name)
        if field.message_type is not None and not _is_repeated(field):
            out.extend(config_differences(va, vb, name + "."))
        elif _is_repeated(field):
            if list(va) != list(vb):
                out.append((name, str(list(va)), str(list(vb))))
        elif va != vb:
            text = _float32_text if field.type == field.TYPE_FLOAT else _scalar_text
            out.append((name, text(va), text(vb)))
    return out


def _is_repeated(field) -> bool:
    return field.is_repeated  # protobuf >= 7 (pinned) has no FieldDescriptor.label


def check_resumable(run_dir: str, ckpt: pb.TrainCheckpoint,
                    config: Optional[pb.EvoKitConfig]) -> pb.EvoKitConfig:
    """The config to resume with: the run's own, with the fields of
    ``config`` that may change; raises :class:`CheckpointError` naming the
    first field that differs otherwise. The run's config is validated only
    without ``config``: with one (validated by the caller), what is resumed
    equals it in every field."""
    try:
        stored = parse_config(ckpt.config, source=os.path.join(run_dir, CHECKPOINT_FILE),
                              validate=config is None)
    except ConfigError as exc:
        raise CheckpointError(str(exc)) from None
    if config is None:
        return stored
    for path, was, now in config_differences(stored, config):
        if path not in RESUME_MAY_CHANGE:
            raise CheckpointError(f"cannot resume {run_dir}: the config differs from the run's in "
                                  f"{path} (run: {was}, now: {now}); only "
                                  f"{' and '.join(RESUME_MAY_CHANGE)} may change")
    resumed = pb.EvoKitConfig()
    resumed.CopyFrom(stored)
    resumed.train.num_workers = config.train.num_workers
    resumed.train.max_generations = config.train.max_generations
    return resumed
