"""Fresh MLP policies as ONNX models: :func:`init_mlp`, and
:func:`policy_for_spaces` sized for a gymnasium environment's spaces.

The models are plain ONNX (IR 8, opset 17: Gemm and an activation per layer)
that :class:`~evokit.policy.onnx_policy.OnnxPolicy` loads like any other, and
the native backend runs.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import _core
from ..errors import ModelError

__all__ = ["ACTION_MAPPINGS", "ACTIVATIONS", "IR_VERSION", "OPSET", "RECURRENT_CELLS",
           "init_mlp", "policy_for_spaces", "with_action_mapping"]

#: IR version written by :func:`init_mlp` (Debian's libonnx 1.12 rejects IR >= 9).
IR_VERSION = 8
#: Default-domain opset written by :func:`init_mlp`.
OPSET = 17
#: Hidden-layer activations understood by :func:`init_mlp`.
ACTIVATIONS = tuple(_core.CONFIG_ACTIVATIONS)  # ("tanh", "relu", "sigmoid", "identity")
#: How :func:`with_action_mapping` maps an output into a Box's bounds.
ACTION_MAPPINGS = ("clip", "tanh", "none")
#: Recurrent first layers understood by :func:`init_mlp` (``recurrent=``).
RECURRENT_CELLS = ("lstm", "gru")
_MAPPING_MARK = "evokit.action_mapping"


def _normc(rng: np.random.Generator, n_in: int, n_out: int, gain: float) -> np.ndarray:
    w = rng.standard_normal((n_in, n_out))
    norms = np.sqrt(np.square(w).sum(axis=0, keepdims=True))
    norms[norms == 0] = 1.0
    return (w * (gain / norms)).astype(np.float32)


def _recurrent_layer(rng: np.random.Generator, cell: str, n_in: int, hidden: int):
    """The nodes, initializers, state inputs and state outputs of a
    recurrent first layer: obs (batch, n_in) -> Unsqueeze -> LSTM / GRU (one
    step, PyTorch's layout: gates iofc / zrh, linear_before_reset 1 for the
    GRU) -> Squeeze -> "rnn.out" (batch, hidden). Weights uniform in
    +-1/sqrt(hidden) as PyTorch initialises them, biases zero."""
    gates = 4 if cell == "lstm" else 3
    bound = 1.0 / math.sqrt(hidden)
    w = rng.uniform(-bound, bound, (1, gates * hidden, n_in)).astype(np.float32)
    r = rng.uniform(-bound, bound, (1, gates * hidden, hidden)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "rnn.W"), numpy_helper.from_array(r, "rnn.R"),
             numpy_helper.from_array(np.zeros((1, 2 * gates * hidden), np.float32), "rnn.B"),
             numpy_helper.from_array(np.array([0], np.int64), "rnn.axes0"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "rnn.axes01")]
    names = ["h"] if cell == "gru" else ["h", "c"]
    state = [helper.make_tensor_value_info(f"{n}0", TensorProto.FLOAT, [1, "batch", hidden])
             for n in names]
    nexts = [helper.make_tensor_value_info(f"{n}n", TensorProto.FLOAT, [1, "batch", hidden])
             for n in names]
    attrs = {"hidden_size": hidden}
    if cell == "gru":
        attrs["linear_before_reset"] = 1
    nodes = [
        helper.make_node("Unsqueeze", ["obs", "rnn.axes0"], ["rnn.x"], name="rnn.unsqueeze"),
        helper.make_node(cell.upper(), ["rnn.x", "rnn.W", "rnn.R", "rnn.B", ""]
                         + [f"{n}0" for n in names], ["rnn.y"] + [f"{n}n" for n in names],
                         name=f"rnn.{cell}", **attrs),
        helper.make_node("Squeeze", ["rnn.y", "rnn.axes01"], ["rnn.out"], name="rnn.squeeze"),
    ]
    return nodes, inits, state, nexts


def init_mlp(obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (16,),
             activation: str = "tanh", discrete: bool = True,
             seed: int = 0, recurrent: str | None = None) -> onnx.ModelProto:
    """A fully connected policy as an ONNX model (IR 8, opset 17).

    Graph: input ``obs`` float32 ``[batch, obs_dim]`` (symbolic batch dim) ->
    for each hidden size h: ``Gemm`` (weight ``layer{i}.weight`` of shape
    ``[in, h]``, bias ``layer{i}.bias`` of shape ``[h]``) followed by the
    activation (``tanh``, ``relu``, ``sigmoid``; ``identity`` adds no node) ->
    a linear ``Gemm`` head (``head.weight``, ``head.bias``) -> output
    ``action`` float32 ``[batch, act_dim]``.  With ``hidden_sizes=()`` the
    policy is linear.

    ``recurrent="lstm"`` or ``"gru"`` makes the first hidden layer an LSTM
    or GRU of that size (one step per observation; PyTorch's layout and
    initialisation, see :func:`_recurrent_layer`) with the state inputs
    ``h0`` (and ``c0``) and outputs ``hn`` (``cn``) of shape ``[1, batch,
    h]``; the remaining sizes are Gemm layers after it.

    ``discrete=True``: the output holds one score per action and the action is
    its argmax (no softmax needed).  ``discrete=False``: the output is the
    continuous action itself.  The graph is the same in both cases; the kind
    is recorded in the model's metadata as ``evokit.action_kind``.

    Initialisation (OpenAI-ES "normc"): weights are drawn from
    ``numpy.random.default_rng(seed)`` layer by layer as a standard normal
    ``[in, out]`` matrix whose every column (the weights into one unit) is
    rescaled to Euclidean norm ``gain``; gain is 1.0 for hidden layers and
    0.01 for the head, so initial outputs are small.  All biases are zero.
    The same arguments always give the same model.
    """
    if isinstance(obs_dim, bool) or int(obs_dim) != obs_dim or obs_dim < 1:
        raise ModelError(f"init_mlp: obs_dim must be a positive int, got {obs_dim!r}")
    if isinstance(act_dim, bool) or int(act_dim) != act_dim or act_dim < 1:
        raise ModelError(f"init_mlp: act_dim must be a positive int, got {act_dim!r}")
    hidden = list(hidden_sizes)
    for h in hidden:
        if isinstance(h, bool) or int(h) != h or h < 1:
            raise ModelError(
                f"init_mlp: hidden_sizes must be positive ints, got {tuple(hidden_sizes)!r}"
            )
    if activation not in ACTIVATIONS:
        raise ModelError(
            f"init_mlp: unknown activation {activation!r}, expected one of {ACTIVATIONS}"
        )
    if recurrent is not None and (recurrent not in RECURRENT_CELLS or not hidden):
        raise ModelError(f"init_mlp: recurrent must be one of {RECURRENT_CELLS} with at least one "
                         f"hidden size (the cell's), got {recurrent!r} with hidden_sizes "
                         f"{tuple(hidden)!r}")
    obs_dim, act_dim = int(obs_dim), int(act_dim)
    hidden = [int(h) for h in hidden]

    rng = np.random.default_rng(seed)
    op = {"tanh": "Tanh", "relu": "Relu", "sigmoid": "Sigmoid", "identity": None}[activation]

    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    state_in: list[onnx.ValueInfoProto] = []
    state_out: list[onnx.ValueInfoProto] = []
    x = "obs"
    n_in = obs_dim
    if recurrent is not None:
        nodes, inits, state_in, state_out = _recurrent_layer(rng, recurrent, obs_dim, hidden[0])
        x, n_in, hidden = "rnn.out", hidden[0], hidden[1:]
    layers = [(f"layer{i}", h, 1.0, True) for i, h in enumerate(hidden)]
    layers.append(("head", act_dim, 0.01, False))
    for prefix, n_out, gain, act in layers:
        w = _normc(rng, n_in, n_out, gain)
        b = np.zeros(n_out, np.float32)
        inits.append(numpy_helper.from_array(w, f"{prefix}.weight"))
        inits.append(numpy_helper.from_array(b, f"{prefix}.bias"))
        last = prefix == "head"
        y = "action" if last else f"{prefix}.linear"
        nodes.append(helper.make_node(
            "Gemm", [x, f"{prefix}.weight", f"{prefix}.bias"], [y], name=f"{prefix}.gemm"
        ))
        if act and op is not None:
            z = f"{prefix}.out"
            nodes.append(helper.make_node(op, [y], [z], name=f"{prefix}.{activation}"))
            y = z
        x = y
        n_in = n_out

    graph = helper.make_graph(
        nodes,
        "evokit_mlp",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim])] + state_in,
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", act_dim])]
        + state_out,
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="evokit",
        ir_version=IR_VERSION,
    )
    model.ir_version = IR_VERSION
    helper.set_model_props(model, {
        "evokit.action_kind": "discrete" if discrete else "continuous",
        "evokit.activation": activation,
        "evokit.hidden_sizes": ",".join(str(h) for h in hidden_sizes),
        "evokit.seed": str(seed),
        **({"evokit.recurrent": recurrent} if recurrent is not None else {}),
    })
    onnx.checker.check_model(model)
    return model


def with_action_mapping(model: onnx.ModelProto, low, high, mapping: str) -> onnx.ModelProto:
    """A copy of ``model`` whose output is mapped into the box [low, high]
    (one bound per action value) by nodes ``action_map/...`` on ``Constant``
    operands (never parameters), appended after the last node:

    - ``"clip"``: ``Clip(y, low, high)`` when every coordinate has the same
      bounds, else ``Clip((y - c) / s, -1, 1) * s + c`` with centre
      ``c = (low + high) / 2`` and half-width ``s = (high - low) / 2``;
      an infinite bound is left open;
    - ``"tanh"``: ``tanh(y)``, then ``* s + c`` unless the box is [-1, 1]
      (finite bounds only);
    - ``"none"``: the model unchanged.

    The mapping is recorded as metadata ``evokit.action_mapping``; a model that
    has one already is refused (ValueError), as is a bound that is NaN or
    ``low > high``."""
    if mapping not in ACTION_MAPPINGS:
        raise ValueError(f"action mapping must be one of {', '.join(ACTION_MAPPINGS)}, "
                         f"got {mapping!r}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    if mapping == "none":
        return out
    if any(p.key == _MAPPING_MARK for p in out.metadata_props):
        raise ValueError(f"the model maps its actions already (metadata {_MAPPING_MARK!r})")
    low = np.asarray(low, np.float64).reshape(-1)
    high = np.asarray(high, np.float64).reshape(-1)
    if low.shape != high.shape or np.isnan(low).any() or np.isnan(high).any() \
            or (low > high).any():
        raise ValueError(f"action bounds must be two vectors of one size with low <= high, "
                         f"got low={low.tolist()} high={high.tolist()}")
    if mapping == "tanh" and not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise ValueError(f"tanh maps onto finite bounds only, got low={low.tolist()} "
                         f"high={high.tolist()}")
    graph = out.graph
    if len(graph.output) != 1:
        raise ValueError(f"the model has {len(graph.output)} outputs, expected 1 (the action)")
    y = graph.output[0].name
    prefix = "action_map/"
    nodes: list[onnx.NodeProto] = []

    def constant(name, array):
        nodes.append(helper.make_node("Constant", [], [prefix + name], name=prefix + name,
                                      value=numpy_helper.from_array(
                                          np.asarray(array, np.float32), prefix + name)))
        return prefix + name

    def node(op, inputs, name):
        nodes.append(helper.make_node(op, inputs, [prefix + name], name=prefix + name))
        return prefix + name

    uniform = bool((low == low[0]).all() and (high == high[0]).all())
    centre = np.where(np.isfinite(low) & np.isfinite(high), (low + high) / 2, 0.0)
    half = np.where(np.isfinite(low) & np.isfinite(high), (high - low) / 2, 1.0)
    unit = bool((centre == 0).all() and (half == 1).all())
    x = y
    if mapping == "clip" and uniform:
        lo = low[0] if np.isfinite(low[0]) else np.finfo(np.float32).min
        hi = high[0] if np.isfinite(high[0]) else np.finfo(np.float32).max
        x = node("Clip", [x, constant("low", lo), constant("high", hi)], "clip")
    else:
        if mapping == "clip":
            if not (np.isfinite(low).all() and np.isfinite(high).all()):
                raise ValueError(f"clip needs finite bounds, or the same bounds for every "
                                 f"coordinate, got low={low.tolist()} high={high.tolist()}")
            if not unit:
                x = node("Sub", [x, constant("centre", centre)], "centred")
                x = node("Div", [x, constant("half_width", half)], "scaled")
            x = node("Clip", [x, constant("minus_one", -1.0), constant("one", 1.0)], "clip")
        else:
            x = node("Tanh", [x], "tanh")
        if not unit:
            x = node("Mul", [x, constant("half_width_out", half)], "rescaled")
            x = node("Add", [x, constant("centre_out", centre)], "shifted")
    # The last node now writes the graph's output name.
    for n in graph.node:
        n.output[:] = [prefix + "input" if o == y else o for o in n.output]
        n.input[:] = [prefix + "input" if i == y else i for i in n.input]
    for n in nodes:
        n.input[:] = [prefix + "input" if i == y else i for i in n.input]
    nodes[-1].output[:] = [y]
    graph.node.extend(nodes)
    meta = out.metadata_props.add()
    meta.key, meta.value = _MAPPING_MARK, mapping
    onnx.checker.check_model(out)
    return out


def policy_for_spaces(observation_space: Any, action_space: Any,
                      hidden_sizes: Sequence[int] = (16,), activation: str = "tanh",
                      seed: int = 0, action_mapping: str = "clip",
                      recurrent: str | None = None) -> onnx.ModelProto:
    """An :func:`init_mlp` policy sized for gymnasium spaces.

    The observation space must be a ``Box`` of any shape; the model's input is
    the flattened observation, ``[batch, prod(shape)]`` (callers flatten
    observations before :meth:`OnnxPolicy.run`).  A ``Discrete(n)`` action
    space gives a discrete head of ``n`` scores (the action is
    ``space.start + argmax``); a ``Box`` of shape ``(k,)`` gives a continuous
    head of ``k`` values mapped into the box's bounds by ``action_mapping``
    (:func:`with_action_mapping`: ``"clip"``, ``"tanh"`` or ``"none"``).  Any
    other space raises :class:`ModelError` naming it.
    """
    from gymnasium import spaces

    if not isinstance(observation_space, spaces.Box):
        raise ModelError(
            f"policy_for_spaces: unsupported observation space {observation_space!r}; "
            f"only Box observation spaces are supported"
        )
    obs_dim = int(math.prod(observation_space.shape))
    if obs_dim < 1:
        raise ModelError(
            f"policy_for_spaces: observation space {observation_space!r} is empty"
        )
    if isinstance(action_space, spaces.Discrete):
        return init_mlp(obs_dim, int(action_space.n), hidden_sizes, activation,
                        discrete=True, seed=seed, recurrent=recurrent)
    if isinstance(action_space, spaces.Box) and len(action_space.shape) == 1 \
            and action_space.shape[0] >= 1:
        model = init_mlp(obs_dim, int(action_space.shape[0]), hidden_sizes, activation,
                         discrete=False, seed=seed, recurrent=recurrent)
        try:
            return with_action_mapping(model, action_space.low, action_space.high,
                                       action_mapping)
        except ValueError as exc:
            raise ModelError(f"policy_for_spaces: {exc}") from None
    raise ModelError(
        f"policy_for_spaces: unsupported action space {action_space!r}; expected "
        f"Discrete(n) or a 1-D Box(shape=(k,))"
    )
