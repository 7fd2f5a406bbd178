"""Link metrics from a per-cycle valid trace (pure numpy; no simulator).

Link utilization = busy link-cycles / (links x cycles) (design.md, "Timing
model"); per timestep, the window of a step is its ``period`` cycles on the
links, which start two cycles after the step's ROM entry is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rtl.rom import NetworkImage

LINK_LATENCY = 2  # stage A (lane read) -> stage B (crossbar, link register) -> on the link


@dataclass
class LinkStats:
    busy: np.ndarray             # busy cycles per link
    expected_busy: np.ndarray    # transfers x chunk_flits per link, from the schedule
    utilization: np.ndarray      # per link: busy / cycles
    per_step: np.ndarray         # per timestep: busy link-cycles / (links x period)
    mean: float
    min: float
    cycles: int
    steps: int
    chunk_flits: int

    @property
    def busy_matches_schedule(self) -> bool:
        return bool((self.busy == self.expected_busy).all())

    @property
    def ratio_to_steps_x_flits(self) -> float:
        """cycles / (steps x chunk_flits)."""
        return self.cycles / (self.steps * self.chunk_flits)


def link_stats(image: NetworkImage, valid: np.ndarray, cycles: int) -> LinkStats:
    """``valid[t, link]``: link valid in cycle ``t``; cycle 0 is stage A of step 0."""
    busy = valid.sum(axis=0).astype(np.int64)
    util = busy / cycles
    P = image.period
    per_step = np.zeros(image.steps)
    for s in range(image.steps):
        lo = LINK_LATENCY + s * P
        per_step[s] = valid[lo:lo + P].sum() / (valid.shape[1] * P)
    return LinkStats(busy, image.link_transfers * image.chunk_flits, util, per_step,
                     float(util.mean()), float(util.min()), cycles, image.steps, image.chunk_flits)
