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


def files(path) -> dict:
    """Every file under ``path`` with its bytes, to check nothing changed."""
    return {os.path.relpath(os.path.join(d, n), path): read(os.path.join(d, n))
            for d, _, names in os.walk(path) for n in names}


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


def assert_same_run_for_threads_and_pickling(make, generations=6):
    """A distribution strategy's run (``make(num_threads)`` told sum(x^2) for
    ``generations``) is bit-identical with 1 and 2 threads and when pickled
    and unpickled midway: its mean, stds, best value and full core state."""
    import pickle

    import numpy as np

    def run(threads, pickle_at=None):
        es = make(threads)
        for g in range(generations):
            if g == pickle_at:
                es = pickle.loads(pickle.dumps(es))
            X = es.ask()
            es.tell(X, (X ** 2).sum(axis=1))
        state = es.state()
        entries = {**state.doubles, **state.floats, **state.ints}
        return [es.mean, es.stds, es.result.fbest] + [entries[k] for k in sorted(entries)]

    base = run(1)
    for other in (run(2), run(1, pickle_at=generations // 2), run(2, pickle_at=1)):
        assert len(other) == len(base)
        for a, b in zip(base, other):
            np.testing.assert_array_equal(a, b)


def read_raw_log(path):
    """(SamplingInfo, float32 reward) of each record of a sampling log in
    PARL EvoKit's raw layout (demo/cpp/raw_log.h): per sample a float32
    reward, an int32 size and the serialized SamplingInfo."""
    import struct

    from evokit import evokit_pb2 as pb

    data = read(path)
    samples, offset = [], 0
    while offset < len(data):
        reward, size = struct.unpack_from("<fi", data, offset)
        offset += 8
        if not 0 <= size <= len(data) - offset:
            raise ValueError(f"{path}: record at byte {offset - 8} cut short")
        samples.append((pb.SamplingInfo.FromString(data[offset:offset + size]), reward))
        offset += size
    return samples
