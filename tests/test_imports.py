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


def _module_imports(root):
    """Each evokit module's imports of other evokit modules at module level
    (imports inside functions are on first use, not a cycle)."""
    import ast
    import os

    modules = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), os.path.dirname(root))[:-3].replace(os.sep, ".")
                modules[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(dirpath, name)
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:  # module level only
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = ".".join([base, node.module]) if node.module else base
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("evokit.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evokit"):
                targets = [node.module]
            edges[module] |= {t for t in targets if t in modules and t != "evokit"}
    return edges


def test_no_import_cycle():
    import os

    edges = _module_imports(os.path.dirname(evokit.__file__))
    assert "evokit.config" in edges and "evokit.parl_config" in edges["evokit.config"]
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m)
