"""The lists of supported ops in the docs agree with the core's op table.

``PolicyGraph.supported_ops()`` is the op table's names in order
(cpp/src/policy/policy_op_table.cc); the native backend's docstring and the public
header's comment name the ops for readers, so each must name every op.
"""

from pathlib import Path

from evokit import _core
from evokit.policy import native

ROOT = Path(__file__).resolve().parents[2]


def test_supported_ops_are_the_table_plus_constant():
    assert native.SUPPORTED_OPS == tuple(_core.PolicyGraph.supported_ops()) + ("Constant",)
    assert len(set(native.SUPPORTED_OPS)) == len(native.SUPPORTED_OPS)


def test_native_docstring_names_every_op():
    missing = [op for op in native.SUPPORTED_OPS if f"``{op}``" not in native.__doc__]
    assert missing == []


def test_public_header_names_every_op():
    text = (ROOT / "cpp" / "include" / "evokit" / "policy_graph.h").read_text()
    comment = " ".join(line.lstrip("/ ") for line in text.splitlines() if line.startswith("//"))
    missing = [op for op in _core.PolicyGraph.supported_ops() if op not in comment]
    assert missing == []


def test_native_policies_doc_table_names_every_op():
    text = (ROOT / "docs" / "native_policies.md").read_text()
    section = text.split("## Supported ONNX ops", 1)[1].split("\n## ", 1)[0]
    missing = [op for op in native.SUPPORTED_OPS if op not in section]
    assert missing == []
