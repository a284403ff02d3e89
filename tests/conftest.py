import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # the oracle module (tests/es_oracle.py)
# Commands the tests run (`evokit`, `python3` in demo scripts) are those of the
# environment this pytest runs in, never whatever is first on PATH (e.g. a
# pyenv shim that runs another Python, with another evokit or none).
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

# Any skip that tests/allowed_skips.txt does not list fails the run.
pytest_plugins = ["skip_policy"]


SEED_EXAMPLE = """solver {
  type: BASIC_ES
  optimizer { type: ADAM base_lr: 0.05 adam { beta1: 0.9 beta2: 0.999 epsilon: 1e-08 } }
  sampling { type: GAUSSIAN_SAMPLING gaussian_sampling { std: 0.5 cached: true seed: 1024 cache_size: 100000 } }
}
"""


@pytest.fixture
def mlp_path(tmp_path):
    """A 4-8-2 tanh MLP policy written as ONNX."""
    from evokit.policy.mlp import init_mlp

    path = tmp_path / "mlp.onnx"
    path.write_bytes(init_mlp(4, 2, hidden_sizes=(8,), seed=3).SerializeToString())
    return str(path)


@pytest.fixture
def seed_config(tmp_path):
    path = tmp_path / "config.prototxt"
    path.write_text(SEED_EXAMPLE)
    return str(path)


@pytest.fixture
def obs_batch():
    return np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
