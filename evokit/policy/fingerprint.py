"""The model fingerprint, version 2: the same bytes in Python and in C++
(and version 1, which only this package computes, to verify older files).

The fingerprint is the sha256 of a canonical encoding of what an ONNX policy
computes, not of a protobuf serialization (which is not guaranteed to be the
same bytes across protobuf runtimes and ONNX schema versions).  The encoding
is specified in ``proto/evokit.proto`` (``SolverState.fingerprint_version``)
and implemented a second time, independently, by ``cpp/io/src/fingerprint.cc``;
``cpp/io/tests`` checks fingerprints computed here against the C++ ones.

Primitives: an *int* is 8 bytes, little-endian two's complement; a *str* (and
a bytes value) is its length as an int followed by its bytes; a *list* is its
length as an int followed by its items.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Iterable, Optional, Sequence

import numpy as np
from onnx import AttributeProto, GraphProto, ModelProto, TensorProto

from ..errors import FingerprintError

__all__ = ["FINGERPRINT_VERSION", "model_fingerprint", "model_fingerprint_v1", "params_digest"]

#: The version written by this EvoKit (SolverState / WarehouseInfo.fingerprint_version).
FINGERPRINT_VERSION = 2

_MAGIC = b"evokit-model-fingerprint-v2\0"

# Typed storage of TensorProto data when raw_data is not set:
# data_type -> (field, little-endian numpy dtype of one stored element).
_TYPED = {
    TensorProto.FLOAT: ("float_data", "<f4"),
    TensorProto.COMPLEX64: ("float_data", "<f4"),
    TensorProto.DOUBLE: ("double_data", "<f8"),
    TensorProto.COMPLEX128: ("double_data", "<f8"),
    TensorProto.INT32: ("int32_data", "<i4"),
    TensorProto.INT16: ("int32_data", "<u2"),
    TensorProto.UINT16: ("int32_data", "<u2"),
    TensorProto.FLOAT16: ("int32_data", "<u2"),
    TensorProto.BFLOAT16: ("int32_data", "<u2"),
    TensorProto.INT8: ("int32_data", "u1"),
    TensorProto.UINT8: ("int32_data", "u1"),
    TensorProto.BOOL: ("int32_data", "u1"),
    TensorProto.INT64: ("int64_data", "<i8"),
    TensorProto.UINT32: ("uint64_data", "<u4"),
    TensorProto.UINT64: ("uint64_data", "<u8"),
}
_TYPED_FIELDS = ("float_data", "double_data", "int32_data", "int64_data", "uint64_data", "string_data")
_MASK = {"<u2": 0xFFFF, "u1": 0xFF, "<u4": 0xFFFFFFFF}


class _Encoder:
    def __init__(self) -> None:
        self.h = hashlib.sha256(_MAGIC)

    def int(self, v: int) -> None:
        self.h.update(struct.pack("<q", v))

    def bytes(self, b: bytes) -> None:
        self.int(len(b))
        self.h.update(b)

    def str(self, s: str) -> None:
        # A proto2 string field holding bytes that are not UTF-8 (a damaged
        # file) reads as bytes: hashed as stored, as C++ hashes every string.
        self.bytes(s if isinstance(s, bytes) else s.encode("utf-8"))

    def strs(self, items: Iterable[str]) -> None:
        items = list(items)
        self.int(len(items))
        for s in items:
            self.str(s)

    def ints(self, items: Iterable[int]) -> None:
        items = list(items)
        self.int(len(items))
        for v in items:
            self.int(int(v))

    # ---- ONNX -----------------------------------------------------------------

    def tensor(self, t: TensorProto, where: str) -> None:
        self.str(t.name)
        self.int(t.data_type)
        self.ints(t.dims)
        if t.data_location == TensorProto.EXTERNAL:
            raise FingerprintError(f"{where}: tensor {t.name!r} keeps its data in an external file")
        if t.data_type == TensorProto.STRING:
            self.int(len(t.string_data))
            for s in t.string_data:
                self.bytes(s)
            return
        if t.HasField("raw_data"):
            self.bytes(t.raw_data)
            return
        typed = _TYPED.get(t.data_type)
        if typed is None:
            if any(len(getattr(t, f)) for f in _TYPED_FIELDS):
                raise FingerprintError(f"{where}: tensor {t.name!r} of data type {t.data_type} stores "
                                       f"typed data the fingerprint cannot read (use raw_data)")
            self.bytes(b"")
            return
        field, dtype = typed
        values = getattr(t, field)
        if dtype in _MASK:  # narrow types stored in a wider field: the low bits
            arr = (np.asarray(values, dtype=np.int64) & _MASK[dtype]).astype(dtype)
        else:
            arr = np.asarray(values, dtype=dtype)
        self.bytes(arr.tobytes())

    def value_info(self, vi, where: str) -> None:
        self.str(vi.name)
        which = vi.type.WhichOneof("value") if vi.HasField("type") else None
        if which is None:
            self.int(0)
            return
        if which != "tensor_type":
            raise FingerprintError(f"{where}: value {vi.name!r} has type {which}; the fingerprint "
                                   f"covers tensor types only")
        tt = vi.type.tensor_type
        self.int(1)
        self.int(tt.elem_type)
        if not tt.HasField("shape"):
            self.int(0)
            return
        self.int(1)
        self.int(len(tt.shape.dim))
        for d in tt.shape.dim:
            kind = d.WhichOneof("value")
            if kind == "dim_value":
                self.int(1)
                self.int(d.dim_value)
            elif kind == "dim_param":
                self.int(2)
                self.str(d.dim_param)
            else:
                self.int(0)

    def attribute(self, a: AttributeProto, where: str) -> None:
        self.str(a.name)
        self.int(a.type)
        t = a.type
        if t == AttributeProto.FLOAT:
            self.h.update(struct.pack("<f", a.f))
        elif t == AttributeProto.INT:
            self.int(a.i)
        elif t == AttributeProto.STRING:
            self.bytes(a.s)
        elif t == AttributeProto.TENSOR:
            self.tensor(a.t, where)
        elif t == AttributeProto.GRAPH:
            self.graph(a.g, (), where)
        elif t == AttributeProto.FLOATS:
            self.bytes(np.asarray(a.floats, dtype="<f4").tobytes())
        elif t == AttributeProto.INTS:
            self.ints(a.ints)
        elif t == AttributeProto.STRINGS:
            self.int(len(a.strings))
            for s in a.strings:
                self.bytes(s)
        elif t == AttributeProto.TENSORS:
            self.int(len(a.tensors))
            for x in a.tensors:
                self.tensor(x, where)
        elif t == AttributeProto.GRAPHS:
            self.int(len(a.graphs))
            for g in a.graphs:
                self.graph(g, (), where)
        else:
            name = AttributeProto.AttributeType.Name(t) if t in AttributeProto.AttributeType.values() else t
            raise FingerprintError(f"{where}: attribute {a.name!r} has type {name}; the fingerprint "
                                   f"covers FLOAT(S), INT(S), STRING(S), TENSOR(S), GRAPH(S)")

    def graph(self, g: GraphProto, params: Sequence[tuple], where: str) -> None:
        if len(g.sparse_initializer):
            raise FingerprintError(f"{where}: graph {g.name!r} has sparse initializers; the "
                                   f"fingerprint does not cover them")
        self.int(len(g.node))
        for i, node in enumerate(g.node):
            at = f"{where}: node {i} ({node.op_type} {node.name!r})"
            self.str(node.op_type)
            self.str(_domain(node.domain))
            self.strs(node.input)
            self.strs(node.output)
            attrs = sorted(node.attribute, key=lambda a: a.name.encode("utf-8"))
            self.int(len(attrs))
            for a in attrs:
                self.attribute(a, at)
        init_names = {t.name for t in g.initializer}
        inputs = [vi for vi in g.input if vi.name not in init_names]
        self.int(len(inputs))
        for vi in inputs:
            self.value_info(vi, where)
        self.int(len(params))
        for name, dims in params:
            self.str(name)
            self.ints(dims)
        param_names = {name for name, _ in params}
        fixed = [t for t in g.initializer if t.name not in param_names]
        self.int(len(fixed))
        for t in fixed:
            self.tensor(t, where)
        self.int(len(g.output))
        for vi in g.output:
            self.value_info(vi, where)


def _domain(domain: str) -> str:
    return "ai.onnx" if domain in ("", "ai.onnx") else domain


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
    enc = _Encoder()
    opsets = sorted((_domain(o.domain).encode("utf-8"), o.version) for o in model.opset_import)
    enc.int(len(opsets))
    for domain, version in opsets:
        enc.bytes(domain)
        enc.int(version)
    by_name = {t.name: t for t in model.graph.initializer}
    params = []
    for name in param_names:
        t: Optional[TensorProto] = by_name.get(name)
        if t is None:
            raise FingerprintError(f"{source}: parameter {name!r} is not an initializer")
        params.append((name, tuple(t.dims)))
    enc.graph(model.graph, params, source)
    return enc.h.hexdigest()


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
    h = hashlib.sha256(model_fingerprint_hex.encode("ascii"))
    h.update(np.ascontiguousarray(params, dtype="<f4").tobytes())
    return h.hexdigest()
