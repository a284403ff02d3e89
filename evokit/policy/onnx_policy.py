"""ONNX policy models for EvoKit.

A policy is an ONNX model.  Its float32 initializers are the trainable
parameters: all of them by default, or only those whose names fully match the
regular expression ``param_pattern``.  Every other initializer (int64 shapes,
float32 tensors that do not match the pattern, ...) stays a fixed constant.

Evolution strategies evaluate many parameter vectors with the same network, so
an :class:`OnnxPolicy` rewrites the graph once at load time: the selected
initializers are removed from ``graph.initializer`` and declared as graph
inputs (same name, dtype and shape).  One onnxruntime ``InferenceSession`` is
then shared by an agent and all its clones, and :meth:`OnnxPolicy.run` feeds
the observation together with each parameter tensor as a zero-copy reshaped
view of a single flat float32 vector.  Nothing is re-serialised per call and
no session is created per clone.

Parameter vectors are flat float32 arrays holding every selected initializer,
flattened in C order and concatenated in ``graph.initializer`` order
(``param_names``).  Parameter vectors of another floating dtype (e.g. float64)
are accepted and converted once per call with
``np.asarray(params, dtype=np.float32)``; non-floating dtypes are rejected.

Backends. ``backend="native"`` runs the graph on EvoKit's C++ core
(:mod:`evokit.policy.native`: Gemm, MatMul, the elementwise ops and
activations, LayerNormalization, Gelu, Concat, Reshape, ... as PyTorch exports
them; outputs equal onnxruntime's within 1e-5, the same bits for every thread
count), ``"onnxruntime"`` on one shared onnxruntime
session as described above, and ``"auto"`` (the default) natively when the
core supports every node, else on onnxruntime with one
:class:`NativeFallbackWarning` naming the node it cannot run.

Recurrent policies. Graph inputs beyond the observation are recurrent
state (an LSTM's ``h0`` and ``c0`` exported from PyTorch), each paired with
the graph output holding its next value (``hn``, ``cn``) by this rule:

1. by name: the input and the output have the same stem once one suffix is
   removed, ``0``, ``_0``, ``in``, ``_in``, ``.in`` from the input and
   ``n``, ``_n``, ``out``, ``_out``, ``.out`` from the output
   (``h0``/``hn``, ``state_in``/``state_out``);
2. else by shape: the one output (after the first) whose declared shape
   and type equal the input's.

An input that pairs with no output, or by shape with several, is refused
naming it (rename the pair to the convention); outputs left unpaired are
ignored. State tensors are float32; the batch size is the state's one
symbolic dimension (a model exported with fixed shapes: the last size-1
dimension before the final one, ``(1, 1, hidden)`` -> axis 1). An input
that has an initializer is not state (it is a parameter or constant).

The state is a flat float32 vector (:meth:`OnnxPolicy.initial_state`): each
state tensor in turn, in ``state_names`` order, C order, with the batch size
filled in. Every episode starts from zeros; :meth:`OnnxPolicy.run` reads the
state it is given and writes the next state into it in place.

A model exported in training mode (a Dropout node whose ``training_mode`` is
a constant true, with a ratio above 0) is refused on either backend, naming
the node: it would drop random activations at every call.

Every problem with a model file or with the inputs given to it raises
:class:`ModelError` (a ``ValueError``) whose message starts with the file
name, or ``<memory>`` for in-memory models.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import _core
from ..errors import FingerprintError, ModelError, NativeFallbackWarning, NotSupportedError
from ..util import atomic_write_bytes
from .fingerprint import FINGERPRINT_VERSION, model_fingerprint, model_fingerprint_v1
from .native import NativePolicy

__all__ = ["BACKENDS", "OnnxPolicy", "select_action", "write_model_bytes"]

#: The ``backend`` values of :class:`OnnxPolicy` (and ``solver.backend``).
BACKENDS = tuple(_core.CONFIG_BACKENDS)  # ("auto", "native", "onnxruntime")

_MEMORY = "<memory>"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _fmt_shape(shape: Iterable[Any]) -> str:
    dims = ["?" if d is None else str(d) for d in shape]
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join(dims) + ")"


def _fmt_batch_shape(shape: Sequence[Any]) -> str:
    return _fmt_shape(["batch", *shape])


def _np_dtype_for(elem_type: int) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # undefined / exotic types: fall back to float32
        return np.dtype(np.float32)


def _few(names: Sequence[str], n: int = 5) -> str:
    if not names:
        return "none"
    shown = ", ".join(repr(x) for x in names[:n])
    if len(names) > n:
        shown += f", ... ({len(names)} in all)"
    return shown


# --------------------------------------------------------------------------
# OnnxPolicy
# --------------------------------------------------------------------------


class OnnxPolicy:
    """An ONNX policy whose float32 initializers are fed as one flat vector.

    Build one with :meth:`load` or :meth:`from_model`. ``backend`` chooses the
    forward pass (see the module docstring); ``"auto"`` runs natively when it
    can. The onnxruntime session, when onnxruntime runs the policy, is created
    lazily on the first :meth:`run` (guarded by a lock, so concurrent threads
    share one session) with one intra-op and one inter-op thread: parallelism
    comes from evaluation workers, and single-threaded kernels give
    deterministic outputs.

    Pickling ships the serialized original model and ``param_pattern`` only;
    the receiving process rebuilds the graph rewrite and creates its own
    session lazily.

    Attributes:
        source: the path the model was loaded from, or ``"<memory>"``.
        param_pattern: regex that parameter names must fully match.
        num_params: total number of float32 parameters.
        param_names: selected initializer names, in ``graph.initializer`` order.
        param_shapes: their shapes.
        param_slices: where each parameter lies in the flat vector, as
            ``(start, stop)``, in ``param_names`` order.
        input_name: the observation input (first graph input that is not an
            initializer).
        obs_shape: declared shape of that input without its leading batch dim,
            symbolic dims as None; None if the model declares no shape (then
            observations are fed unchecked, always as a batch).
        obs_dtype: the numpy dtype of the observation input (observations are
            converted to it).
        output_name: the first graph output, the one :meth:`run` returns.
        state_names: the recurrent state inputs (empty for a feed-forward
            policy), in graph input order; state_output_names: the output
            paired with each; state_shapes: each state's shape with the batch
            dimension as None; recurrent: whether there is state.
        backend: the forward pass in use, ``"native"`` or ``"onnxruntime"``.
        native: the :class:`~evokit.policy.native.NativePolicy` when ``backend`` is
            ``"native"``, else None.
        fallback_reason: why ``backend="auto"`` fell back to onnxruntime, or None.
    """

    source: str
    param_pattern: str
    num_params: int
    param_names: list[str]
    param_shapes: list[tuple[int, ...]]
    param_slices: list[tuple[int, int]]
    input_name: str
    obs_shape: tuple | None
    obs_dtype: np.dtype
    output_name: str
    backend: str
    native: Any
    fallback_reason: str | None

    # ---- construction -------------------------------------------------

    def __init__(self, model: onnx.ModelProto, param_pattern: str = ".*",
                 source: str = _MEMORY, *, backend: str = "auto", _check: bool = True) -> None:
        self._setup(model, param_pattern, source, check=_check, backend=backend)

    @classmethod
    def load(cls, path: str | os.PathLike, param_pattern: str = ".*",
             backend: str = "auto") -> "OnnxPolicy":
        """Load an ONNX file (external data next to it is loaded too)."""
        source = os.fspath(path)
        if not os.path.exists(source):
            raise ModelError(f"{source}: no such file")
        if os.path.isdir(source):
            raise ModelError(f"{source}: is a directory, not an ONNX model file")
        return cls(_parsed(source, onnx.load, source), param_pattern, source, backend=backend)

    @classmethod
    def from_bytes(cls, data: bytes, param_pattern: str = ".*", source: str = _MEMORY,
                   backend: str = "auto") -> "OnnxPolicy":
        """The model serialized in ``data`` (the bytes of a model file
        ``source``, without external data), refused as :meth:`load` refuses
        that file."""
        return cls(_parsed(source, onnx.load_model_from_string, data), param_pattern, source,
                   backend=backend)

    @classmethod
    def from_model(cls, model: onnx.ModelProto, param_pattern: str = ".*",
                   source: str = _MEMORY, backend: str = "auto") -> "OnnxPolicy":
        """Wrap an in-memory ModelProto (it is copied, not modified)."""
        if not isinstance(model, onnx.ModelProto):
            raise ModelError(
                f"{source}: expected an onnx.ModelProto, got {type(model).__name__}"
            )
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return cls(copy, param_pattern, source, backend=backend)

    def _setup(self, model: onnx.ModelProto, param_pattern: str, source: str,
               check: bool, backend: str = "auto", data: Optional[bytes] = None) -> None:
        self.source = source
        self.param_pattern = param_pattern
        self._lock = threading.Lock()
        self._session = None
        self._feeds_cache: dict[int, tuple] = {}
        self._fingerprints: dict[int, str] = {}  # version -> digest, computed on first use
        if backend not in BACKENDS:
            raise ModelError(f"{source}: backend must be one of {', '.join(map(repr, BACKENDS))}, "
                             f"got {backend!r}")

        if not isinstance(param_pattern, str):
            raise ModelError(
                f"{source}: param_pattern must be a str, got {type(param_pattern).__name__}"
            )
        if data is None:
            data = model.SerializeToString()

        def run_checker(ir_version: int) -> None:
            # Newer IR versions than this onnx package knows are left to
            # onnxruntime to accept or reject.
            if check and ir_version <= onnx.IR_VERSION:
                try:
                    onnx.checker.check_model(model)
                except Exception as e:
                    raise ModelError(
                        f"{source}: ONNX checker rejected the model: {' '.join(str(e).split())}"
                    ) from e

        try:  # what the model means is the core's (formats/onnx_model.h), as for the C++ library
            layout = _core.read_onnx_layout(data, param_pattern, source, run_checker)
        except ModelError:
            raise
        except ValueError as e:
            raise ModelError(str(e)) from None

        # Keep the original model (initializers included) for save/to_model.
        self._model = model
        self.layout = layout
        self.param_names = list(layout.param_names)
        self.param_shapes = [tuple(shape) for shape in layout.param_shapes]
        self.param_slices = [(int(at), int(at) + math.prod(shape))
                             for at, shape in zip(layout.param_offsets, self.param_shapes)]
        self._initial = layout.parameters
        self.num_params = int(self._initial.size)
        self.state_names = list(layout.state_names)
        self.state_output_names = list(layout.state_output_names)
        self._state_axes = list(layout.state_axes)
        self.state_shapes = [tuple(None if i == axis else d for i, d in enumerate(shape))
                             for shape, axis in zip(layout.state_shapes, self._state_axes)]
        self.recurrent = bool(self.state_names)
        self.input_name = layout.input_name
        self.obs_dtype = _np_dtype_for(layout.input_elem_type)
        declared = layout.input_shape
        self.obs_shape = None if declared is None else tuple(declared[1:])
        self._batch_dim = None if declared is None else declared[0]
        self.output_name = layout.output_name

        # The rewritten graph, serialized once for the session.
        run_model = onnx.ModelProto()
        run_model.CopyFrom(model)
        sel = set(self.param_names)
        kept = [t for t in run_model.graph.initializer if t.name not in sel]
        del run_model.graph.initializer[:]
        run_model.graph.initializer.extend(kept)
        already_inputs = {vi.name for vi in run_model.graph.input}
        for name, shape in zip(self.param_names, self.param_shapes):
            if name not in already_inputs:
                run_model.graph.input.append(
                    helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))
                )
        self._run_model = run_model
        self._select_backend(backend, data)

    def _select_backend(self, backend: str, data: bytes) -> None:
        self.native = None
        self.fallback_reason = None
        if backend != "onnxruntime":
            try:
                self.native = NativePolicy.from_layout(data, self.layout)
            except NotSupportedError as exc:
                if backend == "native":
                    raise
                self.fallback_reason = str(exc)
                try:  # a model neither backend can run is refused now, not at its first use
                    self._get_session()
                except ModelError as ort_exc:
                    reason = str(exc).replace(f"{self.source}: ", "", 1)
                    raise ModelError(f"{self.source}: the model cannot run: {reason}; and "
                                     f"{str(ort_exc).replace(f'{self.source}: ', '', 1)}") from None
                warnings.warn(f"{exc}; running the model on onnxruntime instead (backend='auto')",
                              NativeFallbackWarning, stacklevel=4)
        self.backend = "native" if self.native is not None else "onnxruntime"

    @property
    def model(self) -> onnx.ModelProto:
        """The model as loaded, with its own parameter values: read it, do not
        modify it (:meth:`to_model` gives a copy with other parameters)."""
        return self._model

    # ---- parameters ---------------------------------------------------

    def initial_params(self) -> np.ndarray:
        """A new flat float32 array of the model's own parameter values."""
        return self._initial.copy()

    def _check_params(self, params: Any, what: str = "params") -> np.ndarray:
        arr = np.asarray(params)
        if arr.dtype.kind != "f":
            raise ModelError(
                f"{self.source}: {what} must be a floating-point array, got dtype {arr.dtype}"
            )
        if arr.dtype != np.float32:
            arr = np.asarray(arr, dtype=np.float32)
        if arr.ndim != 1 or arr.shape[0] != self.num_params:
            raise ModelError(
                f"{self.source}: {what} has shape {_fmt_shape(arr.shape)}, expected "
                f"a flat vector of num_params={self.num_params} values"
            )
        return np.ascontiguousarray(arr)

    def _feeds_for(self, params: Any) -> dict[str, np.ndarray]:
        """The parameter feeds (views of ``params``). Agents update their
        float32 parameter buffers in place, so the views of such a buffer are
        built once and cached with the buffer (held, so its id stays unique)."""
        if type(params) is np.ndarray:
            hit = self._feeds_cache.get(id(params))
            if hit is not None and hit[0] is params:
                return hit[1]
        flat = self._check_params(params)
        feeds = self._param_feeds(flat)
        if flat is params:  # a float32 buffer, not a converted copy
            if len(self._feeds_cache) >= 256:
                self._feeds_cache.clear()
            self._feeds_cache[id(params)] = (params, feeds)
        return feeds

    def _param_feeds(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        return {
            name: flat[a:b].reshape(shape)
            for name, shape, (a, b) in zip(self.param_names, self.param_shapes, self.param_slices)
        }

    # ---- inference ----------------------------------------------------

    def _get_session(self):
        sess = self._session
        if sess is not None:
            return sess
        with self._lock:
            if self._session is None:
                import onnxruntime as ort

                opts = ort.SessionOptions()
                opts.intra_op_num_threads = 1
                opts.inter_op_num_threads = 1
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                opts.log_severity_level = 3
                try:
                    data = self._run_model.SerializeToString()
                    self._session = ort.InferenceSession(
                        data, sess_options=opts, providers=["CPUExecutionProvider"]
                    )
                except Exception as e:
                    detail = " ".join(str(e).split())  # one line
                    raise ModelError(
                        f"{self.source}: onnxruntime cannot load the model: {detail}"
                    ) from e
            return self._session

    def _check_obs(self, obs: Any) -> tuple[np.ndarray, bool]:
        arr = np.asarray(obs)
        if arr.dtype != self.obs_dtype:
            try:
                arr = np.asarray(arr, dtype=self.obs_dtype)
            except (TypeError, ValueError) as e:
                raise ModelError(
                    f"{self.source}: observation cannot be converted to "
                    f"{self.obs_dtype}: {e}"
                ) from e
        shape = self.obs_shape
        if shape is None:
            return arr, False

        def matches(actual: tuple, expected: tuple) -> bool:
            return len(actual) == len(expected) and all(
                e is None or a == e for a, e in zip(actual, expected)
            )

        if matches(arr.shape, shape):
            return np.ascontiguousarray(arr[np.newaxis]), True
        if arr.ndim == len(shape) + 1 and matches(arr.shape[1:], shape):
            if self._batch_dim is not None and arr.shape[0] != self._batch_dim:
                raise ModelError(
                    f"{self.source}: observation batch has shape {_fmt_shape(arr.shape)}, "
                    f"but the model's batch dimension is fixed to {self._batch_dim}"
                )
            return np.ascontiguousarray(arr), False
        raise ModelError(
            f"{self.source}: observation has shape {_fmt_shape(arr.shape)}, "
            f"expected {_fmt_shape(shape)} or {_fmt_batch_shape(shape)}"
        )

    # ---- recurrent state ----------------------------------------------

    def batch_size(self, obs: Any) -> int:
        """How many observations ``obs`` holds (1 for one observation)."""
        return int(self._check_obs(obs)[0].shape[0])

    def _state_tensor_shapes(self, batch: int) -> list[tuple[int, ...]]:
        return [tuple(batch if d is None else d for d in shape) for shape in self.state_shapes]

    def state_size(self, batch: int = 1) -> int:
        """Floats of recurrent state for ``batch`` observations (0 if feed-forward)."""
        return int(sum(math.prod(s) for s in self._state_tensor_shapes(batch)))

    def initial_state(self, batch: int = 1) -> np.ndarray:
        """A new zero state for ``batch`` observations (one observation: 1):
        the state at the start of every episode. Empty for a feed-forward policy."""
        return np.zeros(self.state_size(batch), np.float32)

    def _check_state(self, state: Any, batch: int) -> np.ndarray | None:
        if not self.recurrent:
            if state is not None:
                raise ModelError(f"{self.source}: state was given but the model is not recurrent")
            return None
        want = self.state_size(batch)
        if state is None:
            raise ModelError(
                f"{self.source}: the model is recurrent (state {_few(self.state_names)}): pass "
                f"state=policy.initial_state({batch}) and keep passing it through the episode")
        if not (isinstance(state, np.ndarray) and state.dtype == np.float32 and state.ndim == 1
                and state.flags.c_contiguous and state.flags.writeable):
            raise ModelError(f"{self.source}: state must be a writable flat float32 array "
                             f"(from initial_state), got "
                             f"{type(state).__name__} {getattr(state, 'dtype', '')}"
                             f"{_fmt_shape(getattr(state, 'shape', ()))}")
        if state.shape[0] != want:
            raise ModelError(f"{self.source}: state holds {state.shape[0]} values, expected "
                             f"{want} for a batch of {batch} observation(s)")
        return state

    def _state_views(self, state: np.ndarray, batch: int) -> list[np.ndarray]:
        views, at = [], 0
        for shape in self._state_tensor_shapes(batch):
            n = int(math.prod(shape))
            views.append(state[at:at + n].reshape(shape))
            at += n
        return views

    def run(self, obs: Any, params: Any, state: Any = None) -> np.ndarray:
        """The first model output for ``obs`` with parameter vector ``params``.

        ``obs`` is a batch ``[batch, *obs_shape]`` or one observation of
        ``obs_shape`` (then the batch dim is removed from the result).  It is
        converted to the input's declared dtype (float32) if needed.
        ``params`` is a flat vector of ``num_params`` values; float64 (or any
        other floating dtype) is converted once with
        ``np.asarray(params, dtype=np.float32)``. The forward pass is
        ``backend``'s: the native core, or the shared onnxruntime session.
        A recurrent policy needs ``state`` (:meth:`initial_state` for the
        batch size), which it replaces by the next state in place.
        """
        x, single = self._check_obs(obs)
        st = self._check_state(state, x.shape[0])
        if self.native is not None:
            flat = self._check_params(params)
            try:
                out = self.native.graph.run(x, flat, st)
            except ValueError as e:
                raise ModelError(f"{self.source}: inference failed: {e}") from e
            return out[0] if single else out
        feeds = dict(self._feeds_for(params))
        feeds[self.input_name] = x
        names = [self.output_name]
        if st is not None:
            views = self._state_views(st, x.shape[0])
            feeds.update(zip(self.state_names, views))
            names += self.state_output_names
        sess = self._get_session()
        try:
            results = sess.run(names, feeds)
        except Exception as e:
            raise ModelError(f"{self.source}: inference failed: {e}") from e
        out = results[0]
        if st is not None:
            for view, new in zip(views, results[1:]):
                view[...] = new
        if single:
            return out[0]
        return out

    # ---- export -------------------------------------------------------

    def to_model(self, params: Any) -> onnx.ModelProto:
        """The original model with the selected initializers set to ``params``."""
        flat = self._check_params(params)
        views = self._param_feeds(flat)
        model = onnx.ModelProto()
        model.CopyFrom(self._model)
        for init in model.graph.initializer:
            arr = views.get(init.name)
            if arr is not None:
                init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr), init.name))
        return model

    def save(self, path: str | os.PathLike, params: Any) -> None:
        """Write :meth:`to_model` to ``path`` atomically.

        The bytes go to a temporary file in the same directory, which is
        flushed, fsync'ed and then ``os.replace``d onto ``path``; a crash
        leaves either the old file or the new one, never half of one.
        Missing parent directories are created.
        """
        write_model_bytes(path, self.to_model(params).SerializeToString())

    # ---- identity -----------------------------------------------------

    def fingerprint(self, version: int = FINGERPRINT_VERSION) -> str:
        """sha256 hex digest of the architecture, without parameter values.

        Version 2 (the default; what EvoKit writes) hashes a canonical
        encoding of the opset imports, the nodes (op types, domains, input
        and output names, attributes with their types and values), the
        observation inputs and outputs (names, element types, shapes), the
        parameters (names, dims) and the fixed initializers (names, types,
        dims, little-endian data), as specified in ``proto/evokit.proto``
        (``SolverState.fingerprint_version``); the C++ io component computes
        the same digest.  Graph/model/node names, doc strings, metadata,
        value_info and the IR version are ignored.  Two models that differ
        only in their parameter values have the same fingerprint.

        Version 1 (EvoKit before the C++ fingerprint; computed only to verify
        files written then) hashes a protobuf serialization of the rewritten
        graph, which only the Python package reproduces.

        The graph and the parameter selection never change after loading, so
        each version is computed once per policy, on first use.
        """
        digest = self._fingerprints.get(version)
        if digest is None:
            digest = self._fingerprints[version] = self._compute_fingerprint(version)
        return digest

    def _compute_fingerprint(self, version: int) -> str:
        if version == FINGERPRINT_VERSION:
            try:
                return model_fingerprint(self._model, self.param_names, self.source)
            except FingerprintError as e:
                raise ModelError(str(e)) from None
        if version == 1:
            return model_fingerprint_v1(self._run_model)
        raise ModelError(f"{self.source}: fingerprint version {version} is not known to this "
                         f"EvoKit (it computes versions 1 and {FINGERPRINT_VERSION})")

    # ---- pickling -----------------------------------------------------

    def __getstate__(self) -> dict:
        return {
            "model": self._model.SerializeToString(),
            "param_pattern": self.param_pattern,
            "source": self.source,
            "backend": self.backend,  # resolved: a receiver never warns again
        }

    def __setstate__(self, state: dict) -> None:
        model = onnx.ModelProto()
        model.ParseFromString(state["model"])
        self._setup(model, state["param_pattern"], state["source"], check=False,
                    backend=state.get("backend", "auto"), data=state["model"])

    def __repr__(self) -> str:
        return (
            f"OnnxPolicy(source={self.source!r}, num_params={self.num_params}, "
            f"input={self.input_name!r} {self.obs_shape}, output={self.output_name!r}, "
            + (f"state={self.state_names!r}, " if self.recurrent else "")
            + f"backend={self.backend!r})"
        )


def select_action(output: np.ndarray, discrete: bool):
    """The action(s) for a policy output.

    Discrete: argmax over the last axis, a Python int for a single
    observation's 1-D scores, an int64 array for a batch.  Continuous: the
    output itself.
    """
    if not discrete:
        return output
    out = np.asarray(output)
    if out.ndim == 0:
        raise ModelError("select_action: expected scores with an action axis, got a scalar")
    if out.ndim == 1:
        return int(np.argmax(out))
    return np.argmax(out, axis=-1)


def _parsed(source: str, parse, *args) -> onnx.ModelProto:
    """``parse(*args)``: the model of ``source``, or ModelError naming it."""
    try:
        return parse(*args)
    except OSError as e:
        raise ModelError(f"{source}: cannot read: {e}") from e
    except Exception as e:  # DecodeError, RuntimeError, ValueError, ...
        raise ModelError(
            f"{source}: not a valid ONNX model ({type(e).__name__}: {e})"
        ) from e


def write_model_bytes(path, data: bytes) -> None:
    """Write serialized ONNX to ``path`` atomically (``ModelError`` naming the
    path when it cannot be written)."""
    dest = os.fspath(path)
    if os.path.isdir(dest):
        raise ModelError(f"{dest}: is a directory")
    try:
        atomic_write_bytes(dest, data)
    except OSError as e:
        # atomic_write_bytes names the file in what it raises; an error with a
        # file name of its own (e.g. the directory) is named here
        raise ModelError(str(e) if dest in str(e) else f"{dest}: cannot write: {e}") from e
