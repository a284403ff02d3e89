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
  (solver_v1.pb, not written here: iter1/solver.pb as the EvoKit before
                         fingerprint version 2 wrote it, kept to test old files)
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


if __name__ == "__main__":
    sys.exit(main())
