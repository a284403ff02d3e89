"""The values of an ONNX float or integer tensor, read only after the shape it declares
is checked against the data it holds.

A tensor's ``dims`` are only a claim: a model of a few hundred bytes can
declare ``dims = [2**40]``. Nothing is allocated from them before they agree
with the bytes present; a mismatch is one line naming the tensor, the data
it holds and what its shape needs. The rules are the core's
(cpp/include/evokit/formats/tensor_data.h), which the C++ io library's
OnnxModel uses too.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from .. import _core
from ..errors import ModelError

__all__ = ["INT_TYPES", "float_tensor_values", "int_tensor_values"]

#: Integer and boolean tensor types read as shapes, axes and indices.
INT_TYPES = tuple(t for t in TensorProto.DataType.values() if _core.is_int_tensor_type(t))


def float_tensor_values(t: TensorProto, source: str, what: str) -> np.ndarray:
    """The float32 values of the FLOAT tensor ``t``, flat (a new array), from
    ``raw_data`` (little-endian) or ``float_data``. ``what`` names the tensor
    in errors (``"initializer 'W'"``). Raises :class:`ModelError` for a
    negative dimension or a shape that does not match the data held."""
    try:
        return _core.float_tensor_values(t.SerializeToString(), source, what)
    except ValueError as exc:
        raise ModelError(str(exc)) from None


def int_tensor_values(t: TensorProto, source: str, what: str) -> np.ndarray:
    """The values of the integer or BOOL tensor ``t`` (a type of
    :data:`INT_TYPES`) as int64, flat, from ``raw_data`` or its typed field
    (``int64_data``, ``int32_data``, ``uint64_data``), checked as
    :func:`float_tensor_values` checks."""
    try:
        return _core.int_tensor_values(t.SerializeToString(), source, what)
    except ValueError as exc:
        raise ModelError(str(exc)) from None
