"""State files are verified on load, not trusted (proto/evokit.proto, "State
files"; evokit/statefile.py): the two reproductions of issue 16 and a
damage replay over every kind of file EvoKit reads back as state.

A damage replay writes seeded random damages (a bit flipped, a byte changed,
the file cut short) into one file at a time and loads what reads it. Each
outcome is one of: refused (an EvoKit error of one line naming the damaged
file), harmless (what was loaded equals what the undamaged file gives), a
silent acceptance (loaded, but different) or a crash (any other exception).
The last two must never happen.
"""

import collections
import hashlib
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

from evokit import ESAgent
from evokit import evokit_pb2 as pb
from evokit.agent import params_fingerprint
from evokit.cli import main
from evokit.config import load_config
from evokit.errors import SolverFileError, WarehouseError
from evokit.online.pipeline import sample, update
from evokit.online.warehouse import ITER_PREFIX, Warehouse
from evokit.policy.mlp import init_mlp
from evokit.statefile import TRAILER_SIZE, read_state_file, seal, unseal, write_state_file
from evokit.training.checkpoint import read_checkpoint
from evokit.training.loop import train

from helpers import CARTPOLE, files, quiet, read

DAMAGES = ("bit flip", "byte change", "truncation")
OBS = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)


def write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def flip_inside_parameter(path: str, model_bytes: bytes) -> int:
    """Flip one bit in the middle of the first parameter's bytes where
    ``model_bytes`` (a serialized ONNX model) sits inside the file at
    ``path``; returns the file offset."""
    model = onnx.load_from_string(model_bytes)
    raw = model.graph.initializer[0].raw_data
    data = bytearray(read(path))
    start = data.find(raw)
    assert start >= 0 and data.find(raw, start + 1) < 0  # found once
    at = start + len(raw) // 2
    data[at] ^= 0x04
    write(path, bytes(data))
    return at


# ---- the trailer ---------------------------------------------------------------

def test_trailer_is_field_15_over_every_byte_before_it(tmp_path):
    info = pb.WarehouseInfo(config="solver {}", config_fingerprint="ab" * 32)
    path = write_state_file(tmp_path / "warehouse.pb", info)
    data = read(path)
    body = info.SerializeToString()
    assert data == body + b"\x7a\x20" + hashlib.sha256(body).digest()
    assert len(data) == len(body) + TRAILER_SIZE
    parsed = pb.WarehouseInfo.FromString(data)  # a plain protobuf parser reads it
    assert parsed.sha256 == hashlib.sha256(body).digest() and parsed.config == "solver {}"
    assert read_state_file(path, pb.WarehouseInfo()) == info
    assert unseal("x", seal(b"")) == b""


def test_refusals_name_the_file_and_the_digests(tmp_path):
    path = str(tmp_path / "consumed.pb")
    body = pb.ConsumedSamples(record_ids=[b"\x01" * 16]).SerializeToString()
    good = seal(body)
    bad = bytearray(good)
    bad[3] ^= 0x01
    actual = hashlib.sha256(bytes(bad[:-TRAILER_SIZE])).hexdigest()
    recorded = hashlib.sha256(body).hexdigest()
    cases = [
        (bytes(bad), f"{path}: damaged: the sha256 of its first {len(body)} bytes is {actual}, "
                     f"its trailer records {recorded}"),
        (body, f"{path}: no sha256 trailer at its end (of {len(body)} bytes): cut short or damaged, "
               f"or written by an EvoKit before state files were checksummed; if it is an intact "
               f"older file, add the trailer with `evokit seal {path}`"),
        (b"", f"{path}: empty file, expected a state file ending with its sha256 trailer"),
    ]
    for data, message in cases:
        write(path, data)
        with pytest.raises(WarehouseError) as info:
            read_state_file(path, pb.ConsumedSamples(), WarehouseError)
        assert str(info.value) == message
    os.remove(path)
    with pytest.raises(WarehouseError, match=rf"^{path}: cannot read consumed list \(No such file"):
        read_state_file(path, pb.ConsumedSamples(), WarehouseError, "consumed list")


# ---- a warehouse and a run to damage ---------------------------------------------

@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"))


def make_world(tmp):
    """A warehouse at iteration 1 (after one update: Adam state, consumed.pb)
    and a run of `evokit train` with observation normalisation, checkpointed,
    in the directory ``tmp`` (a pathlib.Path)."""
    model = tmp / "m.onnx"
    model.write_bytes(init_mlp(4, 2, hidden_sizes=(16,), seed=0).SerializeToString())
    wh = str(tmp / "W")
    Warehouse.create(wh, CARTPOLE, str(model))
    sample(wh, "CartPole-v1", 40, str(tmp / "L"), seed=0)
    assert update(wh, [str(tmp / "L")]).to_iteration == 1
    run = str(tmp / "R")
    cfg = load_config(CARTPOLE, overrides={"train.observation_normalization": True,
                                           "train.max_generations": 2,
                                           "solver.population_size": 10})
    train(cfg, out_dir=run, checkpoint_every=1, log=quiet)
    return {"W": wh, "L": str(tmp / "L"), "R": run}


def _iteration_file(world, name):
    return os.path.join(world["W"], f"{ITER_PREFIX}1", name)


def _load_agent_state(world):
    agent = Warehouse(world["W"]).load_agent(1)
    return agent.solver_state().SerializeToString(), agent.center.tobytes()


def _load_model(world):
    wh = Warehouse(world["W"])
    agent = wh.load_agent(1)
    # update's other reader of a model: the history of kept iterations
    other = Warehouse(world["W"])
    return (agent.center.tobytes(), agent.policy.fingerprint(), agent.predict(OBS).tobytes(),
            other.model_fingerprint(1), other.params(1).tobytes())


#: kind -> (the file, what reads it: a comparable result)
KINDS = {
    "warehouse.pb": (lambda w: os.path.join(w["W"], "warehouse.pb"),
                     lambda w: Warehouse(w["W"]).info.SerializeToString()),
    "solver.pb": (lambda w: _iteration_file(w, "solver.pb"), _load_agent_state),
    "consumed.pb": (lambda w: _iteration_file(w, "consumed.pb"),
                    lambda w: sorted(Warehouse(w["W"]).consumed(1))),
    "model.onnx": (lambda w: _iteration_file(w, "model.onnx"), _load_model),
    "checkpoint.pb": (lambda w: os.path.join(w["R"], "checkpoint.pb"),
                      lambda w: read_checkpoint(w["R"]).SerializeToString()),
    "obs_norm.pb": (lambda w: os.path.join(w["R"], "obs_norm.pb"),
                    lambda w: read_state_file(os.path.join(w["R"], "obs_norm.pb"),
                                              pb.ObservationStats()).SerializeToString()),
}


def damage(data: bytes, how: str, rng) -> bytes:
    b = bytearray(data)
    at = int(rng.integers(len(b)))
    if how == "bit flip":
        b[at] ^= 1 << int(rng.integers(8))
    elif how == "byte change":
        b[at] = (b[at] + int(rng.integers(1, 256))) % 256
    else:  # truncation: the first `at` bytes
        del b[at:]
    return bytes(b)


def replay(world, kind: str, trials: int, seed: int) -> collections.Counter:
    """Damage the file of ``kind`` ``trials`` times and load it each time;
    counts of the outcomes (and of the damages refused, by how)."""
    path = KINDS[kind][0](world)
    load = KINDS[kind][1]
    good = read(path)
    baseline = load(world)
    rng = np.random.default_rng(seed)
    counts = collections.Counter()
    failures = []
    try:
        for t in range(trials):
            how = DAMAGES[t % len(DAMAGES)]
            data = damage(good, how, rng)
            write(path, data)
            try:
                result = load(world)
            except ValueError as exc:  # every EvoKit error is one
                message = str(exc)
                if "\n" in message or path not in message:
                    failures.append(f"{how}: refused without naming {path} in one line: {message}")
                counts["refused"] += 1
            except Exception as exc:  # noqa: BLE001 - a crash is what is counted here
                counts["crashes"] += 1
                failures.append(f"{how}: {type(exc).__name__}: {exc}")
            else:
                if result == baseline:
                    counts["harmless"] += 1
                else:
                    counts["silent"] += 1
                    failures.append(f"{how}: accepted, and loads something else")
            finally:
                write(path, good)
    finally:
        write(path, good)
    counts["trials"] = trials
    assert load(world) == baseline
    assert not failures, failures[:5]
    return counts


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_damage_replay(world, kind):
    counts = replay(world, kind, trials=60, seed=16)
    assert counts["silent"] == counts["crashes"] == 0
    # every byte is covered: by the file's trailer, or (model.onnx) by the
    # sha256 its solver.pb records
    assert counts["refused"] == 60


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_damage_replay_many(world, kind):
    counts = replay(world, kind, trials=600, seed=1016)
    assert counts["silent"] == counts["crashes"] == 0


# ---- the two reproductions of issue 16 ------------------------------------------------

def evokit_cli(*args, cwd):
    return subprocess.run([sys.executable, "-P", "-m", "evokit.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_bit_flip_in_a_warehouse_parameter_is_refused_and_nothing_is_lost(tmp_path):
    model, wh, log = tmp_path / "m.onnx", str(tmp_path / "W"), str(tmp_path / "L")
    assert main(["init-model", "--env", "CartPole-v1", "-o", str(model)]) == 0
    assert main(["init-solver", "--config", CARTPOLE, "--model", str(model), "--warehouse", wh]) == 0
    sample(wh, "CartPole-v1", 40, log, seed=0)
    target = os.path.join(wh, f"{ITER_PREFIX}0", "model.onnx")
    recorded = hashlib.sha256(read(target)).hexdigest()
    flip_inside_parameter(target, read(target))
    before, log_before = files(wh), read(log)
    solver = os.path.join(wh, f"{ITER_PREFIX}0", "solver.pb")
    expected = (f"evokit: error: {target}: its sha256 is {hashlib.sha256(read(target)).hexdigest()}, "
                f"{solver} records {recorded} for its model (model_sha256): the file is damaged, or "
                f"the state is another model's\n")
    proc = evokit_cli("update", "--warehouse", wh, "--log", log, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", expected)
    proc = evokit_cli("sample", "--warehouse", wh, "--env", "CartPole-v1", "--num-samples", 4,
                      "--log", log, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (1, expected)
    assert files(wh) == before and read(log) == log_before


def test_a_model_whose_parameters_are_not_the_recorded_ones_is_refused(tmp_path, mlp_path):
    """Beside a solver.pb without model_sha256 (save_solver: a run directory,
    a service's), the params_fingerprint it records is compared on load."""
    agent = ESAgent(CARTPOLE, mlp_path)
    agent.save_inference_model(tmp_path)
    solver = agent.save_solver(tmp_path)
    recorded = read_state_file(solver, pb.SolverState()).params_fingerprint
    model = str(tmp_path / "model.onnx")
    flip_inside_parameter(model, read(model))
    again = ESAgent(CARTPOLE, model)
    actual = params_fingerprint(again.policy, again.center)
    with pytest.raises(SolverFileError) as info:
        again.load_solver(tmp_path)
    assert str(info.value) == (f"{model}: its parameters are not those of the model {solver} was "
                               f"saved with (params fingerprint {actual[:16]}, solver.pb records "
                               f"{recorded[:16]})")
    again.load_solver_state(read_state_file(solver, pb.SolverState()), solver)  # not exact_model


def test_damaged_checkpoint_is_refused_and_the_run_directory_kept(tmp_path, capsys):
    run = str(tmp_path / "R")
    cfg = load_config(CARTPOLE, overrides={"train.max_generations": 2, "solver.population_size": 10})
    train(cfg, out_dir=run, checkpoint_every=1, log=quiet)
    path = os.path.join(run, "checkpoint.pb")
    ckpt = read_checkpoint(run)
    recorded = hashlib.sha256(read(path)[:-TRAILER_SIZE]).hexdigest()
    flip_inside_parameter(path, ckpt.model)
    body = read(path)[:-TRAILER_SIZE]
    before = files(run)
    capsys.readouterr()
    assert main(["train", "--resume", run]) == 1
    assert capsys.readouterr().err == (
        f"evokit: error: {path}: damaged: the sha256 of its first {len(body)} bytes is "
        f"{hashlib.sha256(body).hexdigest()}, its trailer records {recorded}\n")
    assert files(run) == before


@pytest.mark.parametrize("name", ["warehouse.pb", "solver.pb", "consumed.pb", "model.onnx"])
def test_update_refusing_a_damaged_file_writes_nothing(world, tmp_path, name):
    wh = str(tmp_path / "W")
    shutil.copytree(world["W"], wh)
    path = os.path.join(wh, "warehouse.pb") if name == "warehouse.pb" else \
        os.path.join(wh, f"{ITER_PREFIX}1", name)
    data = bytearray(read(path))
    data[len(data) // 3] ^= 0x20
    write(path, bytes(data))
    before = files(wh)
    with pytest.raises(ValueError) as info:
        update(wh, [world["L"]])
    assert path in str(info.value) and "\n" not in str(info.value)
    assert files(wh) == before


# ---- files of an EvoKit before the trailer ---------------------------------------------

def test_older_files_are_refused_until_sealed(world, tmp_path, capsys):
    wh = str(tmp_path / "W")
    shutil.copytree(world["W"], wh)
    expected = _load_agent_state({"W": wh})
    sealed = files(wh)
    for rel, data in sealed.items():
        if rel.endswith(".pb"):
            write(os.path.join(wh, rel), data[:-TRAILER_SIZE])  # as the EvoKit before wrote them
    info = os.path.join(wh, "warehouse.pb")
    with pytest.raises(WarehouseError, match=rf"^{info}: no sha256 trailer at its end .* add the "
                                             rf"trailer with `evokit seal {info}`$"):
        Warehouse(wh)
    capsys.readouterr()
    assert main(["seal", wh]) == 0
    out = capsys.readouterr().out.splitlines()
    names = ["warehouse.pb", f"{ITER_PREFIX}0/solver.pb", f"{ITER_PREFIX}1/solver.pb",
             f"{ITER_PREFIX}1/consumed.pb"]
    assert out == [f"{wh}/{name}: sealed ({len(sealed[name]) - TRAILER_SIZE} bytes + {TRAILER_SIZE} "
                   f"of trailer)" for name in names]
    assert files(wh) == sealed  # the same bytes as this EvoKit writes
    assert _load_agent_state({"W": wh}) == expected
    assert main(["seal", info]) == 0
    assert capsys.readouterr().out == f"{info}: has its sha256 trailer already\n"
    data = bytearray(read(info))
    data[2] ^= 1
    write(info, bytes(data))
    assert main(["seal", info]) == 1  # a damaged file is not sealed over
    assert "damaged: the sha256 of its first" in capsys.readouterr().err
    assert main(["seal", str(tmp_path / "m.onnx")]) == 1
    assert "not a state file EvoKit checksums" in capsys.readouterr().err
