"""The conformance test's golden-file rules (cpp/io/tests/conformance/conformance.py):
a difference between the runtimes is recorded only where TWO_RUNTIMES allows
it, and each runtime's result is held to the golden line."""

from __future__ import annotations

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(HERE, "..", "cpp", "io", "tests", "conformance")


@pytest.fixture(scope="module")
def conformance():
    import sys
    sys.path.insert(0, CONFORMANCE)
    try:
        spec = importlib.util.spec_from_file_location("conformance", os.path.join(CONFORMANCE, "conformance.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(CONFORMANCE)


def _error(text):
    return {"error": text, "type": "ConfigError"}


def test_equal_results_are_one_value_long_ones_a_digest(conformance):
    py = {"kind": "model", "name": "m", "load": "ok", "params": "ab" * 200}
    line, problems = conformance.golden_line(py, dict(py))
    assert problems == []
    assert line["load"] == "ok"
    assert set(line["params"]) == {"sha256"} and len(line["params"]["sha256"]) == 32


def test_a_difference_outside_two_runtimes_is_refused(conformance):
    py = {"kind": "model", "name": "m", "load": "ok", "num_params": 12}
    line, problems = conformance.golden_line(py, dict(py, num_params=13))
    assert problems == ["model m: num_params: the runtimes differ outside TWO_RUNTIMES"]


def test_parse_errors_may_differ_by_runtime_at_the_same_place(conformance):
    py = {"kind": "config", "name": "c", "parse": _error("c.prototxt:3:7: solver.seed: Expected integer.")}
    same = {"kind": "config", "name": "c", "parse": _error("c.prototxt:3:7: solver.seed: Expected integer, got: x")}
    line, problems = conformance.golden_line(py, same)
    assert problems == []
    assert line["parse"]["by_runtime"]["cpp"] == same["parse"]
    elsewhere = {"kind": "config", "name": "c", "parse": _error("c.prototxt:4:1: solver.seed: Expected integer.")}
    assert conformance.golden_line(py, elsewhere)[1] == [
        "config c: parse: the two errors name another place or field"]


def test_each_runtime_is_held_to_the_golden_line(conformance):
    py = {"kind": "model", "name": "m", "load": "ok", "num_params": 12}
    golden, _ = conformance.golden_line(py, dict(py))
    lines = {"python": [py], "cpp": [dict(py)]}
    assert conformance.check(lines, [golden]) == []
    lines["cpp"] = [dict(py, num_params=11)]
    assert conformance.check(lines, [golden]) == ["model m: num_params: C++ gives 11, golden.jsonl records 12"]
    assert conformance.check(lines, [])[0] == "model m: not in golden.jsonl (a new fixture: --write)"


def test_the_golden_file_names_every_fixture_once():
    import json
    with open(os.path.join(CONFORMANCE, "golden.jsonl"), encoding="utf-8") as f:
        ids = [(line["kind"], line["name"]) for line in map(json.loads, f)]
    assert len(ids) == len(set(ids)) > 800
