"""A pytest plugin (loaded by tests/conftest.py): a skipped test of a core
capability is invisible in a green run, so any skip that the allow-list
(tests/allowed_skips.txt, or the file $EVOKIT_ALLOWED_SKIPS names) does not
list, by test id prefix and a part of the skip's reason, fails the run after
pytest's own summary."""

import os

import pytest

ALLOWED_SKIPS = os.environ.get("EVOKIT_ALLOWED_SKIPS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "allowed_skips.txt")


def allowed_skips(path=ALLOWED_SKIPS):
    """The (test id prefix, part of the reason) pairs of the allow-list."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 3 or not all(parts):
                raise ValueError(f"{path}:{number}: expected 'test id prefix | part of the skip "
                                 f"reason | why it may skip', got {line.strip()!r}")
            rules.append((parts[0], parts[1]))
    return rules


_unexpected = []


def _note(report) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    nodeid = report.nodeid.replace("\\", "/")
    if not any(nodeid.startswith(prefix) and part in reason for prefix, part in allowed_skips()):
        _unexpected.append(f"{nodeid}: {reason}")


def pytest_runtest_logreport(report):
    _note(report)


def pytest_collectreport(report):
    _note(report)


def pytest_terminal_summary(terminalreporter):
    if _unexpected:
        terminalreporter.section(f"skips not listed in {ALLOWED_SKIPS}", red=True)
        for line in _unexpected:
            terminalreporter.line(line, red=True)


def pytest_sessionfinish(session):
    if _unexpected and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
