"""Every exception EvoKit raises of its own, and its one warning.

Each is a ``ValueError`` (a bad input: a file, a config, a model, an
environment), so ``except ValueError`` catches them all; the message names
the thing and gives expected and actual values. The modules that raise them
import them from here; the public ones are also ``evokit.ConfigError``,
``evokit.ModelError`` and ``evokit.SolverFileError``.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "CheckpointError", "ConfigError", "ConfigLayoutWarning", "EnvError", "FingerprintError", "LogError",
    "MetricsError", "ModelError", "NativeFallbackWarning", "NotSupportedError", "SolverFileError",
    "WarehouseError",
]


# ---- configs and models -------------------------------------------------------


class ConfigError(ValueError):
    """A config that cannot be parsed or holds an invalid value.

    Attributes ``source`` (file name or ``"<string>"``), ``line`` (1-based, or
    None where unknown) and ``field`` (dotted path, or None).
    """

    def __init__(self, source: str, message: str, line: Optional[int] = None,
                 field: Optional[str] = None, column: Optional[int] = None):
        self.source = source
        self.line = line
        self.field = field
        where = source
        if line is not None:
            where += f":{line}" + (f":{column}" if column is not None else "")
        super().__init__(f"{where}: {message}")


class ModelError(ValueError):
    """A bad model file, a bad model, or bad inputs for a model."""


class NotSupportedError(ModelError):
    """A model the native backend cannot run; the message names the node and op."""


class ConfigLayoutWarning(UserWarning):
    """A config read in another layout than EvoKit's own: PARL EvoKit's flat
    one (``seed``, ``gaussian_sampling``, ``optimizer`` at the top level),
    mapped onto EvoKitConfig (:mod:`evokit.parl_config`); one line naming the
    file and the layout."""


class NativeFallbackWarning(UserWarning):
    """A native path cannot run and EvoKit takes the general one, once per
    cause: ``backend="auto"`` met a graph the native backend cannot run and
    uses onnxruntime for it (the message names the node and op), or an
    evaluator met a MuJoCo task the core implements but cannot run here and
    steps gymnasium's environments instead (the message gives the reason)."""


class FingerprintError(ValueError):
    """A model holding something the fingerprint does not cover (the message names it)."""


# ---- solvers ------------------------------------------------------------------


class SolverFileError(ValueError):
    """A solver state file that is missing, corrupt or belongs to another model."""


# ---- evaluation and training --------------------------------------------------


class EnvError(ValueError):
    """An environment that cannot be made, or that the policy does not fit."""


class CheckpointError(ValueError):
    """A run directory that cannot be resumed."""


class MetricsError(ValueError):
    """A metrics file that cannot be read, or a format that cannot be told."""


# ---- online sampling, offline update -----------------------------------------


class LogError(ValueError):
    """A sampling log that cannot be used at all: missing, a directory, not a
    regular file, or not readable / writable. The message names the path."""


class WarehouseError(ValueError):
    """A warehouse that is missing, empty, half-written or inconsistent."""
