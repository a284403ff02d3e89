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
says in one line which layout was read. The C++ io component maps the same
table (cpp/io/src/parl_config.cc); docs/migrating_from_parl.md explains it.
"""

from __future__ import annotations

import warnings
from typing import Dict, Optional, Tuple

from . import evokit_pb2 as pb
from .config import _field_lines, _field_tokens
from .errors import ConfigError, ConfigLayoutWarning

__all__ = ["EVOKIT", "PARL", "FIELDS", "detect_layout", "to_evokit", "parl_field"]

EVOKIT = "EvoKit's layout"
PARL = "PARL EvoKit's flat layout"

#: Top-level fields only one layout has (async_es is in both).
_TOP_LEVEL = {"solver": EVOKIT, "train": EVOKIT,
              "seed": PARL, "buffer_size": PARL, "gaussian_sampling": PARL, "optimizer": PARL}

#: PARL field -> the EvoKitConfig field with its meaning (the value is copied;
#: optimizer.type is translated by _OPTIMIZER_TYPES). optimizer.momentum and
#: the Adam fields are copied whatever the type: like PARL, EvoKit reads
#: momentum only for momentum SGD and beta1/beta2/epsilon only for Adam.
FIELDS: Dict[str, str] = {
    "seed": "solver.sampling.gaussian_sampling.seed",
    "gaussian_sampling.std": "solver.sampling.gaussian_sampling.std",
    "gaussian_sampling.cached": "solver.sampling.gaussian_sampling.cached",
    "gaussian_sampling.cache_size": "solver.sampling.gaussian_sampling.cache_size",
    "optimizer.type": "solver.optimizer.type",
    "optimizer.base_lr": "solver.optimizer.base_lr",
    "optimizer.momentum": "solver.optimizer.momentum.momentum",
    "optimizer.beta1": "solver.optimizer.adam.beta1",
    "optimizer.beta2": "solver.optimizer.adam.beta2",
    "optimizer.epsilon": "solver.optimizer.adam.epsilon",
    "async_es.max_to_keep": "async_es.max_to_keep",
}

#: PARL's optimizer.type (compared lower-case, as PARL's create_optimizer
#: does) -> EvoKit's. PARL's "SGD" is SGD with momentum (0.9 by default).
_OPTIMIZER_TYPES = {"sgd": pb.OptimizerConfig.MOMENTUM, "adam": pb.OptimizerConfig.ADAM}

#: PARL fields with no EvoKit meaning: refused when set, with the reason.
_REFUSED = {
    "buffer_size": "has no EvoKit meaning (PARL EvoKit reads it nowhere)",
    "async_es.model_warehouse": "has no EvoKit meaning: the warehouse is the directory given to "
                                "`evokit init-solver --warehouse` (io::Warehouse in C++)",
    "async_es.model_md5": "has no EvoKit meaning: EvoKit checks models by the fingerprint in solver.pb",
    "async_es.model_iter_id": "has no EvoKit meaning but 0: EvoKit's warehouse numbers its "
                              "iterations itself (model_iter_id-k directories)",
}


def _top_level(text: str):
    """(name, line, column) of every top-level field of ``text``."""
    return [(p, line, col) for p, line, col in _field_tokens(text) if "." not in p]


def detect_layout(text: str, source: str = "<string>") -> str:
    """:data:`PARL` when ``text``'s top-level fields are PARL EvoKit's, else
    :data:`EVOKIT`; a text with top-level fields of both is refused, naming
    the first field of the layout that comes second."""
    first: Dict[str, Tuple[str, int, int]] = {}
    for name, line, column in _top_level(text):
        layout = _TOP_LEVEL.get(name)
        if layout is None or layout in first:
            continue
        first[layout] = (name, line, column)
        if len(first) == 2:
            (a_layout, (a, a_line, _)), = [(k, v) for k, v in first.items() if k != layout]
            raise ConfigError(source, f"{name}: a field of {layout} in a config of {a_layout} "
                                      f"('{a}' at line {a_line}); write the config in one layout "
                                      f"(docs/migrating_from_parl.md)",
                              line=line, column=column, field=name)
    return PARL if PARL in first else EVOKIT


def note(source: str) -> str:
    """The one-line note that a config was read in PARL EvoKit's layout."""
    return (f"{source}: read in {PARL} (seed, gaussian_sampling, optimizer, async_es at the top "
            f"level) and mapped onto EvoKit's solver {{ ... }} (docs/migrating_from_parl.md)")


def _get(message, path: str):
    *parents, name = path.split(".")
    for parent in parents:
        message = getattr(message, parent)
    return message, name


def _is_set(message, path: str) -> bool:
    parent, name = _get(message, path)
    field = parent.DESCRIPTOR.fields_by_name[name]
    return len(getattr(parent, name)) > 0 if field.is_repeated else parent.HasField(name)


def to_evokit(parl: pb.ParlEvoKitConfig, text: str, source: str) -> pb.EvoKitConfig:
    """The EvoKitConfig ``parl`` means (parsed from ``text``; ``source`` names
    it in errors), after one ConfigLayoutWarning."""
    lines = _field_lines(text)

    def fail(field: str, message: str) -> ConfigError:
        return ConfigError(source, f"{field} {message}", line=lines.get(field), field=field)

    for field, why in _REFUSED.items():
        zero_iteration = field == "async_es.model_iter_id" and parl.async_es.model_iter_id == 0
        if _is_set(parl, field) and not zero_iteration:
            raise fail(field, why)
    if parl.seed < 0:
        raise fail("seed", f"must be >= 0 (EvoKit's seed is unsigned), got {parl.seed}")
    kind = _OPTIMIZER_TYPES.get(parl.optimizer.type.lower())
    if kind is None:
        raise fail("optimizer.type", f'must be "SGD" or "Adam" (in any case), got "{parl.optimizer.type}"')

    config = pb.EvoKitConfig()
    for parl_path, evokit_path in FIELDS.items():
        src, src_name = _get(parl, parl_path)
        dst, dst_name = _get(config, evokit_path)
        value = kind if parl_path == "optimizer.type" else getattr(src, src_name)
        setattr(dst, dst_name, value)
    config.solver.sampling.type = pb.SamplingConfig.GAUSSIAN_SAMPLING
    config.solver.antithetic = False  # PARL's clones draw independent noise
    warnings.warn(note(source), ConfigLayoutWarning, stacklevel=4)
    return config


def parl_field(evokit_field: str) -> Optional[str]:
    """The PARL field that ``evokit_field`` (a dotted EvoKitConfig path) is
    mapped from, or None."""
    for parl_path, path in FIELDS.items():
        if path == evokit_field:
            return parl_path
    return None
