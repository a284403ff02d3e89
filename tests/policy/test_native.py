"""The native backend (evokit.policy.native) against onnxruntime: random MLPs, the
PyTorch fixture, populations from noise keys, fallback, thread invariance."""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import evokit
from evokit import _core
from evokit.errors import ModelError, NativeFallbackWarning, NotSupportedError
from evokit.policy.mlp import init_mlp
from evokit.policy.native import SUPPORTED_OPS, NativePolicy
from evokit.policy.onnx_policy import OnnxPolicy

from helpers import FIXTURES

TORCH_ONNX = Path(FIXTURES, "torch_mlp.onnx")
TORCH_REF = Path(FIXTURES, "torch_mlp_reference.npz")
TOL = dict(rtol=1e-5, atol=1e-5)
ACTS = ["Tanh", "Relu", "Sigmoid", "Identity"]


def random_mlp(seed: int) -> onnx.ModelProto:
    """A random feed-forward policy: random depth and widths, each layer a Gemm
    (transB 0 or 1, random alpha/beta, bias (n,) or (1, n)) or a MatMul + Add,
    random hidden activations, sometimes a Softmax head."""
    rng = np.random.default_rng(seed)
    obs_dim = int(rng.integers(1, 12))
    widths = [int(w) for w in rng.integers(1, 65, size=rng.integers(0, 4))] + [int(rng.integers(1, 7))]
    nodes, inits = [], []
    x, n_in = "obs", obs_dim
    for i, n_out in enumerate(widths):
        p = f"l{i}"
        trans_b = bool(rng.integers(2))
        w = rng.standard_normal((n_out, n_in) if trans_b else (n_in, n_out)).astype(np.float32)
        b = rng.standard_normal((n_out,) if rng.integers(2) else (1, n_out)).astype(np.float32)
        inits += [numpy_helper.from_array((w / np.sqrt(n_in)).astype(np.float32), f"{p}.w"), numpy_helper.from_array(b, f"{p}.b")]
        y = f"{p}.y"
        if trans_b or rng.integers(2):
            attrs = {"transB": int(trans_b)}
            if rng.integers(3) == 0:
                attrs.update(alpha=float(rng.uniform(0.5, 2)), beta=float(rng.uniform(0.5, 2)))
            nodes.append(helper.make_node("Gemm", [x, f"{p}.w", f"{p}.b"], [y], name=f"{p}.gemm", **attrs))
        else:
            nodes.append(helper.make_node("MatMul", [x, f"{p}.w"], [f"{p}.mm"]))
            nodes.append(helper.make_node("Add", [f"{p}.mm", f"{p}.b"], [y]))
        x = y
        if i + 1 < len(widths):
            act = ACTS[int(rng.integers(len(ACTS)))]
            nodes.append(helper.make_node(act, [x], [f"{p}.a"]))
            x = f"{p}.a"
        elif rng.integers(2):
            nodes.append(helper.make_node("Softmax", [x], ["probs"], axis=-1))
            x = "probs"
        n_in = n_out
    graph = helper.make_graph(
        nodes, "random_mlp",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", n_in])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def both(model, **kw):
    return (OnnxPolicy.from_model(model, backend="native", **kw),
            OnnxPolicy.from_model(model, backend="onnxruntime", **kw))


def sampler_for(num_params, cached=True, sigma=0.1):
    return _core.GaussianSampler(7, sigma, cached, num_params + 20000, num_params)


# ---- one member ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_random_mlps_match_onnxruntime(seed):
    native, ort = both(random_mlp(seed))
    assert native.backend == "native" and ort.backend == "onnxruntime"
    rng = np.random.default_rng(1000 + seed)
    obs_dim = native.obs_shape[0]
    for batch in (1, 3, 17):
        obs = (2 * rng.standard_normal((batch, obs_dim))).astype(np.float32)
        params = (native.initial_params() * rng.uniform(0.5, 2)).astype(np.float32)
        np.testing.assert_allclose(native.run(obs, params), ort.run(obs, params), **TOL)
    one = native.run(obs[0], params)
    assert one.shape == ort.run(obs[0], params).shape
    np.testing.assert_array_equal(one, native.run(obs[:1], params)[0])


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid", "identity"])
@pytest.mark.parametrize("hidden", [(), (8,), (64, 64), (5, 7, 3)])
def test_init_mlp_matches_onnxruntime(activation, hidden):
    native, ort = both(init_mlp(4, 3, hidden, activation, seed=2))
    rng = np.random.default_rng(0)
    obs = (3 * rng.standard_normal((33, 4))).astype(np.float32)
    params = (0.7 * rng.standard_normal(native.num_params)).astype(np.float32)
    np.testing.assert_allclose(native.run(obs, params), ort.run(obs, params), **TOL)


def test_torch_fixture_matches_onnxruntime_and_torch():
    ref = np.load(TORCH_REF)
    native, ort = OnnxPolicy.load(TORCH_ONNX, backend="native"), OnnxPolicy.load(TORCH_ONNX, backend="onnxruntime")
    assert OnnxPolicy.load(TORCH_ONNX).backend == "native"  # auto: no warning (filterwarnings=error)
    params = native.initial_params()
    np.testing.assert_allclose(native.run(ref["inputs"], params), ref["outputs"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(native.run(ref["inputs"], params), ort.run(ref["inputs"], params), **TOL)
    perturbed = params + np.float32(0.3) * np.random.default_rng(4).standard_normal(params.size).astype(np.float32)
    np.testing.assert_allclose(native.run(ref["inputs"], perturbed), ort.run(ref["inputs"], perturbed), **TOL)


def test_tanh_is_close_to_numpy_everywhere():
    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    g = _core.PolicyGraph()
    g.add_input("x", [x.size])
    g.add_node("Tanh", ["x"], ["y"])
    g.add_output("y")
    y = g.run(x[np.newaxis], np.zeros(0, np.float32))[0]
    assert np.max(np.abs(y.astype(np.float64) - np.tanh(x.astype(np.float64)))) < 1e-6


def test_constant_nodes_and_flatten_run_natively():
    """A Constant node holding a float tensor and a Flatten of a (batch, 2, 3) input."""
    w = np.arange(12, dtype=np.float32).reshape(6, 2) / 10
    nodes = [
        helper.make_node("Flatten", ["obs"], ["flat"], axis=1),
        helper.make_node("Constant", [], ["offset"], value=numpy_helper.from_array(np.array([0.5, -1], np.float32))),
        helper.make_node("MatMul", ["flat", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "offset"], ["out"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["N", 2, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 2])],
                              initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    native, ort = both(model)
    obs = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(native.run(obs, native.initial_params()), ort.run(obs, ort.initial_params()), **TOL)


def test_param_pattern_keeps_other_floats_as_constants():
    model = init_mlp(4, 2, (8,), seed=1)
    native, ort = both(model, param_pattern=r".*\.bias")
    assert native.num_params == 8 + 2
    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    params = np.random.default_rng(1).standard_normal(10).astype(np.float32)
    np.testing.assert_allclose(native.run(obs, params), ort.run(obs, params), **TOL)


# ---- populations ----------------------------------------------------------------


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_run_population_equals_each_member_through_onnxruntime(seed, cached):
    native, ort = both(random_mlp(100 + seed))
    sampler = sampler_for(native.num_params, cached, sigma=0.3)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    keys = np.array([sampler.draw_key(seed, i // 2, 0) for i in range(n)])
    signs = np.where(np.arange(n) % 2, -1.0, 1.0).astype(np.float32)
    signs[-1] = 0 if seed % 2 else signs[-1]  # now and then the centre itself
    centre = native.initial_params()
    obs = rng.standard_normal((n,) + native.obs_shape).astype(np.float32)
    out = native.native.run_population(obs, centre, keys, signs, sampler)
    for i in range(n):
        member = centre if signs[i] == 0 else sampler.perturb(centre, int(keys[i]), float(signs[i]))
        np.testing.assert_allclose(out[i], ort.run(obs[i], member), **TOL)
        # and the very bits of the clone's own prediction (the native run of perturb's vector)
        np.testing.assert_array_equal(out[i], native.run(obs[i], member))


def test_run_population_params_equals_each_row():
    native, ort = both(random_mlp(7))
    rng = np.random.default_rng(0)
    params = (native.initial_params() + 0.2 * rng.standard_normal((9, native.num_params))).astype(np.float32)
    obs = rng.standard_normal((9,) + native.obs_shape).astype(np.float32)
    out = native.native.run_population_params(obs, params)
    for i in range(9):
        np.testing.assert_allclose(out[i], ort.run(obs[i], params[i]), **TOL)
        np.testing.assert_array_equal(out[i], native.run(obs[i], params[i]))


def test_population_is_bit_identical_for_any_thread_count():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (64, 64), seed=0))
    sampler = sampler_for(pol.num_params)
    n = 256
    keys = np.array([sampler.draw_key(0, i // 2, 0) for i in range(n)])
    signs = np.where(np.arange(n) % 2, -1.0, 1.0)
    obs = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    runs = [pol.native.run_population(obs, pol.initial_params(), keys, signs, sampler, num_threads=t)
            for t in (1, 2, 3, 8)]
    for r in runs[1:]:
        assert r.tobytes() == runs[0].tobytes()
    params = np.stack([sampler.perturb(pol.initial_params(), int(k), float(s)) for k, s in zip(keys, signs)])
    assert pol.native.run_population_params(obs, params, num_threads=2).tobytes() == runs[0].tobytes()


def test_inactive_members_are_masked_out():
    pol = OnnxPolicy.from_model(init_mlp(4, 3, (8,), seed=0))
    sampler = sampler_for(pol.num_params)
    native = pol.native
    pop = native.population(pol.initial_params(), [5, 5, 9, 9], [1, -1, 1, -1], sampler)
    obs = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    full = native.run_members(obs, pop)
    out = np.full((4, 3), 42.0, np.float32)
    got = native.run_members(obs, pop, active=np.array([True, False, True, False]), out=out)
    assert got is out
    np.testing.assert_array_equal(out[[0, 2]], full[[0, 2]])
    assert (out[[1, 3]] == 42.0).all()
    fresh = native.run_members(obs, pop, active=[False, True, False, False])
    np.testing.assert_array_equal(fresh[1], full[1])
    assert (fresh[[0, 2, 3]] == 0).all()


def test_population_errors():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=0), source="p.onnx")
    native = pol.native
    sampler = sampler_for(pol.num_params)
    centre = pol.initial_params()
    obs = np.zeros((2, 4), np.float32)
    with pytest.raises(ModelError, match=re.escape("p.onnx: obs has shape (3, 4), expected (2, 4)")):
        native.run_population(np.zeros((3, 4)), centre, [1, 2], [1, -1], sampler)
    with pytest.raises(ValueError, match=re.escape("signs must have shape (2,), got (1,)")):
        native.run_population(obs, centre, [1, 2], [1], sampler)
    with pytest.raises(ValueError, match="sign of member 1 must be \\+1, -1 or 0"):
        native.run_population(obs, centre, [1, 2], [1, 2], sampler)
    with pytest.raises(IndexError, match="member 1: key 999999"):
        native.run_population(obs, centre, [1, 999999], [1, -1], sampler)
    with pytest.raises(ModelError, match="the sampler draws noise for 10 parameters"):
        native.run_population(obs, centre, [1, 2], [1, -1], sampler_for(10))
    with pytest.raises(ModelError, match=re.escape("p.onnx: centre has shape (3,)")):
        native.run_population(obs, centre[:3], [1, 2], [1, -1], sampler)
    with pytest.raises(ModelError, match=re.escape(f"params has shape (2, 5), expected (2, {pol.num_params})")):
        native.run_population_params(obs, np.zeros((2, 5)))
    with pytest.raises(ValueError, match=re.escape("active has shape (3,), expected (2,)")):
        native.run_members(obs, native.population(centre, [1, 2], [1, -1], sampler), active=[1, 1, 1])
    with pytest.raises(ValueError, match="num_threads must be >= 1, got 0"):
        native.run_population(obs, centre, [1, 2], [1, -1], sampler, num_threads=0)


# ---- backends and fallback --------------------------------------------------------


def unsupported_model():
    """y = Sin(x W): Sin is not a native op."""
    w = numpy_helper.from_array(np.ones((3, 2), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("Sin", ["h"], ["y"], name="act")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 2])], initializer=[w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_unsupported_op_falls_back_with_exactly_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pol = OnnxPolicy.from_model(unsupported_model(), source="sin.onnx")
        out = pol.run(-np.ones((2, 3), np.float32), pol.initial_params())
        pol.run(np.ones(3, np.float32), pol.initial_params())
        clone = pickle.loads(pickle.dumps(pol))  # a worker process: no second warning
        clone.run(np.ones(3, np.float32), clone.initial_params())
    assert [type(w.message) for w in caught] == [NativeFallbackWarning]
    assert str(caught[0].message) == (
        "sin.onnx: native backend: node 'act' (Sin): op Sin is not supported (supported: "
        "Gemm, MatMul, Add, Relu, Tanh, Sigmoid, Softmax, Identity, Flatten, Sub, Mul, Div, Clip, "
        "LayerNormalization, Gelu, Erf, LeakyRelu, Elu, Selu, Softplus, Mish, Sqrt, Pow, ReduceMean, "
        "Greater, Less, Where, Concat, Gather, Slice, Reshape, Squeeze, Unsqueeze, Dropout, Cast, Shape, "
        "ReduceSum, LSTM, GRU, Transpose, Constant); running the model on onnxruntime instead (backend='auto')")
    assert pol.backend == clone.backend == "onnxruntime" and pol.native is None
    assert "Sin" in pol.fallback_reason
    np.testing.assert_allclose(out, np.full((2, 2), np.sin(-3.0)), rtol=1e-6)


def test_unsupported_op_under_native_is_an_error():
    with pytest.raises(NotSupportedError, match=re.escape(
            "sin.onnx: native backend: node 'act' (Sin): op Sin is not supported")):
        OnnxPolicy.from_model(unsupported_model(), source="sin.onnx", backend="native")
    with pytest.raises(NotSupportedError, match=re.escape("node #0 (Sin)")):
        bad = init_mlp(4, 2, (8,))
        bad.graph.node.insert(0, helper.make_node("Sin", ["obs"], ["obs2"]))
        bad.graph.node[1].input[0] = "obs2"
        OnnxPolicy.from_model(bad, backend="native")
    policy = OnnxPolicy.from_model(unsupported_model(), backend="onnxruntime")
    with pytest.raises(NotSupportedError, match="Sin"):
        NativePolicy.from_onnx_policy(policy)


def test_onnxruntime_backend_is_unchanged_and_warns_nothing():
    pol = OnnxPolicy.from_model(unsupported_model(), backend="onnxruntime")
    assert pol.backend == "onnxruntime" and pol.fallback_reason is None
    mlp = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=1), backend="onnxruntime")
    assert mlp.native is None
    obs = np.ones((3, 4), np.float32)
    mlp.run(obs, mlp.initial_params())
    assert mlp._session is not None  # the shared onnxruntime session


def test_bad_backend_names_the_choices():
    with pytest.raises(ModelError, match=re.escape(
            "<memory>: backend must be one of 'auto', 'native', 'onnxruntime', got 'cuda'")):
        OnnxPolicy.from_model(init_mlp(4, 2), backend="cuda")


def test_symbolic_feature_dimension_is_not_supported_natively():
    model = init_mlp(4, 2, (8,))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "features"
    with pytest.raises(NotSupportedError, match="needs fixed feature sizes"):
        OnnxPolicy.from_model(model, backend="native")


def test_pickle_keeps_the_backend():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=1))
    assert pickle.loads(pickle.dumps(pol)).backend == "native"
    ort = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=1), backend="onnxruntime")
    assert pickle.loads(pickle.dumps(ort)).backend == "onnxruntime"


def test_agent_backend_from_config_and_argument(tmp_path, mlp_path, seed_config):
    agent = evokit.ESAgent(seed_config, mlp_path)
    assert agent.policy.backend == "native"
    cfg = evokit.load_config(seed_config)
    cfg.solver.backend = "onnxruntime"
    agent = evokit.ESAgent(cfg, mlp_path)
    assert agent.policy.backend == "onnxruntime"
    agent = evokit.ESAgent()
    agent.load_config(cfg)
    agent.load_inference_model(mlp_path, backend="native")
    assert agent.policy.backend == "native"
    # predictions agree across backends
    obs = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(agent.predict(obs), evokit.ESAgent(cfg, mlp_path).predict(obs), **TOL)


def test_config_backend_is_validated(tmp_path):
    path = tmp_path / "bad.prototxt"
    path.write_text('solver {\n  backend: "gpu"\n}\n')
    with pytest.raises(evokit.ConfigError, match=re.escape(
            f"{path}:2: solver.backend must be one of auto, native, onnxruntime, got 'gpu'")):
        evokit.load_config(path)
    assert evokit.EvoKitConfig().solver.backend == "auto"
