"""Which MuJoCo headers EvoKit's native MuJoCo component is compiled against,
and which ``mujoco`` release they belong to: the one rule, used by CMake
(``cpp/mujoco/CMakeLists.txt`` runs this file) and by the package metadata
(``pyproject.toml``'s ``[[tool.dynamic-metadata]]`` calls
:func:`dynamic_metadata`, which pins the ``mujoco`` extra to that release).

The component refuses, at run time, a libmujoco of another version than its
headers (``cpp/mujoco/src/library.cc``): struct layouts come from the headers.
So the headers and the ``mujoco`` that ``pip install 'evokit-es[mujoco]'``
installs must be the same release, by construction. First found first:

1. an explicit directory holding ``mujoco/mujoco.h``: CMake's
   ``EVOKIT_MUJOCO_INCLUDE`` (passed as ``--include``) or the environment
   variable of that name; its release is not known, so the extra is not
   pinned;
2. the ``mujoco`` package of the environment being installed into (this
   interpreter run with ``-E``, so that pip's build isolation, which works
   through PYTHONPATH, does not hide it): the headers of the MuJoCo that
   will run;
3. the ``mujoco`` package of the build environment: the build requirement
   ``mujoco`` (never ``mujoco-core`` alone, whose newest release can be newer
   than any ``mujoco`` release), which is the release pip resolves for the
   extra at the same time.

Run as a script it prints two lines, the include directory and the release
(each empty when unknown).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Mapping, Optional, Tuple

ENV_VAR = "EVOKIT_MUJOCO_INCLUDE"

# Run in the environment to search: the `mujoco` package's include directory
# (found without importing the package) and its release.
_FIND = r"""
import importlib.util, importlib.metadata, os
spec = importlib.util.find_spec("mujoco")
for folder in (spec.submodule_search_locations or []) if spec else []:
    include = os.path.join(folder, "include")
    if os.path.isfile(os.path.join(include, "mujoco", "mujoco.h")):
        version = ""
        for dist in ("mujoco", "mujoco-core"):
            try:
                version = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                pass
        print(include)
        print(version)
        break
"""


def _search(isolated: bool) -> Tuple[str, str]:
    flags = ["-E"] if isolated else []
    try:
        out = subprocess.run([sys.executable, *flags, "-c", _FIND], capture_output=True,
                             text=True, timeout=60, check=False).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return "", ""
    return (out[0], out[1]) if len(out) >= 2 else ("", "")


def find(include: Optional[str] = None) -> Tuple[str, str]:
    """(include directory, ``mujoco`` release) by the rule above; ``""`` for
    what is not found or not known."""
    explicit = include or os.environ.get(ENV_VAR, "")
    if explicit:
        return explicit, ""
    for isolated in (True, False):  # the target environment, then the build's
        found = _search(isolated)
        if found[0]:
            return found
    return "", ""


def extra_requirement(version: str) -> str:
    """The ``mujoco`` extra's requirement for headers of ``version``."""
    return f"mujoco=={version}" if version else "mujoco>=3"


def dynamic_metadata(settings: Mapping[str, Any], project: Mapping[str, Any]) -> dict:
    """scikit-build-core's dynamic-metadata hook: adds the pinned ``mujoco``
    to the ``mujoco`` extra (the other extras that want MuJoCo name
    ``evokit-es[mujoco]``)."""
    del settings, project
    return {"optional-dependencies": {"mujoco": [extra_requirement(find()[1])]}}


if __name__ == "__main__":
    args = sys.argv[1:]
    given = args[1] if len(args) == 2 and args[0] == "--include" else None
    print("\n".join(find(given)))
