"""Tests for evokit.policy.onnx_policy and evokit.policy.mlp (ONNX policies).

Must not import torch."""

from __future__ import annotations

import os
import pickle
import re
import threading
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from evokit.errors import ModelError
from evokit.policy.mlp import init_mlp, policy_for_spaces, with_action_mapping
from evokit.policy.onnx_policy import OnnxPolicy, select_action

from helpers import FIXTURES

TORCH_ONNX = Path(FIXTURES, "torch_mlp.onnx")
TORCH_REF = Path(FIXTURES, "torch_mlp_reference.npz")

ACTS = {
    "tanh": np.tanh,
    "relu": lambda z: np.maximum(z, 0.0),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "identity": lambda z: z,
}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def split_mlp_params(flat, obs_dim, act_dim, hidden):
    """Split a flat vector by the documented layout of init_mlp's parameters:
    per layer, weight [in, out] (C order) then bias [out]; head last."""
    flat = np.asarray(flat, np.float64)
    layers, off, n_in = [], 0, obs_dim
    for n_out in [*hidden, act_dim]:
        w = flat[off:off + n_in * n_out].reshape(n_in, n_out)
        off += n_in * n_out
        b = flat[off:off + n_out]
        off += n_out
        layers.append((w, b))
        n_in = n_out
    assert off == flat.size
    return layers


def np_forward(obs, layers, activation):
    x = np.asarray(obs, np.float64)
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i < len(layers) - 1:
            x = ACTS[activation](x)
    return x


def rand_obs(n, dim, seed=0):
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def rand_params(pol, seed=1, scale=0.5):
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal(pol.num_params)).astype(np.float32)


def int_only_model():
    """A valid model whose only initializer is int64: y = x + k."""
    k = numpy_helper.from_array(np.array([1, 2, 3], np.int64), "k")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "k"], ["y"])],
        "int_only",
        [helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 3])],
        initializer=[k],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def mixed_model():
    """torch-export style: MatMul/Add with float weights plus an int64 Reshape
    shape initializer and a Constant node.  obs [batch, 2, 3] -> [batch, 2]."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 2)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    shape = np.array([-1, 6], np.int64)
    nodes = [
        helper.make_node("Reshape", ["obs", "flat_shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc.weight"], ["mm"]),
        helper.make_node("Add", ["mm", "fc.bias"], ["pre"]),
        helper.make_node(
            "Constant", [], ["two"],
            value=numpy_helper.from_array(np.array(2.0, np.float32), "two_v"),
        ),
        helper.make_node("Mul", ["pre", "two"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["N", 2, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 2])],
        initializer=[
            numpy_helper.from_array(shape, "flat_shape"),
            numpy_helper.from_array(w, "fc.weight"),
            numpy_helper.from_array(b, "fc.bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model, w, b


# --------------------------------------------------------------------------
# init_mlp
# --------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("hidden", [(), (8,), (16, 16), (5, 7, 3)])
def test_init_mlp_matches_numpy_forward(activation, discrete, hidden):
    obs_dim, act_dim = 4, 3
    model = init_mlp(obs_dim, act_dim, hidden, activation, discrete=discrete, seed=5)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    pol = OnnxPolicy.from_model(model)
    expected_n = sum(a * b + b for a, b in zip([obs_dim, *hidden], [*hidden, act_dim]))
    assert pol.num_params == expected_n
    assert pol.input_name == "obs" and pol.output_name == "action"
    assert pol.obs_shape == (obs_dim,)

    obs = rand_obs(10, obs_dim) * 2
    # The model's own initial parameters, read from the initializers.
    init = pol.initial_params()
    assert init.dtype == np.float32 and init.shape == (expected_n,)
    got = pol.run(obs, init)
    want = np_forward(obs, split_mlp_params(init, obs_dim, act_dim, hidden), activation)
    assert got.shape == (10, act_dim) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)

    # Arbitrary parameters fed through the rewritten graph.
    params = rand_params(pol, seed=11)
    got = pol.run(obs, params)
    want = np_forward(obs, split_mlp_params(params, obs_dim, act_dim, hidden), activation)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("activation", ["sigmoid", "identity"])
def test_init_mlp_other_activations(activation):
    pol = OnnxPolicy.from_model(init_mlp(3, 2, (6,), activation, seed=2))
    obs = rand_obs(5, 3)
    params = rand_params(pol)
    want = np_forward(obs, split_mlp_params(params, 3, 2, (6,)), activation)
    np.testing.assert_allclose(pol.run(obs, params), want, rtol=1e-6, atol=1e-6)


def test_init_mlp_normc_initialisation():
    model = init_mlp(5, 3, (7, 4), seed=9)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert inits["layer0.weight"].shape == (5, 7)
    assert inits["layer1.weight"].shape == (7, 4)
    assert inits["head.weight"].shape == (4, 3)
    for name, gain in [("layer0", 1.0), ("layer1", 1.0), ("head", 0.01)]:
        norms = np.linalg.norm(inits[f"{name}.weight"].astype(np.float64), axis=0)
        np.testing.assert_allclose(norms, gain, rtol=1e-5)
        assert not np.any(inits[f"{name}.bias"])
    assert all(t.data_type == TensorProto.FLOAT for t in model.graph.initializer)
    # symbolic batch dim on the input and output
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param


def test_init_mlp_deterministic_per_seed():
    a = init_mlp(4, 2, (16,), seed=3)
    b = init_mlp(4, 2, (16,), seed=3)
    c = init_mlp(4, 2, (16,), seed=4)
    assert a.SerializeToString() == b.SerializeToString()
    pa, pc = OnnxPolicy.from_model(a), OnnxPolicy.from_model(c)
    np.testing.assert_array_equal(pa.initial_params(), OnnxPolicy.from_model(b).initial_params())
    assert not np.allclose(pa.initial_params(), pc.initial_params())
    obs = rand_obs(4, 4)
    assert not np.allclose(pa.run(obs, pa.initial_params()), pc.run(obs, pc.initial_params()))


def test_init_mlp_discrete_and_continuous_metadata():
    d = init_mlp(3, 2, discrete=True)
    c = init_mlp(3, 2, discrete=False)
    meta = lambda m: {p.key: p.value for p in m.metadata_props}
    assert meta(d)["evokit.action_kind"] == "discrete"
    assert meta(c)["evokit.action_kind"] == "continuous"


@pytest.mark.parametrize("kwargs, match", [
    (dict(obs_dim=0, act_dim=2), "obs_dim"),
    (dict(obs_dim=3, act_dim=0), "act_dim"),
    (dict(obs_dim=3, act_dim=2, hidden_sizes=(4, 0)), "hidden_sizes"),
    (dict(obs_dim=3, act_dim=2, activation="gelu"), "unknown activation 'gelu'"),
])
def test_init_mlp_bad_arguments(kwargs, match):
    with pytest.raises(ModelError, match=match):
        init_mlp(**kwargs)


# --------------------------------------------------------------------------
# run() inputs
# --------------------------------------------------------------------------


def test_run_single_observation_drops_batch_dim():
    pol = OnnxPolicy.from_model(init_mlp(4, 3, (8,), seed=1))
    params = rand_params(pol)
    obs = rand_obs(6, 4)
    batch = pol.run(obs, params)
    for i in range(6):
        single = pol.run(obs[i], params)
        assert single.shape == (3,)
        np.testing.assert_allclose(single, batch[i], rtol=1e-6, atol=1e-7)


def test_run_converts_obs_and_float64_params():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=1))
    params = rand_params(pol)
    obs = rand_obs(3, 4)
    want = pol.run(obs, params)
    # float64 / list observations and float64 params are converted to float32
    np.testing.assert_array_equal(pol.run(obs.astype(np.float64), params), want)
    np.testing.assert_array_equal(pol.run(obs.tolist(), params), want)
    np.testing.assert_array_equal(pol.run(obs, params.astype(np.float64)), want)
    np.testing.assert_array_equal(pol.run(obs, params.tolist()), want)


def test_run_wrong_obs_shape():
    pol = OnnxPolicy.from_model(init_mlp(4, 2))
    p = pol.initial_params()
    with pytest.raises(ModelError, match=re.escape(
            "<memory>: observation has shape (3,), expected (4,) or (batch, 4)")):
        pol.run(np.zeros(3, np.float32), p)
    with pytest.raises(ModelError, match=re.escape("observation has shape (2, 5), expected")):
        pol.run(np.zeros((2, 5), np.float32), p)
    with pytest.raises(ModelError, match=re.escape("observation has shape (2, 2, 4)")):
        pol.run(np.zeros((2, 2, 4), np.float32), p)


def test_run_wrong_params():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,)), source="policy.onnx")
    obs = rand_obs(2, 4)
    n = pol.num_params
    with pytest.raises(ModelError, match=rf"policy\.onnx: params has shape \({n - 1},\).*num_params={n}"):
        pol.run(obs, np.zeros(n - 1, np.float32))
    with pytest.raises(ModelError, match=rf"num_params={n}"):
        pol.run(obs, np.zeros((1, n), np.float32))
    with pytest.raises(ModelError, match=r"policy\.onnx: params must be a floating-point array, got dtype int64"):
        pol.run(obs, np.zeros(n, np.int64))


def test_concurrent_threads_share_one_session():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (16,), seed=0))
    obs = rand_obs(32, 4)
    params = [rand_params(pol, seed=s) for s in range(8)]
    want = [np_forward(obs, split_mlp_params(p, 4, 2, (16,)), "tanh") for p in params]
    results, errors = [None] * 8, []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()
            results[i] = pol.run(obs, params[i])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got, exp in zip(results, want):
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-6)
    session = pol._session
    pol.run(obs, params[0])
    assert pol._session is session


# --------------------------------------------------------------------------
# save / to_model / load
# --------------------------------------------------------------------------


def test_save_roundtrip_fresh_session(tmp_path):
    pol = OnnxPolicy.from_model(init_mlp(4, 3, (8, 8), "relu", seed=2))
    params = rand_params(pol, seed=21)
    path = tmp_path / "a" / "b" / "policy.onnx"  # parent dirs are created
    pol.save(path, params)
    assert path.is_file()
    assert sorted(os.listdir(path.parent)) == ["policy.onnx"]  # no temp file left

    saved = onnx.load(str(path))
    onnx.checker.check_model(saved, full_check=True)
    assert saved.ir_version == 8
    assert [i.name for i in saved.graph.input] == ["obs"]
    assert [t.name for t in saved.graph.initializer] == pol.param_names
    for t in saved.graph.initializer:
        assert t.data_type == TensorProto.FLOAT

    obs = rand_obs(7, 4)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    fresh = sess.run(None, {"obs": obs})[0]
    np.testing.assert_allclose(fresh, pol.run(obs, params), rtol=1e-6, atol=1e-6)

    back = OnnxPolicy.load(path)
    assert back.source == str(path)
    np.testing.assert_array_equal(back.initial_params(), params)
    np.testing.assert_array_equal(back.run(obs, back.initial_params()), pol.run(obs, params))
    # the original policy is unchanged by saving
    assert not np.array_equal(pol.initial_params(), params)


def test_save_overwrites_and_is_atomic(tmp_path, monkeypatch):
    pol = OnnxPolicy.from_model(init_mlp(3, 2, (4,), seed=0))
    path = tmp_path / "p.onnx"
    first = rand_params(pol, seed=1)
    pol.save(str(path), first)
    before = path.read_bytes()
    second = rand_params(pol, seed=2)
    pol.save(path, second)
    np.testing.assert_array_equal(OnnxPolicy.load(path).initial_params(), second)

    # A failure at the final rename leaves the previous file intact and no temp file.
    current = path.read_bytes()
    assert current != before

    def boom(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ModelError, match=r"p.onnx: cannot write it \(simulated crash\)$"):
        pol.save(path, first)
    monkeypatch.undo()
    assert path.read_bytes() == current
    assert os.listdir(tmp_path) == ["p.onnx"]


def test_save_and_to_model_wrong_params(tmp_path):
    pol = OnnxPolicy.from_model(init_mlp(3, 2, (4,)))
    n = pol.num_params
    with pytest.raises(ModelError, match=rf"expected a flat vector of num_params={n}"):
        pol.save(tmp_path / "x.onnx", np.zeros(n + 1, np.float32))
    assert not (tmp_path / "x.onnx").exists()
    assert os.listdir(tmp_path) == []
    with pytest.raises(ModelError, match=rf"num_params={n}"):
        pol.to_model(np.zeros(2, np.float32))


def test_to_model_in_memory_matches_run():
    model = init_mlp(4, 2, (6,), seed=8)
    pol = OnnxPolicy.from_model(model)
    params = rand_params(pol, seed=4)
    out = pol.to_model(params)
    # the input model is not mutated by from_model / to_model
    assert model.SerializeToString() == init_mlp(4, 2, (6,), seed=8).SerializeToString()
    again = OnnxPolicy.from_model(out)
    np.testing.assert_array_equal(again.initial_params(), params)
    obs = rand_obs(3, 4)
    np.testing.assert_array_equal(again.run(obs, params), pol.run(obs, params))


# --------------------------------------------------------------------------
# param_pattern
# --------------------------------------------------------------------------


def test_param_pattern_selects_biases_only(tmp_path):
    hidden = (5, 6)
    model = init_mlp(4, 3, hidden, seed=6)
    full = OnnxPolicy.from_model(model)
    pol = OnnxPolicy.from_model(model, param_pattern=r".*\.bias")
    assert pol.param_pattern == r".*\.bias"
    assert pol.param_names == ["layer0.bias", "layer1.bias", "head.bias"]
    assert pol.param_shapes == [(5,), (6,), (3,)]
    assert pol.num_params == 5 + 6 + 3
    np.testing.assert_array_equal(pol.initial_params(), np.zeros(14, np.float32))

    biases = rand_params(pol, seed=3)
    # Build the equivalent full vector: original weights, new biases.
    full_params = full.initial_params()
    layers = split_mlp_params(full_params, 4, 3, hidden)
    bias_slices = np.split(biases, [5, 11])
    layers = [(w, b) for (w, _), b in zip(layers, bias_slices)]
    obs = rand_obs(8, 4)
    want = np_forward(obs, layers, "tanh")
    np.testing.assert_allclose(pol.run(obs, biases), want, rtol=1e-6, atol=1e-6)

    # Saved model: weights are the fixed originals, biases replaced.
    pol.save(tmp_path / "b.onnx", biases)
    saved = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(tmp_path / "b.onnx")).graph.initializer}
    orig = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for name in ("layer0.weight", "layer1.weight", "head.weight"):
        np.testing.assert_array_equal(saved[name], orig[name])
    np.testing.assert_array_equal(saved["layer1.bias"], bias_slices[1])
    # A pattern must match the whole name: "bias" alone matches nothing.
    with pytest.raises(ModelError, match="no float32 initializer matches param_pattern 'bias'"):
        OnnxPolicy.from_model(model, param_pattern="bias")


def test_non_float_initializers_stay_constant():
    model, w, b = mixed_model()
    pol = OnnxPolicy.from_model(model)  # the int64 shape is read by the native Reshape
    assert pol.backend == "native"
    assert pol.param_names == ["fc.weight", "fc.bias"]
    assert pol.num_params == 6 * 2 + 2
    assert pol.input_name == "obs"
    assert pol.obs_shape == (2, 3)
    np.testing.assert_array_equal(pol.initial_params(), np.concatenate([w.ravel(), b]))
    obs = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    params = rand_params(pol)
    pw, pb = params[:12].reshape(6, 2), params[12:]
    want = 2.0 * (obs.reshape(5, 6).astype(np.float64) @ pw + pb)
    np.testing.assert_allclose(pol.run(obs, params), want, rtol=1e-6, atol=1e-6)
    ort = OnnxPolicy.from_model(model, backend="onnxruntime")
    np.testing.assert_allclose(ort.run(obs, params), want, rtol=1e-6, atol=1e-6)
    # single observation of shape (2, 3)
    np.testing.assert_allclose(pol.run(obs[0], params), want[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(ModelError, match=re.escape("expected (2, 3) or (batch, 2, 3)")):
        pol.run(np.zeros(6, np.float32), params)
    # the int64 shape stays an initializer in the exported model
    out = pol.to_model(params)
    kinds = {t.name: t.data_type for t in out.graph.initializer}
    assert kinds == {"flat_shape": TensorProto.INT64, "fc.weight": TensorProto.FLOAT,
                     "fc.bias": TensorProto.FLOAT}
    assert [i.name for i in out.graph.input] == ["obs"]


# --------------------------------------------------------------------------
# torch fixture
# --------------------------------------------------------------------------


def test_torch_fixture_matches_torch_reference():
    ref = np.load(TORCH_REF)
    raw = onnx.load(str(TORCH_ONNX))
    assert raw.ir_version <= 8
    assert os.path.getsize(TORCH_ONNX) < 50_000

    pol = OnnxPolicy.load(TORCH_ONNX)
    assert pol.num_params == int(ref["num_params"])
    assert pol.input_name == "obs"
    assert pol.obs_shape == (4,)
    got = pol.run(ref["inputs"], pol.initial_params())
    np.testing.assert_allclose(got, ref["outputs"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(pol.run(ref["inputs"][0], pol.initial_params()),
                               ref["outputs"][0], rtol=0, atol=1e-5)
    # all-zero parameters give a zero output (every layer is affine + odd/zero-preserving act)
    np.testing.assert_array_equal(pol.run(ref["inputs"], np.zeros(pol.num_params, np.float32)),
                                  np.zeros_like(ref["outputs"]))


def test_torch_fixture_save_roundtrip(tmp_path):
    pol = OnnxPolicy.load(TORCH_ONNX)
    params = pol.initial_params() * np.float32(0.5)
    pol.save(tmp_path / "t.onnx", params)
    back = OnnxPolicy.load(tmp_path / "t.onnx")
    assert back.fingerprint() == pol.fingerprint()
    obs = np.load(TORCH_REF)["inputs"]
    np.testing.assert_array_equal(back.run(obs, back.initial_params()), pol.run(obs, params))


# --------------------------------------------------------------------------
# pickling, fingerprint
# --------------------------------------------------------------------------


def test_pickle_roundtrip():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,), seed=1), param_pattern=r"layer0\..*|head\.bias")
    params = rand_params(pol)
    obs = rand_obs(5, 4)
    want = pol.run(obs, params)  # session exists now; it must not be pickled
    clone = pickle.loads(pickle.dumps(pol))
    assert clone._session is None
    assert clone.param_names == pol.param_names == ["layer0.weight", "layer0.bias", "head.bias"]
    assert clone.param_pattern == pol.param_pattern
    assert clone.num_params == pol.num_params
    assert clone.source == pol.source
    assert clone.fingerprint() == pol.fingerprint()
    np.testing.assert_array_equal(clone.initial_params(), pol.initial_params())
    np.testing.assert_array_equal(clone.run(obs, params), want)


def test_fingerprint():
    f = lambda **kw: OnnxPolicy.from_model(init_mlp(4, 2, **kw)).fingerprint()
    a = f(hidden_sizes=(16,), seed=0)
    assert re.fullmatch(r"[0-9a-f]{64}", a)
    assert f(hidden_sizes=(16,), seed=1) == a
    assert f(hidden_sizes=(16,), seed=0, discrete=False) == a
    assert f(hidden_sizes=(32,), seed=0) != a
    assert f(hidden_sizes=(16, 16), seed=0) != a
    assert f(hidden_sizes=(16,), activation="relu") != a
    model = init_mlp(4, 2, (16,))
    assert OnnxPolicy.from_model(model, param_pattern=r".*bias").fingerprint() != a


# --------------------------------------------------------------------------
# load errors
# --------------------------------------------------------------------------


def test_load_missing_file(tmp_path):
    path = tmp_path / "nope.onnx"
    with pytest.raises(ModelError, match=re.escape(f"{path}: no such file")):
        OnnxPolicy.load(path)


def test_load_directory(tmp_path):
    with pytest.raises(ModelError, match=re.escape(f"{tmp_path}: is a directory")):
        OnnxPolicy.load(tmp_path)


@pytest.mark.parametrize("data", [
    bytes(np.random.default_rng(123).integers(0, 256, 512, dtype=np.uint8)),
    b"\xff" * 64,
    b"this is not an onnx model\n",
    b"",
])
def test_load_corrupt_bytes(tmp_path, data):
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(data)
    with pytest.raises(ModelError, match=re.escape(f"{path}: ")) as ei:
        OnnxPolicy.load(path)
    assert "not a valid ONNX model" in str(ei.value) or "checker" in str(ei.value)


def test_load_no_float_initializers(tmp_path):
    path = tmp_path / "ints.onnx"
    onnx.save(int_only_model(), str(path))
    with pytest.raises(ModelError, match=re.escape(f"{path}: model has no float32 initializers")) as ei:
        OnnxPolicy.load(path)
    assert "'k'" in str(ei.value)


def test_pattern_matching_nothing_lists_names(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(init_mlp(3, 2, (4,)), str(path))
    with pytest.raises(ModelError, match=re.escape(
            f"{path}: no float32 initializer matches param_pattern 'conv.*'")) as ei:
        OnnxPolicy.load(path, param_pattern="conv.*")
    assert "'layer0.weight'" in str(ei.value) and "'head.bias'" in str(ei.value)


def test_bad_pattern(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(init_mlp(3, 2, (4,)), str(path))
    with pytest.raises(ModelError, match=re.escape(f"{path}: invalid param_pattern '(*bad'")):
        OnnxPolicy.load(path, param_pattern="(*bad")
    with pytest.raises(ModelError, match=re.escape("<memory>: invalid param_pattern '[a-'")):
        OnnxPolicy.from_model(init_mlp(3, 2), param_pattern="[a-")


def test_checker_rejects_invalid_graph():
    model = init_mlp(3, 2, (4,))
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(ModelError, match="<memory>: ONNX checker rejected the model"):
        OnnxPolicy.from_model(model)


def test_accepts_ir10_model():
    model = init_mlp(3, 2, (4,), seed=1)
    model.ir_version = 10
    pol = OnnxPolicy.from_model(model)
    obs = rand_obs(2, 3)
    want = np_forward(obs, split_mlp_params(pol.initial_params(), 3, 2, (4,)), "tanh")
    np.testing.assert_allclose(pol.run(obs, pol.initial_params()), want, rtol=1e-6, atol=1e-6)
    assert pol.to_model(pol.initial_params()).ir_version == 10


def test_from_model_rejects_non_model():
    with pytest.raises(ModelError, match="expected an onnx.ModelProto"):
        OnnxPolicy.from_model(b"bytes")


# --------------------------------------------------------------------------
# spaces and actions
# --------------------------------------------------------------------------


def test_policy_for_spaces():
    from gymnasium import spaces

    m = policy_for_spaces(spaces.Box(-1, 1, shape=(2, 3)), spaces.Discrete(5), hidden_sizes=(8,))
    pol = OnnxPolicy.from_model(m)
    assert pol.obs_shape == (6,)
    out = pol.run(np.zeros((3, 6), np.float32), pol.initial_params())
    assert out.shape == (3, 5)
    assert {p.key: p.value for p in m.metadata_props}["evokit.action_kind"] == "discrete"

    m = policy_for_spaces(spaces.Box(-1, 1, shape=(4,)), spaces.Box(-2, 2, shape=(3,)),
                          hidden_sizes=(), seed=3)
    pol = OnnxPolicy.from_model(m)
    assert pol.num_params == 4 * 3 + 3
    assert pol.run(np.ones(4, np.float32), pol.initial_params()).shape == (3,)
    assert {p.key: p.value for p in m.metadata_props}["evokit.action_kind"] == "continuous"
    clipped = with_action_mapping(init_mlp(4, 3, (), seed=0), [-2] * 3, [2] * 3, "clip")
    assert pol.fingerprint() == OnnxPolicy.from_model(clipped).fingerprint()
    raw = policy_for_spaces(spaces.Box(-1, 1, shape=(4,)), spaces.Box(-2, 2, shape=(3,)),
                            hidden_sizes=(), seed=3, action_mapping="none")
    assert OnnxPolicy.from_model(raw).fingerprint() == \
        OnnxPolicy.from_model(init_mlp(4, 3, (), seed=0)).fingerprint()


def _mapped_outputs(low, high, mapping):
    """The raw and the mapped outputs of a linear model with large weights on
    the native backend (onnxruntime gives the mapped ones within rounding)."""
    model = init_mlp(3, len(low), (), discrete=False, seed=1)
    mapped = with_action_mapping(model, low, high, mapping)
    obs = np.random.default_rng(2).normal(size=(64, 3)).astype(np.float32)
    params = OnnxPolicy.from_model(model).initial_params() * 400
    raw = OnnxPolicy.from_model(model, backend="native").run(obs, params)
    native = OnnxPolicy.from_model(mapped, backend="native")
    assert native.backend == "native"
    out = native.run(obs, params)
    ort = OnnxPolicy.from_model(mapped, backend="onnxruntime").run(obs, params)
    np.testing.assert_allclose(out, ort, rtol=1e-5, atol=1e-6)
    assert {p.key: p.value for p in mapped.metadata_props}["evokit.action_mapping"] == mapping
    return raw, out


def test_action_mapping_clips_or_squashes_into_the_bounds_in_the_model_itself():
    raw, out = _mapped_outputs([-1.0] * 3, [1.0] * 3, "clip")
    assert np.abs(raw).max() > 2
    np.testing.assert_array_equal(out, np.clip(raw, -1, 1))
    raw, out = _mapped_outputs([-0.5, 0.0, -4.0], [0.5, 2.0, 0.0], "clip")
    low, high = np.array([-0.5, 0.0, -4.0]), np.array([0.5, 2.0, 0.0])
    assert (out >= low - 1e-6).all() and (out <= high + 1e-6).all()
    inside = (raw > low) & (raw < high)
    assert inside.any()
    np.testing.assert_allclose(out[inside], raw[inside], rtol=1e-6, atol=1e-6)
    raw, out = _mapped_outputs([-1.0] * 2, [1.0] * 2, "tanh")
    np.testing.assert_allclose(out, np.tanh(raw), rtol=1e-5, atol=1e-6)
    raw, out = _mapped_outputs([0.0, -3.0], [1.0, 1.0], "tanh")
    np.testing.assert_allclose(out, np.array([0.0, -3.0]) + (np.tanh(raw) + 1) / 2 *
                               np.array([1.0, 4.0]), rtol=1e-5, atol=1e-6)


def test_action_mapping_refuses_what_it_cannot_map():
    model = init_mlp(3, 2, (), discrete=False)
    with pytest.raises(ValueError, match="tanh maps onto finite bounds only"):
        with_action_mapping(model, [-np.inf, -1], [1, 1], "tanh")
    with pytest.raises(ValueError, match="low <= high"):
        with_action_mapping(model, [1, 1], [0, 2], "clip")
    with pytest.raises(ValueError, match="must be one of clip, tanh, none, got 'sigmoid'"):
        with_action_mapping(model, [-1, -1], [1, 1], "sigmoid")
    twice = with_action_mapping(model, [-1, -1], [1, 1], "clip")
    with pytest.raises(ValueError, match="maps its actions already"):
        with_action_mapping(twice, [-1, -1], [1, 1], "tanh")


def test_policy_for_spaces_unsupported():
    from gymnasium import spaces

    box = spaces.Box(-1, 1, shape=(4,))
    with pytest.raises(ModelError, match="unsupported action space MultiDiscrete"):
        policy_for_spaces(box, spaces.MultiDiscrete([2, 3]))
    with pytest.raises(ModelError, match=re.escape("unsupported action space Box(")):
        policy_for_spaces(box, spaces.Box(-1, 1, shape=(2, 2)))
    with pytest.raises(ModelError, match="unsupported observation space Discrete"):
        policy_for_spaces(spaces.Discrete(3), spaces.Discrete(2))


def test_select_action():
    single = np.array([0.1, 0.7, -0.2], np.float32)
    a = select_action(single, discrete=True)
    assert a == 1 and isinstance(a, int)
    batch = np.array([[0.1, 0.7, -0.2], [3.0, 0.0, 1.0], [0.0, 0.0, 5.0]], np.float32)
    acts = select_action(batch, discrete=True)
    assert acts.shape == (3,) and np.issubdtype(acts.dtype, np.integer)
    np.testing.assert_array_equal(acts, [1, 0, 2])
    cont = np.array([[0.5, -0.25]], np.float32)
    assert select_action(cont, discrete=False) is cont


def test_saved_files_get_the_mode_open_would_give(tmp_path):
    from evokit.util import atomic_write_bytes

    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"x")
        os.umask(0o002)
        atomic_write_bytes(tmp_path / "b.bin", b"y")
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "a.bin").st_mode & 0o777) == oct(0o640)
    assert oct(os.stat(tmp_path / "b.bin").st_mode & 0o777) == oct(0o664)
    assert (tmp_path / "b.bin").read_bytes() == b"y"


def test_a_full_disk_is_reported_naming_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    import errno

    from evokit.util import atomic_write_bytes

    atomic_write_bytes(tmp_path / "m.onnx", b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as err:
        atomic_write_bytes(tmp_path / "m.onnx", b"new")
    assert str(err.value) == f"{tmp_path / 'm.onnx'}: cannot write it (No space left on device)"
    assert err.value.errno == errno.ENOSPC
    assert (tmp_path / "m.onnx").read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["m.onnx"]  # no temporary file left


# --------------------------------------------------------------------------
# declared shapes against the data held (issue 16: a 925-byte model declared
# 2.1 GB; dims[0] = 2**40): refused before anything is allocated
# --------------------------------------------------------------------------


def _with_dims(name, dims, float_data=False, ir_version=None):
    """init_mlp(4, 2, (8,)) (a few hundred bytes) whose tensor ``name`` claims
    ``dims``, keeping its data (as raw_data, or moved to float_data)."""
    model = init_mlp(4, 2, (8,))
    if ir_version is not None:
        model.ir_version = ir_version
    t = next(t for t in model.graph.initializer if t.name == name)
    if float_data:
        values = numpy_helper.to_array(t).reshape(-1)
        t.ClearField("raw_data")
        t.float_data.extend(values.tolist())
    del t.dims[:]
    t.dims.extend(dims)
    return model


@pytest.mark.parametrize("dims, float_data, held, needs", [
    ([2**29], False, "128 bytes of raw data", "2147483648"),
    ([2**40, 1], False, "128 bytes of raw data", "4398046511104"),
    ([2**32, 2**32], False, "128 bytes of raw data", "more than 18446744073709551615"),
    ([2**40], True, "32 values", "1099511627776"),
    ([2**62, 4], True, "32 values", "more than 18446744073709551615"),
    ([8, 3], False, "128 bytes of raw data", "96"),
])
def test_declared_shape_checked_against_the_data_held(tmp_path, dims, float_data, held, needs):
    """The reader's own check, which an IR version newer than the onnx
    package's leaves alone (the checker skips such models); the checker of
    onnx >= 1.16 refuses most of these in IR <= its own, also naming the
    tensor."""
    path = tmp_path / "huge.onnx"
    onnx.save(_with_dims("layer0.weight", dims, float_data, ir_version=99), str(path))
    assert path.stat().st_size < 1000
    with pytest.raises(ModelError, match=f"^{re.escape(str(path))}: initializer 'layer0.weight' holds "
                                         f"{held}, its shape needs {re.escape(needs)}$"):
        OnnxPolicy.load(path)
    onnx.save(_with_dims("layer0.weight", dims, float_data), str(path))
    with pytest.raises(ModelError, match=rf"^{re.escape(str(path))}: .*\b(tensor name: )?'?layer0\.weight\b"):
        OnnxPolicy.load(path)


def test_declared_shape_of_constants_checked_on_the_native_backend():
    # head.weight is no parameter here: the native backend reads it as a constant.
    model = _with_dims("head.weight", [2**40, 2], ir_version=99)
    with pytest.raises(ModelError, match=r"^m\.onnx: initializer 'head\.weight' holds 64 bytes of raw "
                                         r"data, its shape needs 8796093022208$"):
        OnnxPolicy.from_model(model, source="m.onnx", param_pattern="layer0.*", backend="native")
    model = init_mlp(4, 2, (8,))
    model.ir_version = 99
    value = numpy_helper.from_array(np.ones(3, np.float32), "k")
    value.dims[0] = 2**40
    model.graph.node.insert(0, helper.make_node("Constant", [], ["k"], name="k", value=value))
    with pytest.raises(ModelError, match=r"^m\.onnx: node 'k' \(Constant\): value holds 12 bytes of raw "
                                         r"data, its shape needs 4398046511104$"):
        OnnxPolicy.from_model(model, source="m.onnx", backend="native")


def test_negative_dimension_refused():
    with pytest.raises(ModelError, match=r"^m\.onnx: initializer 'layer0\.weight' has a negative "
                                         r"dimension -4$"):
        OnnxPolicy.from_model(_with_dims("layer0.weight", [-4, -8], ir_version=99), source="m.onnx")
