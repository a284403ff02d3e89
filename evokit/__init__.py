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

from . import evokit_pb2 as proto
from ._core import __version__
from .agent import ESAgent, SamplingInfo
from .blackbox.cmaes import CMAES, SepCMAES
from .blackbox.distribution import ARS, CEM, CRFMNES, LMMAES, PGPE, SNES, XNES
from .blackbox.ga import GA
from .blackbox.nsga2 import NSGA2
from .blackbox.openes import OpenES
from .config import load_config, parse_config
from .errors import ConfigError, ModelError, SolverFileError
from .evaluation.envs import init_model, policy_for_env
from .evokit_pb2 import EvoKitConfig
from .policy.native import NativePolicy
from .policy.onnx_policy import OnnxPolicy
from .training.loop import TrainResult, train

__all__ = [
    "CMAES", "SepCMAES", "SNES", "XNES", "CRFMNES", "LMMAES", "PGPE", "CEM", "ARS", "NSGA2",
    "ConfigError", "ESAgent", "EvoKitConfig", "GA", "OpenES", "ModelError", "NativePolicy", "OnnxPolicy", "SamplingInfo",
    "SolverFileError", "__version__", "init_model", "load_config", "parse_config", "policy_for_env",
    "proto", "train", "TrainResult",
]

