"""Worker processes and Ray, shared by the evaluators (evokit.evaluation) and
the black-box strategies' ``optimize`` (evokit.blackbox.parallel): a spawned
process pool whose workers ignore SIGINT and die with their parent, and
``ray.init`` done the EvoKit way."""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import multiprocessing
import os
import signal
import sys
from typing import Optional

from .util import install_hint

__all__ = ["import_ray", "init_ray", "new_process_pool"]

# The directory holding the evokit package (this file is evokit/workers.py).
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _guarded_init(parent_pid: int, initializer, *initargs) -> None:
    """A worker's start: it ignores SIGINT (the parent decides when a run
    stops: Ctrl-C at the terminal reaches the whole process group), and on
    Linux it is killed when its parent dies (PR_SET_PDEATHSIG), so a SIGKILLed
    run leaves no orphans; then ``initializer(*initargs)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the guard was set
        os._exit(1)
    initializer(*initargs)


_PR_SET_PDEATHSIG = 1


def new_process_pool(num_workers: int, initializer, initargs) -> cf.ProcessPoolExecutor:
    """A pool of ``num_workers`` spawned workers, each started by
    ``initializer(*initargs)`` behind :func:`_guarded_init`."""
    return cf.ProcessPoolExecutor(
        max_workers=num_workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_guarded_init, initargs=(os.getpid(), initializer, *initargs))


def import_ray():
    """The ``ray`` module, or an ImportError saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"the ray backend needs the ray package: {install_hint('ray')}") from None
    return ray


def init_ray(address: Optional[str] = None, num_cpus: Optional[int] = None) -> None:
    """``ray.init`` for EvoKit: a local instance with ``num_cpus`` CPUs, or the
    cluster at ``address``; quiet (no dashboard, worker logs not forwarded).

    Ray puts the driver's working directory on every worker's ``sys.path``;
    run from a source checkout, that directory's ``evokit/`` (without the
    compiled parts) would shadow the installed package in the workers. The
    driver therefore connects from the directory evokit is installed in."""
    ray = import_ray()
    here = os.getcwd()
    os.chdir(_PACKAGE_PARENT)
    try:
        if address is None:  # "local": a new instance, whatever cluster runs on the machine
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        else:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except ConnectionError as exc:
                raise ConnectionError(f"cannot join the Ray cluster at {address!r}: {exc}") from None
    finally:
        os.chdir(here)
