#!/usr/bin/env python3
"""Regenerate the fixtures of the evokit_io C++ tests with the Python package.

Run from anywhere after `pip install .` (needs the `evokit` command):

    python cpp/io/tests/data/make_fixtures.py

Writes, next to this script:

  cartpole_h8.onnx       `evokit init-model --env CartPole-v1 --hidden 8 --seed 0`
                         (IR 8, opset 17: Gemm, Tanh)
  iter1/                 model.onnx + solver.pb of a Python ESAgent (config
                         adam.prototxt) after one update: Adam state m, v, steps 1
  iter2_model.onnx       the model after a second update, made by a fresh agent
                         loaded from iter1/ (stream 7, 4 clones, rewards below)
  python_samples.log     three SampleRecords appended by evokit.online.samplelog
  fingerprint_attributes.onnx  a model with attributes of most types, a
                         subgraph (If), typed (not raw) tensor data and a doc
                         string, for the fingerprint
  obs_norm_h8.onnx       `evokit train` (configs/cartpole.prototxt, hidden 8,
                         train.observation_normalization: true, 3 generations,
                         seed 0): Constant nodes obs_norm/{mean,std,min,max}
                         and Sub, Div, Clip in front of the MLP
  native_cases/*.onnx    small models of every node and attribute form Python's
                         native backend (evokit/native.py) accepts, and some it
                         refuses (native_cases.txt says which); torch_*: the
                         PyTorch exports of tests/fixtures/torch_ops
  (solver_v1.pb, not written here: iter1/solver.pb as the EvoKit before
                         fingerprint version 2 wrote it, kept to test old files,
                         with the sha256 trailer `evokit seal` adds and its
                         params_fingerprint (version 1) recomputed for the
                         iter1/model.onnx written here)
  fingerprints.txt       `name hex` per line: Python's model fingerprint
                         (NAME.model) and params fingerprint (NAME.params) of
                         the models above and of iteration 2 (iter2.params)
  expected.txt           reference values, one `name v1 v2 ...` per line:
    obs                  a batch of 3 CartPole observations
    predict              onnxruntime's output of cartpole_h8.onnx for obs
    torch_predict        onnxruntime's output of tests/fixtures/torch_mlp.onnx for obs
    iter1_keys           keys (4 clones, stream 7) drawn at iteration 1
    iter1_mirrored       their mirrored flags
    iter1_rewards        the rewards of the second update
    clone0_predict       onnxruntime's output for obs with clone 0's perturbed
                         parameters at iteration 1
    record_rewards       rewards of the records in python_samples.log
    obs_norm_predict     the native backend's output of obs_norm_h8.onnx for obs
  native_cases.txt       per model of native_cases/, one line each:
    NAME obs V...        observations (a batch of 2)
    NAME out V...        the native backend's output for them
    NAME refused MESSAGE the native backend refuses the model: its message
                         after "native backend: "
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.asarray(values).reshape(-1))


def main() -> int:
    import evokit
    from evokit import evokit_pb2 as pb
    from evokit.policy.onnx_policy import OnnxPolicy
    from evokit.online.samplelog import append_records

    config = os.path.join(HERE, "adam.prototxt")
    model = os.path.join(HERE, "cartpole_h8.onnx")
    subprocess.run(["evokit", "init-model", "--env", "CartPole-v1", "--hidden", "8",
                    "--seed", "0", "-o", model], check=True)

    lines = []
    obs = np.array([[0.01, -0.02, 0.03, 0.04], [0.5, 1.0, -0.1, -1.5], [-2.0, 0.3, 0.2, 2.0]],
                   dtype=np.float32)
    policy = OnnxPolicy.load(model)
    lines.append(f"obs {fmt(obs)}")
    lines.append(f"predict {fmt(policy.run(obs, policy.initial_params()))}")
    torch = OnnxPolicy.load(os.path.join(ROOT, "tests", "fixtures", "torch_mlp.onnx"))
    lines.append(f"torch_predict {fmt(torch.run(obs, torch.initial_params()))}")

    # Iteration 1: one update from the initial model.
    agent = evokit.ESAgent()
    agent.load_config(config)
    agent.load_inference_model(model)
    agent.init_solver()
    agent.sampling_stream = 3
    clones = [agent.clone() for _ in range(4)]
    infos = [c.add_noise() for c in clones]
    agent.update(infos, [1.0, 3.0, 2.0, 0.5])
    iter1 = os.path.join(HERE, "iter1")
    shutil.rmtree(iter1, ignore_errors=True)
    os.makedirs(iter1)
    agent.save_inference_model(iter1)
    agent.save_solver(iter1)

    # Iteration 2, from a fresh agent loaded from iter1/ as a service would.
    agent = evokit.ESAgent()
    agent.load_config(config)
    agent.load_inference_model(iter1)
    agent.init_solver()
    agent.load_solver(iter1)
    agent.sampling_stream = 7
    clones = [agent.clone() for _ in range(4)]
    infos = [c.add_noise() for c in clones]
    rewards = [0.25, -1.0, 4.0, 2.0]
    lines.append(f"iter1_keys {' '.join(str(i.key[0]) for i in infos)}")
    lines.append(f"iter1_mirrored {' '.join(str(int(i.mirrored)) for i in infos)}")
    lines.append(f"iter1_rewards {fmt(rewards)}")
    lines.append(f"clone0_predict {fmt(clones[0].predict(obs))}")
    agent.update(infos, rewards)
    with tempfile.TemporaryDirectory() as tmp:
        agent.save_inference_model(tmp)
        shutil.copy(os.path.join(tmp, "model.onnx"), os.path.join(HERE, "iter2_model.onnx"))

    # A sampling log written by Python.
    log = os.path.join(HERE, "python_samples.log")
    if os.path.exists(log):
        os.remove(log)
    records = [pb.SampleRecord(info=pb.SamplingInfo(key=[11 + i], model_iter_id=1, mirrored=i == 1),
                               reward=10.5 * i, config_fingerprint="c" * 64, model_fingerprint="m" * 64,
                               sampler_id=5, env_steps=100 + i, time=1700000000.25)
               for i in range(3)]
    append_records(log, records)
    lines.append(f"record_rewards {fmt([r.reward for r in records])}")

    # A policy trained with observation normalisation, as a service would get it.
    obs_norm_model = os.path.join(HERE, "obs_norm_h8.onnx")
    cfg = evokit.load_config(os.path.join(ROOT, "configs", "cartpole.prototxt"))
    cfg.train.hidden_sizes[:] = [8]
    cfg.train.observation_normalization = True
    with tempfile.TemporaryDirectory() as tmp:
        evokit.train(cfg, env_id="CartPole-v1", seed=0, out_dir=tmp, max_generations=3, num_workers=1,
                     log=lambda line: None)
        shutil.copy(os.path.join(tmp, "model.onnx"), obs_norm_model)
    native = OnnxPolicy.load(obs_norm_model, backend="native")
    assert [n.op_type for n in native._model.graph.node[:7]] == ["Constant"] * 4 + ["Sub", "Div", "Clip"]
    predict = native.run(obs, native.initial_params())
    ort = OnnxPolicy.load(obs_norm_model, backend="onnxruntime")
    np.testing.assert_allclose(predict, ort.run(obs, ort.initial_params()), rtol=0, atol=1e-5)
    lines.append(f"obs_norm_predict {fmt(predict)}")

    write_native_cases()

    # Fingerprints (version 2) computed by Python, checked by test_fingerprint.cc.
    from evokit.agent import params_fingerprint
    attributes = os.path.join(HERE, "fingerprint_attributes.onnx")
    with open(attributes, "wb") as f:
        f.write(attributes_model().SerializeToString())
    fps = []
    for name, path, pattern in [("cartpole_h8", model, ".*"), ("cartpole_h8_weights", model, ".*weight"),
                                ("iter1", os.path.join(iter1, "model.onnx"), ".*"),
                                ("torch_mlp", os.path.join(ROOT, "tests", "fixtures", "torch_mlp.onnx"), ".*"),
                                ("attributes", attributes, ".*")]:
        p = OnnxPolicy.load(path, param_pattern=pattern, backend="onnxruntime")
        fps.append(f"{name}.model {p.fingerprint()}")
        fps.append(f"{name}.params {params_fingerprint(p, p.initial_params())}")
    fps.append(f"iter2.params {params_fingerprint(agent.policy, agent.center)}")
    with open(os.path.join(HERE, "fingerprints.txt"), "w") as f:
        f.write("# written by make_fixtures.py; do not edit\n")
        f.write("\n".join(fps) + "\n")

    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        f.write("# written by make_fixtures.py; do not edit\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote fixtures to {HERE}")
    return 0


def attributes_model():
    """obs [N, 4] -> MatMul w -> Add b -> LeakyRelu(alpha) -> Transpose(perm)
    -> Transpose -> Mul by a Constant (TENSOR attribute, float_data) -> If on a
    fixed bool initializer (int32_data) with two subgraphs -> Cast(to)."""
    import onnx
    from onnx import TensorProto, helper
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], [0.1 * i for i in range(12)])
    b = helper.make_tensor("b", TensorProto.FLOAT, [3], [0.5, -0.5, 0.25], )
    flag = helper.make_tensor("flag", TensorProto.BOOL, [], [True])
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [3], [1.0, 2.0, -3.0])
    fixed = helper.make_tensor("offsets", TensorProto.INT64, [2], [7, -9])
    small = helper.make_tensor("small", TensorProto.INT8, [3], [-1, 0, 5])
    then_g = helper.make_graph([helper.make_node("Identity", ["m"], ["t_out"])], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["m"], ["e_out"])], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("MatMul", ["obs", "w"], ["h0"], name="mm", doc_string="a doc string"),
        helper.make_node("Add", ["h0", "b"], ["h1"]),
        helper.make_node("LeakyRelu", ["h1"], ["h2"], alpha=0.125),
        helper.make_node("Transpose", ["h2"], ["h3"], perm=[1, 0]),
        helper.make_node("Transpose", ["h3"], ["h4"], perm=[1, 0]),
        helper.make_node("Constant", [], ["c"], value=scale),
        helper.make_node("Mul", ["h4", "c"], ["m"]),
        helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Cast", ["y"], ["action"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "attributes",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 3])],
        initializer=[w, b, flag, fixed, small])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="make_fixtures")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def native_cases():
    """(name, model, obs) of every node and attribute form the native backend
    accepts, and of forms it refuses: obs [N, 3] (or [N, 2, 3] with
    Flatten), a parameter w, every node named."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, out_dims, inits=(), obs_dims=(3,), opset=17):
        w = numpy_helper.from_array(np.linspace(-1, 1, 3 * 4, dtype=np.float32).reshape(3, 4), "w")
        graph = helper.make_graph(
            nodes, "case", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["N", *obs_dims])],
            [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, out_dims)],
            initializer=[w, *inits])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
        onnx.checker.check_model(m)
        return m

    def node(op, ins, out, **attrs):
        return helper.make_node(op, ins, [out], name=out, **attrs)

    mm = node("MatMul", ["obs", "w"], "mm")
    f32 = np.float32
    rng = np.random.default_rng(0)
    obs = rng.uniform(-2, 2, (2, 3)).astype(f32)
    obs3 = rng.uniform(-2, 2, (2, 2, 3)).astype(f32)
    raw = numpy_helper.from_array(np.array([0.5, -1, 2, 0.25], f32))  # raw_data
    typed = helper.make_tensor("t", TensorProto.FLOAT, [1, 4], [1.5, -0.5, 0.75, 2])  # float_data

    def unused_constant(name, **value):
        return name, model([mm, node("Constant", [], "c", **value), node("Relu", ["mm"], "y")], ["N", 4]), obs

    return [
        ("constant_raw_data", model([mm, node("Constant", [], "c", value=raw), node("Add", ["mm", "c"], "y")],
                                    ["N", 4]), obs),
        ("constant_float_data", model([mm, node("Constant", [], "c", value=typed), node("Mul", ["mm", "c"], "y")],
                                      ["N", 4]), obs),
        ("constant_value_float", model([mm, node("Constant", [], "c", value_float=0.75),
                                        node("Div", ["mm", "c"], "y")], ["N", 4]), obs),
        ("constant_value_floats", model([mm, node("Constant", [], "c", value_floats=[1, -2, 3, 0.5]),
                                         node("Sub", ["c", "mm"], "y")], ["N", 4]), obs),
        ("clip_scalar_constants", model([mm, node("Constant", [], "lo", value=numpy_helper.from_array(f32(-0.5))),
                                         node("Constant", [], "hi", value=numpy_helper.from_array(f32(0.25))),
                                         node("Clip", ["mm", "lo", "hi"], "y")], ["N", 4]), obs),
        ("flatten_softmax", model([node("Flatten", ["obs"], "flat", axis=1),
                                   node("MatMul", ["flat", "w6"], "h"), node("Softmax", ["h"], "y", axis=-1)],
                                  ["N", 2], [numpy_helper.from_array(np.linspace(-2, 2, 12, dtype=f32).reshape(6, 2),
                                                                     "w6")], obs_dims=(2, 3)), obs3),
        ("softmax_opset11_axis1", model([mm, node("Softmax", ["mm"], "y")], ["N", 4], opset=11), obs),
        ("gemm_attributes", model([node("Gemm", ["obs", "wt", "b"], "y", transB=1, alpha=0.5, beta=2.0)], ["N", 4],
                                  [numpy_helper.from_array(np.linspace(1, -1, 12, dtype=f32).reshape(4, 3), "wt"),
                                   numpy_helper.from_array(np.array([[0.5, -0.25, 1, 0]], f32), "b")]), obs),
        ("relu_tanh_sigmoid_identity", model([mm, node("Relu", ["mm"], "r"), node("Tanh", ["r"], "t"),
                                              node("Sigmoid", ["t"], "s"), node("Identity", ["s"], "y")], ["N", 4]),
         obs),
        # integer constants: accepted (axes and shapes of layout ops)
        unused_constant("constant_int64", value=numpy_helper.from_array(np.array([1, 2], np.int64))),
        unused_constant("constant_value_int", value_int=3),
        unused_constant("constant_value_ints", value_ints=[3, 4]),
        ("dropout_training_mode_false", model([
            mm, node("Constant", [], "r", value=numpy_helper.from_array(f32(0.3))),
            node("Constant", [], "t", value=helper.make_tensor("t", TensorProto.BOOL, [], [False])),
            node("Dropout", ["mm", "r", "t"], "y")], ["N", 4]), obs),
        ("shape_gather_concat_reshape", model([
            node("Shape", ["obs"], "shape"), node("Constant", [], "zero", value_int=0),
            node("Gather", ["shape", "zero"], "n", axis=0), node("Constant", [], "ax", value_ints=[0]),
            node("Unsqueeze", ["n", "ax"], "n1"),
            node("Constant", [], "rest", value=numpy_helper.from_array(np.array([-1], np.int32))),
            node("Cast", ["rest"], "rest64", to=TensorProto.INT64),
            node("Concat", ["n1", "rest64"], "target", axis=0), node("Reshape", ["obs", "target"], "flat"),
            node("MatMul", ["flat", "w6"], "y")], ["N", 2],
            [numpy_helper.from_array(np.linspace(-2, 2, 12, dtype=f32).reshape(6, 2), "w6")],
            obs_dims=(2, 3)), obs3),
        # refused
        unused_constant("constant_value_string", value_string="x"),
        ("int64_constant_input", model([mm, node("Constant", [], "c", value_ints=[1, 2, 3, 4]),
                                        node("Add", ["mm", "c"], "y")], ["N", 4]), obs),
        ("softmax_axis0", model([mm, node("Softmax", ["mm"], "y", axis=0)], ["N", 4]), obs),
        ("flatten_axis0", model([node("Flatten", ["obs"], "flat", axis=0), node("Relu", ["flat"], "y")],
                                [1, None]), obs),
        ("gemm_trans_a", model([node("Gemm", ["obs", "obs"], "y", transA=1)], [3, 3]), obs),
        ("int64_initializer_input", model([mm, node("Add", ["mm", "k"], "y")], ["N", 4],
                                          [numpy_helper.from_array(np.array([1, 2, 3, 4], np.int64), "k")]), obs),
        ("output_without_batch", model([node("Constant", [], "y", value=raw)], [4]), obs),
        ("unsupported_op", model([mm, node("Sin", ["mm"], "y")], ["N", 4]), obs),
    ] + torch_cases(rng)


def torch_cases(rng):
    """(name, model, obs) of every PyTorch export of tests/fixtures/torch_ops
    (make_torch_ops.py) that loads: LayerNorm, GELU, ... at opsets 13, 17, 20."""
    import onnx

    folder = os.path.join(ROOT, "tests", "fixtures", "torch_ops")
    cases = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".onnx") or name.startswith("dropout_train"):
            continue
        model = onnx.load(os.path.join(folder, name))
        dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
        cases.append(("torch_" + name[:-len(".onnx")].replace("-", "_"), model,
                      rng.uniform(-2, 2, (2, *dims)).astype(np.float32)))
    return cases


def write_native_cases():
    """native_cases/NAME.onnx and native_cases.txt: what Python's native
    backend makes of each case, for test_onnx_model.cc."""
    from evokit.errors import NotSupportedError
    from evokit.policy.onnx_policy import OnnxPolicy

    folder = os.path.join(HERE, "native_cases")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    lines = []
    for name, model, obs in native_cases():
        path = os.path.join(folder, name + ".onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        try:
            policy = OnnxPolicy.load(path, backend="native")
        except NotSupportedError as exc:
            lines.append(f"{name} refused {str(exc).split('native backend: ', 1)[1]}")
            continue
        out = policy.run(obs, policy.initial_params())
        ort = OnnxPolicy.load(path, backend="onnxruntime")
        np.testing.assert_allclose(out, ort.run(obs, ort.initial_params()), rtol=0, atol=1e-5)
        lines.append(f"{name} obs {fmt(obs)}")
        lines.append(f"{name} out {fmt(out)}")
    with open(os.path.join(HERE, "native_cases.txt"), "w") as f:
        f.write("# written by make_fixtures.py; do not edit\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
