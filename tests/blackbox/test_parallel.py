"""optimize(f, num_workers=N): worker processes (the default), threads, the
serial run's result for every backend, errors of f and of the arguments.
(The Ray backend is tested in tests/evaluation/test_ray_backend.py, beside
the module's Ray instance.)"""

import os

import numpy as np
import pytest

import evokit


def _gil_holding(x):
    """Pure-Python arithmetic: holds the GIL throughout."""
    total = 0.0
    for v in x.tolist():
        total += v * v + abs(v)
    return total


def _recording(path):
    def f(x):  # a closure: only cloudpickle sends it to a worker
        with open(os.path.join(path, str(os.getpid())), "a") as out:
            out.write("x\n")
        return _gil_holding(x)
    return f


@pytest.mark.parametrize("make", [
    lambda: evokit.CMAES(np.full(5, 1.5), 0.8, seed=3),
    lambda: evokit.SNES(np.full(5, 1.5), 0.8, seed=3),
    lambda: evokit.OpenES(np.full(5, 1.5), 0.1, seed=3),
    lambda: evokit.GA(np.full(5, 1.5), 0.3, population_size=12, truncation_size=4, seed=3),
])
def test_every_backend_gives_the_serial_run(make, tmp_path):
    serial = make().optimize(_gil_holding, max_iterations=12)
    threads = make().optimize(_gil_holding, max_iterations=12, num_workers=3, backend="thread")
    processes = make().optimize(_recording(str(tmp_path)), max_iterations=12, num_workers=2)
    for r in (threads, processes):
        np.testing.assert_array_equal(r.xbest, serial.xbest)
        assert (r.fbest, r.evaluations, r.iterations) == (serial.fbest, serial.evaluations, serial.iterations)
    pids = {int(name) for name in os.listdir(tmp_path)}
    assert pids and os.getpid() not in pids  # worker processes, never the caller
    calls = sum(len((tmp_path / str(p)).read_text().split()) for p in pids)
    assert calls == serial.evaluations


def test_errors_of_f_cross_from_a_worker_process():
    def boom(x):
        raise KeyError("raised in a worker process")

    with pytest.raises(KeyError, match="raised in a worker process"):
        evokit.CMAES(np.zeros(3), 1.0).optimize(boom, num_workers=2)


def test_bad_backend_arguments():
    es = evokit.CMAES(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match=r"backend must be one of 'process', 'thread', 'ray' or None, "
                                         r"got 'mpi'"):
        es.optimize(_gil_holding, num_workers=2, backend="mpi")
    with pytest.raises(ValueError, match=r"num_workers must be an integer >= 1, got True"):
        es.optimize(_gil_holding, num_workers=True)
    import threading
    lock = threading.Lock()
    with pytest.raises(ValueError, match=r"f cannot be sent to worker processes \(TypeError: .*lock.*\); "
                                         r"use backend='thread' or num_workers=1"):
        es.optimize(lambda x, lock=lock: _gil_holding(x), num_workers=2)


def _constraint(x):
    return [1.0 - x[0], x[1] - 2.0]


def test_constraints_are_evaluated_with_f_in_the_workers():
    def run(**kw):
        return evokit.CMAES(np.full(4, 3.0), 1.0, seed=2).optimize(
            _gil_holding, constraints=_constraint, max_iterations=25, **kw)

    serial, processes = run(), run(num_workers=2)
    np.testing.assert_array_equal(processes.xbest, serial.xbest)
    assert processes.feasible and serial.feasible and processes.fbest == serial.fbest
    assert processes.xbest[0] >= 1.0 and processes.xbest[1] <= 2.0
