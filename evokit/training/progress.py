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
is an estimate of the time to ``max_generations`` at the recent time per
generation, not a bound (generations slow down as episodes grow longer; the
run also stops earlier once the centre reaches the target return).

On a terminal every line fits its width (read at each line, so a resized
window is followed): the fields least needed go first (min / max reward,
elapsed time, total steps, ETA), and what still does not fit is cut, so the
status line never wraps into stray lines.
"""

from __future__ import annotations

import collections
import shutil
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
                 window: int = 10, clock: Callable[[], float] = time.perf_counter,
                 width: Optional[int] = None):
        self.verbosity = verbosity
        self._log = log
        self._stream = stream
        if live is None:
            out = stream if stream is not None else sys.stdout
            isatty = getattr(out, "isatty", None)
            live = log is None and bool(isatty and isatty())
        self.live = bool(live) and log is None
        # The columns a line may take: given, or the terminal's when live.
        self._width = width
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
        columns = self.columns()
        text = self.format(row, None if self.verbosity >= VERBOSE else columns)
        if self.verbosity >= VERBOSE and timings:
            # permanent lines: a verbose one may wrap, a status line never does
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

    def columns(self) -> Optional[int]:
        """The width lines must fit: the one given, else the terminal's when
        live, else None (no limit)."""
        if self._width is not None:
            return self._width
        if self.live:
            return shutil.get_terminal_size((80, 24)).columns
        return None

    def format(self, row: Dict, columns: Optional[int] = None) -> str:
        """The line of ``row``, at most ``columns`` characters (if given)."""
        centre = "-" if self._eval_mean is None else f"{self._eval_mean:.2f}"
        mark = "*" if row.get("eval_mean") is not None else " "
        width = len(str(self._max_generations))
        # (field, rank: the higher, the longer it stays when space is short)
        fields = [
            (f"gen {row['generation']:{width}d}/{self._max_generations}", 9),
            (f"steps {row['env_steps']:,}", 3), (f"({self.steps_per_second():,.0f}/s)", 6),
            (f"reward mean {row['reward_mean']:.2f}", 7), (f"max {row['reward_max']:.2f}", 1),
            (f"min {row['reward_min']:.2f}", 0), (f"centre {centre}{mark}", 8),
            (f"elapsed {format_duration(row['wall_time'])}", 2),
            (f"eta {format_duration(self.eta())}", 5),
        ]
        seps = ["  ", " ", "  ", " ", " ", "  ", "  ", "  "]  # before fields 1..8

        def join(kept):
            out = ""
            for i, (text, _) in enumerate(fields):
                sep = seps[i - 1] if i else ""
                if i == 2 and 1 not in kept:  # the rate without the steps: say what it counts
                    text, sep = f"{self.steps_per_second():,.0f} steps/s", "  "
                if i in kept:
                    out += (sep if out else "") + text
            return out

        kept = set(range(len(fields)))
        line = join(kept)
        if columns is None:
            return line
        for i, _ in sorted(enumerate(fields), key=lambda f: f[1][1]):
            if len(line) <= columns - 1 or len(kept) == 1:
                break
            kept.discard(i)
            line = join(kept)
        return line[:max(1, columns - 1)]

    def end_line(self) -> None:
        """End a status line left on the terminal (before an error message)."""
        if self._status_shown:
            self._write("\n")
            self._status_shown = False

    def finish(self, summary: str) -> None:
        """The run ended: ``summary`` is its last line."""
        self.line(summary)
