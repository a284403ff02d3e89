"""The manylinux wheel that scripts/build_wheels.sh builds installs into a
clean venv (no system site-packages: its dependencies come from the package
index) and trains CartPole-v1 to its target with the default config.

The wheel is $EVOKIT_WHEEL: building one is a fresh build of minutes, so
these tests run only when given one, as .ci/run does:

    EVOKIT_WHEEL=$(bash scripts/build_wheels.sh | tail -1) pytest tests/test_wheel.py
"""

import os
import subprocess
import sys
import zipfile

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow


def _run(args, **kwargs):
    out = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert out.returncode == 0, f"{' '.join(map(str, args))} exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def wheel():
    given = os.environ.get("EVOKIT_WHEEL")
    if not given:
        pytest.skip("no wheel to test: set EVOKIT_WHEEL to the wheel scripts/build_wheels.sh printed")
    assert os.path.isfile(given), f"EVOKIT_WHEEL={given}: no such file"
    return given


def test_the_wheel_is_manylinux_with_libgomp_bundled(wheel):
    name = os.path.basename(wheel)
    assert name.startswith("evokit_es-0.2.0-") and "-manylinux_2_" in name and name.endswith("_x86_64.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert any(n.startswith("evokit/_core.") and n.endswith(".so") for n in names)
    assert "evokit/evokit_pb2.py" in names
    assert [n for n in names if n.startswith("evokit_es.libs/libgomp")], names
    # Only the Python package: no C++ headers, static libraries or CMake files.
    assert not [n for n in names if n.endswith((".h", ".a", ".cmake"))]


def test_the_wheel_trains_cartpole_in_a_clean_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    _run([str(venv / "bin" / "pip"), "install", "--quiet", wheel], timeout=900)
    # Outside any checkout, so the installed package is the one imported.
    check = _run([str(venv / "bin" / "python"), "-c",
                  "import evokit, evokit._core as c; print(evokit.__file__); print(c.__file__)"],
                 cwd=tmp_path, timeout=60)
    assert all(line.startswith(str(venv)) for line in check.stdout.split())
    run_dir = tmp_path / "run"
    out = _run([str(venv / "bin" / "evokit"), "train", os.path.join(ROOT, "configs", "cartpole.prototxt"),
                "--out", str(run_dir), "--require-solved"], cwd=tmp_path, timeout=600)
    assert "solved: centre return" in out.stdout + out.stderr
    assert (run_dir / "model.onnx").stat().st_size > 0 and (run_dir / "solver.pb").stat().st_size > 0


def test_the_wheel_with_its_mujoco_extra_runs_mujoco_natively(wheel, tmp_path):
    """`pip install 'evokit-es[mujoco]'` from the wheel: the extra pins the
    `mujoco` release of the headers the wheel was built with, so the MuJoCo
    tasks run natively, equal to gymnasium's step for step, and pip check
    passes."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    _run([str(venv / "bin" / "pip"), "install", "--quiet", f"{wheel}[mujoco]"], timeout=900)
    _run([str(venv / "bin" / "pip"), "check"], timeout=120)
    out = _run([str(venv / "bin" / "evokit"), "check-native", "Hopper-v5", "Swimmer-v5"],
               cwd=tmp_path, timeout=600)
    lines = out.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["Hopper-v5", "Swimmer-v5"], out.stdout
    assert all("equal to gymnasium's step for step" in line for line in lines), out.stdout
