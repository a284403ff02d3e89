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


def test_ci_runs_the_readme_commands_as_written_in_fresh_environments():
    main_job, test = _readme_commands()
    # Each sets up an environment of its own, then runs the job.
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert main_job == venv + "pip install . && evokit train configs/cartpole.prototxt"
    assert test.startswith(venv + "pip install '.[test]' ") and "&& pytest &&" in test
    # .ci/run takes both from the README (its first two bash blocks) and runs
    # each in a fresh clone, the test command on the lowest and the highest
    # supported Python.
    ci = _read(".ci", "run")
    assert "main_job=$(readme_block 0)" in ci and "test_command=$(readme_block 1)" in ci
    assert 'run_readme 3.11 main-job "$main_job"' in ci
    assert 'run_readme 3.11 tests-3.11 "$test_command"' in ci
    assert 'run_readme 3.13 tests-3.13 "$test_command"' in ci
    assert 'requires-python = ">=3.11"' in _read("pyproject.toml")


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


_SKIPPING_TESTS = '''
import pytest

def test_listed():
    pytest.skip("needs the moon")

def test_unlisted():
    pytest.skip("needs the sun")
'''


def test_a_skip_the_allow_list_does_not_name_fails_the_run(tmp_path):
    """tests/skip_policy.py: a listed skip passes, any other fails the run
    and is named after the summary."""
    import subprocess
    import sys

    (tmp_path / "test_skips.py").write_text(_SKIPPING_TESTS)
    allowed = tmp_path / "allowed.txt"
    allowed.write_text("# comment\ntest_skips.py::test_listed | the moon | a reason\n")
    env = dict(os.environ, EVOKIT_ALLOWED_SKIPS=str(allowed),
               PYTHONPATH=os.path.join(ROOT, "tests"))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "skip_policy", "-p",
                               "no:cacheprovider", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    out = run("-k", "listed and not unlisted", "test_skips.py")
    assert out.returncode == 0, out.stdout
    out = run("test_skips.py")
    assert out.returncode == 1, out.stdout
    assert "skips not listed in" in out.stdout
    assert "test_skips.py::test_unlisted: Skipped: needs the sun" in out.stdout
    assert "test_listed:" not in out.stdout.split("skips not listed in")[1]
    allowed.write_text("test_skips.py::test_listed | the moon\n")
    out = run("test_skips.py")
    assert out.returncode != 0 and "expected 'test id prefix | part of the skip reason" in (
        out.stdout + out.stderr)
