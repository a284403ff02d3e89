"""Small helpers shared by the test modules (tests/ is on sys.path, see conftest.py)."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARTPOLE = os.path.join(ROOT, "configs", "cartpole.prototxt")
#: Models the tests load (tests/fixtures) and reference data they compare with (tests/data).
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
DATA = os.path.join(ROOT, "tests", "data")


def quiet(_):
    """A training log that prints nothing."""


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def mlp_agent(tmp_path, cfg):
    """An ESAgent of ``cfg`` (solver initialised) on a 4-8-2 MLP for
    CartPole, written to ``tmp_path/mlp.onnx``."""
    import evokit
    from evokit.policy.mlp import init_mlp

    path = tmp_path / "mlp.onnx"
    path.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=3).SerializeToString())
    return evokit.ESAgent(cfg, str(path))
