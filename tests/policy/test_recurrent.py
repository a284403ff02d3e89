"""Recurrent (LSTM / GRU) ONNX policies: PyTorch exports run step by step on
both backends against torch's own outputs, state pairing and refusals, the
agent's carried state, and episodes that start from a zero state in every
evaluator."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import evokit
from evokit.errors import ModelError, NativeFallbackWarning, NotSupportedError
from evokit.policy.mlp import init_mlp
from evokit.policy.onnx_policy import OnnxPolicy

from helpers import FIXTURES

REF = np.load(Path(FIXTURES, "recurrent_reference.npz"))
NATIVE = ["recurrent_lstm", "recurrent_gru", "recurrent_lstm_bf", "recurrent_gru_bf"]
TOL = dict(rtol=1e-5, atol=1e-5)


def load(name: str, backend: str = "auto") -> OnnxPolicy:
    return OnnxPolicy.load(Path(FIXTURES, name + ".onnx"), backend=backend)


def rollout(policy: OnnxPolicy, obs: np.ndarray) -> np.ndarray:
    """The outputs for obs (T, B, d), the state carried from step to step."""
    params = policy.initial_params()
    state = policy.initial_state(obs.shape[1])
    return np.stack([policy.run(x, params, state) for x in obs])


@pytest.mark.parametrize("name", NATIVE)
def test_torch_exports_run_natively_and_match_torch_step_by_step(name):
    native, ort = load(name), load(name, "onnxruntime")
    assert native.backend == "native"
    assert native.state_names == (["h0", "c0"] if "lstm" in name else ["h0"])
    assert native.state_output_names == (["hn", "cn"] if "lstm" in name else ["hn"])
    obs, want = REF[name + "_obs"], REF[name + "_action"]
    got_native, got_ort = rollout(native, obs), rollout(ort, obs)
    np.testing.assert_allclose(got_native, want, **TOL)
    np.testing.assert_allclose(got_ort, want, **TOL)
    np.testing.assert_allclose(got_native, got_ort, **TOL)
    # The state matters: a fresh state at the last step gives another output.
    fresh = native.run(obs[-1], native.initial_params(), native.initial_state(obs.shape[1]))
    assert np.abs(fresh - want[-1]).max() > 1e-3


def test_shape_arithmetic_is_evaluated_when_the_graph_is_built():
    """The default exporter's batch_first GRU computes its Reshape's target
    from Shape, Slice, Mul and Concat; the core evaluates them when the graph
    is built ((1, batch, 8)), so the model runs natively. A Concat of a float
    tensor and an integer one is refused naming the node."""
    model = onnx.load(Path(FIXTURES, "recurrent_gru_bf.onnx"))
    assert {"Shape", "Concat", "Mul"} <= {n.op_type for n in model.graph.node}
    assert OnnxPolicy.from_model(model, backend="native").backend == "native"
    model = init_mlp(4, 2, (8,))
    model.graph.node.insert(0, helper.make_node("Constant", [], ["k"], value_ints=[1, 2]))
    model.graph.node.insert(1, helper.make_node("Concat", ["obs", "k"], ["both"], axis=0,
                                                name="cat"))
    with pytest.raises(NotSupportedError) as e:
        OnnxPolicy.from_model(model, backend="native")
    assert str(e.value) == ("<memory>: native backend: node 'cat' (Concat): input 'k' is an "
                            "integer tensor (shapes, axes and indices only); the native policy "
                            "computes on FLOAT tensors only")


@pytest.mark.parametrize("backend", ["native", "onnxruntime"])
def test_single_observations_carry_the_state_like_a_batch_of_one(backend):
    policy = load("recurrent_lstm", backend)
    obs = REF["recurrent_lstm_obs"][:, 1]  # member 1 alone
    params, state = policy.initial_params(), policy.initial_state()
    got = np.stack([policy.run(x, params, state) for x in obs])
    np.testing.assert_allclose(got, REF["recurrent_lstm_action"][:, 1], **TOL)


def test_run_without_state_and_bad_states_are_refused():
    policy = load("recurrent_lstm")
    params = policy.initial_params()
    obs = np.zeros(4, np.float32)
    src = str(Path(FIXTURES, "recurrent_lstm.onnx"))
    with pytest.raises(ModelError) as e:
        policy.run(obs, params)
    assert str(e.value) == (f"{src}: the model is recurrent (state 'h0', 'c0'): pass "
                            f"state=policy.initial_state(1) and keep passing it through the episode")
    with pytest.raises(ModelError, match=r"state holds 16 values, expected 48 for a batch of 3"):
        policy.run(np.zeros((3, 4), np.float32), params, policy.initial_state(1))
    with pytest.raises(ModelError, match="state must be a writable flat float32 array"):
        policy.run(obs, params, np.zeros(16))
    mlp = OnnxPolicy.from_model(init_mlp(4, 2))
    with pytest.raises(ModelError, match="state was given but the model is not recurrent"):
        mlp.run(obs, mlp.initial_params(), np.zeros(0, np.float32))


# ---- pairing rule --------------------------------------------------------------


def tiny_graph(inputs, outputs, extra_nodes=()):
    """obs (batch, 2) -> Gemm -> action, plus Identity nodes for extra outputs."""
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    nodes = [helper.make_node("Gemm", ["obs", "w"], ["action"])] + list(extra_nodes)
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 2])] + inputs,
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 2])] + outputs,
        initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def vi(name, shape=(1, "batch", 3)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def test_state_pairs_by_name_then_by_shape():
    model = tiny_graph([vi("mem_in"), vi("x", (1, "batch", 5))],
                       [vi("y", (1, "batch", 5)), vi("mem_out")],
                       [helper.make_node("Identity", ["mem_in"], ["mem_out"]),
                        helper.make_node("Identity", ["x"], ["y"])])
    policy = OnnxPolicy.from_model(model)
    assert policy.state_names == ["mem_in", "x"]
    assert policy.state_output_names == ["mem_out", "y"]
    assert policy.state_size(2) == 2 * 3 + 2 * 5
    # Identity state: the output is the input, on both backends.
    for backend in ("native", "onnxruntime"):
        p = OnnxPolicy.from_model(model, backend=backend)
        state = np.arange(16, dtype=np.float32)
        p.run(np.zeros((2, 2), np.float32), p.initial_params(), state)
        np.testing.assert_array_equal(state, np.arange(16, dtype=np.float32))


def test_ambiguous_and_unpaired_state_inputs_are_refused_naming_them():
    ambiguous = tiny_graph([vi("a"), vi("b")], [vi("p"), vi("q")],
                           [helper.make_node("Identity", ["a"], ["p"]),
                            helper.make_node("Identity", ["b"], ["q"])])
    with pytest.raises(ModelError) as e:
        OnnxPolicy.from_model(ambiguous)
    assert str(e.value) == ("<memory>: state input 'a' matches outputs 'p', 'q' by shape; name the "
                            "pair by the convention (h0 -> hn, x_in -> x_out) to say which")
    unpaired = tiny_graph([vi("extra", ("batch", 7))], [])
    with pytest.raises(ModelError) as e:
        OnnxPolicy.from_model(unpaired)
    assert str(e.value) == ("<memory>: input 'extra' is neither the observation nor recurrent "
                            "state: no output pairs with it by name (h0 -> hn, x_in -> x_out) or "
                            "by shape (outputs after the first: none); a policy takes one "
                            "observation input, then state inputs")
    mismatch = tiny_graph([vi("h0")], [vi("hn", (1, "batch", 4))],
                          [helper.make_node("Identity", ["h0"], ["hn"])])
    with pytest.raises(ModelError, match=r"state input 'h0' pairs by name with output 'hn', but "
                                         r"their declared shapes or types differ: \(1, \?, 3\) vs "
                                         r"\(1, \?, 4\)"):
        OnnxPolicy.from_model(mismatch)


def lstm_model(**attrs) -> onnx.ModelProto:
    model = init_mlp(4, 2, (8,), recurrent="lstm")
    for node in model.graph.node:
        if node.op_type == "LSTM":
            for key, value in attrs.items():
                node.attribute.append(helper.make_attribute(key, value))
    return model


@pytest.mark.parametrize("attrs, message", [
    (dict(direction="reverse"), "direction ['reverse'] is not supported (only 'forward')"),
    (dict(activations=["Sigmoid", "Relu", "Tanh"]),
     "activations ['Sigmoid', 'Relu', 'Tanh'] are not supported (only the default "
     "['Sigmoid', 'Tanh', 'Tanh'])"),
    (dict(input_forget=1), "attribute input_forget 1 is not supported (only 0)"),
    (dict(clip=3.0), "unknown float attribute 'clip'"),
])
def test_lstm_attributes_outside_the_native_subset_are_refused_naming_the_node(attrs, message):
    with pytest.raises(NotSupportedError) as e:
        OnnxPolicy.from_model(lstm_model(**attrs), backend="native")
    assert str(e.value) == f"<memory>: native backend: node 'rnn.lstm' (LSTM): {message}"


# ---- init_mlp(recurrent=...) ------------------------------------------------------


@pytest.mark.parametrize("cell", ["lstm", "gru", "gru_reset_after"])
def test_init_mlp_recurrent_runs_natively_like_onnxruntime(cell):
    """gru_reset_after: the GRU with linear_before_reset 0 (ONNX's default)."""
    model = init_mlp(5, 3, (6, 4), recurrent=cell.split("_")[0], seed=2)
    if cell == "gru_reset_after":
        rnn = next(n for n in model.graph.node if n.op_type == "GRU")
        next(a for a in rnn.attribute if a.name == "linear_before_reset").i = 0
    cell = cell.split("_")[0]
    native = OnnxPolicy.from_model(model)
    ort = OnnxPolicy.from_model(model, backend="onnxruntime")
    assert native.backend == "native" and native.recurrent
    assert native.state_names == (["h0", "c0"] if cell == "lstm" else ["h0"])
    gates = 4 if cell == "lstm" else 3
    assert native.num_params == gates * 6 * (5 + 6 + 2) + 6 * 4 + 4 + 4 * 3 + 3
    obs = np.random.default_rng(0).normal(size=(20, 2, 5)).astype(np.float32) * 2
    params = np.random.default_rng(1).normal(size=native.num_params).astype(np.float32) * 0.5
    s1, s2 = native.initial_state(2), ort.initial_state(2)
    for x in obs:
        np.testing.assert_allclose(native.run(x, params, s1), ort.run(x, params, s2), **TOL)
        np.testing.assert_allclose(s1, s2, **TOL)


def test_init_mlp_recurrent_needs_a_hidden_size():
    with pytest.raises(ModelError, match=r"recurrent must be one of \('lstm', 'gru'\) with at "
                                         r"least one hidden size"):
        init_mlp(4, 2, (), recurrent="lstm")


# ---- the agent ---------------------------------------------------------------------


def test_agent_predict_carries_the_state_until_reset(seed_config, tmp_path):
    path = tmp_path / "lstm.onnx"
    path.write_bytes(init_mlp(4, 2, (8,), recurrent="lstm", seed=5).SerializeToString())
    agent = evokit.ESAgent(seed_config, str(path))
    obs = np.random.default_rng(3).normal(size=(6, 4)).astype(np.float32)
    first = [agent.predict(x) for x in obs]
    assert agent.state is not None and agent.state.shape == (16,)
    agent.reset_state()
    again = [agent.predict(x) for x in obs]
    np.testing.assert_array_equal(first, again)
    policy = agent.policy
    expect = rollout(policy, obs[:, None, :])[:, 0]
    np.testing.assert_array_equal(np.stack(first), expect)
    assert np.abs(first[-1] - agent.policy.run(obs[-1], agent.center,
                                               policy.initial_state())).max() > 1e-6
    clone = agent.clone()
    clone.add_noise()
    clone.predict(obs[0])  # its own state, from zeros
    agent.reset_state()
    np.testing.assert_array_equal(agent.predict(obs[0]), first[0])
    with pytest.raises(ModelError, match=r"the recurrent state holds a batch of 1 observation\(s\), "
                                         r"got 2: call reset_state\(\)"):
        agent.predict(obs[:2])
