"""How ``optimize`` evaluates a generation: in the calling thread, on a
thread pool, in worker processes, or on Ray actors.

Every backend splits the rows of a generation into ``num_workers``
contiguous chunks (numpy.array_split), evaluates each chunk's rows in order
with ``f(row)``, and joins the values in row order; so the values, and the
run, are the same as the serial run's for any backend and worker count
(given an f that is a function of its argument).

- ``"process"`` (the default for num_workers > 1): a pool of spawned
  processes (evokit.workers.new_process_pool: they ignore SIGINT and die
  with the parent) created once per ``optimize`` call; f travels to each
  worker once, by cloudpickle (lambdas and closures too; a function whose
  module a fresh interpreter could not import from sys.path, e.g. a script
  or a test module, travels by value), so an f that holds the GIL runs
  num_workers times as fast.
- ``"thread"``: a thread pool; worthwhile only for an f that releases the
  GIL (NumPy on large arrays, native code).
- ``"ray"``: num_workers Ray actors, each holding f; ``ray.init`` is called
  (a local instance) unless Ray is already initialised, e.g. on a cluster.

An exception raised by f in a worker is raised again by ``optimize`` (the
worker's traceback chained to it); a worker that dies is a RuntimeError.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import importlib.machinery
import pickle
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

import cloudpickle
import numpy as np

from ..workers import import_ray, init_ray, new_process_pool
from .constraints import constraint_matrix

__all__ = ["BACKENDS", "Evaluation"]

BACKENDS = ("process", "thread", "ray")

# The (f, g or None) of a process-pool worker, set once by _worker_init.
_worker_task: Optional[tuple] = None


def _worker_init(payload: bytes) -> None:
    global _worker_task
    _worker_task = pickle.loads(payload)


def _rows(task, rows: np.ndarray) -> Tuple[list, Optional[list]]:
    """(f of each row, g of each row or None) for task = (f, g or None)."""
    f, g = task
    return [f(row) for row in rows], None if g is None else [g(row) for row in rows]


def _worker_rows(rows: np.ndarray):
    return _rows(_worker_task, rows)


def _payload(task) -> bytes:
    """The functions of task pickled for a worker: each by reference when a
    worker can import its module from sys.path, else by value."""
    modules = []
    for fn in task:
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        top = module.__name__.partition(".")[0] if module is not None else ""
        if module is not None and top != "__main__" and module not in modules and \
                importlib.machinery.PathFinder.find_spec(top, sys.path) is None:
            modules.append(module)
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(task)
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)


@contextlib.contextmanager
def _main_script_hidden():
    """multiprocessing's spawn runs the parent's main script again in each
    worker (to find what it defines), which re-runs a script without an
    ``if __name__ == "__main__"`` guard. f travels by value, so the workers
    need nothing from the script: while they start, __main__ shows no file."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    hide = path is not None and getattr(main, "__spec__", None) is None
    if hide:
        del main.__file__
    try:
        yield
    finally:
        if hide:
            main.__file__ = path


def _start_pool(num_workers: int, payload: bytes) -> cf.ProcessPoolExecutor:
    """The spawned pool, its workers started (one no-op task each keeps them
    all busy at once, so each submit starts one) with the script hidden."""
    pool = new_process_pool(num_workers, _worker_init, (payload,))
    with _main_script_hidden():
        barrier = [pool.submit(time.sleep, 0.05) for _ in range(num_workers)]
        try:
            for fut in barrier:
                fut.result()
        except cf.process.BrokenProcessPool as exc:
            pool.shutdown(wait=True, cancel_futures=True)
            raise RuntimeError(f"an optimize worker process died while starting: {exc}") from None
    return pool


class _RayHolder:
    """A Ray actor's body: f, and the rows it is asked for."""

    def __init__(self, payload: bytes):
        self._task = pickle.loads(payload)

    def rows(self, rows: np.ndarray):
        return _rows(self._task, rows)


class Evaluation:
    """The f-values of a generation's rows, and their constraint values when
    a constraint function g is given (evaluated with f, in the same worker);
    ``close()`` ends the workers.

    vectorized: f(X) (and g(X)) take all rows at once (num_workers must then
    be 1). backend: one of BACKENDS, or None ("process" when num_workers > 1).
    """

    def __init__(self, f: Callable, *, vectorized: bool, num_workers: int, backend: Optional[str],
                 constraints: Optional[Callable] = None):
        if isinstance(num_workers, bool) or int(num_workers) != num_workers or num_workers < 1:
            raise ValueError(f"num_workers must be an integer >= 1, got {num_workers!r}")
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))} or None, "
                             f"got {backend!r}")
        if vectorized and num_workers != 1:
            raise ValueError(f"vectorized=True evaluates each batch with one call of f; "
                             f"num_workers must be 1, got {num_workers}")
        self._f, self._vectorized = f, vectorized
        self._task = (f, constraints)
        self._workers = int(num_workers)
        self._backend = None if self._workers == 1 else (backend or "process")
        self._pool: Optional[cf.Executor] = None
        self._actors: list = []
        if self._backend == "thread":
            self._pool = cf.ThreadPoolExecutor(max_workers=self._workers)
        elif self._backend in ("process", "ray"):
            try:
                payload = _payload(self._task)
            except Exception as exc:  # cloudpickle raises whatever the object's reducer raises
                raise ValueError(f"f cannot be sent to worker processes ({type(exc).__name__}: "
                                 f"{exc}); use backend='thread' or num_workers=1") from None
            if self._backend == "process":
                self._pool = _start_pool(self._workers, payload)
            else:
                ray = import_ray()
                if not ray.is_initialized():
                    init_ray(num_cpus=self._workers)
                holder = ray.remote(num_cpus=1)(_RayHolder)
                self._actors = [holder.remote(payload) for _ in range(self._workers)]

    def __call__(self, x: np.ndarray) -> Tuple[Any, Optional[np.ndarray]]:
        """(what f returned: f(x) when vectorized, else the list of f(row),
        which the strategy shapes into its values; the constraint values
        [k, m] or None)."""
        f, g = self._task
        if self._vectorized:
            return f(x), None if g is None else constraint_matrix(g(x), x, True)
        if self._backend is None:
            parts = [_rows(self._task, x)]
        else:
            chunks = [c for c in np.array_split(x, self._workers) if len(c)]
            parts = self._parallel(chunks)
        v = [value for values, _ in parts for value in values]
        if g is None:
            return v, None
        return v, constraint_matrix([row for _, rows in parts for row in rows], x, False)

    def _parallel(self, chunks: List[np.ndarray]) -> list:
        if self._backend == "thread":
            return list(self._pool.map(lambda c: _rows(self._task, c), chunks))
        if self._backend == "process":
            futures = [self._pool.submit(_worker_rows, c) for c in chunks]
            try:
                return [fut.result() for fut in futures]
            except cf.process.BrokenProcessPool as exc:
                raise RuntimeError(f"an optimize worker process died: {exc}") from None
        ray = import_ray()
        refs = [actor.rows.remote(c) for actor, c in zip(self._actors, chunks)]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._actors:
            ray = import_ray()
            for actor in self._actors:
                ray.kill(actor)
            self._actors = []
