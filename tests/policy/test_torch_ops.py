"""The ops PyTorch exports of common policies produce, on the native backend,
against onnxruntime: the committed exports of tests/fixtures/torch_ops (made
by make_torch_ops.py with torch 2.13 at its default opset 20 and at opsets 13
and 17), hand-built graphs of each op's attribute forms and refusals, and
Dropout exported in training mode."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from evokit import _core
from evokit.errors import ModelError, NotSupportedError
from evokit.policy.onnx_policy import OnnxPolicy

from helpers import FIXTURES

TORCH_OPS = Path(FIXTURES, "torch_ops")
EXPORTS = sorted(p for p in TORCH_OPS.glob("*.onnx") if not p.name.startswith("dropout_train"))
TOL = dict(rtol=1e-5, atol=1e-6)


def load_both(path_or_model, source="m.onnx"):
    if isinstance(path_or_model, onnx.ModelProto):
        return (OnnxPolicy.from_model(path_or_model, source=source, backend="native"),
                OnnxPolicy.from_model(path_or_model, source=source, backend="onnxruntime"))
    return (OnnxPolicy.load(str(path_or_model), backend="native"),
            OnnxPolicy.load(str(path_or_model), backend="onnxruntime"))


def test_the_exports_hold_the_ops_the_issue_names():
    ops = {n.op_type for p in EXPORTS for n in onnx.load(str(p)).graph.node}
    assert {"LayerNormalization", "Gelu", "Erf", "LeakyRelu", "Elu", "Selu", "Softplus", "Mish",
            "Reshape", "Concat", "Squeeze", "Unsqueeze", "Gather", "Slice", "Shape", "Constant",
            "ReduceMean", "ReduceSum", "Pow", "Sqrt", "Greater", "Where", "Flatten"} <= ops
    opsets = {p.stem.rsplit("-opset", 1)[1] for p in EXPORTS}
    assert opsets == {"13", "17", "20"}
    assert len(EXPORTS) == 45


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_torch_exports_run_natively_and_match_onnxruntime(path):
    native, ort = load_both(path)
    assert native.backend == "native"
    rng = np.random.default_rng(len(path.name))
    for batch in (1, 7, 64):
        obs = rng.uniform(-3, 3, (batch,) + native.obs_shape).astype(np.float32)
        for scale in (0.0, 0.5):  # the exported parameters, and perturbed ones
            params = native.initial_params() + scale * rng.standard_normal(native.num_params).astype(np.float32)
            got = native.run(obs, params)
            assert got.shape == (batch,) + native.native.action_shape
            np.testing.assert_allclose(got, ort.run(obs, params), **TOL)


@pytest.mark.parametrize("name", ["layernorm_gelu-opset20", "layernorm_gelu-opset13", "cat-opset17",
                                  "select-opset20"])
def test_population_members_equal_their_own_runs(name):
    """Perturbed parameters read through the kernels (LayerNorm's scale and
    bias, Concat and Gather of parameters) give each member the bits of a
    run on its materialised vector, for any thread count."""
    pol = OnnxPolicy.load(str(TORCH_OPS / f"{name}.onnx"), backend="native")
    sampler = _core.GaussianSampler(7, 0.3, True, pol.num_params + 20000, pol.num_params)
    n = 10
    keys = np.array([sampler.draw_key(0, i // 2, 0) for i in range(n)])
    signs = np.where(np.arange(n) % 2, -1.0, 1.0).astype(np.float32)
    obs = np.random.default_rng(0).uniform(-2, 2, (n,) + pol.obs_shape).astype(np.float32)
    centre = pol.initial_params()
    out = pol.native.run_population(obs, centre, keys, signs, sampler)
    assert out.tobytes() == pol.native.run_population(obs, centre, keys, signs, sampler,
                                                      num_threads=3).tobytes()
    for i in range(n):
        member = sampler.perturb(centre, int(keys[i]), float(signs[i]))
        np.testing.assert_array_equal(out[i], pol.run(obs[i], member))


# ---- Dropout ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["auto", "native", "onnxruntime"])
@pytest.mark.parametrize("opset,label", [(17, "node '/2/Dropout' (Dropout)"), (20, "node 'node_native_dropout__1' (Dropout)")])
def test_a_model_exported_in_training_mode_is_refused_naming_the_node(backend, opset, label):
    path = TORCH_OPS / f"dropout_train-opset{opset}.onnx"
    with pytest.raises(ModelError) as info:
        OnnxPolicy.load(str(path), backend=backend)
    assert str(info.value) == (
        f"{path}: {label}: dropout is active (training_mode true, ratio 0.2): the model was exported "
        f"in training mode and would drop random activations at every call; export it after "
        f"model.eval()")


def dropout_model(training, ratio="r", opset=17):
    """obs (b, 3) -> MatMul -> Dropout(ratio, training_mode) -> y."""
    inits = [numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "w")]
    nodes = [helper.make_node("MatMul", ["obs", "w"], ["h"], name="mm")]
    if ratio is not None:
        nodes.append(helper.make_node("Constant", [], ["r"], value=numpy_helper.from_array(np.float32(ratio))))
    nodes.append(helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [training])))
    nodes.append(helper.make_node("Dropout", ["h", "r" if ratio is not None else "", "t"], ["y"], name="drop"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["b", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 4])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_dropout_in_inference_mode_or_with_ratio_zero_loads():
    obs = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for model in (dropout_model(False, 0.3), dropout_model(True, 0.0)):
        native, ort = load_both(model)
        assert native.backend == "native"
        np.testing.assert_allclose(native.run(obs, native.initial_params()), obs @ np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), rtol=1e-6)
        np.testing.assert_allclose(native.run(obs, native.initial_params()), ort.run(obs, ort.initial_params()), **TOL)
    with pytest.raises(ModelError, match=re.escape(
            "d.onnx: node 'drop' (Dropout): dropout is active (training_mode true, ratio 0.5)")):
        OnnxPolicy.from_model(dropout_model(True, None), source="d.onnx")  # ratio omitted: 0.5


# ---- each op's forms and refusals, hand-built --------------------------------------


def graph_model(nodes, obs_dims, out_dims, inits=(), opset=17, out="y"):
    w = numpy_helper.from_array(np.float32(1.0).reshape(1), "one")  # a parameter for OnnxPolicy
    nodes = list(nodes) + [helper.make_node("Mul", [out, "one"], ["result"], name="scale")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["b", *obs_dims])],
                              [helper.make_tensor_value_info("result", TensorProto.FLOAT, out_dims)],
                              initializer=[w, *inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def f32(name, values):
    return numpy_helper.from_array(np.asarray(values, np.float32), name)


node = helper.make_node

ACCEPTED = {
    "gelu_none": (graph_model([node("Gelu", ["obs"], ["y"], approximate="none")], [5], ["b", 5], opset=20), (5,)),
    "gelu_tanh": (graph_model([node("Gelu", ["obs"], ["y"], approximate="tanh")], [5], ["b", 5], opset=20), (5,)),
    "erf": (graph_model([node("Erf", ["obs"], ["y"])], [5], ["b", 5]), (5,)),
    "leaky_default": (graph_model([node("LeakyRelu", ["obs"], ["y"])], [5], ["b", 5]), (5,)),
    "elu": (graph_model([node("Elu", ["obs"], ["y"], alpha=0.3)], [5], ["b", 5]), (5,)),
    "selu_attrs": (graph_model([node("Selu", ["obs"], ["y"], alpha=1.5, gamma=0.9)], [5], ["b", 5]), (5,)),
    "softplus_large": (graph_model([node("Softplus", ["obs"], ["y"])], [5], ["b", 5]), (5,)),
    "mish": (graph_model([node("Mish", ["obs"], ["y"])], [5], ["b", 5], opset=18), (5,)),
    "sqrt_pow": (graph_model([node("Mul", ["obs", "obs"], ["sq"]), node("Sqrt", ["sq"], ["s"]),
                              node("Pow", ["s", "e"], ["y"])], [5], ["b", 5], [f32("e", [1.5, 2, 0.5, 3, -1])]), (5,)),
    "layernorm_axis1_no_bias": (graph_model([node("LayerNormalization", ["obs", "g"], ["y"], axis=1, epsilon=1e-3)],
                                            [2, 3], ["b", 2, 3], [f32("g", np.linspace(0.5, 2, 6).reshape(2, 3))]), (2, 3)),
    "reduce_mean_axes_attr": (graph_model([node("ReduceMean", ["obs"], ["y"], axes=[1, 2], keepdims=0)],
                                          [2, 3, 4], ["b", 2], opset=13), (2, 3, 4)),
    "reduce_mean_axes_input": (graph_model([node("ReduceMean", ["obs", "ax"], ["y"])], [2, 3], ["b", 2, 1],
                                           [i64("ax", [-1])], opset=18), (2, 3)),
    "reduce_sum": (graph_model([node("ReduceSum", ["obs", "ax"], ["y"], keepdims=0)], [2, 3], ["b", 3],
                               [i64("ax", [1])], opset=13), (2, 3)),
    "greater_where": (graph_model([node("Greater", ["obs", "t"], ["c"]), node("Less", ["obs", "t"], ["c2"]),
                                   node("Where", ["c", "obs", "z"], ["w"]), node("Where", ["c2", "w", "t"], ["y"])],
                                  [4], ["b", 4], [f32("t", 0.25), f32("z", [[1, 2, 3, 4]])]), (4,)),
    "concat_negative_axis": (graph_model([node("Erf", ["obs"], ["e"]), node("Concat", ["obs", "e", "obs"], ["y"], axis=-1)],
                                         [2, 3], ["b", 2, 9]), (2, 3)),
    "gather_indices_2d": (graph_model([node("Gather", ["obs", "ix"], ["y"], axis=2)], [2, 3], ["b", 2, 2, 2],
                                      [i64("ix", [[0, -1], [2, 1]])]), (2, 3)),
    "slice_steps": (graph_model([node("Slice", ["obs", "s", "e", "a", "st"], ["y"])], [4, 6], ["b", 2, 2],
                                [i64("s", [-1, 0]), i64("e", [-100, 6]), i64("a", [1, 2]), i64("st", [-2, 4])]),
                    (4, 6)),
    "slice_opset9_attrs": (graph_model([node("Slice", ["obs"], ["y"], starts=[1], ends=[3], axes=[1])], [5],
                                       ["b", 2], opset=9), (5,)),
    "reshape_zero_and_minus_one": (graph_model([node("Reshape", ["obs", "sh"], ["y"])], [2, 6], ["b", 3, 4],
                                               [i64("sh", [0, 3, -1])]), (2, 6)),
    "shape_arithmetic": (graph_model([node("Shape", ["obs"], ["shp"]), node("Gather", ["shp", "i0"], ["n"]),
                                      node("Slice", ["shp", "i1", "i9"], ["dims"]),
                                      node("Mul", ["dims", "two"], ["dims2"]),
                                      node("Div", ["dims2", "two"], ["dims3"]),
                                      node("Unsqueeze", ["n", "i0v"], ["n1"]),
                                      node("Concat", ["n1", "dims3"], ["target"], axis=0),
                                      node("Cast", ["target"], ["target64"], to=TensorProto.INT64),
                                      node("Reshape", ["obs", "target64"], ["r"]),
                                      node("Squeeze", ["r", "i2v"], ["y"])],
                                     [3, 1], ["b", 3], [i64("i0", 0), i64("i1", [1]), i64("i9", [9]), i64("two", 2),
                                                        i64("i0v", [0]), i64("i2v", [2])]), (3, 1)),
    "unsqueeze_opset11_attr": (graph_model([node("Unsqueeze", ["obs"], ["u"], axes=[1, -1]),
                                            node("Squeeze", ["u"], ["y"], axes=[1])], [3], ["b", 3, 1], opset=11),
                               (3,)),
    "cast_to_float_and_int_constant": (graph_model([node("Cast", ["obs"], ["c"], to=TensorProto.FLOAT),
                                                    node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
                                                    node("Add", ["c", "kf"], ["y"])], [3], ["b", 3],
                                                   [i64("k", [1, 2, 3])]), (3,)),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_each_op_form_matches_onnxruntime(name):
    model, shape = ACCEPTED[name]
    onnx.checker.check_model(model)
    native, ort = load_both(model)
    assert native.backend == "native"
    rng = np.random.default_rng(1)
    for batch in (1, 33):
        obs = rng.uniform(-4, 4, (batch, *shape)).astype(np.float32)
        if name == "softplus_large":
            obs[0, :2] = [60.0, -60.0]  # where exp overflows or underflows
        if name.startswith("sqrt"):
            obs = np.abs(obs) + 0.1
        np.testing.assert_allclose(native.run(obs, native.initial_params()), ort.run(obs, ort.initial_params()),
                                   **TOL)


REFUSED = [
    ([node("Gelu", ["obs"], ["y"], name="g", approximate="erf")], [5], ["b", 5], [], 20,
     "node 'g' (Gelu): attribute approximate must be 'none' or 'tanh', got 'erf'"),
    ([node("LayerNormalization", ["obs", "s"], ["y"], name="ln", stash_type=0)], [5], ["b", 5], [f32("s", np.ones(5))], 17,
     "node 'ln' (LayerNormalization): stash_type 0 is not supported (only 1: float)"),
    ([node("LayerNormalization", ["obs", "s"], ["y"], name="ln")], [5], ["b", 5], [f32("s", np.ones(4))], 17,
     "node 'ln' (LayerNormalization): Scale 's' has shape (4,), expected the normalised shape (5,)"),
    ([node("LayerNormalization", ["obs", "s"], ["y"], name="ln", axis=0)], [5], ["b", 5], [f32("s", np.ones(5))], 17,
     "node 'ln' (LayerNormalization): normalised axis 0 of input 'obs' (batch, 5) is the batch dimension, which a "
     "policy never mixes"),
    ([node("ReduceMean", ["obs"], ["y"], name="rm", keepdims=0)], [5], ["b"], [], 17,
     "node 'rm' (ReduceMean): reduced axis 0 of input 'obs' (batch, 5) is the batch dimension, which a policy "
     "never mixes"),
    ([node("ReduceMean", ["obs"], ["y"], name="rm", axes=[1, 3])], [2, 3, 4], ["b", 1, 3, 1], [], 17,
     "node 'rm' (ReduceMean): axes [1, 3] are not contiguous; only a run of adjacent axes is supported"),
    ([node("Concat", ["obs", "obs"], ["y"], name="cat", axis=0)], [5], ["b", 5], [], 17,
     "node 'cat' (Concat): concatenation axis 0 of input 'obs' (batch, 5) is the batch dimension, which a policy "
     "never mixes"),
    ([node("Gather", ["obs", "ix"], ["y"], name="ga", axis=1)], [5], ["b"], [i64("ix", 5)], 17,
     "node 'ga' (Gather): index 5 is out of range [-5, 4] for axis 1 of 'obs' (batch, 5)"),
    ([node("Gather", ["obs", "ix"], ["y"], name="ga", axis=1)], [5], ["b"], [f32("ix", 1.0)], 17,
     "node 'ga' (Gather): indices 'ix' must be an integer tensor known when the graph is built (a constant or "
     "computed from shapes), got a float tensor of shape ()"),
    ([node("Concat", ["obs", "k"], ["y"], name="cat", axis=-1)], [2, 3], ["b", 2, 4], [f32("k", np.ones((1, 2, 1)))], 17,
     "node 'cat' (Concat): input 'k' has shape (1, 2, 1), expected (batch, 2, 3) but for axis 2"),
    ([node("Slice", ["obs", "s", "e", "a"], ["y"], name="sl")], [5], ["b", 5], [i64("s", [1]), i64("e", [3]),
                                                                              i64("a", [0])], 17,
     "node 'sl' (Slice): slicing axis 0 of input 'obs' (batch, 5) (the batch dimension) from 1 to 3; only the "
     "whole batch is supported"),
    ([node("Reshape", ["obs", "sh"], ["y"], name="rs")], [6], ["b", 4], [i64("sh", [-1, 4])], 17,
     "node 'rs' (Reshape): cannot reshape 'obs' (batch, 6) to [-1, 4]: 6 is not a multiple of 4"),
    ([node("Shape", ["obs"], ["shp"], name="sh"), node("Reshape", ["obs", "shp"], ["r"], name="rs"),
      node("Flatten", ["r"], ["y"], name="fl")], [6], ["b", 6], [], 17, None),
    ([node("Squeeze", ["obs", "ax"], ["y"], name="sq")], [5], ["b"], [i64("ax", [1])], 17,
     "node 'sq' (Squeeze): cannot squeeze axis 1 of 'obs' (batch, 5): its size is 5, not 1"),
    ([node("Greater", ["obs", "obs"], ["c"], name="gt"), node("Add", ["c", "obs"], ["y"], name="add")], [5], ["b", 5],
     [], 17, "node 'add' (Add): input 'c' is a boolean tensor; only Where's condition may be one"),
    ([node("Where", ["obs", "obs", "obs"], ["y"], name="wh")], [5], ["b", 5], [], 17,
     "node 'wh' (Where): the condition 'obs' must be a boolean tensor computed by Greater or Less"),
    ([node("Add", ["obs", "k"], ["y"], name="add")], [3], ["b", 3], [i64("k", [1, 2, 3])], 17,
     "node 'add' (Add): input 'k' is an integer tensor (shapes, axes and indices only); the native policy "
     "computes on FLOAT tensors only"),
    ([node("Cast", ["obs"], ["y"], name="c", to=TensorProto.INT64)], [3], ["b", 3], [], 17,
     "node 'c' (Cast): casts the float tensor 'obs' to an integer type; the native policy computes on FLOAT "
     "tensors only"),
    ([node("Sin", ["obs"], ["y"], name="s")], [3], ["b", 3], [], 17,
     "node 's' (Sin): op Sin is not supported"),
]


@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_refusals_name_the_node_and_fall_back(case):
    nodes, obs_dims, out_dims, inits, opset, message = REFUSED[case]
    model = graph_model(nodes, obs_dims, out_dims, inits, opset=opset)
    if message is None:  # a control: the same kind of graph, accepted
        assert OnnxPolicy.from_model(model, backend="native").backend == "native"
        return
    with pytest.raises(NotSupportedError) as info:
        OnnxPolicy.from_model(model, source="m.onnx", backend="native")
    assert str(info.value).startswith(f"m.onnx: native backend: {message}"), str(info.value)
    assert "\n" not in str(info.value)


# ---- fresh exports (needs torch) ---------------------------------------------------


@pytest.mark.slow
def test_fresh_torch_exports_match_onnxruntime():
    """The models of make_torch_ops.py exported now (dynamo needs onnxscript;
    the TorchScript exporter at opset 17 does not)."""
    pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_torch_ops", TORCH_OPS / "make_torch_ops.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    opsets = [17] + ([None] if importlib.util.find_spec("onnxscript") else [])
    rng = np.random.default_rng(0)
    for name, (module, shape) in mod.models().items():
        for opset in opsets:
            model = onnx.load_from_string(mod.export(module, shape, opset))
            native, ort = load_both(model, source=f"{name}-{opset}")
            assert native.backend == "native", name
            obs = rng.uniform(-3, 3, (16, *shape)).astype(np.float32)
            np.testing.assert_allclose(native.run(obs, native.initial_params()),
                                       ort.run(obs, ort.initial_params()), **TOL)
            if name == "softplus_beta" and opset == 17:
                continue  # the TorchScript exporter drops Softplus's threshold: torch itself differs
            expected = module(__import__("torch").from_numpy(obs)).detach().numpy()
            np.testing.assert_allclose(native.run(obs, native.initial_params()), expected, rtol=1e-4,
                                       atol=1e-5, err_msg=f"{name} opset {opset}")
