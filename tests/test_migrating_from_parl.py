"""docs/migrating_from_parl.md stays true: its Python block runs as written,
its C++ block is demo/cpp/parl_cartpole.cc (which the ctest
parl_migration_example builds and runs), its mapping table is
evokit/parl_config.py's, and README.md links it."""

import os
import re
import subprocess
import sys

import pytest

from evokit import parl_config

from helpers import ROOT

DOC = os.path.join(ROOT, "docs", "migrating_from_parl.md")
with open(DOC, encoding="utf-8") as _f:
    TEXT = _f.read()
BLOCKS = re.findall(r"^```(\w+)([^\n]*)\n(.*?)^```$", TEXT, flags=re.S | re.M)


def blocks(language, tag=""):
    return [body for lang, info, body in BLOCKS if lang == language and info.strip() == tag]


def test_the_python_block_runs_as_written(tmp_path):
    (code,) = blocks("python")
    script = tmp_path / "parl_cartpole.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, "-W", "error::UserWarning", str(script)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    # the one note is a warning: as an error it stops the script at load_config
    assert out.returncode != 0 and "ConfigLayoutWarning: cartpole_config.prototxt: read in PARL" in out.stderr
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"(Epoch: \d Reward: \d+\n){10}", out.stdout), out.stdout


def test_the_cpp_block_is_the_example_program_ctest_builds():
    (code,) = blocks("cpp")
    with open(os.path.join(ROOT, "demo", "cpp", "parl_cartpole.cc"), encoding="utf-8") as f:
        assert code == f.read()
    (quote,) = blocks("cpp", "parl")  # PARL's code, quoted: it needs Paddle Lite
    assert "agent->update(noisy_keys, noisy_rewards)" in quote
    with open(os.path.join(ROOT, "cpp", "io", "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    assert "add_test(NAME parl_migration_example" in cmake and "demo/cpp/parl_cartpole.cc" in cmake


def test_the_parl_config_shown_is_parl_s_demo_file():
    with open(os.path.join(ROOT, "cpp", "io", "tests", "data", "parl_cartpole_config.prototxt"),
              encoding="utf-8") as f:
        demo = "".join(line for line in f if not line.startswith("#"))
    assert blocks("text")[0] == demo


def test_the_mapping_table_is_the_code_s():
    rows = re.findall(r"^\| `([\w.]+)` \([^)]*\) \| `([\w.]+)` \|", TEXT, flags=re.M)
    assert dict(rows) == parl_config.FIELDS
    refused = re.findall(r"^\| `([\w.]+)` \| refused", TEXT, flags=re.M)
    assert sorted(refused) == sorted(parl_config._REFUSED)


def test_readme_links_it():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        assert "(docs/migrating_from_parl.md)" in f.read()
