"""How to continue from each committed file fixture (tests/fixtures/files).

tests/fixtures/files/make_files.py ran these steps once, against the files it
had just written, and recorded what they gave in expected.json;
tests/test_file_fixtures.py runs them again, against the committed files, and
asserts the same result, bit for bit. Every step goes through the public API
of today's EvoKit (ESAgent, Warehouse, the pipeline, the sampling logs, the
state files, evokit.train), so a rewrite of the file layer that reads the old
files and continues them differently fails the test. cpp/io/tests/
test_file_fixtures.cc runs the same steps with the C++ io library where it
has them (expected.txt holds the values it needs).

Every result is plain JSON (str, int, bool, float, lists, dicts), so that
expected.json records it as it is and a comparison shows what changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import warnings
from typing import Dict, List, Sequence

import numpy as np

import evokit
from evokit import evokit_pb2 as pb
from evokit.agent import MODEL_FILE, SOLVER_FILE, params_fingerprint
from evokit.config import config_to_text
from evokit.errors import ConfigLayoutWarning
from evokit.online import pipeline
from evokit.online.samplelog import read_log
from evokit.online.warehouse import INFO_FILE, Warehouse, config_fingerprint
from evokit.policy.onnx_policy import OnnxPolicy
from evokit.statefile import STATE_FILES, read_state_file, seal, unseal
from evokit.training.checkpoint import read_checkpoint

import helpers

FIXTURES = os.path.join(helpers.FIXTURES, "files")

#: The sampling stream (ESAgent.sampling_stream) of every continued solver.
STREAM = 5
#: Observations the models are run on: exact float32 values, CartPole-sized.
OBS = np.array([[0.25, -0.5, 0.03125, 1.5], [-1.0, 0.75, -0.125, -2.0], [2.5, 0.0, 0.1875, 0.5]],
               dtype=np.float32)
#: The solver fixtures (tests/fixtures/files/solvers/NAME): NAME -> the
#: config's sampling family and optimizer.
SOLVERS = {
    "gaussian_sgd": ("GAUSSIAN_SAMPLING", "SGD"),
    "gaussian_momentum": ("GAUSSIAN_SAMPLING", "MOMENTUM"),
    "gaussian_adam": ("GAUSSIAN_SAMPLING", "ADAM"),
    "gaussian_cached": ("GAUSSIAN_SAMPLING", "ADAM"),
    "cma": ("CMA_SAMPLING", "SGD"),
    "cma_separable": ("CMA_SAMPLING", "SGD"),
    "ga": ("GA_SAMPLING", "SGD"),
    "ga_elite": ("GA_SAMPLING", "SGD"),
    "ars": ("ARS_SAMPLING", "SGD"),
    "snes": ("SNES_SAMPLING", "SGD"),
    "xnes": ("XNES_SAMPLING", "SGD"),
    "crfmnes": ("CRFMNES_SAMPLING", "SGD"),
    "lmmaes": ("LMMAES_SAMPLING", "SGD"),
    "pgpe": ("PGPE_SAMPLING", "SGD"),
    "cem": ("CEM_SAMPLING", "SGD"),
    "maes": ("MAES_SAMPLING", "SGD"),
}
#: The warehouse's logs, in the order the next update reads them: the first
#: two were applied already, sample_1_seed1 is from the older iteration 1
#: (corrected), cpp_sample_2 was written by the C++ sampler.
WAREHOUSE_LOGS = ["sample_0.log", "sample_1.log", "sample_1_seed1.log", "sample_2.log",
                  "cpp_sample_2.log"]
#: The training runs of `evokit train` (tests/fixtures/files/NAME).
TRAIN_RUNS = ["train_run", "train_obsnorm"]
#: Generations a continued training run adds.
RESUME_GENERATIONS = 2


def fixture(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return sha256_bytes(f.read())


def params_sha256(params) -> str:
    """sha256 of parameters as little-endian float32."""
    return sha256_bytes(np.ascontiguousarray(params, dtype="<f4").tobytes())


def float_bits(values) -> List[str]:
    """The bit patterns of float32 values, 8 hex digits each."""
    return [f"{v:08x}" for v in np.ascontiguousarray(values, dtype="<f4").reshape(-1).view("<u4")]


def rewards_for(count: int) -> List[float]:
    """Distinct rewards, exact in binary: ((37 i + 11) mod 97) / 8 - 4."""
    if count > 97:
        raise ValueError(f"at most 97 distinct rewards, asked for {count}")
    return [((37 * i + 11) % 97) / 8 - 4 for i in range(count)]


def info_json(info: pb.SamplingInfo) -> dict:
    return {"key": [int(k) for k in info.key], "model_iter_id": int(info.model_iter_id),
            "mirrored": bool(info.mirrored)}


def load_config(path: str) -> pb.EvoKitConfig:
    """evokit.load_config, without the note a PARL-layout file gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigLayoutWarning)
        return evokit.load_config(path)


def load_agent(model_dir: str, config_path: str) -> evokit.ESAgent:
    """A service's resume (PARL EvoKit's online programs): load_config,
    load_inference_model, load_solver, no init_solver."""
    agent = evokit.ESAgent()
    agent.load_config(load_config(config_path))
    agent.load_inference_model(model_dir)
    agent.load_solver(model_dir)
    return agent


def saved(agent: evokit.ESAgent, out_dir: str) -> dict:
    """The agent's centre and the files save_inference_model and save_solver
    write for it, as digests."""
    os.makedirs(out_dir, exist_ok=True)
    return {"model_iter_id": agent.model_iter_id, "params_sha256": params_sha256(agent.center),
            "model_sha256": sha256_file(agent.save_inference_model(out_dir)),
            "solver_sha256": sha256_file(agent.save_solver(out_dir))}


# ---------------------------------------------------------------- solvers


def continue_solver(directory: str, out_dir: str) -> dict:
    """Load the solver directory (config.prototxt, model.onnx, solver.pb),
    draw one generation with sampling stream STREAM (a round of
    population_size clones, more rounds while the solver says the samples are
    not enough: GA elite re-evaluation), update with rewards_for, save."""
    agent = load_agent(directory, os.path.join(directory, "config.prototxt"))
    loaded = agent.model_iter_id
    agent.sampling_stream = STREAM
    clones = [agent.clone() for _ in range(agent.config.solver.population_size)]
    infos: List[pb.SamplingInfo] = []
    for _ in range(4):
        infos += [c.add_noise() for c in clones]
        if agent.shortfall(infos, rewards_for(len(infos))) is None:
            break
    else:
        raise AssertionError(f"{directory}: still not enough samples after {len(infos)}")
    rewards = rewards_for(len(infos))
    agent.update(infos, rewards)
    return {"loaded_iteration": loaded, "infos": [info_json(i) for i in infos],
            "rewards": rewards, "after": saved(agent, out_dir)}


# ------------------------------------------------------------- fingerprints


def fingerprints(path: str) -> dict:
    """The model fingerprint (graph) and params fingerprint (exact model) of
    an ONNX file, every float initializer a parameter."""
    policy = OnnxPolicy.load(path, backend="onnxruntime")
    return {"model": policy.fingerprint(),
            "params": params_fingerprint(policy, policy.initial_params())}


def predictions(path: str) -> dict:
    """A model's output for OBS (float32 bits): on the native backend and on
    onnxruntime."""
    out = {}
    for backend in ("native", "onnxruntime"):
        policy = OnnxPolicy.load(path, backend=backend)
        out[backend] = float_bits(policy.run(OBS, policy.initial_params()))
    return out


# ------------------------------------------------------------ state files


def state_file(path: str) -> dict:
    """Check a state file's sha256 trailer, parse it by its name, and
    re-serialise it: the body must come back byte for byte."""
    with open(path, "rb") as f:
        data = f.read()
    body = unseal(path, data)
    if seal(body) != data:
        raise AssertionError(f"{path}: seal(unseal(file)) is not the file")
    message = STATE_FILES[os.path.basename(path)].FromString(body)
    return {"message": type(message).__name__, "body_bytes": len(body),
            "reserialized_equal": message.SerializeToString() == body}


def config_text(path: str) -> dict:
    """A config as load_config reads it, as the text solver.pb stores."""
    text = config_to_text(load_config(path))
    return {"text_sha256": sha256_bytes(text.encode())}


# ------------------------------------------------------------------ logs


def log_contents(path: str) -> dict:
    """What read_log makes of a sampling log: each record's id, offset and
    fields, each skipped stretch."""
    result = read_log(path)
    return {
        "records": [{"id": r.record_id.hex(), "offset": r.offset, "info": info_json(r.record.info),
                     "reward": r.record.reward, "config_fingerprint": r.record.config_fingerprint,
                     "model_fingerprint": r.record.model_fingerprint,
                     "sampler_id": r.record.sampler_id, "env_steps": r.record.env_steps,
                     "time": r.record.time}
                    for r in result.records],
        "skipped": [{"offset": s.offset, "length": s.length, "reason": s.reason}
                    for s in result.skipped],
    }


def continue_parl(out_dir: str) -> dict:
    """PARL EvoKit's offline_update program (demo/cpp/offline_update.cc):
    parl/model_dir_0 with the PARL-layout config, updated from the raw log."""
    agent = load_agent(fixture("parl", "model_dir_0"), fixture("configs", "parl.prototxt"))
    samples = helpers.read_raw_log(fixture("parl", "sampling_log_0"))
    agent.update([info for info, _ in samples], [reward for _, reward in samples])
    return {"samples": [dict(info_json(info), reward=reward) for info, reward in samples],
            "after": saved(agent, out_dir)}


# ------------------------------------------------------------- warehouse


def warehouse_iterations(path: str) -> Dict[str, dict]:
    """Per iteration: the fingerprint its samples carry, the records its
    update consumed, its step count."""
    wh = Warehouse(path)
    out = {}
    for k in wh.iterations():
        agent = wh.load_agent(k)
        out[str(k)] = {"model_fingerprint": wh.model_fingerprint(k),
                       "consumed": sorted(i.hex() for i in wh.consumed(k)),
                       "params_sha256": params_sha256(agent.center),
                       "config_fingerprint": config_fingerprint(agent.config, agent.policy)}
    return out


def warehouse_draws(path: str, iteration: int, stream: int, count: int) -> List[dict]:
    """The members a sampler with this stream draws at an iteration."""
    agent = Warehouse(path).load_agent(iteration)
    agent.sampling_stream = stream
    return [info_json(c.add_noise()) for c in [agent.clone() for _ in range(count)]]


def continue_warehouse(work_dir: str) -> dict:
    """`evokit update` on a copy of the warehouse with every log: the report
    and the files of the new iteration."""
    w = os.path.join(work_dir, "W")
    shutil.copytree(fixture("warehouse", "W"), w)
    report = pipeline.update(w, [fixture("warehouse", "logs", name) for name in WAREHOUSE_LOGS])
    k = report.to_iteration
    d = os.path.join(w, f"model_iter_id-{k}")
    return {"logs": WAREHOUSE_LOGS, "from_iteration": report.from_iteration, "to_iteration": k,
            "used": report.used,
            "corrected": report.corrected,
            "dropped": [{"reason": r, "count": n} for r, n in sorted(report.dropped.items())],
            "skipped": [str(s) for s in report.skipped], "iterations": Warehouse(w).iterations(),
            "model_sha256": sha256_file(os.path.join(d, MODEL_FILE)),
            "solver_sha256": sha256_file(os.path.join(d, SOLVER_FILE)),
            "consumed_sha256": sha256_file(os.path.join(d, "consumed.pb")),
            "params_sha256": params_sha256(Warehouse(w).params(k)),
            "warehouse_pb_unchanged": sha256_file(os.path.join(w, INFO_FILE)) == sha256_file(
                fixture("warehouse", "W", INFO_FILE))}


# ------------------------------------------------------------ train runs


def continue_train_run(name: str, work_dir: str) -> dict:
    """`evokit train --resume` on a copy of the run for RESUME_GENERATIONS
    more generations: the new metrics (but the wall time) and files."""
    run = os.path.join(work_dir, name)
    shutil.copytree(fixture(name), run)
    start = read_checkpoint(run).generation
    result = evokit.train(None, out_dir=run, resume=True,
                          max_generations=start + RESUME_GENERATIONS, log=helpers.quiet)
    out = {"resumed_from": start, "generations": result.generations, "env_steps": result.env_steps,
           "metrics": [{k: v for k, v in row.items() if k != "wall_time"}
                       for row in result.history[start:]]}
    for file in ("model.onnx", "solver.pb", "obs_norm.pb"):
        if os.path.exists(os.path.join(run, file)):
            out[file.replace(".", "_") + "_sha256"] = sha256_file(os.path.join(run, file))
    return out


def checkpoint_summary(name: str) -> dict:
    """What a run's checkpoint.pb holds (but the wall time)."""
    ckpt = read_checkpoint(fixture(name))
    out = {"generation": ckpt.generation, "env_steps": ckpt.env_steps,
           "model_sha256": sha256_bytes(ckpt.model),
           "solver_steps": ckpt.solver.steps, "solver_family": ckpt.solver.family,
           "config_sha256": sha256_bytes(ckpt.config.encode())}
    if ckpt.HasField("obs_stats"):
        s = ckpt.obs_stats
        out["obs_stats"] = obs_stats_json(s)
    return out


def read_obs_stats(path: str) -> pb.ObservationStats:
    return read_state_file(path, pb.ObservationStats())


def obs_stats_json(stats: pb.ObservationStats) -> dict:
    return {"count": stats.count, "clip": stats.clip,
            "sum_sha256": sha256_bytes(np.asarray(stats.sum, "<f8").tobytes()),
            "sumsq_sha256": sha256_bytes(np.asarray(stats.sumsq, "<f8").tobytes())}


def fixture_files() -> Sequence[str]:
    """Every committed fixture file but the generator, its records and
    .gitattributes, as paths relative to FIXTURES, sorted."""
    out = []
    for root, dirs, files in os.walk(FIXTURES):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # Python's, ignored by git
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), FIXTURES)
            if rel not in ("make_files.py", "expected.json", "expected.txt", ".gitattributes"):
                out.append(rel)
    return sorted(out)


# ----------------------------------------------------------- expected.txt


def flatten(value, prefix: str = "") -> List[str]:
    """expected.txt's lines for the C++ test: `dotted.name value...`; dicts
    and lists holding dicts or lists by dotted names (list items by index),
    a list of scalars as one line of space-separated values, bools as 1 / 0,
    floats as repr (strtod reads them back exactly)."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in flatten(v, f"{prefix}.{k}" if prefix else k)]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return [line for i, v in enumerate(value) for line in flatten(v, f"{prefix}.{i}")]
    values = value if isinstance(value, list) else [value]
    return [" ".join([prefix] + [_scalar_text(v) for v in values])]


def _scalar_text(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return repr(v) if isinstance(v, float) else str(v)


def expected_txt(expected: dict) -> str:
    """expected.txt: expected.json flattened, but its header and file list."""
    body = {k: v for k, v in expected.items() if k not in ("header", "files")}
    return ("# expected.json flattened (tests/file_fixture_steps.py expected_txt): "
            "`dotted.name value...`\n" + "\n".join(flatten(body)) + "\n")
