"""PARL EvoKit's own config layout, mapped onto ``EvoKitConfig``.

PARL's demo config (``evo_kit/demo/cartpole_config.prototxt`` in
github.com/PaddlePaddle/PARL) is flat: ``seed``, ``gaussian_sampling { std
cached cache_size }``, ``optimizer { type: "Adam" base_lr momentum beta1 beta2
epsilon }`` and ``async_es { ... }`` at the top level (message
``ParlEvoKitConfig`` in proto/evokit.proto, with PARL's defaults), unlike
EvoKit's ``solver { ... }``. :func:`evokit.load_config` reads such a file
through this module: every PARL field with an EvoKit meaning is set in the
EvoKitConfig (PARL's default where the file leaves it out), the others are
refused naming the field, a file that mixes the two layouts is refused naming
the field of the second, and a :class:`~evokit.errors.ConfigLayoutWarning`
says in one line which layout was read.

The rules (the layout's detection, the table of fields, the refusals) are
the core's (cpp/src/formats/config_checks.cc), which the C++ io library
uses too; docs/migrating_from_parl.md explains them.
"""

from __future__ import annotations

import warnings
from typing import Dict, Optional

from . import _core
from . import evokit_pb2 as pb
from .errors import ConfigError, ConfigLayoutWarning
from .solvers.options import message_fields, set_fields

__all__ = ["EVOKIT", "PARL", "FIELDS", "REFUSED", "detect_layout", "to_evokit", "parl_field"]

EVOKIT = "EvoKit's layout"
PARL = "PARL EvoKit's flat layout"

#: PARL field -> the EvoKitConfig field with its meaning (the core's table).
FIELDS: Dict[str, str] = dict(_core.CONFIG_PARL_FIELDS)

#: PARL fields with no EvoKit meaning: refused when set, with the reason.
REFUSED: Dict[str, str] = dict(_core.CONFIG_PARL_REFUSED)


def problem_error(source: str, problem) -> ConfigError:
    """The :class:`ConfigError` of a problem the core found in ``source``:
    ``(field, message, line, column)``."""
    field, message, line, column = problem
    return ConfigError(source, message, line=line, column=column, field=field)


def detect_layout(text: str, source: str = "<string>") -> str:
    """:data:`PARL` when ``text``'s top-level fields are PARL EvoKit's, else
    :data:`EVOKIT`; a text with top-level fields of both is refused, naming
    the first field of the layout that comes second."""
    layout, problem = _core.config_detect_layout(text)
    if problem is not None:
        raise problem_error(source, problem)
    return layout


def note(source: str) -> str:
    """The one-line note that a config was read in PARL EvoKit's layout."""
    return _core.config_parl_note(source)


def to_evokit(parl: pb.ParlEvoKitConfig, text: str, source: str) -> pb.EvoKitConfig:
    """The EvoKitConfig ``parl`` means (parsed from ``text``; ``source`` names
    it in errors), after one ConfigLayoutWarning."""
    present = set()
    values = message_fields(parl, present)
    fields, problem = _core.config_parl_to_evokit(values, present, text)
    if problem is not None:
        raise problem_error(source, problem)
    config = pb.EvoKitConfig()
    set_fields(config, fields)
    warnings.warn(note(source), ConfigLayoutWarning, stacklevel=4)
    return config


def parl_field(evokit_field: str) -> Optional[str]:
    """The PARL field that ``evokit_field`` (a dotted EvoKitConfig path) is
    mapped from, or None."""
    return _core.config_parl_field(evokit_field)
