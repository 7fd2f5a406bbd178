"""Progress on stderr for work that takes longer than about a second.

On a terminal one line is redrawn in place. When stderr is not a terminal (CI, logs) a plain line is
printed now and then instead (every :data:`LOG_EVERY` seconds), never thousands of carriage returns.
"""

from __future__ import annotations

import sys
import time

__all__ = ["LOG_EVERY", "Progress"]

LOG_EVERY = 10.0  # seconds between plain progress lines when stderr is not a terminal


class Progress:
    """A progress line for one piece of work: call it with ``(done, total)`` as the work advances, then
    :meth:`close` it. Nothing is shown for the first ``delay`` seconds, so quick work stays silent.

    Parameters
    ----------
    label : str
        What the work is, printed at the start of the line.
    delay : float
        Seconds before the first line is shown (default 1).
    stream : file, optional
        Where to write; by default ``sys.stderr``.
    """

    def __init__(self, label: str, delay: float = 1.0, stream=None):
        self.label, self.delay = label, delay
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.shown = False
        self.last = 0.0
        self.last_frac = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        every = 0.2 if self.tty else LOG_EVERY
        frac = min(1.0, done / total) if total else 1.0
        # the end of a piece of work is shown at once, unless the line shown last was an end too
        # (a search runs many syntheses: one line per end would be thousands)
        if now - self.t0 < self.delay or (now - self.last < every and (frac < 1.0 or self.last_frac >= 1.0)):
            return
        self.last, self.last_frac = now, frac
        if self.tty:
            self.shown = True
            bar = "#" * int(30 * frac)
            self.stream.write(f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {now - self.t0:6.1f}s")
        else:
            self.stream.write(f"{self.label}: {100 * frac:.0f}% ({done}/{total}) after {now - self.t0:.0f} s\n")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
