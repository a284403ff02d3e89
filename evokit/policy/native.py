"""The native backend: feed-forward ONNX policies run by EvoKit's C++ core.

:meth:`NativePolicy.from_layout` hands the core a model's serialized bytes
and its layout (what :class:`~evokit.policy.onnx_policy.OnnxPolicy` read of
it, ``evokit._core.OnnxLayout``); the core translates the graph into its
``evokit._core.PolicyGraph``: op types, input and output names, attributes,
which initializers are parameters (a window ``(offset, shape)`` of the flat
parameter vector) and which are constants. The translation and its
refusals are written once, in ``cpp/src/formats/onnx_model.cc``, which the
C++ io library's ``OnnxModel`` uses too; the extension module reads ONNX's
wire format itself and never links ONNX.

Supported: ``Gemm``, ``MatMul`` (2-D right operand), ``Add``, ``Sub``,
``Mul``, ``Div`` (numpy broadcasting), ``Relu``, ``Tanh``, ``Sigmoid``,
``Softmax`` (last axis), ``Identity``, ``Flatten``, ``Clip``, the ops
PyTorch's ``torch.onnx.export`` writes for common policies
(``LayerNormalization`` and its decomposed form ``ReduceMean`` / ``Pow`` /
``Sqrt``, ``ReduceSum``, ``Gelu`` and ``Erf``, ``LeakyRelu``, ``Elu``, ``Selu``,
``Softplus``, ``Mish``, ``Greater`` / ``Less`` / ``Where``, ``Concat``,
``Gather`` and ``Slice`` by constants, ``Reshape``, ``Squeeze``,
``Unsqueeze``, ``Dropout`` in inference mode, ``Cast``, ``Shape``), and
``Constant`` nodes and initializers holding float tensors, or integer and
boolean ones for shapes, axes and indices (the op table, cpp/src/policy/policy_op_table.cc):
the MLPs of :func:`~evokit.policy.mlp.init_mlp` and PyTorch exports of
``Linear`` / ``LayerNorm`` / activation stacks at opsets 13 to 20.
Integer shape arithmetic (``Shape`` -> ``Gather`` -> ``Concat`` ->
``Reshape``, ``Mul`` ...) is evaluated when the graph is built, the batch
size kept symbolic. Recurrent policies: ``LSTM`` and ``GRU`` (one forward
direction, layout 0, default activations; other attribute values are
refused naming the node) with ``Transpose`` and the layout ops above around
them (cpp/src/policy/policy_graph_recurrent.cc), the state inputs paired with
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

from typing import Any, Optional, Sequence

import numpy as np

from .. import _core
from ..errors import ModelError, NotSupportedError

__all__ = ["NativePolicy", "SUPPORTED_OPS"]

#: ONNX op types the native backend runs (``Constant`` is read at build time).
SUPPORTED_OPS = tuple(_core.PolicyGraph.supported_ops()) + ("Constant",)


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
    def from_layout(cls, model: bytes, layout: Any) -> "NativePolicy":
        """The native graph of the serialized ONNX ``model``, whose layout
        (``evokit._core.read_onnx_layout``) is ``layout``. Raises
        :class:`NotSupportedError` naming the node and op for a graph the core
        cannot run, :class:`ModelError` for a broken model."""
        try:
            graph = _core.onnx_policy_graph(model, layout)
        except _core.UnsupportedModel as exc:
            raise NotSupportedError(str(exc)) from None
        except ValueError as exc:  # e.g. a tensor whose shape disagrees with its data
            raise ModelError(str(exc)) from None
        return cls(graph, layout.source, tuple(layout.input_shape[1:]))

    @classmethod
    def from_onnx_policy(cls, policy: Any) -> "NativePolicy":
        """The native graph of an :class:`~evokit.policy.onnx_policy.OnnxPolicy`
        (same parameter layout)."""
        return cls.from_layout(policy.model.SerializeToString(), policy.layout)

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
