"""The model fingerprint, version 2: the same bytes in Python and in C++
(and version 1, which only this package computes, to verify older files).

The fingerprint is the sha256 of a canonical encoding of what an ONNX policy
computes, not of a protobuf serialization (which is not guaranteed to be the
same bytes across protobuf runtimes and ONNX schema versions). The encoding
is specified in ``proto/evokit.proto`` (``SolverState.fingerprint_version``)
and implemented once, in the core (cpp/src/formats/fingerprint.cc, over the
model's wire format), for this package and the C++ io library alike.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np
from onnx import GraphProto, ModelProto

from .. import _core
from ..errors import FingerprintError

__all__ = ["FINGERPRINT_VERSION", "model_fingerprint", "model_fingerprint_v1", "params_digest"]

#: The version written by this EvoKit (SolverState / WarehouseInfo.fingerprint_version).
FINGERPRINT_VERSION = _core.FINGERPRINT_VERSION


def model_fingerprint(model: ModelProto, param_names: Sequence[str], source: str = "<memory>") -> str:
    """sha256 (hex) of the canonical encoding (version 2) of ``model`` with
    the float32 initializers ``param_names`` (in graph order) as parameters.

    Encoded, in this order: the magic ``evokit-model-fingerprint-v2\\0``; the
    opset imports sorted by (domain, version), "" written as "ai.onnx"; then
    the graph: its nodes in order (op type, domain, input and output names,
    attributes sorted by name with their type and value), the graph inputs
    that are not initializers, the parameters (name, dims), the other
    initializers (name, data type, dims, little-endian data), the graph
    outputs (name, element type, shape).  Names of the model, graph and
    nodes, doc strings, metadata, value_info and the IR version are not
    covered; neither are the parameter values.
    """
    try:
        return _core.model_fingerprint(model.SerializeToString(), list(param_names), source)
    except ValueError as exc:
        raise FingerprintError(str(exc)) from None


def model_fingerprint_v1(run_model: ModelProto) -> str:
    """sha256 (hex) of version 1 (EvoKit before the C++ fingerprint; computed
    only to verify files written then): a protobuf serialization of the graph
    of ``run_model``, the model with its parameters declared as graph inputs
    (the graph onnxruntime runs), doc strings cleared, after its sorted opset
    imports. Only the Python package reproduces it."""
    graph = run_model.graph
    g = GraphProto()
    for source, copy in ((graph.node, g.node), (graph.input, g.input), (graph.output, g.output),
                         (graph.initializer, g.initializer)):
        for item in source:
            c = copy.add()
            c.CopyFrom(item)
            c.doc_string = ""
    h = hashlib.sha256()
    h.update(b"evokit-onnx-fingerprint-v1\0")
    for op in sorted((o.domain, o.version) for o in run_model.opset_import):
        h.update(f"opset {op[0] or 'ai.onnx'} {op[1]}\0".encode())
    h.update(g.SerializeToString(deterministic=True))
    return h.hexdigest()


def params_digest(model_fingerprint_hex: str, params: np.ndarray) -> str:
    """sha256 (hex) of the model fingerprint's 64 hex characters (ASCII)
    followed by the parameters as little-endian float32: the fingerprint of
    one exact model (SolverState.params_fingerprint)."""
    return _core.params_fingerprint(model_fingerprint_hex, np.ascontiguousarray(params, dtype=np.float32))
