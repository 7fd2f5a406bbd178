"""A minimal progress bar on stderr that appears only when work takes longer than about a second."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, delay: float = 1.0, stream=None):
        self.label, self.delay = label, delay
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.perf_counter()
        self.shown = False
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self.t0 < self.delay or (now - self.last < 0.2 and done < total):
            return
        self.last, self.shown = now, True
        frac = done / total if total else 1.0
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {now - self.t0:6.1f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
