"""EvoKit: fast evolution strategies.

A C++/OpenMP core (counter-based Gaussian noise, fitness shaping, the ES
gradient, SGD / momentum / Adam) behind a thin pybind11 binding, ONNX policies
and protobuf configs.
"""

from . import evokit_pb2 as proto
from ._core import __version__
from .agent import ESAgent, SamplingInfo, SolverFileError
from .config import ConfigError, load_config, parse_config
from .evokit_pb2 import EvoKitConfig
from .model import ModelError, OnnxPolicy
from .training import TrainResult, train

__all__ = [
    "ConfigError", "ESAgent", "EvoKitConfig", "ModelError", "OnnxPolicy", "SamplingInfo",
    "SolverFileError", "__version__", "load_config", "parse_config", "proto", "train", "TrainResult",
]

