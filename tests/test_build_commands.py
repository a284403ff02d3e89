"""The README's two commands are what CI runs, and nothing the build or the
C++ tests run picks a Python from PATH: CMake tests and scripts run the
interpreter the build found (CMake's Python3_EXECUTABLE)."""

import glob
import os
import re

from helpers import ROOT


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def _readme_commands():
    return re.findall(r"^```bash\n(.*?)\n```$", _read("README.md"), flags=re.S | re.M)[:2]


def test_ci_runs_the_readme_test_command_verbatim():
    install, test = _readme_commands()
    assert install == "pip install . && evokit train configs/cartpole.prototxt"
    assert test.startswith("pip install '.[test]' ") and "&& pytest &&" in test
    # .ci/run adds only pip's -q.
    assert test.replace("pip install ", "pip install -q ", 1) in _read(".ci", "run")


def test_the_test_command_builds_once():
    _, test = _readme_commands()
    # The C++ tests are built by the pip install, in the directory ctest runs.
    assert "cmake.define.EVOKIT_BUILD_TESTS=ON" in test and "ctest --test-dir build-py/cmake" in test
    assert "cmake --build" not in test and "cmake -S" not in test
    assert '"${CMAKE_CURRENT_SOURCE_DIR}/build-py/cmake"' in _read("cmake", "skbuild_persistent.cmake")


BARE_PYTHON_CMAKE = re.compile(r"COMMAND\s+python3?\b")
BARE_PYTHON_SHELL = re.compile(r"(?:^|[;&|(`]|\$\()\s*python3?\s", re.M)


def test_no_cmake_test_or_script_runs_a_python_from_path():
    cmake_files = [os.path.join(ROOT, "CMakeLists.txt")] + glob.glob(
        os.path.join(ROOT, "cpp", "**", "CMakeLists.txt"), recursive=True) + glob.glob(
        os.path.join(ROOT, "cmake", "*.cmake"))
    scripts = glob.glob(os.path.join(ROOT, "demo", "**", "*.sh"), recursive=True) + glob.glob(
        os.path.join(ROOT, "scripts", "*.sh"))
    assert len(cmake_files) >= 4 and len(scripts) >= 3
    found = []
    for path in cmake_files:
        text = _read(path)
        found += [f"{path}: {m.group(0)}" for m in BARE_PYTHON_CMAKE.finditer(text)]
        # Every test that runs Python runs the one CMake found.
        for test in re.findall(r"add_test\((.*?)\)\n", text, flags=re.S):
            if "python" in test.lower() and ".py" in test:
                assert "${Python3_EXECUTABLE}" in test, test
    for path in scripts:
        code = "\n".join(line for line in _read(path).splitlines() if not line.lstrip().startswith("#"))
        found += [f"{path}: {m.group(0).strip()}" for m in BARE_PYTHON_SHELL.finditer(code)]
    assert found == []
