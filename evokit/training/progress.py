"""What ``evokit train`` shows the person at the terminal.

Three levels: ``QUIET`` (nothing), ``NORMAL`` and ``VERBOSE``. When the
output is a terminal, ``NORMAL`` keeps one status line refreshed in place and
leaves a permanent line only after each centre evaluation; anywhere else (a
log file, CI) every generation is one plain line, with no carriage returns or
escape codes. ``VERBOSE`` prints a permanent line per generation in both
cases, with the time spent sampling, updating and evaluating the centre.

Each line shows the generation, the environment steps so far, steps per
second (over the last ``window`` generations), the population's mean / max /
min reward, the last centre evaluation, the elapsed time and an ETA. The ETA
is the time to ``max_generations`` at the recent rate: an upper bound, since
the run stops earlier once the centre reaches the target return.
"""

from __future__ import annotations

import collections
import sys
import time
from typing import Callable, Deque, Dict, Optional, TextIO, Tuple

__all__ = ["QUIET", "NORMAL", "VERBOSE", "Progress", "format_duration"]

QUIET, NORMAL, VERBOSE = 0, 1, 2
_CLEAR_LINE = "\r\x1b[K"


def format_duration(seconds: float) -> str:
    """``4.2s``, ``3m05s``, ``2h07m``."""
    if seconds != seconds or seconds < 0:  # NaN: unknown
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Reports a training run. ``stream`` (default stdout) receives the
    output; ``live`` chooses the refreshing display (default: when the
    stream is a terminal). ``log``, if given, receives each plain line
    instead of the stream (``train(log=...)``); it never gets a live line."""

    def __init__(self, verbosity: int = NORMAL, stream: Optional[TextIO] = None,
                 live: Optional[bool] = None, log: Optional[Callable[[str], None]] = None,
                 window: int = 10, clock: Callable[[], float] = time.perf_counter):
        self.verbosity = verbosity
        self._log = log
        self._stream = stream
        if live is None:
            out = stream if stream is not None else sys.stdout
            isatty = getattr(out, "isatty", None)
            live = log is None and bool(isatty and isatty())
        self.live = bool(live) and log is None
        self._clock = clock
        self._recent: Deque[Tuple[int, int, float]] = collections.deque(maxlen=window + 1)
        self._max_generations = 0
        self._eval_mean: Optional[float] = None
        self._status_shown = False

    # ------------------------------------------------------------- output

    def _write(self, text: str) -> None:
        out = self._stream if self._stream is not None else sys.stdout
        out.write(text)
        out.flush()

    def line(self, text: str) -> None:
        """A permanent line (not in quiet mode)."""
        if self.verbosity <= QUIET:
            return
        if self._log is not None:
            self._log(text)
            return
        self._write((_CLEAR_LINE if self._status_shown else "") + text + "\n")
        self._status_shown = False

    def _status(self, text: str) -> None:
        self._write(_CLEAR_LINE + text)
        self._status_shown = True

    # ------------------------------------------------------------- events

    def start(self, header: str, max_generations: int, generation: int = 0, env_steps: int = 0,
              elapsed: float = 0.0, eval_mean: Optional[float] = None) -> None:
        """The run starts (or resumes) after ``generation`` generations."""
        self._max_generations = max_generations
        self._eval_mean = eval_mean
        self._recent.clear()
        self._recent.append((generation, env_steps, elapsed))
        self.line(header)

    def generation(self, row: Dict, timings: Optional[Dict[str, float]] = None) -> None:
        """Generation ``row`` (a metrics row) ended; ``timings`` are the
        seconds spent per phase (shown in verbose mode)."""
        self._recent.append((row["generation"], row["env_steps"], row["wall_time"]))
        evaluated = row.get("eval_mean") is not None
        if evaluated:
            self._eval_mean = row["eval_mean"]
        if self.verbosity <= QUIET:
            return
        text = self.format(row)
        if self.verbosity >= VERBOSE and timings:
            text += "  [" + " ".join(f"{k} {v:.3f}s" for k, v in timings.items()) + "]"
        if self.live and self.verbosity < VERBOSE and not evaluated:
            self._status(text)
        else:
            self.line(text)

    def steps_per_second(self) -> float:
        """Environment steps per second over the recent generations."""
        (_, s0, t0), (_, s1, t1) = self._recent[0], self._recent[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else float("nan")

    def eta(self) -> float:
        """Seconds to ``max_generations`` at the recent rate (NaN unknown)."""
        (g0, _, t0), (g1, _, t1) = self._recent[0], self._recent[-1]
        if g1 <= g0:
            return float("nan")
        return (self._max_generations - g1) * (t1 - t0) / (g1 - g0)

    def format(self, row: Dict) -> str:
        centre = "-" if self._eval_mean is None else f"{self._eval_mean:.2f}"
        mark = "*" if row.get("eval_mean") is not None else " "
        width = len(str(self._max_generations))
        return (f"gen {row['generation']:{width}d}/{self._max_generations}  "
                f"steps {row['env_steps']:,} ({self.steps_per_second():,.0f}/s)  "
                f"reward mean {row['reward_mean']:.2f} max {row['reward_max']:.2f} "
                f"min {row['reward_min']:.2f}  centre {centre}{mark}  "
                f"elapsed {format_duration(row['wall_time'])}  "
                f"eta {format_duration(self.eta())}")

    def end_line(self) -> None:
        """End a status line left on the terminal (before an error message)."""
        if self._status_shown:
            self._write("\n")
            self._status_shown = False

    def finish(self, summary: str) -> None:
        """The run ended: ``summary`` is its last line."""
        self.line(summary)
