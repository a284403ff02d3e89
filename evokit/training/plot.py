"""``evokit plot RUN_DIR``: the learning curve of a training run as a PNG.

Two panels, against environment steps and against wall time: the
population's mean reward with its min-max band, the centre policy's
evaluations and, when the run has one, its target return as a dashed line.
The title names the environment, the sampling family and the seed (from
the run's config.prototxt) and the run's length; the legend sits below the
panels, never over the data. Needs matplotlib (``pip install 'evokit-es[plot]'``); drawn with
the Agg backend, so no display is needed.
"""

from __future__ import annotations

import io
import os
from typing import List, Optional

from ..errors import MetricsError
from ..util import atomic_write_bytes, install_hint
from .metrics import read_metrics

__all__ = ["PLOT_FILE", "FIGURE_SIZE", "DPI", "find_metrics", "plot_run"]

PLOT_FILE = "learning_curve.png"
FIGURE_SIZE = (12.0, 4.5)  # inches
DPI = 100                  # so the PNG is 1200 x 450 pixels
_METRICS_FILES = ("metrics.csv", "metrics.jsonl")


def find_metrics(run: str) -> str:
    """The metrics file of ``run``: a run directory (its metrics.csv or
    metrics.jsonl) or a metrics file itself."""
    if not os.path.exists(run):
        raise MetricsError(f"{run}: no such run directory")
    if os.path.isfile(run):
        return run
    found = [os.path.join(run, n) for n in _METRICS_FILES if os.path.isfile(os.path.join(run, n))]
    if not found:
        raise MetricsError(f"{run}: no {' or '.join(_METRICS_FILES)}: not a run directory of "
                           f"`evokit train` (give the metrics file itself if it was written elsewhere)")
    if len(found) > 1:  # both: the newer one belongs to the latest run
        found.sort(key=os.path.getmtime)
    return found[-1]


def plot_run(run: str, output: Optional[str] = None) -> str:
    """Draw the learning curve of ``run`` (see :func:`find_metrics`) to
    ``output`` (default ``RUN_DIR/learning_curve.png``); return its path."""
    path = find_metrics(run)
    rows = read_metrics(path)
    if not rows:
        raise MetricsError(f"{path}: no generation recorded yet")
    if output is None:
        output = os.path.join(run if os.path.isdir(run) else os.path.dirname(path) or ".", PLOT_FILE)
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError(f"evokit plot needs matplotlib: {install_hint('plot')}") from None
    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    run_config = _run_config(run if os.path.isdir(run) else os.path.dirname(path))
    fig = Figure(figsize=FIGURE_SIZE, dpi=DPI)
    axes = fig.subplots(1, 2, sharey=True)
    evaluated = [r for r in rows if r["eval_mean"] is not None]
    for ax, key, label in ((axes[0], "env_steps", "environment steps"),
                           (axes[1], "wall_time", "wall time (s)")):
        x = _column(rows, key)
        ax.fill_between(x, _column(rows, "reward_min"), _column(rows, "reward_max"),
                        color="tab:blue", alpha=0.2, linewidth=0, label="population min-max")
        ax.plot(x, _column(rows, "reward_mean"), color="tab:blue", label="population mean")
        if evaluated:
            ax.plot(_column(evaluated, key), _column(evaluated, "eval_mean"), "o-",
                    color="tab:orange", markersize=3, label="centre policy")
        if run_config is not None:
            ax.axhline(run_config.train.target_return, color="k", linestyle="--", linewidth=1,
                       label=f"target {run_config.train.target_return:g}")
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("return")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    last = rows[-1]
    name = os.path.basename(os.path.abspath(run))
    if run_config is not None:
        from .. import evokit_pb2 as pb

        t = run_config.train
        family = pb.SamplingConfig.Type.Name(run_config.solver.sampling.type)
        name = f"{t.env_id}, {family}, seed {t.seed} ({name})"
    fig.suptitle(f"{name}: {last['generation']} generations, {last['env_steps']:,} env steps, "
                 f"{_seconds(last['wall_time'])}")
    fig.tight_layout(rect=(0, 0.06, 1, 1))  # room for the legend below
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    atomic_write_bytes(output, buf.getvalue())
    return output


def _run_config(directory: str):
    """The run's config (its config.prototxt), or None without a readable one."""
    from ..config import load_config

    path = os.path.join(directory, "config.prototxt")
    if not os.path.isfile(path):
        return None
    try:
        return load_config(path)
    except (ValueError, OSError):
        return None


def _column(rows: List[dict], key: str) -> List[float]:
    return [r[key] for r in rows]


def _seconds(s: float) -> str:
    """Wall time for a title: 0.134 s, 12.3 s, 95 s, 1 h 02 min."""
    if s < 10:
        return f"{s:.2g} s" if s < 1 else f"{s:.1f} s"
    if s < 3600:
        return f"{s:.0f} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
