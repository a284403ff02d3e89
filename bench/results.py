"""The one way a bench script records its result.

Every script in bench/ builds a :class:`Report` when it starts and writes it
when it ends: ``<out>/<name>.json`` and ``<out>/<name>.md`` (``--out DIR``,
default ``bench/results/``, which is committed). Both open with the same
header, taken when the report was built and completed when it is written:

- machine: CPU model, logical cores, platform;
- versions: Python, EvoKit (its version and the checkout's commit, marked
  ``-dirty`` when tracked files differ from it), numpy, and every peer that
  is importable (pycma, cmaes, evosax, EvoTorch, ModularCMAES, pymoo, ...);
- threads: ``OMP_NUM_THREADS`` as set;
- date (UTC) and the exact command;
- load average at the start and at the end, and the wall time.

The Markdown file is the header, then what the script printed through
:meth:`Report.print` (its tables, as they came); the JSON file is the header
under ``"header"``, then the script's figures under ``"results"``. Both are
written to a temporary file and renamed, so an interrupted run never leaves a
half-written result behind.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
#: Where results go unless ``--out`` says otherwise (committed).
DEFAULT_DIR = os.path.join(HERE, "results")

#: Distributions whose versions the header records when installed.
PACKAGES = ("evokit-es", "numpy", "gymnasium", "mujoco", "onnxruntime", "cma", "cmaes", "evosax", "jax",
            "gymnax", "evotorch", "torch", "modcma", "pymoo", "comocma", "coco-experiment", "cocopp", "ray",
            "envpool")


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def version(distribution: str) -> Optional[str]:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def evokit_commit() -> Optional[str]:
    """The checkout's commit, with ``-dirty`` when tracked files differ from it."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)

    try:
        head = git("rev-parse", "--short=12", "HEAD")
    except OSError:
        return None
    if head.returncode != 0:
        return None
    dirty = git("diff", "--quiet", "HEAD", "--", "evokit", "cpp", "proto").returncode != 0
    return head.stdout.strip() + ("-dirty" if dirty else "")


def command() -> str:
    """The command line that is running, as one would type it from the repository root."""
    script = sys.argv[0]
    with contextlib.suppress(ValueError):
        script = os.path.relpath(os.path.abspath(script), ROOT)
    return shlex.join(["python", script, *sys.argv[1:]])


def header() -> dict:
    versions: Dict[str, Optional[str]] = {"python": platform.python_version()}
    for dist in PACKAGES:
        v = version(dist)
        if v is not None:
            versions["evokit" if dist == "evokit-es" else dist] = v
    versions["evokit_commit"] = evokit_commit()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command(),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": versions,
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def header_markdown(h: dict) -> List[str]:
    m, v = h["machine"], h["versions"]
    others = ", ".join(f"{k} {x}" for k, x in v.items() if k not in ("python", "evokit", "evokit_commit"))
    load = h["load_average_start"]
    end = h.get("load_average_end")
    lines = [f"- machine: {m['cpu']}, {m['cores']} cores ({m['platform']})",
             f"- versions: Python {v['python']}, EvoKit {v.get('evokit', '?')} "
             f"(commit {v.get('evokit_commit') or 'unknown'}); {others}",
             f"- threads: OMP_NUM_THREADS={h['threads']['OMP_NUM_THREADS'] or 'unset'}",
             f"- date: {h['date']}",
             f"- command: `{h['command']}`",
             f"- load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start"
             + (f", {end[0]:.2f} {end[1]:.2f} {end[2]:.2f} at the end" if end else "")
             + (f"; wall time {h['wall_s']:,.0f} s" if "wall_s" in h else "")]
    return lines


def _write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def add_out_argument(parser, name: str) -> None:
    parser.add_argument("--out", metavar="DIR", default=DEFAULT_DIR,
                        help=f"write {name}.json and {name}.md here (default: bench/results)")


class Report:
    """A bench script's result: the header taken now, the Markdown lines it
    prints, and (at :meth:`write`) its figures."""

    def __init__(self, name: str, title: str, quiet: bool = False):
        self.name, self.title, self.quiet = name, title, quiet
        self.header = header()
        self._t0 = time.monotonic()
        self.lines: List[str] = []
        self.say(f"# {title}\n")
        self.say("\n".join(header_markdown(self.header)) + "\n")

    def say(self, text: str = "") -> None:
        """Prints text (unless quiet) without keeping it in the Markdown file."""
        if not self.quiet:
            print(text, flush=True)

    def print(self, text: str = "") -> None:
        """Prints text and keeps it for the Markdown file."""
        self.lines.append(text)
        self.say(text)

    def markdown(self) -> str:
        return "\n".join([f"# {self.title}", "", *header_markdown(self.header), "", *self.lines]).rstrip() + "\n"

    def write(self, out: str, results) -> tuple:
        """Writes ``<out>/<name>.json`` and ``<out>/<name>.md``; returns their paths."""
        self.header["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        self.header["wall_s"] = round(time.monotonic() - self._t0, 1)
        json_path = os.path.join(out, f"{self.name}.json")
        md_path = os.path.join(out, f"{self.name}.md")
        _write_atomically(json_path, json.dumps({"header": self.header, "results": results}, indent=1) + "\n")
        _write_atomically(md_path, self.markdown())
        self.say(f"wrote {json_path} and {md_path}")
        return json_path, md_path
