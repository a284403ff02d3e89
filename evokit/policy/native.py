"""The native backend: feed-forward ONNX policies run by EvoKit's C++ core.

:meth:`NativePolicy.from_onnx_policy` reads the graph of an
:class:`~evokit.policy.onnx_policy.OnnxPolicy` with the ``onnx`` package and
hands the core a node list (``evokit._core.PolicyGraph``): op types, input and
output names, integer and float attributes, which initializers are parameters
(a window ``(offset, shape)`` of the flat parameter vector, exactly as
``OnnxPolicy`` lays it out) and which are constants. The extension module
never links ONNX.

Supported: ``Gemm``, ``MatMul`` (2-D right operand), ``Add``, ``Sub``,
``Mul``, ``Div`` (numpy broadcasting), ``Relu``, ``Tanh``, ``Sigmoid``,
``Softmax`` (last axis), ``Identity``, ``Flatten``, ``Clip``, the ops
PyTorch's ``torch.onnx.export`` writes for common policies
(``LayerNormalization`` and its decomposed form ``ReduceMean`` / ``Pow`` /
``Sqrt``, ``Gelu`` and ``Erf``, ``LeakyRelu``, ``Elu``, ``Selu``,
``Softplus``, ``Mish``, ``Greater`` / ``Less`` / ``Where``, ``Concat``,
``Gather`` and ``Slice`` by constants, ``Reshape``, ``Squeeze``,
``Unsqueeze``, ``Dropout`` in inference mode, ``Cast``, ``Shape``), and
``Constant`` nodes and initializers holding float tensors, or integer and
boolean ones for shapes, axes and indices (cpp/src/policy_graph_ops.cc):
the MLPs of :func:`~evokit.policy.mlp.init_mlp` and PyTorch exports of
``Linear`` / ``LayerNorm`` / activation stacks at opsets 13 to 20.
Integer shape arithmetic (``Shape`` -> ``Gather`` -> ``Concat`` ->
``Reshape``, ``Mul`` ...) is evaluated when the graph is built, the batch
size kept symbolic. Recurrent policies: ``LSTM`` and ``GRU`` (one forward
direction, layout 0, default activations; other attribute values are
refused naming the node) with ``Transpose`` and the layout ops above around
them (cpp/src/policy_graph_recurrent.cc), the state inputs paired with
their outputs as :mod:`evokit.policy.onnx_policy` describes; the state is
carried in a flat float32 buffer the caller passes (``state=``) and the
core updates in place. Anything else raises :class:`NotSupportedError`
naming the node and the op; ``OnnxPolicy`` with ``backend="auto"`` then
falls back to onnxruntime and says so once.

Outputs equal onnxruntime's within 1e-5 (tests/policy/test_native.py). Tanh
is onnxruntime's own rational approximation, computed in plain float
arithmetic, so outputs are the same bits on every machine and for any thread
count.

Populations. :meth:`NativePolicy.run_population` computes the outputs of N
members in one call, member i with its own observation ``obs[i]`` and its own
parameters ``centre + signs[i] * sigma * eps(keys[i])``. The perturbation is
applied inside the kernels as they read each weight, with ``eps`` read in
place from the sampler's cached noise table: no member's parameter vector is
ever materialised (an uncached sampler's noise is generated once per distinct
key when the population is made). Member i's output has the same bits as
:meth:`run` on the parameters ``GaussianSampler.perturb`` gives, which is what
a clone predicts with, for any ``num_threads``.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

import numpy as np
import onnx
from onnx import TensorProto

from .. import _core
from ..errors import ModelError, NotSupportedError
from .tensor_data import INT_TYPES, float_tensor_values, int_tensor_values

__all__ = ["NativePolicy", "PolicyLayout", "SUPPORTED_OPS"]

#: ONNX op types the native backend runs (``Constant`` is read at build time).
SUPPORTED_OPS = tuple(_core.PolicyGraph.supported_ops()) + ("Constant",)


class PolicyLayout(Protocol):
    """What :meth:`NativePolicy.from_onnx_policy` reads of a policy: the
    public attributes of :class:`~evokit.policy.onnx_policy.OnnxPolicy` of those names."""

    source: str
    model: onnx.ModelProto
    input_name: str
    obs_shape: Optional[tuple]
    obs_dtype: np.dtype
    param_names: Sequence[str]
    param_shapes: Sequence[tuple]
    param_slices: Sequence[tuple]
    state_names: Sequence[str]
    state_output_names: Sequence[str]
    state_shapes: Sequence[tuple]


def _node_label(node: onnx.NodeProto, index: int) -> str:
    name = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {name} ({node.op_type})"


def _constant_value(node: onnx.NodeProto, label: str, source: str) -> np.ndarray:
    """The tensor a Constant node holds: float32, or int64 for integer and
    boolean tensors (``value_int``, ``value_ints`` too)."""
    for attr in node.attribute:
        if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
            dims = [int(d) for d in attr.t.dims]
            if attr.t.data_type == TensorProto.FLOAT:
                return float_tensor_values(attr.t, source, f"{label}: value").reshape(dims)
            if attr.t.data_type in INT_TYPES:
                return int_tensor_values(attr.t, source, f"{label}: value").reshape(dims)
            raise NotSupportedError(
                f"{source}: native backend: {label}: a "
                f"{TensorProto.DataType.Name(attr.t.data_type)} constant; only FLOAT, integer "
                f"and BOOL tensors are supported")
        if attr.name in ("value_float", "value_floats"):
            return np.asarray(onnx.helper.get_attribute_value(attr), np.float32)
        if attr.name in ("value_int", "value_ints"):
            return np.asarray(onnx.helper.get_attribute_value(attr), np.int64)
    names = ", ".join(a.name for a in node.attribute) or "none"
    raise NotSupportedError(f"{source}: native backend: {label}: only tensor, float and integer "
                            f"constants are supported (attributes: {names})")


def _add_constant(g: Any, name: str, value: np.ndarray) -> None:
    if value.dtype == np.int64:
        g.add_int_constant(name, list(value.shape), value.reshape(-1).tolist())
    else:
        g.add_constant(name, list(value.shape), value.reshape(-1))


class NativePolicy:
    """An :class:`~evokit.policy.onnx_policy.OnnxPolicy`'s graph on the native backend.

    Build one with :meth:`from_onnx_policy`. It is immutable and any number of
    threads may run it at once (every call releases the GIL).

    Attributes:
        source: where the model came from (as in the ``OnnxPolicy``).
        num_params: the length of a parameter vector.
        obs_shape: the shape of one observation.
        action_shape: the shape of one observation's output.
        graph: the ``evokit._core.PolicyGraph``.
        state_size: floats of recurrent state per observation (0 if
            feed-forward): one member's row in :meth:`run_members`' ``state``.
    """

    source: str
    num_params: int
    obs_shape: tuple
    action_shape: tuple
    graph: Any

    def __init__(self, graph: Any, source: str, obs_shape: tuple):
        self.graph = graph
        self.source = source
        self.num_params = int(graph.num_params)
        self.obs_shape = tuple(obs_shape)
        self.action_shape = tuple(graph.output_shape(1)[1:])
        self.state_size = int(graph.state_size)

    @classmethod
    def from_onnx_policy(cls, policy: PolicyLayout) -> "NativePolicy":
        """The native graph of ``policy`` (same parameter layout). Raises
        :class:`NotSupportedError` naming the node and op for a graph the core
        cannot run."""
        source = policy.source
        model = policy.model
        graph = model.graph
        g = _core.PolicyGraph()

        def refuse(message: str) -> NotSupportedError:
            return NotSupportedError(f"{source}: native backend: {message}")

        obs_shape = policy.obs_shape
        if obs_shape is None or any(d is None or d < 1 for d in obs_shape):
            raise refuse(f"observation input {policy.input_name!r} has shape "
                         f"{'undeclared' if obs_shape is None else obs_shape} (without the batch "
                         f"dimension); the native backend needs fixed feature sizes")
        if policy.obs_dtype != np.float32:
            raise refuse(f"observation input {policy.input_name!r} has dtype {policy.obs_dtype}, "
                         f"not float32")
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)

        params = {name: (a, shape) for name, shape, (a, _) in
                  zip(policy.param_names, policy.param_shapes, policy.param_slices)}
        other: dict = {}  # initializers of other types: name -> type name
        try:
            g.add_input(policy.input_name, list(obs_shape))
            for name, shape in zip(policy.state_names, policy.state_shapes):
                axis = list(shape).index(None)
                g.add_state_input(name, [1 if d is None else d for d in shape], axis)
            for t in graph.initializer:
                if t.name in params:
                    offset, shape = params[t.name]
                    g.add_param(t.name, offset, list(shape))
                elif t.data_type == TensorProto.FLOAT:
                    g.add_constant(t.name, list(t.dims),
                                   float_tensor_values(t, source, f"initializer {t.name!r}"))
                elif t.data_type in INT_TYPES:
                    g.add_int_constant(t.name, list(t.dims),
                                       int_tensor_values(t, source, f"initializer {t.name!r}"))
                else:
                    other[t.name] = TensorProto.DataType.Name(t.data_type)
        except ModelError:  # a tensor whose shape disagrees with its data: a broken model
            raise
        except ValueError as exc:
            raise refuse(str(exc)) from None

        supported = set(_core.PolicyGraph.supported_ops())
        for index, node in enumerate(graph.node):
            label = _node_label(node, index)
            if node.domain not in ("", "ai.onnx"):
                raise refuse(f"{label}: op {node.domain}.{node.op_type} is outside the default "
                             f"ONNX domain")
            if node.op_type == "Constant":
                value = _constant_value(node, label, source)
                try:
                    _add_constant(g, node.output[0], value)
                except ValueError as exc:
                    raise refuse(str(exc)) from None
                continue
            if node.op_type not in supported:
                raise refuse(f"{label}: op {node.op_type} is not supported (supported: "
                             f"{', '.join(SUPPORTED_OPS)})")
            for name in node.input:
                if name in other:
                    raise refuse(f"{label}: input {name!r} is a {other[name]} initializer; the "
                                 f"native backend computes on FLOAT tensors (and integer ones "
                                 f"for shapes) only")
            ints, floats, int_lists, strings = {}, {}, {}, {}
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.INT:
                    ints[attr.name] = int(attr.i)
                elif attr.type == onnx.AttributeProto.FLOAT:
                    floats[attr.name] = float(attr.f)
                elif attr.type == onnx.AttributeProto.INTS:
                    int_lists[attr.name] = [int(v) for v in attr.ints]
                elif attr.type == onnx.AttributeProto.STRING:
                    strings[attr.name] = [attr.s.decode("utf-8", "replace")]
                elif attr.type == onnx.AttributeProto.STRINGS:
                    strings[attr.name] = [v.decode("utf-8", "replace") for v in attr.strings]
                else:
                    raise refuse(f"{label}: attribute {attr.name!r} has type "
                                 f"{onnx.AttributeProto.AttributeType.Name(attr.type)}; only INT, "
                                 f"FLOAT, INTS, STRING and STRINGS attributes are supported")
            # Before opset 13 Softmax's axis defaulted to 1 (and coerced to 2-D).
            if node.op_type == "Softmax" and opset < 13 and "axis" not in ints:
                ints["axis"] = 1
            try:
                g.add_node(node.op_type, list(node.input), list(node.output), ints, floats,
                           node.name or f"#{index}", int_lists, strings)
            except ValueError as exc:
                raise refuse(str(exc)) from None
        try:
            for out in graph.output:
                g.add_output(out.name)
            for name, out in zip(policy.state_names, policy.state_output_names):
                g.add_state_output(name, out)
            batch_first = g.output_shape(1)[:1] == [1] and g.output_shape(2)[:1] == [2]
        except ValueError as exc:
            raise refuse(str(exc)) from None
        if not batch_first:
            raise refuse(f"output {graph.output[0].name!r} has shape {tuple(g.output_shape(1))} "
                         f"for one observation: it does not start with the batch dimension")
        return cls(g, source, obs_shape)

    # ---- inputs ----------------------------------------------------------

    def _obs(self, obs: Any, rows: Optional[int] = None) -> np.ndarray:
        arr = np.ascontiguousarray(obs, dtype=np.float32)
        if arr.shape[1:] != self.obs_shape or arr.ndim != len(self.obs_shape) + 1 \
                or (rows is not None and arr.shape[0] != rows):
            want = f"({rows if rows is not None else 'n'}, {', '.join(map(str, self.obs_shape))})"
            raise ModelError(f"{self.source}: obs has shape {arr.shape}, expected {want}: one "
                             f"observation per member")
        return arr

    def _vector(self, params: Any, what: str) -> np.ndarray:
        arr = np.asarray(params)
        if arr.dtype.kind != "f":
            raise ModelError(f"{self.source}: {what} must be a floating-point array, got dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if arr.shape != (self.num_params,):
            raise ModelError(f"{self.source}: {what} has shape {arr.shape}, expected a flat vector "
                             f"of num_params={self.num_params} values")
        return arr

    # ---- one member ------------------------------------------------------

    def run(self, obs: Any, params: Any, state: Optional[np.ndarray] = None) -> np.ndarray:
        """The first output for ``obs`` (one observation of ``obs_shape``, or a
        batch) with the parameter vector ``params``; a recurrent graph's
        ``state`` (flat float32, batch * state_size values) is replaced by the
        next state in place."""
        x = np.ascontiguousarray(obs, dtype=np.float32)
        single = x.shape == self.obs_shape
        if single:
            x = x[np.newaxis]
        try:
            out = self.graph.run(self._obs(x), self._vector(params, "params"), state)
        except ValueError as exc:
            raise ModelError(f"{self.source}: {exc}") from None
        return out[0] if single else out

    # ---- populations -----------------------------------------------------

    def population(self, centre: Any, keys: Sequence[int], signs: Sequence[float], sampler: Any,
                   num_threads: int = 1) -> Any:
        """The members ``centre + signs[i] * sigma * eps(keys[i])`` of
        ``sampler`` (an ``evokit._core.GaussianSampler``; sign 0 is the centre
        itself), as an ``evokit._core.Population`` to pass to
        :meth:`run_members` at every step of a rollout."""
        if int(sampler.num_params) != self.num_params:
            raise ModelError(f"{self.source}: the sampler draws noise for {sampler.num_params} "
                             f"parameters, the model has num_params={self.num_params}")
        return _core.Population(sampler, self._vector(centre, "centre"),
                                np.asarray(keys, dtype=np.int64), np.asarray(signs, dtype=np.float32),
                                num_threads)

    def run_members(self, obs: Any, population: Any, active: Any = None, num_threads: int = 1,
                    out: Optional[np.ndarray] = None,
                    state: Optional[np.ndarray] = None) -> np.ndarray:
        """Member i's output for ``obs[i]``, for every member of
        ``population`` (from :meth:`population`) whose ``active`` flag is set
        (all when ``active`` is None); other rows of ``out`` are left as they
        are. ``out`` (float32, ``(N, *action_shape)``) is filled in place when
        given. Threaded over members with ``num_threads`` OpenMP threads. A
        recurrent graph needs ``state``, float32 ``(N, state_size)``: row i is
        member i's state, replaced by its next state (zero a row to start
        that member's episode)."""
        x = self._obs(obs, len(population))
        return self.graph.run_population(x, population, active, num_threads, out, state)

    def run_population(self, obs: Any, centre: Any, keys: Sequence[int], signs: Sequence[float],
                       sampler: Any, *, active: Any = None, num_threads: int = 1,
                       out: Optional[np.ndarray] = None,
                       state: Optional[np.ndarray] = None) -> np.ndarray:
        """Member i's output for ``obs[i]`` and the parameters
        ``centre + signs[i] * sigma * eps(keys[i])``, in one call."""
        pop = self.population(centre, keys, signs, sampler, num_threads)
        return self.run_members(obs, pop, active, num_threads, out, state)

    def run_population_params(self, obs: Any, params: Any, *, active: Any = None,
                              num_threads: int = 1, out: Optional[np.ndarray] = None,
                              state: Optional[np.ndarray] = None) -> np.ndarray:
        """Row i's output for ``obs[i]`` and the parameter vector ``params[i]``
        (``params`` is ``(N, num_params)``; read in place, not copied)."""
        p = np.asarray(params)
        if p.dtype.kind != "f":
            raise ModelError(f"{self.source}: params must be a floating-point array, got dtype {p.dtype}")
        p = np.ascontiguousarray(p, dtype=np.float32)
        x = self._obs(obs, p.shape[0] if p.ndim == 2 else None)
        if p.ndim != 2 or p.shape[1] != self.num_params:
            raise ModelError(f"{self.source}: params has shape {p.shape}, expected ({x.shape[0]}, "
                             f"{self.num_params}): one parameter vector per member")
        return self.graph.run_population_params(x, p, active, num_threads, out, state)

    def __repr__(self) -> str:
        return (f"NativePolicy(source={self.source!r}, num_params={self.num_params}, "
                f"obs_shape={self.obs_shape}, action_shape={self.action_shape})")
