"""The values of an ONNX float or integer tensor, read only after the shape it declares
is checked against the data it holds.

A tensor's ``dims`` are only a claim: a model of a few hundred bytes can
declare ``dims = [2**40]``. Nothing is allocated from them before they agree
with the bytes present; a mismatch is one line naming the tensor, the data
it holds and what its shape needs, in the words of the C++ io component
(``cpp/io/src/onnx_model.cc``: ``tensor_values``).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from ..errors import ModelError

__all__ = ["INT_TYPES", "float_tensor_values", "int_tensor_values"]

#: Integer and boolean tensor types read as shapes, axes and indices: the
#: little-endian layout of their raw_data and their typed field.
_INT_LAYOUT = {
    TensorProto.INT64: ("<i8", "int64_data"),
    TensorProto.INT32: ("<i4", "int32_data"),
    TensorProto.INT16: ("<i2", "int32_data"),
    TensorProto.INT8: ("i1", "int32_data"),
    TensorProto.UINT8: ("u1", "int32_data"),
    TensorProto.UINT16: ("<u2", "int32_data"),
    TensorProto.UINT32: ("<u4", "uint64_data"),
    TensorProto.BOOL: ("u1", "int32_data"),
}
INT_TYPES = tuple(_INT_LAYOUT)

_MAX_COUNT = 2**64 - 1  # what C++ counts in a size_t


def _needed(count: int) -> str:
    return str(count) if count <= _MAX_COUNT else f"more than {_MAX_COUNT}"


def _tensor_values(t: TensorProto, source: str, what: str, typed, raw_dtype: str,
                   dtype) -> np.ndarray:
    for d in t.dims:
        if d < 0:
            raise ModelError(f"{source}: {what} has a negative dimension {d}")
    count = math.prod(t.dims)
    if t.HasField("raw_data"):
        raw = t.raw_data
        width = np.dtype(raw_dtype).itemsize
        if len(raw) != width * count:
            raise ModelError(f"{source}: {what} holds {len(raw)} bytes of raw data, its shape "
                             f"needs {_needed(width * count)}")
        return np.frombuffer(raw, dtype=raw_dtype).astype(dtype)
    if len(typed) != count:
        raise ModelError(f"{source}: {what} holds {len(typed)} values, its shape needs "
                         f"{_needed(count)}")
    return np.asarray(typed, dtype=dtype)


def float_tensor_values(t: TensorProto, source: str, what: str) -> np.ndarray:
    """The float32 values of the FLOAT tensor ``t``, flat (a new array), from
    ``raw_data`` (little-endian) or ``float_data``. ``what`` names the tensor
    in errors (``"initializer 'W'"``). Raises :class:`ModelError` for a
    negative dimension or a shape that does not match the data held."""
    return _tensor_values(t, source, what, t.float_data, "<f4", np.float32)


def int_tensor_values(t: TensorProto, source: str, what: str) -> np.ndarray:
    """The values of the integer or BOOL tensor ``t`` (a type of
    :data:`INT_TYPES`) as int64, flat, from ``raw_data`` or its typed field
    (``int64_data``, ``int32_data``, ``uint64_data``), checked as
    :func:`float_tensor_values` checks."""
    raw_dtype, field = _INT_LAYOUT[t.data_type]
    return _tensor_values(t, source, what, getattr(t, field), raw_dtype, np.int64)
