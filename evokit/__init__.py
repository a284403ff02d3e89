"""EvoKit: fast evolution strategies.

A C++/OpenMP core (counter-based Gaussian noise, fitness shaping, the ES
gradient, SGD / momentum / Adam) behind a thin pybind11 binding, ONNX policies
and protobuf configs.
"""

try:
    from . import _core, evokit_pb2  # noqa: F401  (built by `pip install .`)
except ImportError as _exc:  # pragma: no cover - depends on how evokit was imported
    import os as _os

    raise ImportError(
        f"evokit is being imported from {_os.path.dirname(__file__)}, which lacks its built parts "
        f"(the compiled _core module and the evokit_pb2 generated from proto/): {_exc}. "
        f"Install it with `pip install .` (or `pip install -e .`) and run from outside the source "
        f"tree, e.g. pytest with --import-mode=importlib as configured in pyproject.toml."
    ) from None

from typing import TYPE_CHECKING

from . import evokit_pb2 as proto
from ._core import __version__
from .blackbox.cmaes import CMAES, SepCMAES
from .blackbox.distribution import CEM, CRFMNES, LMMAES, MAES, PGPE, SNES, XNES
from .blackbox.ga import GA
from .blackbox.nsga2 import NSGA2
from .blackbox.openes import OpenES
from .blackbox.solver_es import ARS
from .errors import ConfigError, ModelError, SolverFileError
from .evokit_pb2 import EvoKitConfig

if TYPE_CHECKING:  # what type checkers and the API docs read; at run time, _LAZY below
    from .agent import ESAgent, SamplingInfo
    from .config import load_config, parse_config
    from .evaluation.envs import init_model, policy_for_env
    from .policy.native import NativePolicy
    from .policy.onnx_policy import OnnxPolicy
    from .training.loop import TrainResult, train

# The names below load onnx, onnxruntime or gymnasium: each is imported on
# first use (PEP 562), so that the black-box strategies import without them.
_LAZY = {
    "ESAgent": "agent", "SamplingInfo": "agent",
    "load_config": "config", "parse_config": "config",
    "init_model": "evaluation.envs", "policy_for_env": "evaluation.envs",
    "NativePolicy": "policy.native", "OnnxPolicy": "policy.onnx_policy",
    "TrainResult": "training.loop", "train": "training.loop",
}
_SUBMODULES = ("agent", "blackbox", "cli", "config", "errors", "evaluation", "online", "parl_config", "policy",
               "solvers", "statefile", "training", "util", "workers")


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'evokit' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__all__ = [
    "CMAES", "SepCMAES", "SNES", "XNES", "CRFMNES", "LMMAES", "MAES", "PGPE", "CEM", "ARS", "NSGA2",
    "ConfigError", "ESAgent", "EvoKitConfig", "GA", "OpenES", "ModelError", "NativePolicy", "OnnxPolicy", "SamplingInfo",
    "SolverFileError", "__version__", "init_model", "load_config", "parse_config", "policy_for_env",
    "proto", "train", "TrainResult",
]

