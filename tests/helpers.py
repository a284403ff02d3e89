"""Small helpers shared by the test modules (tests/ is on sys.path, see conftest.py)."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARTPOLE = os.path.join(ROOT, "configs", "cartpole.prototxt")


def quiet(_):
    """A training log that prints nothing."""


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()
