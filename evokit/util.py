"""Small helpers shared across the package."""

from __future__ import annotations

import os
import tempfile
from typing import Union

__all__ = ["DISTRIBUTION", "atomic_write_bytes", "fsync_dir", "install_hint"]

# The name EvoKit is published under (pyproject.toml's project.name): the
# name `evokit` on PyPI belongs to an unrelated project. The import package and
# the command stay `evokit`.
DISTRIBUTION = "evokit-es"


def install_hint(extra: str) -> str:
    """How to install the optional extra ``extra``, from PyPI and from a checkout:
    ``pip install 'evokit-es[ray]' (from a source checkout: pip install '.[ray]')``."""
    return f"pip install '{DISTRIBUTION}[{extra}]' (from a source checkout: pip install '.[{extra}]')"


def atomic_write_bytes(path: Union[str, "os.PathLike[str]"], data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or
    the new one, never a half-written file: write a temporary file in the same
    directory, flush, fsync, rename over ``path``, fsync the directory."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file 0600; give it the mode open() would (0666 & ~umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not exc.filename:  # e.g. ENOSPC: name the file
            named = OSError(f"{path}: cannot write it ({exc.strerror or exc})")
            named.errno = exc.errno
            raise named from None
        raise
    fsync_dir(directory)


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (setting
    and restoring it would race with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_dir(directory: Union[str, "os.PathLike[str]"]) -> None:
    """fsync a directory, so that a rename or a new file in it is durable.
    An error (e.g. ENOSPC or EIO from the fsync) names the directory."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        named = OSError(f"{os.fspath(directory)}: cannot fsync the directory ({exc.strerror or exc})")
        named.errno = exc.errno
        raise named from None
    finally:
        os.close(dir_fd)
