"""What importing evokit loads: the black-box strategies come without onnx,
onnxruntime and gymnasium; the rest of the API is there on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import evokit

HEAVY = ("onnx", "onnxruntime", "gymnasium")


def _loaded_after(statement: str) -> list:
    code = f"import sys\n{statement}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return [m for m in out.stdout.strip().split(",") if m]


@pytest.mark.parametrize("name", ["CMAES", "SepCMAES", "SNES", "XNES", "CRFMNES", "LMMAES", "PGPE", "CEM",
                                  "ARS", "GA", "NSGA2", "OpenES"])
def test_a_blackbox_strategy_loads_no_onnx_and_no_gymnasium(name):
    assert _loaded_after(f"from evokit import {name}") == []


def test_the_policy_api_loads_on_first_use():
    assert _loaded_after("import evokit; evokit.OnnxPolicy") == ["onnx"]


def test_every_public_name_resolves():
    for name in evokit.__all__:
        assert getattr(evokit, name) is not None, name
    assert set(evokit.__all__) <= set(dir(evokit))
    assert evokit.config.validate_config is evokit.config.validate_config  # a submodule, on first use
    with pytest.raises(AttributeError, match=r"module 'evokit' has no attribute 'nope'"):
        evokit.nope
