#!/usr/bin/env python3
"""The cross-language conformance test (ctest ``conformance``).

    python conformance.py --cpp BUILD/cpp/io/evokit_io_conformance [--keep DIR] [-v]

Writes the fixtures (make_fixtures.py) into a temporary directory, runs them
through the C++ io component (the ``evokit_io_conformance`` program,
conformance.cc) and through the installed Python package (this file), one
line of canonical JSON per fixture on each side, and compares the two field
by field. Exit status 0 when every fixture agrees or differs only as
ALLOWED below says, 1 otherwise (each difference is printed with both
values), 2 for bad usage.

Where the two languages keep two copies of one thing (config parsing and the
walk of SolverConfig into the core's options, the solver.pb layout, the
checks of load_solver, ONNX loading and the native graph, the model
fingerprint, the payloads of sampling logs), results must be equal and
refusals must refuse the same fixtures. Messages must be equal too, except
the differences listed in ALLOWED, each with its reason:

- ``wording``: both sides refuse; the texts differ (e.g. a parse error whose
  text comes from two protobuf runtimes). With ``py`` / ``cpp`` patterns the
  texts must also match them (re.fullmatch), so that the entry documents what
  each side says.
- ``python_only`` / ``cpp_only``: only that side refuses, by design.
- ``xfail``: a real disagreement, reported to the owner of the code and
  expected to fail until it is fixed.

Entries are strict (like pytest's xfail_strict): an entry whose fields agree
is reported as stale, and fails the test, so the list stays true.

Config errors are compared as they are: both languages name the file, the
line (and for a parse error the column) and the field, and make the same
checks (``c.prototxt:4: solver.population_size must be >= 1, got 0``).
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
from dataclasses import dataclass
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
# the allowlist
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Allowed:
    kind: str  # "wording", "python_only", "cpp_only" or "xfail"
    reason: str
    py: Optional[str] = None  # wording: a pattern Python's message fully matches
    cpp: Optional[str] = None  # wording: a pattern C++'s message fully matches
    # wording: what else the two messages must share: "location" (the
    # "file:line:column: field: " they start with), "subject" (the node, output or
    # input they name first)
    same: Optional[str] = None
    # python_only / cpp_only: the field in which the side that accepted this
    # field refuses after all (so that both refuse the fixture in the end)
    later: Optional[str] = None


ALLOWED: Dict[Tuple[str, str, str], Allowed] = {}  # (kind, fixture, field) -> Allowed


def _allow(kind: str, names: str, field: str, allowed: Allowed) -> None:
    for name in names.split():
        key = (kind, name, field)
        if key in ALLOWED:
            raise ValueError(f"allowlist entry {key} given twice")
        ALLOWED[key] = allowed


# ---- configs ------------------------------------------------------------------

_allow("config", "extra_close_brace string_for_int float_for_int int32_overflow "
       "int64_overflow uint64_negative uint64_overflow repeated_singular_message "
       "scalar_without_colon value_without_field nul_byte parl_bad_value missing_close_brace "
       "repeated_singular_field unterminated_string float_hex", "parse", Allowed(
           "wording",
           "a text-format parse error: the text is each protobuf runtime's own (Python's text_format, "
           "protobuf C++'s TextFormat::Parser); the file:line:column and the field named must be the same",
           py=r"configs/\w+\.prototxt:\d+:\d+: .+", cpp=r"configs/\w+\.prototxt:\d+:\d+: .+",
           same="location"))
_allow("config", "missing_file directory", "parse", Allowed(
    "wording",
    "a config that cannot be read: each language's file layer words it (Python checks the path "
    "first: 'no such config file', 'is a directory, ...'; C++ reports what open/fstat said)",
    py=r"configs/\w+\.prototxt: (no such config file|is a directory, expected a \.prototxt config file)",
    cpp=r"configs/\w+\.prototxt: cannot read config: (no such file|is a directory)"))
#: Allowances for a family of fixtures (those whose name starts with the
#: prefix): applied to the members that differ, each checked as an ALLOWED
#: entry is; stale when no member of the family needs it.
ALLOWED_FAMILIES: Dict[Tuple[str, str, str], Allowed] = {
    ("config", "damaged_", "parse"): Allowed(
        "wording",
        "a value of configs/cartpole.prototxt replaced by a bad token (make_fixtures.py damaged_configs): "
        "where the parse error's text is each protobuf runtime's own, the file:line:column and the field "
        "named must still be the same (every other damaged config must agree to the letter)",
        py=r"configs/damaged_\w+\.prototxt:\d+:\d+: [\w.]+: .+",
        cpp=r"configs/damaged_\w+\.prototxt:\d+:\d+: [\w.]+: .+", same="location"),
    ("config", "random_", "parse"): Allowed(
        "wording",
        "a config of random literals (make_fixtures.py random_configs): both runtimes accept the same ones "
        "with the same values (the core's check_literals refuses what they would read apart); where a parse "
        "error's text is each protobuf runtime's own, the file:line:column and the field named must be the same",
        py=r"configs/random_\w+\.prototxt:\d+:\d+: [\w.]+: .+",
        cpp=r"configs/random_\w+\.prototxt:\d+:\d+: [\w.]+: .+", same="location"),
}


def _family(kind: str, name: str, field: str) -> Optional[Tuple[str, str, str]]:
    for key in ALLOWED_FAMILIES:
        if key[0] == kind and name.startswith(key[1]) and key[2] == field:
            return key
    return None


# ---- models -------------------------------------------------------------------

_allow("model", "garbage truncated", "load", Allowed(
    "wording",
    "bytes that do not parse as an ONNX ModelProto: Python names the protobuf runtime's DecodeError, "
    "C++'s ParseFromString says only false",
    py=r"models/\w+\.onnx: not a valid ONNX model \(DecodeError: .+\)",
    cpp=r"models/\w+\.onnx: not a valid ONNX model \(the bytes do not parse as an ONNX ModelProto\)"))
_allow("model", "directory", "load", Allowed(
    "wording", "a directory: each language's file layer words it",
    py=r"models/directory\.onnx: is a directory, not an ONNX model file",
    cpp=r"models/directory\.onnx: is a directory"))
_allow("model", "external_data_missing", "load", Allowed(
    "wording",
    "external data that is not there: onnx.load (Python) and the ONNX checker (C++) say so in their "
    "own words",
    py=r"models/\w+\.onnx: not a valid ONNX model \(ValidationError: Data of TensorProto \( tensor name: w\) "
       r"should be stored in .*absent\.bin, but it is not regular file\.\)",
    cpp=r"models/\w+\.onnx: ONNX checker rejected the model: Data of TensorProto \( tensor name: w\) "
        r"should be stored in absent\.bin, but it doesn't exist or is not accessible\."))
_allow("model", "external_data external_data_ir99", "load", Allowed(
    "cpp_only",
    "initializers with external data: Python's OnnxPolicy.load reads them from the file next to the "
    "model (onnx.load); the C++ component refuses them by design (onnx_model.h: 'external data'). "
    "With IR <= 8 C++'s refusal comes from the ONNX checker, which looks for the data file relative "
    "to the working directory, not the model's: see the report"))
# ---- logs ---------------------------------------------------------------------

# ---- solver states ------------------------------------------------------------

_allow("state", "fingerprint_v1_adam", "load", Allowed(
    "cpp_only",
    "fingerprint version 1 (EvoKit before the C++ fingerprint): only Python can compute it, so only "
    "Python verifies and loads such a file; C++ refuses it naming the version (README, 'Fingerprints "
    "are the same in both languages'; es_agent.h load_solver_state)"))
_allow("state", "fingerprint_version_3 fingerprint_version_absent", "load", Allowed(
    "wording",
    "a fingerprint version other than 2: Python verifies versions 1 and 2, C++ only 2, and each "
    "says what it verifies (an absent version is 1: Python computes the version 1 fingerprint, "
    "which differs; C++ refuses the version)",
    py=r"states/\w+/solver\.pb: solver state (has fingerprint version 3, this EvoKit reads versions 1 "
       r"and 2 \(a newer EvoKit wrote it\)|belongs to another model than \S+ \(graph fingerprint \w+, loaded "
       r"model \w+, fingerprint version 1\))",
    cpp=r"states/\w+/solver\.pb: solver state has fingerprint version [13], this library verifies only "
        r"version 2 .+"))
_allow("state", "garbage_file", "load", Allowed(
    "wording",
    "bytes that do not parse as a SolverState (under a sound trailer): Python names the protobuf runtime's error, C++'s "
    "ParseFromString says only false",
    py=r"states/\w+/solver\.pb: not a solver state file \(Error parsing message .+\)",
    cpp=r"states/\w+/solver\.pb: not a solver state file \(the bytes do not parse as "
        r"evokit\.proto\.SolverState\)"))


# ---- normalisations ---------------------------------------------------------------
# Applied to Python's line before comparing: each removes a difference of
# form that holds for every fixture of its kind, for the reason given.

def _checker_one_line(line: dict) -> None:
    """C++ puts the ONNX checker's multi-line messages on one line
    (onnx_model.cc one_line())."""
    value = line.get("load")
    if is_error(value) and "ONNX checker rejected the model: " in value["error"]:
        value["error"] = " ".join(value["error"].split())


def _payload_reason(line: dict) -> None:
    """A framed payload that does not parse: Python's reason ends with the
    protobuf runtime's exception text, C++'s ParseFromArray gives none. The
    offsets and lengths, which are what the two runtimes must agree on, are
    compared as they are."""
    for skipped in line.get("skipped", []):
        skipped["reason"] = re.sub(r"^payload is not a SampleRecord: .*", "payload is not a SampleRecord",
                                   skipped["reason"], flags=re.S)


NORMALISE = {"config": [], "model": [_checker_one_line],
             "log": [_payload_reason], "state": []}


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
# comparison
# ---------------------------------------------------------------------------

def normalise(line: dict) -> dict:
    """Python's `line` with NORMALISE applied (a deep copy)."""
    out = json.loads(json.dumps(line))
    for rule in NORMALISE[out["kind"]]:
        rule(out)
    return out


def is_error(value) -> bool:
    return isinstance(value, dict) and set(value) == {"error", "type"}


@dataclass
class Finding:
    kind: str
    name: str
    field: str
    status: str  # "fail", "allowed", "xfail", "stale"
    detail: str
    py: Any = None
    cpp: Any = None


FAMILIES_USED: set = set()  # the ALLOWED_FAMILIES entries some fixture needed


def compare(py: dict, cpp: dict) -> List[Finding]:
    """The differences between the two lines of one fixture (Python's
    normalised), each judged against ALLOWED."""
    kind, name = py["kind"], py["name"]
    findings: List[Finding] = []
    one_sided = False  # an allowed one-sided refusal: the other side went on
    for field in sorted((set(py) | set(cpp)) - {"kind", "name"}):
        allowed = ALLOWED.get((kind, name, field))
        family = _family(kind, name, field) if allowed is None else None
        if family is not None:
            allowed = ALLOWED_FAMILIES[family]
        if field not in py or field not in cpp:
            continue  # judged below
        a, b = py[field], cpp[field]
        if a == b:
            if allowed is not None and family is None:
                findings.append(Finding(kind, name, field, "stale", f"allowlisted as {allowed.kind}, but "
                                        f"both sides agree: remove the entry", a, b))
            continue
        if allowed is None:
            findings.append(Finding(kind, name, field, "fail", "the two sides differ", a, b))
            continue
        problem = _check_allowed(allowed, a, b, py, cpp)
        if problem:
            findings.append(Finding(kind, name, field, "fail",
                                    f"allowlisted as {allowed.kind}, but {problem}", a, b))
            continue
        findings.append(Finding(kind, name, field, "xfail" if allowed.kind == "xfail" else "allowed",
                                f"{allowed.kind}: {allowed.reason}", a, b))
        if family is not None:
            FAMILIES_USED.add(family)
        one_sided = one_sided or allowed.kind in ("python_only", "cpp_only") or (
            allowed.kind == "xfail" and is_error(a) != is_error(b))
    only = sorted((set(py) ^ set(cpp)) - {"kind", "name"})
    if only and not one_sided:
        findings.append(Finding(kind, name, "(fields)", "fail", "fields on one side only: " + ", ".join(
            f"{k} ({'Python' if k in py else 'C++'})" for k in only)))
    return findings


_SUBJECT = re.compile(r"^\S+?: (node (?:'[^']*'|#\d+) \([^)]*\)|output '[^']*'|observation input '[^']*')")
_LOCATION = re.compile(r"^\S+?:\d+:\d+: (?:at top level|[\w.]+): ")  # file:line:column: field:


def _check_allowed(allowed: Allowed, py, cpp, py_line: dict, cpp_line: dict) -> Optional[str]:
    """Why the difference (py, cpp) is not the one `allowed` describes, or None."""
    if allowed.kind == "xfail":
        return None
    if allowed.kind == "wording":
        if not (is_error(py) and is_error(cpp)):
            return "not both sides refuse"
        p, c = py["error"], cpp["error"]
        if allowed.py and not re.fullmatch(allowed.py, p, re.S):
            return f"Python's message does not match {allowed.py!r}"
        if allowed.cpp and not re.fullmatch(allowed.cpp, c, re.S):
            return f"C++'s message does not match {allowed.cpp!r}"
        if allowed.same:
            pattern = {"location": _LOCATION, "subject": _SUBJECT}[allowed.same]
            mp, mc = pattern.match(p), pattern.match(c)
            if not (mp and mc and mp.group(0) == mc.group(0)):
                return f"the two messages do not start with the same {allowed.same}"
        return None
    if allowed.kind in ("python_only", "cpp_only"):
        refuses, accepts = (py, cpp) if allowed.kind == "python_only" else (cpp, py)
        if not (is_error(refuses) and not is_error(accepts)):
            return f"it is not {'Python' if allowed.kind == 'python_only' else 'C++'} alone that refuses"
        if allowed.later:
            other = cpp_line if allowed.kind == "python_only" else py_line
            if not is_error(other.get(allowed.later)):
                return f"the other side does not refuse it in {allowed.later} either"
        return None
    return f"unknown allowlist kind {allowed.kind!r}"


def where_they_differ(a: Any, b: Any, path: str = "") -> Tuple[str, Any, Any]:
    """The first place where a and b differ: (path, a's value, b's value),
    descending into dicts and lists (a float vector's hex: the float index)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, "<absent>") != b.get(key, "<absent>"):
                return where_they_differ(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}[{key!r}]")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return where_they_differ(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})", a[len(b):], b[len(a):]
    elif isinstance(a, str) and isinstance(b, str) and len(a) == len(b) and len(a) > 64 \
            and re.fullmatch(r"[0-9a-f]+", a + b) and len(a) % 8 == 0:
        k = next(i for i in range(0, len(a), 8) if a[i:i + 8] != b[i:i + 8])
        return f"{path} (float {k // 8} of {len(a) // 8})", a[k:k + 8], b[k:k + 8]
    return path, a, b


def short(value: Any, limit: int = 600) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpp", required=True, help="the evokit_io_conformance program")
    parser.add_argument("--keep", metavar="DIR", help="write the fixtures and both outputs to DIR "
                        "(which must not exist) and keep them")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print every allowed difference and expected failure")
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
        py_lines = python_side(fixtures)
        cpp_lines = cpp_side(os.path.abspath(args.cpp), fixtures)
        if args.keep:
            for side, lines in (("python", py_lines), ("cpp", cpp_lines)):
                with open(os.path.join(work, f"{side}.jsonl"), "w", encoding="utf-8") as f:
                    f.write("".join(canonical(line) + "\n" for line in lines))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    findings: List[Finding] = []
    ids = [(line["kind"], line["name"]) for line in py_lines]
    if ids != [(line.get("kind"), line.get("name")) for line in cpp_lines]:
        print(f"conformance: FAILED: the C++ program printed {len(cpp_lines)} lines for "
              f"{len(ids)} fixtures, or not in manifest order", file=sys.stderr)
        return 1
    for py, cpp in zip(py_lines, cpp_lines):
        findings += compare(normalise(py), cpp)
    fixtures = set(ids)
    judged = {(f.kind, f.name, f.field) for f in findings}
    for key, allowed in sorted(ALLOWED.items()):
        if key[:2] not in fixtures:
            findings.append(Finding(*key, "stale", f"allowlisted as {allowed.kind}, but there is no such "
                                                   f"fixture"))
        elif key not in judged:
            findings.append(Finding(*key, "stale", f"allowlisted as {allowed.kind}, but the field is "
                                                   f"not compared (one side stopped before it)"))
    for key, allowed in sorted(ALLOWED_FAMILIES.items()):
        if key not in FAMILIES_USED:
            findings.append(Finding(key[0], key[1] + "*", key[2], "stale",
                                    f"allowlisted as {allowed.kind} for a family, but no member needs it"))
    counts: Dict[str, Dict[str, int]] = {}
    for py, cpp in zip(py_lines, cpp_lines):
        c = counts.setdefault(py["kind"], {"fixtures": 0, "refused_by_both": 0})
        c["fixtures"] += 1
        if any(is_error(v) for v in py.values()) and any(is_error(v) for v in cpp.values()):
            c["refused_by_both"] += 1
    bad_fixtures: Dict[str, set] = {}
    for f in findings:
        bad_fixtures.setdefault(f.status, set()).add((f.kind, f.name))

    for f in findings:
        if f.status in ("fail", "stale") or args.verbose:
            print(f"{f.status.upper()}: {f.kind} {f.name}: {f.field}: {f.detail}")
            if f.py is not None or f.cpp is not None:
                path, a, b = where_they_differ(f.py, f.cpp)
                if path:
                    print(f"    first difference at {f.field}{path}")
                print(f"    Python: {short(a)}")
                print(f"    C++:    {short(b)}")
    elapsed = time.monotonic() - started
    total = len(ids)
    summary = ", ".join(f"{c['fixtures']} {k}s ({c['refused_by_both']} refused by both)"
                        for k, c in sorted(counts.items()))
    n = {s: len(bad_fixtures.get(s, ())) for s in ("fail", "stale", "allowed", "xfail")}
    print(f"conformance: {total} fixtures: {summary}")
    print(f"conformance: {n['allowed']} fixtures differ as allowed (ALLOWED), {n['xfail']} are expected "
          f"failures (real disagreements, reported), {n['fail']} fail, {n['stale']} stale entries; "
          f"{elapsed:.1f} s")
    if n["fail"] or n["stale"]:
        print("conformance: FAILED", file=sys.stderr)
        return 1
    print("conformance: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
