"""The model fingerprint (version 2): canonical, covering what the model
computes, the same digests as the C++ io component (cpp/io/tests checks the
fixture digests of cpp/io/tests/data/fingerprints.txt in C++; here they are
checked in Python), and the files of the previous version."""

import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import evokit
from evokit import ModelError, SolverFileError
from evokit import evokit_pb2 as pb
from evokit.agent import params_fingerprint
from evokit.policy.mlp import init_mlp
from evokit.policy.onnx_policy import OnnxPolicy
from evokit.statefile import read_state_file, write_state_file

from helpers import ROOT
IO_DATA = os.path.join(ROOT, "cpp", "io", "tests", "data")


def fp(model, pattern=".*"):
    return OnnxPolicy.from_model(model, param_pattern=pattern, backend="onnxruntime").fingerprint()


def attributes_model(**changes):
    """A small graph with a LeakyRelu (FLOAT), Transpose (INTS), Constant
    (TENSOR), Cast (INT) and a fixed int64 initializer; ``changes`` edit it."""
    c = dict(alpha=0.125, perm=[1, 0], scale=[1.0, 2.0, -3.0], to=TensorProto.FLOAT, op="LeakyRelu",
             offsets=[7, -9], dims=[4, 3], opset=17)
    c.update(changes)
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(c["dims"]) * 0.1, "w")
    act = (helper.make_node(c["op"], ["h1"], ["h2"], alpha=c["alpha"]) if c["op"] == "LeakyRelu"
           else helper.make_node(c["op"], ["h1"], ["h2"]))
    nodes = [
        helper.make_node("MatMul", ["obs", "w"], ["h1"], name="first"),
        act,
        helper.make_node("Transpose", ["h2"], ["h3"], perm=c["perm"]),
        helper.make_node("Transpose", ["h3"], ["h4"], perm=[1, 0]),
        helper.make_node("Constant", [], ["c"],
                         value=helper.make_tensor("s", TensorProto.FLOAT, [3], c["scale"])),
        helper.make_node("Mul", ["h4", "c"], ["y"]),
        helper.make_node("Cast", ["y"], ["action"], to=c["to"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 3])],
        initializer=[w, helper.make_tensor("offsets", TensorProto.INT64, [2], c["offsets"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c["opset"])])
    model.ir_version = 8
    return model


def test_same_for_a_reserialised_or_renamed_model():
    model = attributes_model()
    a = fp(model)
    assert len(a) == 64 and int(a, 16) >= 0
    back = onnx.ModelProto()
    back.ParseFromString(model.SerializeToString())
    assert fp(back) == a
    # Names, doc strings, metadata, the IR version, value_info: not covered.
    back.graph.name = "other"
    back.graph.node[0].name = "renamed"
    back.graph.node[0].doc_string = "doc"
    back.doc_string = "model doc"
    back.producer_name = "someone"
    back.ir_version = 7
    helper.set_model_props(back, {"k": "v"})
    back.graph.value_info.append(helper.make_tensor_value_info("h1", TensorProto.FLOAT, None))
    assert fp(back) == a
    # Typed storage (int64_data, float_data) and raw_data encode the same values alike.
    raw = onnx.ModelProto()
    raw.CopyFrom(model)
    raw.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array([7, -9], np.int64), "offsets"))
    assert raw.graph.initializer[1].HasField("raw_data")
    assert not model.graph.initializer[1].HasField("raw_data")
    assert fp(raw) == a
    # The default opset domain may be written "" or "ai.onnx".
    dom = onnx.ModelProto()
    dom.CopyFrom(model)
    dom.opset_import[0].domain = "ai.onnx"
    assert fp(dom) == a


@pytest.mark.parametrize("change", [
    dict(alpha=0.25),                     # a FLOAT attribute
    dict(perm=[0, 1]),                    # an INTS attribute
    dict(scale=[1.0, 2.0, 3.0]),          # a TENSOR attribute's value
    dict(to=TensorProto.DOUBLE),          # an INT attribute
    dict(op="Relu"),                      # an op (and its attributes)
    dict(offsets=[7, -8]),                # a fixed initializer's data
    dict(opset=16),                       # an opset import
])
def test_differs_for_what_the_model_computes(change):
    assert fp(attributes_model(**change)) != fp(attributes_model())


def test_differs_for_shapes_and_parameter_selection_but_not_values():
    model = init_mlp(4, 2, (16,), seed=0)
    a = fp(model)
    assert fp(init_mlp(4, 2, (16,), seed=1)) == a  # only the parameter values differ
    assert fp(init_mlp(4, 2, (17,), seed=0)) != a
    assert fp(init_mlp(5, 2, (16,), seed=0)) != a
    assert fp(model, pattern=r".*bias") != a
    renamed = onnx.ModelProto()
    renamed.CopyFrom(model)
    renamed.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "n"
    assert fp(renamed) != a


def test_params_fingerprint_is_the_model_fingerprint_then_float32_values():
    import hashlib
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,)))
    p = pol.initial_params()
    want = hashlib.sha256(pol.fingerprint().encode() + p.astype("<f4").tobytes()).hexdigest()
    assert params_fingerprint(pol, p) == want
    assert params_fingerprint(pol, p + np.float32(1e-3)) != want


def test_versions():
    pol = OnnxPolicy.from_model(init_mlp(4, 2, (8,)))
    assert pol.fingerprint(1) != pol.fingerprint(2) == pol.fingerprint()
    with pytest.raises(ModelError, match=r"fingerprint version 3 is not known to this EvoKit "
                                         r"\(it computes versions 1 and 2\)"):
        pol.fingerprint(3)


def test_uncovered_content_is_a_clear_error():
    model = attributes_model()
    model.graph.node[1].attribute.append(
        helper.make_attribute("odd", helper.make_sparse_tensor(
            helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
            helper.make_tensor("i", TensorProto.INT64, [1], [0]), [2])))
    pol = OnnxPolicy(model, backend="onnxruntime", _check=False)
    with pytest.raises(ModelError, match=r"<memory>: node 1 \(LeakyRelu ''\): attribute 'odd' has "
                                         r"type SPARSE_TENSOR; the fingerprint covers"):
        pol.fingerprint()


def test_fixture_fingerprints_match_the_ones_cpp_checks():
    """fingerprints.txt is what test_fingerprint.cc expects C++ to compute."""
    with open(os.path.join(IO_DATA, "fingerprints.txt")) as f:
        want = dict(line.split() for line in f if line.strip() and not line.startswith("#"))
    for name, path, pattern in [("cartpole_h8", "cartpole_h8.onnx", ".*"),
                                ("cartpole_h8_weights", "cartpole_h8.onnx", ".*weight"),
                                ("iter1", "iter1/model.onnx", ".*"),
                                ("torch_mlp", os.path.join(ROOT, "tests", "fixtures", "torch_mlp.onnx"), ".*"),
                                ("attributes", "fingerprint_attributes.onnx", ".*")]:
        pol = OnnxPolicy.load(os.path.join(IO_DATA, path), param_pattern=pattern, backend="onnxruntime")
        assert pol.fingerprint() == want[f"{name}.model"], name
        assert params_fingerprint(pol, pol.initial_params()) == want[f"{name}.params"], name


def _agent(model_dir):
    agent = evokit.ESAgent()
    agent.load_config(os.path.join(IO_DATA, "adam.prototxt"))
    agent.load_inference_model(model_dir)
    agent.init_solver()
    return agent


def test_solver_files_carry_version_2(tmp_path):
    agent = _agent(os.path.join(IO_DATA, "iter1"))
    agent.save_solver(tmp_path)
    state = pb.SolverState()
    read_state_file(tmp_path / "solver.pb", state)
    assert state.fingerprint_version == 2
    assert state.model_fingerprint == agent.policy.fingerprint()
    assert state.params_fingerprint == params_fingerprint(agent.policy, agent.center)


def test_previous_version_solver_still_verifies(tmp_path):
    """solver_v1.pb: written by the EvoKit before version 2 (no fingerprint_version)."""
    shutil.copy(os.path.join(IO_DATA, "iter1", "model.onnx"), tmp_path / "model.onnx")
    shutil.copy(os.path.join(IO_DATA, "solver_v1.pb"), tmp_path / "solver.pb")
    old = pb.SolverState()
    read_state_file(tmp_path / "solver.pb", old)
    assert not old.HasField("fingerprint_version") and old.fingerprint_version == 1
    agent = _agent(str(tmp_path))
    agent.load_solver(tmp_path)
    assert agent.model_iter_id == 1
    # Saved again: version 2, as C++ reads it.
    agent.save_solver(tmp_path)
    new = pb.SolverState()
    read_state_file(tmp_path / "solver.pb", new)
    assert new.fingerprint_version == 2 and new.model_fingerprint != old.model_fingerprint
    _agent(str(tmp_path)).load_solver(tmp_path)

    old.model_fingerprint = "0" * 64
    write_state_file(tmp_path / "solver.pb", old)
    with pytest.raises(SolverFileError, match=r"solver state belongs to another model than \S+model.onnx \(graph "
                                              r"fingerprint 000000000000, loaded model [0-9a-f]{12}, "
                                              r"fingerprint version 1\)"):
        _agent(str(tmp_path)).load_solver(tmp_path)


def test_newer_version_is_refused(tmp_path):
    agent = _agent(os.path.join(IO_DATA, "iter1"))
    agent.save_solver(tmp_path)
    state = pb.SolverState()
    read_state_file(tmp_path / "solver.pb", state)
    state.fingerprint_version = 3
    write_state_file(tmp_path / "solver.pb", state)
    with pytest.raises(SolverFileError, match=r"solver.pb: solver state has fingerprint version 3, "
                                              r"this EvoKit reads versions 1 and 2 \(a newer EvoKit "
                                              r"wrote it\)"):
        agent.load_solver(tmp_path)


def test_previous_version_warehouse_and_logs_still_update(tmp_path):
    """A warehouse and log of the previous version (version 1 fingerprints in
    warehouse.pb, solver.pb and the records) are still used by an update; the
    new iteration is written with version 2."""
    from evokit.online.pipeline import sample, update
    from evokit.online.samplelog import append_records, read_log
    from evokit.online.warehouse import INFO_FILE, Warehouse, config_fingerprint

    cfg = tmp_path / "config.prototxt"
    cfg.write_text('solver { optimizer { type: ADAM base_lr: 0.05 } sampling { gaussian_sampling '
                   '{ std: 0.1 cached: true seed: 1024 cache_size: 100000 } } population_size: 8 }\n')
    model = tmp_path / "init.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=0).SerializeToString())
    wh = tmp_path / "warehouse"
    w = Warehouse.create(wh, str(cfg), str(model))
    new_log, old_log = tmp_path / "new.log", tmp_path / "old.log"
    sample(str(wh), "CartPole-v1", 8, new_log, seed=0)

    # Rewrite the warehouse and the records as the previous EvoKit wrote them
    # (its state files with the trailer `evokit seal` adds).
    policy, params = w.policy(0), w.params(0)
    info = pb.WarehouseInfo()
    read_state_file(wh / INFO_FILE, info)
    info.config_fingerprint = config_fingerprint(w.config(0), policy, 1)
    info.ClearField("fingerprint_version")
    write_state_file(wh / INFO_FILE, info)
    solver = wh / "model_iter_id-0" / "solver.pb"
    state = pb.SolverState()
    read_state_file(solver, state)
    state.model_fingerprint = policy.fingerprint(1)
    state.params_fingerprint = params_fingerprint(policy, params, 1)
    state.ClearField("fingerprint_version")
    write_state_file(solver, state)
    records = [r.record for r in read_log(new_log).records]
    for r in records:
        r.config_fingerprint = info.config_fingerprint
        r.model_fingerprint = state.params_fingerprint
    append_records(old_log, records)

    rep = update(str(wh), [old_log])
    assert (rep.from_iteration, rep.to_iteration, rep.used, dict(rep.dropped)) == (0, 1, 8, {})
    after = pb.SolverState()
    after.ParseFromString((wh / "model_iter_id-1" / "solver.pb").read_bytes())
    assert after.fingerprint_version == 2
    # Records with version 2 fingerprints do not match a version 1 warehouse.
    rep = update(str(wh), [new_log])
    assert (rep.to_iteration, rep.used) == (None, 0)
    assert dict(rep.dropped) == {"from another config or model (config fingerprint differs)": 8}
