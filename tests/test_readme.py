"""Every Python block of README.md runs as written: each in a fresh process,
in a directory that has the repository's configs/ (as a checkout has), with
the installed evokit."""

import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as _f:
    _README = _f.read()
BLOCKS = re.findall(r"^```python\n(.*?)^```$", _README, flags=re.S | re.M)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_as_written(index, tmp_path):
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    script = tmp_path / f"block{index}.py"
    script.write_text(BLOCKS[index])
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"README block {index}:\n{BLOCKS[index]}\n{out.stderr}"
