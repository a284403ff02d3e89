#!/usr/bin/env python3
"""The conformance test (ctest ``conformance``): golden files of what is two runtimes.

    python conformance.py --cpp BUILD/cpp/io/evokit_io_conformance [--keep DIR] [--write] [-v]

Every rule about EvoKit's files is the core's (cpp/include/evokit/formats),
which Python and the C++ io library both call. What each runtime still does
on its own is turning bytes into messages and messages into the dotted names
the core reads (Python's protobuf and onnx packages; protobuf C++ and
libonnx): reading a file, parsing the config text, parsing a ModelProto, a
SolverState or a SampleRecord, running the ONNX checker, and walking a
message into options. This test holds that to golden files.

It writes the fixtures (make_fixtures.py) into a temporary directory, runs
them through the installed Python package (this file) and through the C++
io library (the ``evokit_io_conformance`` program, conformance.cc), one line
of canonical JSON per fixture on each side, and compares each side's line
with ``golden.jsonl``: one line per fixture, each field's value (a long one
as the sha256 of its canonical JSON), the same for both runtimes, or, in
the fields of TWO_RUNTIMES only, one value per runtime. Exit status 0 when
both sides match the golden file, 1 otherwise (each difference printed),
2 for bad usage. ``--write`` rewrites the golden file from this run (after
a change that is meant to change a result: the diff is what a reviewer
reads); it refuses to record a difference between the runtimes outside
TWO_RUNTIMES.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import make_fixtures  # noqa: E402  (next to this file)

CONFIG_NUM_PARAMS = 58  # conformance.cc's kConfigNumParams
BATCH = 3
RECURRENT_STEPS = 3  # a recurrent model's native outputs: this many steps, its state carried


# ---------------------------------------------------------------------------
# what is two runtimes
# ---------------------------------------------------------------------------

#: The fields in which the two runtimes' results may differ, with why. A
#: fixture one runtime refuses there may have fields the other goes on to.
TWO_RUNTIMES: Dict[Tuple[str, str], str] = {
    ("config", "parse"):
        "a text-format parse error's text is each protobuf runtime's own (Python's text_format, protobuf "
        "C++'s TextFormat::Parser), and so is a file that cannot be read; the file:line:column and the "
        "field named must be the same",
    ("model", "load"):
        "reading the file, protobuf's parse of a ModelProto and the ONNX checker are each runtime's own "
        "(onnx against libonnx); onnx.load reads external data, which the C++ library refuses",
    ("state", "load"):
        "protobuf's parse of solver.pb is each runtime's own; fingerprint version 1 only Python computes",
    ("log", "skipped"):
        "a framed payload that does not parse as a SampleRecord: Python's reason carries its protobuf "
        "runtime's text; the offsets and lengths must be the same",
}

_LOCATION = re.compile(r"^\S+?:\d+:\d+: (?:at top level|[\w.]+): ")  # file:line:column: field:


# ---------------------------------------------------------------------------
# canonical JSON
# ---------------------------------------------------------------------------


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def bits32(v) -> str:
    return f"{int(np.asarray(v, dtype='<f4').view('<u4')):08x}"


def f32(v) -> dict:
    return {"f32": bits32(v)}


def f64(v) -> dict:
    return {"f64": f"{int(np.asarray(v, dtype='<f8').view('<u8')):016x}"}


def float_bits(values) -> str:
    return np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(">u4").tobytes().hex()


def hex_floats(values) -> List[str]:
    return [f"{int(b):08x}" for b in np.ascontiguousarray(values, dtype="<f4").reshape(-1).view("<u4")]


def text_or_bytes(value) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"bytes": value.hex()}
    return value


def error_of(e: BaseException) -> dict:
    from evokit.errors import ConfigError, LogError, ModelError, SolverFileError, WarehouseError
    for cls, name in ((ConfigError, "ConfigError"), (ModelError, "ModelError"),
                      (SolverFileError, "SolverFileError"), (LogError, "LogError"),
                      (WarehouseError, "WarehouseError"), (IndexError, "IndexError"),
                      (ValueError, "ValueError"), (RuntimeError, "RuntimeError")):
        if isinstance(e, cls):
            return {"error": str(e), "type": name}
    return {"error": f"{type(e).__name__}: {e}", "type": "Exception"}


def outcome(f: Callable[[], Any]) -> Any:
    return attempt(f)[1]


def attempt(f: Callable[[], Any]) -> Tuple[Any, Any]:
    """(what f returns, or None if it raised; "ok" or the refusal)."""
    try:
        value = f()
    except Exception as e:  # a refusal is a result
        return None, error_of(e)
    return value, "ok"


def observations(obs_shape) -> np.ndarray:
    size = int(np.prod(obs_shape, dtype=np.int64))
    k = np.arange(BATCH * size)
    return (((k * 37) % 101 - 50) / 16.0).astype(np.float32).reshape((BATCH, *obs_shape))


def message_json(message) -> dict:
    from google.protobuf.descriptor import FieldDescriptor as F

    def value(fd, v):
        if fd.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            return message_json(v)
        if fd.type == F.TYPE_DOUBLE:
            return f64(v)
        if fd.type == F.TYPE_FLOAT:
            return f32(v)
        if fd.type == F.TYPE_BOOL:
            return bool(v)
        if fd.type == F.TYPE_ENUM:
            named = fd.enum_type.values_by_number.get(v)
            return named.name if named is not None else int(v)
        if fd.type == F.TYPE_BYTES:
            return {"bytes": bytes(v).hex()}
        if fd.type == F.TYPE_STRING:
            return text_or_bytes(v)
        return int(v)

    out = {}
    for fd, v in message.ListFields():
        out[fd.name] = [value(fd, x) for x in v] if fd.is_repeated else value(fd, v)
    return out


# ---------------------------------------------------------------------------
# the Python side
# ---------------------------------------------------------------------------


def py_config(path: str) -> dict:
    from evokit.config import load_config, validate_config
    from evokit.solvers.options import solver_options
    from evokit.errors import ConfigLayoutWarning
    out: Dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConfigLayoutWarning)
        config, out["parse"] = attempt(lambda: load_config(path, validate=False))
    out["notes"] = [str(w.message) for w in caught if issubclass(w.category, ConfigLayoutWarning)]
    if config is None:
        return out
    options = {}
    for name, v in solver_options(config.solver).items():
        if isinstance(v, bool):
            options[name] = v
        elif isinstance(v, int):
            options[name] = v
        elif isinstance(v, float):
            options[name] = f64(v)
        else:
            options[name] = text_or_bytes(v)
    out["options"] = options
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out["check"] = outcome(lambda: validate_config(config, source=path, text=text))
    out["check_n58"] = outcome(lambda: validate_config(config, source=path, text=text,
                                                       num_params=CONFIG_NUM_PARAMS))
    return out


def py_model(path: str, pattern: str) -> dict:
    from evokit.policy.fingerprint import params_digest
    from evokit.policy.native import NativePolicy
    from evokit.policy.onnx_policy import OnnxPolicy
    out: Dict[str, Any] = {}
    policy, out["load"] = attempt(
        lambda: OnnxPolicy.load(path, param_pattern=pattern, backend="onnxruntime"))
    if policy is None:
        return out
    params = policy.initial_params()
    out["num_params"] = int(policy.num_params)
    out["param_names"] = list(policy.param_names)
    out["param_shapes"] = [[int(d) for d in s] for s in policy.param_shapes]
    out["params"] = float_bits(params)
    try:
        fingerprint = policy.fingerprint()
        out["fingerprint"] = fingerprint
        out["params_fingerprint"] = params_digest(fingerprint, params)
    except Exception as e:
        out["fingerprint"] = error_of(e)
    try:
        native = NativePolicy.from_onnx_policy(policy)
        obs = observations(native.obs_shape)
        if native.state_size:  # RECURRENT_STEPS steps, the state carried
            state = np.zeros(BATCH * native.state_size, np.float32)
            y = np.concatenate([native.run(obs, params, state) for _ in range(RECURRENT_STEPS)])
        else:
            y = native.run(obs, params)
        out["native"] = {"out_shape": [int(d) for d in native.action_shape], "outputs": hex_floats(y)}
        if native.state_size:
            out["native"]["state"] = hex_floats(state)
    except Exception as e:
        out["native"] = error_of(e)
    return out


def py_log(path: str) -> dict:
    from evokit.online.samplelog import read_log
    out: Dict[str, Any] = {}
    result, out["read"] = attempt(lambda: read_log(path))
    if result is None:
        return out
    out["records"] = [{"offset": r.offset, "id": r.record_id.hex(), "record": message_json(r.record)}
                      for r in result.records]
    out["skipped"] = [{"offset": s.offset, "length": s.length, "reason": s.reason} for s in result.skipped]
    return out


def info_json(info) -> dict:
    return {"key": [int(k) for k in info.key], "model_iter_id": int(info.model_iter_id),
            "mirrored": bool(info.mirrored)}


def state_summary(s) -> dict:
    from evokit import evokit_pb2 as pb
    return {
        "num_params": s.num_params, "optimizer": pb.OptimizerConfig.Type.Name(s.optimizer),
        "steps": s.steps, "state_version": s.state_version, "family": s.family,
        "noise_version": s.noise_version, "fingerprint_version": s.fingerprint_version,
        "model_fingerprint": s.model_fingerprint, "params_fingerprint": s.params_fingerprint,
        "config": s.config,
        "vectors": [[text_or_bytes(v.name), pb.NamedVector.ElementType.Name(v.type), len(v.data),
                     hashlib.sha256(v.data).hexdigest()] for v in s.vectors],
    }


def py_state(config: str, model: str, state_dir: str, stream: str, clones: str, rewards: str) -> dict:
    import evokit
    out: Dict[str, Any] = {}
    agent = evokit.ESAgent()

    def setup():
        agent.load_config(config)
        agent.load_inference_model(model)
        agent.init_solver()
        agent.sampling_stream = int(stream)

    out["setup"] = outcome(setup)
    if out["setup"] != "ok":
        return out
    out["load"] = outcome(lambda: agent.load_solver(state_dir))
    if out["load"] != "ok":
        return out
    out["model_iter_id"] = agent.model_iter_id
    out["center_loaded"] = float_bits(agent.center)
    n = int(clones)
    values = [float(r) for r in rewards.split(",")] if rewards else []
    members: List[Any] = []
    infos: List[Any] = []

    def draw():
        members.extend(agent.clone() for _ in range(n))
        for c in members:
            infos.append(c.add_noise())

    out["draw"] = outcome(draw)
    out["infos"] = [info_json(i) for i in infos]
    if members:
        try:
            out["clone0_predict"] = hex_floats(members[0].predict(observations((4,))))
        except Exception as e:
            out["clone0_predict"] = error_of(e)
    try:
        stats = agent.update(infos, values)
        out["update"] = {k: int(stats[k]) for k in ("num_samples", "num_corrected", "model_iter_id")}
    except Exception as e:
        out["update"] = error_of(e)
    out["center"] = float_bits(agent.center)
    try:
        out["saved"] = state_summary(agent.solver_state())
    except Exception as e:
        out["saved"] = error_of(e)
    return out


def python_side(fixture_dir: str) -> List[dict]:
    lines = []
    cwd = os.getcwd()
    os.chdir(fixture_dir)
    try:
        with open("manifest.tsv", encoding="utf-8") as f:
            manifest = [line.rstrip("\n").split("\t") for line in f if line.strip()]
        for kind, name, *args in manifest:
            run = {"config": py_config, "model": py_model, "log": py_log, "state": py_state}[kind]
            out = run(*args)
            out["kind"], out["name"] = kind, name
            lines.append(json.loads(canonical(out)))  # as the other side's, through JSON
    finally:
        os.chdir(cwd)
    return lines


def cpp_side(binary: str, fixture_dir: str) -> List[dict]:
    done = subprocess.run([binary, fixture_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} exited with {done.returncode}: "
                           f"{done.stderr.decode('utf-8', 'replace')}")
    return [json.loads(line) for line in done.stdout.decode("utf-8", "replace").splitlines() if line]


# ---------------------------------------------------------------------------
# the golden file
# ---------------------------------------------------------------------------

GOLDEN = os.path.join(HERE, "golden.jsonl")
SIDES = ("python", "cpp")
DIGEST_OVER = 160  # a value whose canonical JSON is longer is recorded as its sha256


def is_error(value) -> bool:
    return isinstance(value, dict) and set(value) == {"error", "type"}


def recorded(value: Any) -> Any:
    """`value` as the golden file records it: itself, or a long value's digest."""
    text = canonical(value)
    if len(text) <= DIGEST_OVER or is_error(value):
        return value
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]}


def golden_line(py: dict, cpp: dict) -> Tuple[dict, List[str]]:
    """The golden line of one fixture from the two sides' lines, and the
    problems that forbid recording it (a difference outside TWO_RUNTIMES)."""
    kind, name = py["kind"], py["name"]
    line: Dict[str, Any] = {"kind": kind, "name": name}
    problems: List[str] = []
    split = False
    fields = sorted((set(py) | set(cpp)) - {"kind", "name"})
    for field in fields:
        if field in py and field in cpp:
            a, b = recorded(py[field]), recorded(cpp[field])
            if a == b:
                line[field] = a
                continue
            why = TWO_RUNTIMES.get((kind, field))
            if why is None:
                problems.append(f"{kind} {name}: {field}: the runtimes differ outside TWO_RUNTIMES")
            elif field == "parse" and is_error(a) and is_error(b):
                la, lb = _LOCATION.match(a["error"]), _LOCATION.match(b["error"])
                if (la or lb) and not (la and lb and la.group(0) == lb.group(0)):
                    problems.append(f"{kind} {name}: parse: the two errors name another place or field")
            split = split or why is not None
        line[field] = {"by_runtime": {"python": recorded(py[field]) if field in py else None,
                                      "cpp": recorded(cpp[field]) if field in cpp else None}}
    one_sided = [f for f in fields if (f in py) != (f in cpp)]
    if one_sided and not split:
        problems.append(f"{kind} {name}: fields on one side only ({', '.join(one_sided)}) without a "
                        f"difference in TWO_RUNTIMES before them")
    return line, problems


def expected(golden: dict, field: str, side: str) -> Any:
    value = golden.get(field)
    if isinstance(value, dict) and set(value) == {"by_runtime"}:
        return value["by_runtime"][side]
    return value


def check(lines: Dict[str, List[dict]], golden: List[dict]) -> List[str]:
    """Each side's line of each fixture against the golden file."""
    problems: List[str] = []
    by_id = {(g["kind"], g["name"]): g for g in golden}
    ids = [(line["kind"], line["name"]) for line in lines["python"]]
    for missing in sorted(set(by_id) - set(ids)):
        problems.append(f"{missing[0]} {missing[1]}: in golden.jsonl, but no longer a fixture")
    for i, fixture in enumerate(ids):
        g = by_id.get(fixture)
        if g is None:
            problems.append(f"{fixture[0]} {fixture[1]}: not in golden.jsonl (a new fixture: --write)")
            continue
        for side in SIDES:
            line = lines[side][i]
            for field in sorted((set(line) | set(g)) - {"kind", "name"}):
                want = expected(g, field, side)
                got = recorded(line[field]) if field in line else None
                if got != want:
                    problems.append(f"{fixture[0]} {fixture[1]}: {field}: {'Python' if side == 'python' else 'C++'} "
                                    f"gives {short(got)}, golden.jsonl records {short(want)}")
    return problems


def short(value: Any, limit: int = 600) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpp", required=True, help="the evokit_io_conformance program")
    parser.add_argument("--keep", metavar="DIR", help="write the fixtures and both outputs to DIR "
                        "(which must not exist) and keep them")
    parser.add_argument("--write", action="store_true", help="rewrite golden.jsonl from this run")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also list the fixtures whose results differ by runtime")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        import evokit  # noqa: F401  (fail early, with a clear message)
    except ImportError as e:
        print(f"conformance: the evokit package is not importable by {sys.executable} ({e}): "
              f"pip install . first", file=sys.stderr)
        return 1

    work = args.keep or tempfile.mkdtemp(prefix="evokit-conformance-")
    fixtures = os.path.join(work, "fixtures")
    try:
        make_fixtures.write_fixtures(fixtures)
        lines = {"python": python_side(fixtures), "cpp": cpp_side(os.path.abspath(args.cpp), fixtures)}
        # A message naming a fixture by its absolute path names it as the others do.
        where = json.dumps(os.path.abspath(fixtures) + os.sep)[1:-1]
        lines = {side: [json.loads(canonical(line).replace(where, "")) for line in side_lines]
                 for side, side_lines in lines.items()}
        if args.keep:
            for side in SIDES:
                with open(os.path.join(work, f"{side}.jsonl"), "w", encoding="utf-8") as f:
                    f.write("".join(canonical(line) + "\n" for line in lines[side]))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    ids = [(line["kind"], line["name"]) for line in lines["python"]]
    if ids != [(line.get("kind"), line.get("name")) for line in lines["cpp"]]:
        print(f"conformance: FAILED: the C++ program printed {len(lines['cpp'])} lines for "
              f"{len(ids)} fixtures, or not in manifest order", file=sys.stderr)
        return 1
    golden, problems = [], []
    for py, cpp in zip(lines["python"], lines["cpp"]):
        line, why = golden_line(py, cpp)
        golden.append(line)
        problems += why
    if args.write and not problems:
        with open(GOLDEN, "w", encoding="utf-8") as f:
            f.write("".join(canonical(line) + "\n" for line in golden))
        print(f"conformance: wrote {GOLDEN}")
    if not problems:
        with open(GOLDEN, encoding="utf-8") as f:
            problems = check(lines, [json.loads(text) for text in f if text.strip()])
    split: Dict[Tuple[str, str], int] = {}
    for line in golden:
        for field, value in line.items():
            if isinstance(value, dict) and set(value) == {"by_runtime"}:
                split[(line["kind"], field)] = split.get((line["kind"], field), 0) + 1
                if args.verbose:
                    print(f"by runtime: {line['kind']} {line['name']}: {field}: {short(value['by_runtime'])}")
    kinds: Dict[str, int] = {}
    for kind, _ in ids:
        kinds[kind] = kinds.get(kind, 0) + 1
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"conformance: {len(ids)} fixtures ({', '.join(f'{n} {k}s' for k, n in sorted(kinds.items()))}); "
          f"results by runtime in " + (", ".join(f"{k} {f}: {n}" for (k, f), n in sorted(split.items())) or "none")
          + f"; {len(problems)} problems; {time.monotonic() - started:.1f} s")
    if problems:
        print("conformance: FAILED" + ("" if args.write else " (after a change meant to change a result: "
              "--write, and review the diff of golden.jsonl)"), file=sys.stderr)
        return 1
    print("conformance: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
