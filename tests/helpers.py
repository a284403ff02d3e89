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


def count_calls(monkeypatch, function):
    """The arguments (by name) of every call of ``function`` made through any
    evokit module that imported it: a list that fills as the calls happen."""
    import inspect
    import sys

    calls = []
    signature = inspect.signature(function)

    def counted(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        calls.append(call.arguments)
        return function(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("evokit"):
            for name in [n for n, v in vars(module).items() if v is function]:
                monkeypatch.setattr(module, name, counted)
    return calls


def count_reads(monkeypatch, directory=None):
    """The files opened for reading, a list that fills as they are opened:
    absolute paths, or (with ``directory``) the paths relative to it of the
    files inside it."""
    import builtins

    reads = []
    real_open = builtins.open

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and "r" in mode and "+" not in mode:
            path = os.path.abspath(file)
            if directory is None:
                reads.append(path)
            else:
                relative = os.path.relpath(path, directory)
                if not relative.startswith(os.pardir):
                    reads.append(relative)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    return reads
