"""solver.param_pattern: one dialect, the core's (cpp/src/formats/param_pattern.cc),
used by Python's OnnxPolicy and config checks and by the C++ io library.

Within the dialect it selects what Python's ``re.fullmatch(pattern, name,
re.ASCII)`` selects; outside it, it refuses with a message naming the
construct and its position."""

from __future__ import annotations

import random
import re

import pytest

from evokit import _core
from evokit.config import parse_config
from evokit.errors import ConfigError, ModelError
from evokit.policy.mlp import init_mlp
from evokit.policy.onnx_policy import OnnxPolicy

ATOMS = ["a", "b", "0", "1", ".", r"\.", r"\d", r"\w", r"\s", r"\W", r"\D", "[ab]", "[^a]", "[a-c0-9]",
         "[.]", "_", "A", "(?:a|b)", "(a)", "(?P<g>b)", "x", r"\-", "é", r"[\d.]", "^", "$"]
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,3}", "{,2}", "*?", "{2,}", "??"]
ALPHABET = "ab01._Ax-é B"


def _pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        atom = "(" + _pattern(rng, depth + 1) + ")" if depth < 2 and rng.random() < 0.2 else rng.choice(ATOMS)
        parts.append(atom + ("" if atom in "^$" else rng.choice(QUANTIFIERS)))
    text = "".join(parts)
    if rng.random() < 0.2:
        text += "|" + _pattern(rng, depth + 1)
    return text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selects_what_python_re_fullmatch_selects(seed):
    rng = random.Random(seed)
    compared = matched = 0
    for _ in range(3000):
        pattern = _pattern(rng)
        flags = rng.random()
        pattern = ("(?i)" if flags < 0.1 else "(?s)" if flags < 0.15 else "") + pattern
        try:
            reference = re.compile(pattern, re.ASCII)
        except re.error:  # e.g. a group name given twice: refused by both
            with pytest.raises(ValueError):
                _core.ParamPattern(pattern)
            continue
        ours = _core.ParamPattern(pattern)
        for _ in range(4):
            name = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))
            expected = reference.fullmatch(name) is not None
            assert ours.matches(name) == expected, (pattern, name)
            compared += 1
            matched += expected
    assert matched > compared // 20  # the comparison saw matches, not only refusals


@pytest.mark.parametrize("pattern, message", [
    ("([", "unterminated character set at position 1"),
    ("(?=a)", "lookaround assertions are not supported at position 0"),
    (r"(a)\1", r"backreferences and octal escapes are not supported (\1) at position 3"),
    (r"\bw", r"\b (a word boundary) is not supported at position 0"),
    ("(?x)a", "flag (?x) is not supported (only (?i) and (?s)) at position 2"),
    ("a{1001}", "repeat count 1001 is over 1000 at position 1"),
])
def test_refuses_what_is_outside_the_dialect(pattern, message):
    with pytest.raises(ValueError) as exc:
        _core.ParamPattern(pattern)
    assert str(exc.value) == message


def test_a_pattern_selects_the_same_initializers_for_the_model_and_the_config():
    model = init_mlp(4, 2, hidden_sizes=(8,), seed=0)
    names = [t.name for t in model.graph.initializer if t.data_type == 1]
    pattern = r"(?i)LAYER0\.WEIGHT|(?P<bias>head\.b\w*)"
    policy = OnnxPolicy(model, pattern)
    assert policy.param_names == [n for n in names if re.fullmatch(pattern, n, re.ASCII)]
    assert len(policy.param_names) == 2
    config = parse_config(f'solver {{ param_pattern: "{pattern.replace(chr(92), chr(92) * 2)}" }}')
    assert config.solver.param_pattern == pattern


def test_errors_name_the_config_line_and_the_model():
    with pytest.raises(ConfigError) as exc:
        parse_config('train { max_generations: 3 }\nsolver {\n  param_pattern: "(?<=a)b"\n}\n', "c.prototxt")
    assert str(exc.value) == ("c.prototxt:3: solver.param_pattern is not a valid regular expression: "
                              "lookaround assertions are not supported at position 0")
    with pytest.raises(ModelError, match=r"^m\.onnx: invalid param_pattern 'a\*\*': multiple repeat at position 2$"):
        OnnxPolicy(init_mlp(4, 2, hidden_sizes=(8,), seed=0), "a**", source="m.onnx")


def test_a_regex_escape_written_without_doubling_is_refused_with_a_hint():
    # "layer0\.weight" in a .prototxt is a string escape, not a regex one:
    # one protobuf runtime keeps the backslash and the other refuses the file,
    # so both refuse it here and say how to write it
    with pytest.raises(ConfigError) as exc:
        parse_config('solver { param_pattern: "layer0\\.weight" }', "c.prototxt")
    assert str(exc.value) == (r"c.prototxt:1:32: solver.param_pattern: unknown escape \. in a string "
                              r"(a backslash itself is \\)")
