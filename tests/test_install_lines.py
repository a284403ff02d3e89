"""EvoKit is published as ``evokit-es`` (the name ``evokit`` on PyPI is an
unrelated project): every install line in the repository and every message
that tells a user what to install names that distribution, or ``.`` for a
checkout, with extras the package declares."""

import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT

from evokit.util import DISTRIBUTION, install_hint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    tomllib = pytest.importorskip("tomli")

with open(os.path.join(ROOT, "pyproject.toml"), "rb") as _f:
    PYPROJECT = tomllib.load(_f)
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])

# `evokit[...]` not preceded by a name character (so `evokit-es[...]` and
# `"evokit[...]"` inside a longer name do not count), and a bare `pip install
# evokit` (the other project's distribution).
WRONG_EXTRA = re.compile(r"(?<![\w.-])evokit\[")
WRONG_BARE = re.compile(r"pip\s+install\s+(?:-\S+\s+)*['\"]?evokit(?![\w-])")
# An install target with extras: `evokit-es[a,b]` or `.[a,b]`.
WITH_EXTRAS = re.compile(r"(?:(?<![\w-])evokit-es|(?<![\w./])\.)\[([\w,-]+)\]")

TEXT_SUFFIXES = (".md", ".py", ".sh", ".txt", ".toml", ".prototxt", ".cmake", ".in", ".cc", ".h", ".cfg")


def _repository_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
        names = out.stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's files cannot be listed")
    names.append(".ci/run")
    return sorted({n for n in names if n.endswith(TEXT_SUFFIXES) or n == ".ci/run"})


def test_the_distribution_is_ours_and_keeps_the_package_and_the_command():
    assert PYPROJECT["project"]["name"] == DISTRIBUTION == "evokit-es"
    assert PYPROJECT["project"]["scripts"] == {"evokit": "evokit.cli:main"}
    assert PYPROJECT["tool"]["scikit-build"]["wheel"]["packages"] == ["evokit"]


def test_no_install_line_names_the_other_projects_distribution():
    wrong, extras_seen = [], set()
    for name in _repository_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if name == "tests/test_install_lines.py":
            continue  # the patterns themselves
        # Joined across line breaks (README prose wraps `pip\ninstall ...`).
        flat = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
        for pattern in (WRONG_EXTRA, WRONG_BARE):
            wrong += [f"{name}: {m.group(0)!r}" for m in pattern.finditer(flat)]
        for m in WITH_EXTRAS.finditer(flat):
            unknown = set(m.group(1).split(",")) - EXTRAS
            wrong += [f"{name}: {m.group(0)!r} names no extra of pyproject.toml ({sorted(EXTRAS)})"
                      for _ in [0] if unknown]
            extras_seen.update(m.group(1).split(","))
    assert wrong == []
    # The docs show the optional extras a user installs.
    assert {"ray", "mujoco", "plot", "tensorboard", "test"} <= extras_seen


def test_install_hint_names_the_distribution_and_the_checkout():
    assert install_hint("ray") == "pip install 'evokit-es[ray]' (from a source checkout: pip install '.[ray]')"


def _import_ray(tmp_path):
    from evokit.workers import import_ray

    import_ray()


def _plot(tmp_path):
    from evokit.training.metrics import MetricsFile
    from evokit.training.plot import plot_run

    row = dict(generation=1, model_iter_id=1, env_steps=10, wall_time=0.5, reward_mean=1.0,
               reward_max=2.0, reward_min=0.0, eval_mean=None)
    with MetricsFile(tmp_path / "metrics.csv") as metrics:
        metrics.write(row)
    plot_run(str(tmp_path))


def _tensorboard(tmp_path):
    from evokit.training.metrics import TensorBoardWriter

    TensorBoardWriter(tmp_path / "tb")


@pytest.mark.parametrize("module, call, extra, message", [
    ("ray", _import_ray, "ray", "the ray backend needs the ray package: "),
    ("matplotlib", _plot, "plot", "evokit plot needs matplotlib: "),
    ("tensorboardX", _tensorboard, "tensorboard", "TensorBoard output needs the tensorboardX package: "),
])
def test_a_missing_optional_dependency_names_the_extra(monkeypatch, tmp_path, module, call, extra, message):
    monkeypatch.setitem(sys.modules, module, None)  # its import fails as if it were not installed
    with pytest.raises((ImportError, RuntimeError)) as info:
        call(tmp_path)
    assert str(info.value) == message + install_hint(extra)
    assert not list(tmp_path.glob("*.png")) and not (tmp_path / "tb").exists()
