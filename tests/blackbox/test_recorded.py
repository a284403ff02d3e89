"""Recorded results (tests/blackbox/recorded/): every ask/tell strategy's
recommendation after a fixed budget on fixed problems and seeds equals,
bit for bit, the one kept in results.json. A change to a strategy's numbers
fails here: if it is meant, record anew with
``python tests/blackbox/recorded/record.py --write`` and say why in the
commit."""

import importlib.util
import os
import sys

import pytest

import evokit

HERE = os.path.dirname(os.path.abspath(__file__))


def _load():
    spec = importlib.util.spec_from_file_location("evokit_recorded", os.path.join(HERE, "recorded", "record.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


record = _load()


def test_every_strategy_is_recorded():
    """Each ask/tell class exported by evokit has entries (a new strategy gets recorded)."""
    import json

    with open(record.PATH) as f:
        doc = json.load(f)
    assert doc["machine"] == record.MACHINE
    recorded = {key.split("/")[0] for key in doc["results"]}
    classes = {cls.__name__ for cls, _ in record.STRATEGIES.values()} | {"NSGA2"}
    exported = {name for name in ("CMAES", "SepCMAES", "SNES", "XNES", "CRFMNES", "LMMAES", "PGPE", "CEM",
                                  "ARS", "GA", "OpenES", "NSGA2") if hasattr(evokit, name)}
    assert exported <= classes
    assert set(record.STRATEGIES) | {"NSGA2"} == recorded


def test_results_equal_the_recorded_bits():
    if record.machine_kind() != record.MACHINE:
        pytest.skip(f"recorded bits are those of {record.MACHINE}, this machine is {record.machine_kind()}")
    with open(record.PATH) as f:
        import json
        recorded = json.load(f)["results"]
    assert record.differences(recorded, record.compute()) == []


def test_a_changed_number_is_named():
    now = {"CMAES/sphere/seed0": {"evaluations": 600, "fbest": (1.0).hex(), "xfavorite": [(0.5).hex()]}}
    changed = {"CMAES/sphere/seed0": {"evaluations": 600, "fbest": (1.0000000000000002).hex(),
                                      "xfavorite": [(0.5).hex()]}}
    assert record.differences(now, changed) == [
        "CMAES/sphere/seed0: fbest changed (fbest 1 -> fbest 1.0000000000000002)"]
    assert record.differences(now, {}) == ["CMAES/sphere/seed0: recorded, not computed now"]
