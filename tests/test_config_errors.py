"""Every error of a damaged config names its line, column and field.

A small fuzzer: configs printed one field per line (so that each line's field
is known from the indentation alone, independently of evokit's own text
walk), every scalar value replaced in turn by bad tokens; each config that is
refused must name exactly the field that was changed, on its line (and, for a
parse error, the column of the bad token). Then the named parse errors of
issue 16 and the files of both layouts."""

import os
import re

import pytest

from evokit import ConfigError, parse_config
from evokit import evokit_pb2 as pb
from evokit.config import config_with_defaults
from evokit.errors import ConfigLayoutWarning

from helpers import CARTPOLE, ROOT

PARL_DEMO = os.path.join(ROOT, "cpp", "io", "tests", "data", "parl_cartpole_config.prototxt")

#: Tokens no scalar field of EvoKitConfig takes everywhere: non-numbers for
#: numbers, numbers for strings and bools, overflows, a closing brace, a
#: malformed hex number and infinities (refused by the parser for integers,
#: by the validation for most floats).
BAD_TOKENS = ["-inf", "abc", '"text"', "1.5", "}", "maybe", "99999999999999999999", "0x1g", "nan"]


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def scalar_lines(text):
    """(line number, dotted field path, column of the value, value) of every
    `name: value` line of a text printed with two spaces per level."""
    out, stack = [], []
    for number, line in enumerate(text.split("\n"), 1):
        body = line.split("#", 1)[0].rstrip() if not line.strip().startswith('"') else line
        depth = (len(line) - len(line.lstrip(" "))) // 2
        del stack[depth:]
        m = re.fullmatch(r" *(\w+) \{", body)
        if m:
            stack.append(m.group(1))
            continue
        m = re.fullmatch(r" *(\w+): (.+?)(  # default)?", line)
        if m:
            out.append((number, ".".join(stack + [m.group(1)]), m.start(2) + 1, m.group(2)))
    return out


def damaged(text):
    """(text, line, field, column) with one value replaced by a bad token, for every value and token."""
    lines = text.split("\n")
    for number, field, column, value in scalar_lines(text):
        for token in BAD_TOKENS:
            if token == value:
                continue
            copy = list(lines)
            line = copy[number - 1]
            copy[number - 1] = line[:column - 1] + token + line[column - 1 + len(value):]
            yield "\n".join(copy), number, field, column


def every_field_text():
    """Every field of EvoKitConfig, set or with its default, one per line (check-config --show)."""
    return config_with_defaults(parse_config(_read(CARTPOLE), source=CARTPOLE)) + "\n"


def fuzz(text, source):
    refused = 0
    for bad, line, field, column in damaged(text):
        try:
            parse_config(bad, source=source)
        except ConfigError as err:
            refused += 1
            message = str(err)
            assert (err.field, err.line) == (field, line), f"{message}\n--- for {field} at line {line}"
            parse_error = re.match(rf"{re.escape(source)}:{line}:(\d+): {re.escape(field)}: ", message)
            validation = message.startswith(f"{source}:{line}: {field} ") or message.startswith(
                f"{source}:{line}: {field} (")
            assert parse_error or validation, message
            if parse_error:
                assert int(parse_error.group(1)) == column, message
    return refused


def test_every_refused_damage_of_every_field_names_its_line_column_and_field():
    text = every_field_text()
    cases = sum(1 for _ in damaged(text))
    refused = fuzz(text, "every.prototxt")
    # the fuzzer reaches every field (82 now), most damages are refused
    assert len(scalar_lines(text)) >= 80
    assert refused > 0.8 * cases, (refused, cases)


def test_every_refused_damage_of_parl_s_demo_config_names_the_parl_field():
    text = _read(PARL_DEMO)
    with pytest.warns(ConfigLayoutWarning):
        assert fuzz(text, "parl.prototxt") >= 60


def test_issue_16_parse_errors_name_the_field():
    text = _read(CARTPOLE).replace("population_size: 40", "population_size: -inf")
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="c015.prototxt")
    line = text.split("\n").index("  population_size: -inf") + 1
    assert str(info.value) == f"c015.prototxt:{line}:20: solver.population_size: Couldn't parse integer: -inf"
    text = "solver {\n  sampling { gaussian_sampling { std: abc } }\n}\n"
    with pytest.raises(ConfigError, match=r"^c.prototxt:2:39: solver\.sampling\.gaussian_sampling\.std: "
                                          r"Couldn't parse float: abc$"):
        parse_config(text, source="c.prototxt")


@pytest.mark.parametrize("text, where, field", [
    ("solver {\n  population: 5\n}\n", "2:3", "solver.population"),              # unknown field: itself
    ("solver { 4 }", "1:10", "solver"),                                          # no field: the message
    ("4", "1:1", None),                                                          # outside any field
    ("solver {\n  population_size 4\n}\n", "2:19", "solver.population_size"),    # colon missing
    ("train { hidden_sizes: [4, x] }", "1:27", "train.hidden_sizes"),            # inside a list
    ("solver { sampling { type: 99 } }", "1:27", "solver.sampling.type"),
    ("# a comment: not a field\nsolver { num_threads: {} }", "2:23", "solver.num_threads"),
])
def test_the_field_is_the_one_the_parser_was_in(text, where, field):
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="c.prototxt")
    assert str(info.value).startswith(f"c.prototxt:{where}: {field or 'at top level'}: ")
    assert info.value.field == field
