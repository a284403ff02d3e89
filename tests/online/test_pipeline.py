"""The online-sampling / offline-update pipeline: warehouse, logs, async ES,
crash safety and bad input."""

import collections
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import evokit
from evokit import evokit_pb2 as pb
from evokit.agent import ESAgent
from evokit.errors import WarehouseError
from evokit.evaluation.serial import SerialEvaluator
from evokit.online.pipeline import sample, update
from evokit.online.samplelog import append_records, read_log
from evokit.online.warehouse import ITER_PREFIX, Warehouse
from evokit.policy.mlp import init_mlp
from evokit.statefile import read_state_file, write_state_file

from helpers import ROOT, count_calls, count_reads, files

CONFIG = """solver {
  optimizer { type: ADAM base_lr: 0.05 }
  sampling { gaussian_sampling { std: 0.1 cached: true seed: 1024 cache_size: 100000 } }
  population_size: 20
}
async_es { max_to_keep: 3 }
"""


def make_warehouse(tmp_path, config_text):
    """A warehouse of config_text and a 4-8-2 MLP in tmp_path/warehouse:
    (tmp_path, config path, model path, warehouse path)."""
    cfg = tmp_path / "config.prototxt"
    cfg.write_text(config_text)
    model = tmp_path / "init.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=0).SerializeToString())
    wh = tmp_path / "warehouse"
    Warehouse.create(wh, str(cfg), str(model))
    return tmp_path, str(cfg), str(model), str(wh)


@pytest.fixture
def setup(tmp_path):
    return make_warehouse(tmp_path, CONFIG)


def evokit_cli(*args, env=None, check=True):
    proc = subprocess.run(["evokit", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"evokit {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def test_init_solver_layout(setup):
    tmp, cfg, model, wh = setup
    w = Warehouse(wh)
    assert w.iterations() == [0] and w.latest == 0
    assert sorted(os.listdir(os.path.join(wh, f"{ITER_PREFIX}0"))) == ["model.onnx", "solver.pb"]
    agent = w.load_agent()
    assert agent.model_iter_id == 0
    np.testing.assert_array_equal(agent.params, evokit.OnnxPolicy.load(model).initial_params())
    with pytest.raises(WarehouseError, match=r"already exists and is not an empty directory"):
        Warehouse.create(wh, cfg, model)


def test_sample_update_round_trip(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    rep = sample(wh, "CartPole-v1", 20, log, seed=0)
    assert rep.iteration == 0 and rep.num_samples == 20 and rep.env_steps >= 20 * 8
    records = read_log(log).records
    assert len(records) == 20
    w = Warehouse(wh)
    assert {r.record.config_fingerprint for r in records} == {w.info.config_fingerprint}
    assert {r.record.model_fingerprint for r in records} == {w.model_fingerprint(0)}
    before = log.read_bytes()
    up = update(wh, [log])
    assert (up.from_iteration, up.to_iteration, up.used, up.corrected) == (0, 1, 20, 0)
    assert log.read_bytes() == before  # update never modifies a log
    # the update equals the same update done by hand on an agent
    agent = Warehouse(wh).load_agent(0)
    agent.update([r.record.info for r in records], [r.record.reward for r in records])
    np.testing.assert_array_equal(Warehouse(wh).load_agent().params, agent.params)


def test_a_family_added_by_one_registry_row_runs_the_pipeline(tmp_path):
    # MA-ES (cpp/src/search/distribution/maes.cc, one line in distribution_registry.cc): the
    # warehouse, the samplers and the offline update take it as they take
    # every family, and the update is the agent's own.
    _, _, _, wh = make_warehouse(tmp_path, "solver { sampling { type: MAES_SAMPLING maes_sampling { sigma0: 0.5 "
                                           "seed: 3 } } population_size: 10 antithetic: false }\n")
    for iteration in range(2):
        log = tmp_path / f"log{iteration}"
        sample(wh, "CartPole-v1", 10, log, seed=iteration)
        records = read_log(log).records
        agent = Warehouse(wh).load_agent(iteration)
        up = update(wh, [log])
        assert (up.from_iteration, up.to_iteration, up.used) == (iteration, iteration + 1, 10)
        agent.update([r.record.info for r in records], [r.record.reward for r in records])
        got = Warehouse(wh).load_agent()
        np.testing.assert_array_equal(got.params, agent.params)
        assert got.solver.family == "MAES_SAMPLING"
    with open(os.path.join(wh, f"{ITER_PREFIX}2", "solver.pb"), "rb") as f:
        state = {v.name for v in pb.SolverState.FromString(f.read()).vectors}
    assert {"maes.mean", "maes.matrix", "maes.path", "maes.sigma"} <= state


def test_update_twice_does_not_apply_samples_twice(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    assert update(wh, [log]).to_iteration == 1
    snapshot = files(wh)
    again = update(wh, [log])
    assert again.to_iteration is None
    assert again.dropped == {"already applied by an earlier update": 20}
    assert files(wh) == snapshot
    # the CLI says so and exits non-zero, since nothing usable remained
    proc = evokit_cli("update", "--warehouse", wh, "--log", log, check=False)
    assert proc.returncode == 1
    assert "dropped 20: already applied by an earlier update" in proc.stderr
    assert "no usable samples: warehouse left at iteration 1" in proc.stderr


def _old_log_then_two_updates(tmp, wh):
    """A log of 20 samples drawn at iteration 0, then two updates from fresh
    logs (the warehouse ends at iteration 2); returns the old log."""
    old = tmp / "old"
    sample(wh, "CartPole-v1", 20, old, seed=7)
    for k in range(2):
        log = tmp / f"log{k}"
        sample(wh, "CartPole-v1", 20, log, seed=1)
        update(wh, [log])
    return old


def test_samples_from_older_kept_iterations_are_corrected_and_too_old_dropped(setup):
    tmp, cfg, model, wh = setup
    old = _old_log_then_two_updates(tmp, wh)
    w = Warehouse(wh)
    assert w.latest == 2 and w.iterations() == [0, 1, 2]  # max_to_keep 3
    rep = update(wh, [old])
    assert (rep.to_iteration, rep.used, rep.corrected) == (3, 20, 20)
    w = Warehouse(wh)
    assert w.iterations() == [1, 2, 3]  # iteration 0 pruned
    late = tmp / "late"
    records = read_log(old).records
    append_records(late, [r.record for r in records])
    rep = update(wh, [late])
    assert rep.to_iteration is None
    assert rep.dropped == {"from an iteration no longer kept (max_to_keep = 3)": 20}


def test_corrected_update_matches_formula(setup):
    tmp, cfg, model, wh = setup
    old = tmp / "old"
    sample(wh, "CartPole-v1", 20, old, seed=7)
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log, seed=1)
    update(wh, [log])
    w = Warehouse(wh)
    theta0, agent = w.params(0), w.load_agent(1)
    recs = [r.record for r in read_log(old).records]
    expected = w.load_agent(1)
    expected.update([r.info for r in recs], [r.reward for r in recs], history={0: theta0})
    update(wh, [old])
    np.testing.assert_array_equal(Warehouse(wh).load_agent().params, expected.params)
    assert not np.array_equal(expected.params, agent.params)


# ---- work done once per command ----------------------------------------------

@pytest.fixture
def counters(monkeypatch):
    """Counts of what a command repeats: config validations, graph
    fingerprints computed (by model file), models loaded, files read."""
    from evokit.config import validate_config
    from evokit.policy.fingerprint import model_fingerprint
    from evokit.policy.onnx_policy import OnnxPolicy

    loads = []  # models parsed, from a file (load) or from its bytes (from_bytes)
    real_load, real_from_bytes = OnnxPolicy.load.__func__, OnnxPolicy.from_bytes.__func__

    def load(cls, path, *args, **kwargs):
        loads.append(os.path.abspath(path))
        return real_load(cls, path, *args, **kwargs)

    def from_bytes(cls, data, param_pattern=".*", source="<memory>", *args, **kwargs):
        loads.append(os.path.abspath(source))
        return real_from_bytes(cls, data, param_pattern, source, *args, **kwargs)

    def start():
        monkeypatch.setattr(OnnxPolicy, "load", classmethod(load))
        monkeypatch.setattr(OnnxPolicy, "from_bytes", classmethod(from_bytes))
        return {"validations": count_calls(monkeypatch, validate_config),
                "fingerprints": count_calls(monkeypatch, model_fingerprint),
                "loads": loads, "reads": count_reads(monkeypatch)}
    return start


def iteration_file(wh, k, name):
    return os.path.abspath(os.path.join(wh, f"{ITER_PREFIX}{k}", name))


def test_init_solver_validates_once_and_reads_nothing_back(tmp_path, counters):
    cfg = tmp_path / "config.prototxt"
    cfg.write_text(CONFIG)
    model = tmp_path / "init.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=0).SerializeToString())
    c = counters()
    from evokit.cli import main

    assert main(["init-solver", "--config", str(cfg), "--model", str(model),
                 "--warehouse", str(tmp_path / "wh")]) == 0
    assert len(c["validations"]) == 1
    assert len(c["fingerprints"]) == 1 and c["loads"] == [str(model)]
    assert {path for path in c["reads"] if path.startswith(str(tmp_path / "wh"))} \
        <= {os.path.abspath(tmp_path / "wh" / "warehouse.pb")}


def test_sample_validates_once_and_reads_each_file_once(setup, counters):
    tmp, cfg, model, wh = setup
    c = counters()
    sample(wh, "CartPole-v1", 4, tmp / "log")
    assert len(c["validations"]) == 1
    assert c["loads"] == [iteration_file(wh, 0, "model.onnx")]
    assert len(c["fingerprints"]) == 1  # for the solver state, the config and the records
    assert collections.Counter(c["reads"])[iteration_file(wh, 0, "solver.pb")] == 1


def test_update_validates_once_and_fingerprints_each_model_once(setup, counters):
    tmp, cfg, model, wh = setup
    old = _old_log_then_two_updates(tmp, wh)
    new = tmp / "new"
    sample(wh, "CartPole-v1", 20, new, seed=2)  # drawn at iteration 2, the newest
    assert Warehouse(wh).iterations() == [0, 1, 2]

    c = counters()
    rep = update(wh, [new, old])
    assert (rep.from_iteration, rep.to_iteration, rep.used, rep.corrected) == (2, 3, 40, 20)
    assert len(c["validations"]) == 1
    # the newest model (the agent's) and the older one the records name, once
    # each; iteration 1, which no record names, is not loaded
    assert sorted(c["loads"]) == [iteration_file(wh, 0, "model.onnx"),
                                  iteration_file(wh, 2, "model.onnx")]
    assert sorted(call["source"] for call in c["fingerprints"]) == sorted(c["loads"])
    assert collections.Counter(c["reads"])[iteration_file(wh, 2, "solver.pb")] == 1  # the newest, parsed once
    assert collections.Counter(c["reads"])[iteration_file(wh, 3, "solver.pb")] == 0  # written, not read back
    assert collections.Counter(c["reads"])[iteration_file(wh, 3, "model.onnx")] == 0


def test_update_with_a_new_config_validates_it_once(setup, counters):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    lr = tmp / "lr.prototxt"
    lr.write_text(CONFIG.replace("base_lr: 0.05", "base_lr: 0.01"))
    c = counters()
    assert update(wh, [log], config=str(lr)).to_iteration == 1
    assert [call["source"] for call in c["validations"]] == [str(lr)]


# ---- one verified iteration ---------------------------------------------------

def test_iteration_reads_each_file_once_and_agents_take_it(setup, counters, monkeypatch):
    import hashlib

    from evokit import _core

    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    update(wh, [log])  # iteration 1: a state with Adam moments and draw counters
    with open(iteration_file(wh, 1, "model.onnx"), "rb") as f:
        model_bytes = f.read()
    c = counters()
    hashes, checks = [], []
    real_sha256, real_check = hashlib.sha256, _core.solver_state_check
    monkeypatch.setattr(hashlib, "sha256", lambda *a: hashes.append(a) or real_sha256(*a))
    monkeypatch.setattr(_core, "solver_state_check", lambda *a: checks.append(a) or real_check(*a))
    w = Warehouse(wh)
    it = w.iteration(1)
    assert collections.Counter(c["reads"]) == {os.path.abspath(os.path.join(wh, "warehouse.pb")): 1,
                                               iteration_file(wh, 1, "solver.pb"): 1,
                                               iteration_file(wh, 1, "model.onnx"): 1}
    # the model's sha256, the config fingerprint; the graph's fingerprint; the state's check
    assert (len(hashes), len(c["fingerprints"]), len(checks), len(c["validations"])) == (2, 1, 1, 1)
    assert it.model_bytes == model_bytes
    assert it.state.model_sha256 == real_sha256(it.model_bytes).hexdigest()
    assert it.params_fingerprint == it.state.params_fingerprint
    assert it.config_fingerprint == w.info.config_fingerprint
    assert (it.k, it.directory, it.config.solver.optimizer.base_lr) == (1, w.iteration_dir(1), pytest.approx(0.05))
    agent = ESAgent.from_iteration(it)
    loaded = w.load_agent(1)
    assert w.iteration(1) is it and w.policy(1) is it.policy
    assert (w.model_fingerprint(1), w.params(1).tobytes()) == (it.params_fingerprint, it.params.tobytes())
    # nothing read, hashed, fingerprinted, checked or validated again
    assert len(c["reads"]) == 3 and len(c["loads"]) == 1
    assert (len(hashes), len(c["fingerprints"]), len(checks), len(c["validations"])) == (2, 1, 1, 1)
    # the agent from the iteration is load_agent's and the model directory's, bit for bit
    by_hand = ESAgent()
    by_hand.load_config(it.config)
    by_hand.load_inference_model(w.iteration_dir(1))
    by_hand.load_solver(w.iteration_dir(1))
    assert agent.solver_file_state(it.model_bytes).SerializeToString() == it.state.SerializeToString()
    for other in (loaded, by_hand):
        assert agent.model_iter_id == other.model_iter_id == 1
        assert agent.center.tobytes() == other.center.tobytes() == it.params.tobytes()
        assert agent.solver_state().SerializeToString() == other.solver_state().SerializeToString()
    # and their clones draw the same members (each agent's first draws)
    draws = [a.draw_members(4) for a in (agent, loaded, by_hand)]
    assert draws[0] == draws[1] == draws[2]


def test_iteration_with_a_new_config_reads_nothing_again(setup, counters):
    tmp, cfg, model, wh = setup
    w = Warehouse(wh)
    stored = w.iteration(0)
    c = counters()
    lr = tmp / "lr.prototxt"
    lr.write_text(CONFIG.replace("base_lr: 0.05", "base_lr: 0.01"))
    it = w.iteration(0, config=str(lr))
    assert it.config.solver.optimizer.base_lr == pytest.approx(0.01)
    assert it.policy is stored.policy and it.state is stored.state and it.model_bytes is stored.model_bytes
    onnxruntime = tmp / "ort.prototxt"
    onnxruntime.write_text(CONFIG.replace("population_size", 'backend: "onnxruntime" population_size'))
    ort = w.iteration(0, config=str(onnxruntime))
    assert (stored.policy.backend, ort.policy.backend) == ("native", "onnxruntime")
    assert ort.policy.initial_params().tobytes() == stored.params.tobytes()
    assert ESAgent.from_iteration(ort).policy is ort.policy
    assert [r for r in c["reads"] if r.startswith(os.path.abspath(wh))] == []
    assert [call["source"] for call in c["validations"]] == [str(lr), str(onnxruntime)]
    assert w.iteration(0) is stored
    changed = tmp / "seed.prototxt"
    changed.write_text(CONFIG.replace("seed: 1024", "seed: 7"))
    with pytest.raises(evokit.ConfigError, match=r"solver.sampling.gaussian_sampling.seed changes from 1024 "
                                                 r"to 7; the keys in existing logs"):
        w.iteration(0, config=str(changed))


def _resealed(path, edit):
    state = read_state_file(path, pb.SolverState())
    edit(state)
    write_state_file(path, state)


@pytest.mark.parametrize("reader", ["iteration", "load_agent", "model_fingerprint", "params", "policy"])
def test_iteration_refusals_are_the_same_for_every_reader(setup, reader):
    tmp, cfg, model, wh = setup
    d = os.path.join(wh, f"{ITER_PREFIX}0")
    solver, onnx_file = os.path.join(d, "solver.pb"), os.path.join(d, "model.onnx")
    read = lambda path: pathlib.Path(path).read_bytes()  # noqa: E731
    write = lambda path, data: pathlib.Path(path).write_bytes(data)  # noqa: E731

    def refused(error, pattern):
        w = Warehouse(wh)
        with pytest.raises(error, match=pattern):
            getattr(w, reader)(0)
        return w

    good = read(onnx_file)
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 1
    write(onnx_file, bytes(damaged))
    refused(evokit.ModelError, rf"^{onnx_file}: its sha256 is [0-9a-f]{{64}}, {solver} records [0-9a-f]{{64}} "
                               rf"for its model \(model_sha256\): the file is damaged, or the state is "
                               rf"another model's$")
    write(onnx_file, good)
    data = read(solver)
    write(solver, data[:-1] + bytes([data[-1] ^ 1]))
    refused(evokit.SolverFileError, rf"^{solver}: ")
    write(solver, data)
    _resealed(solver, lambda s: setattr(s, "params_fingerprint", "0" * 64))
    refused(evokit.SolverFileError, rf"^{onnx_file}: its parameters are not those of the model {solver} was "
                                    rf"saved with \(params fingerprint [0-9a-f]{{16}}, solver.pb records "
                                    rf"0000000000000000\)$")
    write(solver, data)
    _resealed(solver, lambda s: setattr(s, "steps", 3))
    refused(WarehouseError, rf"^{d}: solver state is at iteration 3, the directory says 0$")
    write(solver, data)
    info_path = os.path.join(wh, "warehouse.pb")
    info = read_state_file(info_path, pb.WarehouseInfo())
    original = info.config_fingerprint
    info.config_fingerprint = "f" * 64
    write_state_file(info_path, info)
    refused(WarehouseError, rf"^{d}: model or config does not match the warehouse \(fingerprint differs "
                            rf"from warehouse.pb\)$")
    info.config_fingerprint = original
    write_state_file(info_path, info)
    getattr(Warehouse(wh), reader)(0)


# ---- bad input -------------------------------------------------------------

def test_truncated_and_corrupted_logs_keep_good_records(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    data = log.read_bytes()
    offsets = [r.offset for r in read_log(log).records]
    torn = tmp / "torn"
    torn.write_bytes(data[: offsets[-1] + 10])           # sampler killed mid-write
    flipped = tmp / "flipped"
    mid = bytearray(data)
    mid[offsets[5] + 20] ^= 0xFF                           # a flipped byte in record 5
    flipped.write_bytes(bytes(mid))
    empty = tmp / "empty"
    empty.write_bytes(b"")
    rep = update(wh, [torn, flipped, empty])
    assert rep.to_iteration == 1
    # 19 from the torn log + 19 from the flipped one, but they are the same samples: 19 + 1 distinct
    assert rep.used == 20
    assert rep.dropped == {"duplicate of another record in these logs": 18}
    text = str(rep)
    assert f"{torn}: skipped 10 bytes at offset {offsets[-1]}: torn record" in text
    assert f"{flipped}: skipped" in text and f"at offset {offsets[5]}" in text


def test_empty_log_only_exits_nonzero(setup):
    tmp, cfg, model, wh = setup
    empty = tmp / "empty"
    empty.write_bytes(b"")
    snapshot = files(wh)
    proc = evokit_cli("update", "--warehouse", wh, "--log", empty, check=False)
    assert proc.returncode == 1
    assert "no usable samples: warehouse left at iteration 0" in proc.stderr
    assert files(wh) == snapshot


def test_logs_from_another_config_or_run_are_refused(setup):
    tmp, cfg, model, wh = setup
    other_cfg = tmp / "other.prototxt"
    other_cfg.write_text(CONFIG.replace("seed: 1024", "seed: 99"))
    other_wh = tmp / "other_wh"
    Warehouse.create(other_wh, str(other_cfg), model)       # another config
    other_model = tmp / "other.onnx"
    other_model.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=5).SerializeToString())
    run_wh = tmp / "run_wh"
    Warehouse.create(run_wh, cfg, str(other_model))          # same config and architecture, another run
    a, b, good = tmp / "a", tmp / "b", tmp / "good"
    sample(other_wh, "CartPole-v1", 20, a)
    sample(run_wh, "CartPole-v1", 20, b)
    sample(wh, "CartPole-v1", 4, good)
    rep = update(wh, [a, b, good])
    assert rep.to_iteration == 1 and rep.used == 4
    assert rep.dropped == {"from another config or model (config fingerprint differs)": 20,
                           "from another run (model fingerprint differs from the warehouse's)": 20}


def test_future_iteration_and_bad_records(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log)
    recs = [r.record for r in read_log(log).records]
    future = pb.SampleRecord()
    future.CopyFrom(recs[0])
    future.info.model_iter_id = 99
    badkey = pb.SampleRecord()
    badkey.CopyFrom(recs[1])
    badkey.info.key[0] = 10**9
    nan = pb.SampleRecord()
    nan.CopyFrom(recs[2])
    nan.reward = float("nan")
    huge = pb.SampleRecord()  # finite as a double, beyond float32: would abort the update
    huge.CopyFrom(recs[3])
    huge.reward = 1e39
    for i, r in enumerate((future, badkey, nan, huge)):
        r.sample_index = 100 + i  # samples of their own, not copies of the ones they came from
    extra = tmp / "extra"
    append_records(extra, [future, badkey, nan, huge])
    rep = update(wh, [log, extra])
    assert rep.to_iteration == 1 and rep.used == 4
    assert rep.dropped == {"from a future or unknown iteration (the warehouse is at 0)": 1,
                           "invalid key": 1, "reward is not finite": 1,
                           "reward beyond the float32 range (|reward| > 3.4e38)": 1}


def test_sample_refuses_zero_episodes(setup):
    tmp, cfg, model, wh = setup
    with pytest.raises(ValueError, match=r"^episodes per sample must be >= 1, got 0$"):
        sample(wh, "CartPole-v1", 4, tmp / "log", episodes_per_sample=0)
    assert not (tmp / "log").exists()


def test_log_path_that_is_a_directory_or_missing(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log)
    rep = update(wh, [tmp, tmp / "missing", log])
    assert rep.to_iteration == 1 and rep.used == 4
    assert any(str(tmp) in e and "directory" in e for e in rep.log_errors)
    assert any("missing" in e for e in rep.log_errors)


def test_bad_warehouses(tmp_path, setup):
    tmp, cfg, model, wh = setup
    with pytest.raises(WarehouseError, match=r"nope: no such warehouse"):
        Warehouse(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WarehouseError, match=r"empty: empty directory, not a warehouse"):
        Warehouse(tmp_path / "empty")
    # half-written: an iteration directory without its solver state is ignored
    os.makedirs(os.path.join(wh, f"{ITER_PREFIX}1"))
    with open(os.path.join(wh, f"{ITER_PREFIX}1", "model.onnx"), "wb") as f:
        f.write(b"partial")
    w = Warehouse(wh)
    assert w.latest == 0
    assert any("ignoring half-written iteration" in p and "solver.pb missing" in p for p in w.problems)
    proc = evokit_cli("sample", "--warehouse", tmp_path / "nope", "--env", "CartPole-v1",
                      "--num-samples", 2, "--log", tmp_path / "l", check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"evokit: error: {tmp_path / 'nope'}: no such warehouse " \
                                  f"(create one with `evokit init-solver`)"


def test_warehouse_of_another_noise_version_is_refused(setup, tmp_path):
    # A warehouse whose logged keys name noise of another definition (EvoKit
    # before noise version 3 wrote no noise_version; version 3 was ARS4x32-7)
    # is refused by name, by the API and by the CLI, and nothing in it is touched.
    tmp, cfg, model, wh = setup
    info_path = os.path.join(wh, "warehouse.pb")
    with open(info_path, "rb") as f:
        info = pb.WarehouseInfo.FromString(f.read())
    assert info.noise_version == evokit._core.NOISE_VERSION == 4
    for version, name in ((None, "2 (Philox4x32-10, EvoKit before noise version 3)"),
                          (3, "3 (ARS4x32-7, EvoKit before noise version 4)"),
                          (5, "5 (a newer EvoKit)")):
        if version is None:
            info.ClearField("noise_version")
        else:
            info.noise_version = version
        write_state_file(info_path, info)
        before = files(wh)
        want = (f"{wh}: warehouse refers to noise version {name}, this EvoKit rebuilds noise "
                f"version 4 (ARS4x32-5): its keys would give different noise; finish it with the "
                f"EvoKit that wrote it, or start afresh from its model with `evokit init-solver`")
        with pytest.raises(WarehouseError) as err:
            Warehouse(wh)
        assert str(err.value) == want
        proc = evokit_cli("update", "--warehouse", wh, "--log", tmp_path / "none", check=False)
        assert proc.returncode == 1 and proc.stderr.strip() == f"evokit: error: {want}"
        assert files(wh) == before


def test_solver_file_from_another_model(setup):
    tmp, cfg, model, wh = setup
    other = tmp / "other.onnx"
    other.write_bytes(init_mlp(4, 2, hidden_sizes=(5,), seed=0).SerializeToString())
    other_wh = tmp / "other_wh"
    Warehouse.create(other_wh, cfg, str(other))
    src = os.path.join(other_wh, f"{ITER_PREFIX}0", "solver.pb")
    dst = os.path.join(wh, f"{ITER_PREFIX}0", "solver.pb")
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read())
    model = os.path.join(wh, f"{ITER_PREFIX}0", "model.onnx")
    with pytest.raises(evokit.ModelError, match=rf"^{model}: its sha256 is [0-9a-f]{{64}}, {dst} "
                                                rf"records [0-9a-f]{{64}} for its model \(model_sha256\): "
                                                rf"the file is damaged, or the state is another model's$"):
        Warehouse(wh).load_agent()
    state = read_state_file(dst, pb.SolverState())  # without the file's digest: the count differs
    state.ClearField("model_sha256")
    write_state_file(dst, state)
    with pytest.raises(evokit.SolverFileError, match=r"solver state is for a model with 37 parameters, "
                                                     r"the loaded model has 58"):
        Warehouse(wh).load_agent()


def test_config_change_that_breaks_keys_is_refused(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log)
    for old, new, field in [("seed: 1024", "seed: 7", "gaussian_sampling.seed"),
                            ("cache_size: 100000", "cache_size: 200000", "gaussian_sampling.cache_size"),
                            ("type: ADAM", "type: SGD", "solver.optimizer.type")]:
        changed = tmp / "changed.prototxt"
        changed.write_text(CONFIG.replace(old, new))
        proc = evokit_cli("update", "--warehouse", wh, "--log", log, "--config", changed, check=False)
        assert proc.returncode == 1
        assert field in proc.stderr and "start a new warehouse with `evokit init-solver`" in proc.stderr
    lr = tmp / "lr.prototxt"
    lr.write_text(CONFIG.replace("base_lr: 0.05", "base_lr: 0.01"))
    evokit_cli("update", "--warehouse", wh, "--log", log, "--config", lr)
    assert Warehouse(wh).config().solver.optimizer.base_lr == pytest.approx(0.01)


def test_concurrent_update_is_refused(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log)
    snapshot = files(wh)
    with Warehouse(wh).locked():
        with pytest.raises(WarehouseError, match=r"another update is running on this warehouse"):
            update(wh, [log])
        proc = evokit_cli("update", "--warehouse", wh, "--log", log, check=False)
        assert proc.returncode == 1 and "another update is running" in proc.stderr
    assert files(wh) == snapshot
    assert update(wh, [log]).to_iteration == 1


def _sampled(log):
    """Each record of the log without its time: what a sample is."""
    out = []
    for r in read_log(log).records:
        rec = pb.SampleRecord()
        rec.CopyFrom(r.record)
        rec.ClearField("time")
        out.append(rec.SerializeToString(deterministic=True))
    return out


def test_a_sampler_resumes_where_its_log_ends(setup):
    tmp, cfg, model, wh = setup
    whole, resumed = tmp / "whole.log", tmp / "resumed.log"
    sample(wh, "CartPole-v1", 12, whole, seed=3, chunk_size=4)
    # stopped after its first chunk, then run again with the same arguments
    first = sample(wh, "CartPole-v1", 4, resumed, seed=3, chunk_size=4)
    rest = sample(wh, "CartPole-v1", 12, resumed, seed=3, chunk_size=4)
    assert (first.num_samples, rest.num_samples, rest.first_index) == (4, 8, 4)
    assert "from sample 4, the log held the ones before" in str(rest)
    assert _sampled(resumed) == _sampled(whole)
    assert [r.record.sample_index for r in read_log(resumed).records] == list(range(12))
    again = sample(wh, "CartPole-v1", 12, resumed, seed=3)
    assert again.num_samples == 0 and "already holds samples 0 .. 11" in str(again)
    assert len(read_log(resumed).records) == 12
    sample(wh, "CartPole-v1", 4, resumed, seed=4)  # another sampler: its own numbers
    assert [r.record.sample_index for r in read_log(resumed).records][12:] == [0, 1, 2, 3]


def test_records_carry_their_own_env_steps(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    rep = sample(wh, "CartPole-v1", 10, log, seed=0)
    steps = [r.record.env_steps for r in read_log(log).records]
    assert sum(steps) == rep.env_steps
    assert len(set(steps)) > 1  # CartPole's episodes end at different steps


def test_unnumbered_samples_of_the_same_sampler_are_refused(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log, seed=3)
    old = read_log(log).records[0].record
    old.ClearField("sample_index")
    append_records(log, [old])
    with pytest.raises(ValueError, match=r"already holds 1 unnumbered samples of sampler 3 at iteration 0; "
                                         r"give this sampler another --seed"):
        sample(wh, "CartPole-v1", 8, log, seed=3)


def test_two_evaluations_of_one_member_are_two_samples(setup):
    """The same member evaluated twice with the same reward is data, not a
    duplicate; only a record appended twice is one."""
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log, seed=0)
    records = [r.record for r in read_log(log).records]
    twin = pb.SampleRecord()
    twin.CopyFrom(records[0])
    twin.sample_index = 20
    append_records(log, [twin, records[1]])  # a second evaluation of member 0; record 1 again
    rep = update(wh, [log])
    assert rep.used == 21
    assert rep.dropped == {"duplicate of another record in these logs": 1}


# ---- crash safety ------------------------------------------------------------

@pytest.mark.parametrize("stage", ["after-model", "after-solver", "before-rename", "after-rename"])
def test_update_killed_mid_write(setup, stage):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    proc = evokit_cli("update", "--warehouse", wh, "--log", log, env={"EVOKIT_CRASH_AT": stage}, check=False)
    assert proc.returncode == 137
    k = Warehouse(wh).latest
    assert k == (1 if stage == "after-rename" else 0)
    Warehouse(wh).load_agent()  # loads
    # the next update works (and does not apply the same samples twice)
    log2 = tmp / "log2"
    sample(wh, "CartPole-v1", 20, log2, seed=1)
    rep = update(wh, [log, log2])
    expect_used = 20 if stage == "after-rename" else 40
    assert rep.to_iteration == k + 1 and rep.used == expect_used
    assert not [n for n in os.listdir(wh) if n.startswith(".tmp-")]


# ---- concurrency and the shell loop ---------------------------------------------

def test_four_samplers_append_to_one_log_at_once(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "shared.log"
    procs = [subprocess.Popen(["evokit", "sample", "--warehouse", wh, "--env", "CartPole-v1",
                               "--num-samples", "20", "--log", str(log), "--seed", str(s), "--quiet"],
                              stderr=subprocess.PIPE, text=True) for s in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    res = read_log(log)
    assert res.skipped == [] and len(res.records) == 80
    assert sorted({r.record.sampler_id for r in res.records}) == [0, 1, 2, 3]
    rep = update(wh, [log])
    assert rep.used == 80


def test_shell_loop_improves_cartpole(setup):
    """A short version of demo/online_example.sh: sample / update from the shell."""
    tmp, cfg, model, wh = setup
    first = None
    for epoch in range(6):
        log = tmp / f"log{epoch}"
        evokit_cli("sample", "--warehouse", wh, "--env", "CartPole-v1", "--num-samples", 20, "--log", log,
                   "--workers", 2, "--quiet")
        out = evokit_cli("update", "--warehouse", wh, "--log", log).stdout
        assert f"update {epoch} -> {epoch + 1}: used 20 samples" in out
        mean = np.mean([r.record.reward for r in read_log(log).records])
        first = mean if first is None else first
    assert Warehouse(wh).latest == 6
    assert mean > first


def centre_return(agent, episodes=20):
    with SerialEvaluator("CartPole-v1") as ev:
        return ev.evaluate(agent, [None] * episodes, [[10_000 + i] for i in range(episodes)]).rewards.mean()


@pytest.mark.parametrize("lag", [1, 2])
def test_lagging_sampler_still_solves_cartpole(tmp_path, lag):
    cfg = tmp_path / "config.prototxt"
    cfg.write_text(CONFIG.replace("population_size: 20", "population_size: 40"))
    model = tmp_path / "init.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(16,), seed=0).SerializeToString())
    wh = tmp_path / "wh"
    Warehouse.create(wh, str(cfg), str(model))
    with SerialEvaluator("CartPole-v1") as ev:
        for k in range(60):
            log = tmp_path / f"log{k}"
            # each round its own sampler: sample i of one sampler at one iteration is one evaluation
            sample(wh, "CartPole-v1", 40, log, seed=k, iteration=max(0, k - lag), evaluator=ev)
            rep = update(wh, [log])
            assert rep.used == 40 and rep.corrected == (40 if k >= 1 else 0)
            if k % 3 == 2 and centre_return(Warehouse(wh).load_agent()) >= 475:
                break
    assert centre_return(Warehouse(wh).load_agent()) >= 475


def test_online_example_demo_solves(tmp_path):
    proc = subprocess.run(["bash", os.path.join(ROOT, "demo", "online_example.sh"), str(tmp_path), "60"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "solved after" in proc.stdout
    assert Warehouse(tmp_path / "model_warehouse").latest >= 3


# ---- a full disk ------------------------------------------------------------------


def _cli_with_file_size_limit(limit, cwd, *args):
    """``evokit ARGS`` (this interpreter's package) in a process that may
    write files of at most ``limit`` bytes: past it a write fails with EFBIG,
    as it fails with ENOSPC on a full disk (SIGXFSZ ignored)."""
    import resource
    import signal
    import sys

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "evokit.cli", *map(str, args)], cwd=cwd,
                          preexec_fn=small_disk, capture_output=True, text=True, timeout=300)


def test_sample_on_a_full_disk_appends_nothing_and_a_retry_succeeds(setup):
    """Issue 16: `sample` on a full disk appended part of its batch and a torn
    record, then refused a retry with the same --seed."""
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log, seed=0)
    before = log.read_bytes()
    proc = _cli_with_file_size_limit(len(before) + 300, tmp, "sample", "--warehouse", wh, "--env",
                                     "CartPole-v1", "--num-samples", 4, "--log", log, "--seed", 1)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert re.fullmatch(rf"evokit: error: {re.escape(str(log))}: cannot append 4 records \(\d+ bytes\) to "
                        rf"the sampling log: File too large; nothing was appended \(the log is back to "
                        rf"its {len(before)} bytes\)\n", proc.stderr), proc.stderr
    assert log.read_bytes() == before
    sample(wh, "CartPole-v1", 4, log, seed=1)  # the same sampler again: accepted, and whole
    result = read_log(log)
    assert log.read_bytes().startswith(before) and result.skipped == []
    assert [r.record.sampler_id for r in result.records] == [0] * 4 + [1] * 4


def test_update_on_a_full_disk_names_the_file_and_leaves_the_warehouse(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    snapshot = files(wh)
    proc = _cli_with_file_size_limit(200, tmp, "update", "--warehouse", wh, "--log", log)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert re.fullmatch(rf"evokit: error: {re.escape(wh)}/\.tmp-model_iter_id-1-\w+/model\.onnx: cannot "
                        rf"write it \(File too large\)\n", proc.stderr), proc.stderr
    assert files(wh) == snapshot
    assert update(wh, [log]).to_iteration == 1


def test_update_whose_directory_fsync_fails_names_the_directory(setup, monkeypatch):
    import errno
    import stat

    import evokit.util

    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 20, log)
    snapshot = files(wh)
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(evokit.util.os, "fsync", fsync)
    with pytest.raises(ValueError) as ei:  # the model's writer names its file, then the directory
        update(wh, [log])
    monkeypatch.undo()
    tmp_dir = rf"{re.escape(wh)}/\.tmp-model_iter_id-1-\w+"
    assert re.fullmatch(rf"{tmp_dir}/model\.onnx: cannot write: {tmp_dir}: cannot fsync the directory "
                        rf"\(No space left on device\)", str(ei.value)), str(ei.value)
    assert files(wh) == snapshot


def test_consumed_records_are_kept_as_runs(setup):
    """consumed.pb grows with the runs of sample indices, not with the records;
    an update on the same logs again applies nothing twice."""
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 300, log, seed=5)
    sample(wh, "CartPole-v1", 100, log, seed=6)
    assert update(wh, [log]).used == 400
    consumed = Warehouse(wh).consumed(1)
    assert consumed.runs() == {(5, 0): [(0, 300)], (6, 0): [(0, 100)]}
    assert len(consumed) == 400 and (5, 0, 299) in consumed and (5, 0, 300) not in consumed
    raw = read_state_file(os.path.join(wh, f"{ITER_PREFIX}1", "consumed.pb"), pb.ConsumedSamples(), WarehouseError)
    assert list(raw.record_ids) == [] and len(raw.ranges) == 2
    # the samples drawn at iteration 0 are not applied again (async_es keeps iteration 0)
    again = update(wh, [log])
    assert again.to_iteration is None and again.dropped == {"already applied by an earlier update": 400}


def test_consumed_runs_merge_and_keep_unnumbered_ids():
    from evokit.online.warehouse import Consumed

    c = Consumed([(1, 0, 4), (1, 0, 2), (1, 0, 3), (1, 0, 9), b"\x01" * 16, (2, 3, 0)])
    assert c.runs() == {(1, 0): [(2, 5), (9, 10)], (2, 3): [(0, 1)]}
    other = Consumed.from_proto(c.to_proto())
    assert other.runs() == c.runs() and other.ids == {b"\x01" * 16}
    other.update(Consumed([(1, 0, 5), (1, 0, 6), (1, 0, 7), (1, 0, 8)]))
    assert other.runs()[(1, 0)] == [(2, 10)]
    assert sorted(x for x in other if isinstance(x, tuple))[:2] == [(1, 0, 2), (1, 0, 3)]


def test_a_record_claiming_another_records_number_is_dropped(setup):
    tmp, cfg, model, wh = setup
    log = tmp / "log"
    sample(wh, "CartPole-v1", 4, log)
    claim = pb.SampleRecord()
    claim.CopyFrom(read_log(log).records[0].record)
    claim.reward += 1.0  # another payload with sample 0's number
    append_records(log, [claim])
    rep = update(wh, [log])
    assert rep.used == 4
    assert rep.dropped == {"another record with the same sampler, iteration and sample_index came first": 1}


def _reference_selection(wh, logs, consumed=()):
    """The update's rule written the direct way, one record at a time in
    Python (the oracle of the core's select_update_records): the records
    taken, in order, and the counts of the ones dropped."""
    w = Warehouse(wh)
    agent = w.load_agent()
    k, fp = agent.model_iter_id, w.info.config_fingerprint
    taken, dropped, seen = [], collections.Counter(), {}
    for path in logs:
        for rec in read_log(path).records:
            r = rec.record
            identity = rec.identity
            if r.config_fingerprint != fp:
                dropped["config"] += 1
            elif r.info.model_iter_id != k:
                dropped["iteration"] += 1
            elif r.model_fingerprint != w.model_fingerprint(k):
                dropped["model"] += 1
            elif identity in consumed:
                dropped["consumed"] += 1
            elif identity in seen:
                dropped["twice" if seen[identity] == rec.record_id else "claim"] += 1
            elif not np.isfinite(r.reward) or abs(r.reward) > float(np.finfo(np.float32).max):
                dropped["reward"] += 1
            else:
                try:
                    agent.solver.check_member(evokit.agent.core_info(r.info))
                except (ValueError, IndexError):
                    dropped["key"] += 1
                    continue
                seen[identity] = rec.record_id
                taken.append((list(r.info.key), r.info.mirrored, r.reward, identity))
    return taken, dropped


@pytest.mark.parametrize("threads", [1, 2])
def test_the_core_takes_the_records_the_rule_names(setup, threads):
    """select_update_records against the rule written record by record in
    Python, on two logs of four samplers with everything an update meets:
    records appended twice, conflicting claims, unnumbered records (and one
    appended twice), numbers out of order, bad rewards and keys, foreign
    records, what an earlier update consumed; read in pieces far smaller
    than the logs, by one thread or by a reader thread per log."""
    from evokit import _core

    tmp, cfg, model, wh = setup
    rng = np.random.default_rng(3)
    logs = [tmp / "a.log", tmp / "b.log"]
    for s in range(4):
        sample(wh, "CartPole-v1", 300, logs[s % 2], seed=s)
    base = [rec.record for path in logs for rec in read_log(path).records]
    extra = []
    for i in rng.choice(len(base), 200, replace=False):
        r = pb.SampleRecord()
        r.CopyFrom(base[i])
        kind = i % 8
        if kind == 1:
            r.reward += 1.0                      # a claim on another record's number
        elif kind == 2:
            r.ClearField("sample_index")         # unnumbered
        elif kind == 3:
            r.sample_index += 1000 + int(i)      # a number no record had, out of order
        elif kind == 4:
            r.reward = float(["nan", "inf", "3.5e38"][i % 3])
            r.sample_index += 5000 + int(i)
        elif kind == 5:
            r.info.key[:] = [10**12]             # beyond the noise table
            r.sample_index += 9000 + int(i)
        elif kind == 6:
            r.model_fingerprint = "0" * 64
        elif kind == 7:
            r.info.model_iter_id = 1
        extra.append(r)
    unnumbered = [r for r in extra if not r.HasField("sample_index")]
    extra += unnumbered[:3]                      # unnumbered, appended twice
    order = rng.permutation(len(extra))
    append_records(logs[0], [extra[i] for i in order[:100]])
    append_records(logs[1], [extra[i] for i in order[100:]])
    consumed = {(0, 0, j) for j in range(50, 80)} | {(3, 0, 7)}
    want, want_dropped = _reference_selection(wh, logs, consumed)

    w = Warehouse(wh)
    agent = w.load_agent()
    from evokit.online.warehouse import Consumed
    c = Consumed(consumed)
    got = _core.select_update_records(
        [str(p) for p in logs], agent.solver, config_fingerprint=w.info.config_fingerprint, iteration=0,
        window={0}, max_to_keep=3, corrects_older_samples=True, sampling_type="GAUSSIAN_SAMPLING",
        model_fingerprint=w.model_fingerprint, consumed_ids=[], num_threads=threads, chunk_bytes=4096,
        consumed_runs=[(s, it, a, b) for (s, it), runs in c.runs().items() for a, b in runs])
    assert len(got) == len(want) > 1000
    assert list(got.rewards) == [t[2] for t in want]
    names = {"from another config or model (config fingerprint differs)": "config",
             "from a future or unknown iteration (the warehouse is at 0)": "iteration",
             "from another run (model fingerprint differs from the warehouse's)": "model",
             "already applied by an earlier update": "consumed",
             "duplicate of another record in these logs": "twice",
             "another record with the same sampler, iteration and sample_index came first": "claim",
             "reward is not finite": "reward", "reward beyond the float32 range (|reward| > 3.4e38)": "reward",
             "invalid key": "key"}
    got_dropped = collections.Counter()
    for reason, n in got.dropped.items():
        got_dropped[names[reason]] += n
    assert got_dropped == want_dropped
    assert set(want_dropped) == {"iteration", "model", "consumed", "twice", "claim", "reward", "key"}
    taken = Consumed.taken(got)
    expected = Consumed(t[3] for t in want)
    assert taken.runs() == expected.runs() and taken.ids == expected.ids and len(taken.ids) > 10
    assert got.skipped == [] and got.log_errors == [] and got.records_read == sum(
        len(read_log(p).records) for p in logs)
