"""Link metrics from the statistics block's counters (pure numpy; no simulator).

Link utilization = busy link-cycles / (links x cycles) (docs/architecture.md, "Timing
model"). Per timestep, the utilization is the step's transfers x chunk_flits
over links x period: the schedule's, which the run confirms when every link's
busy counter equals the schedule's and the cycle count equals the timing model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rtl.rom import NetworkImage

__all__ = ["LinkStats", "link_stats"]


@dataclass
class LinkStats:
    """Link metrics of one run.

    Attributes
    ----------
    busy : numpy.ndarray
        int64, shape (L,): busy cycles per link.
    expected_busy : numpy.ndarray
        int64, shape (L,): transfers x chunk_flits per link, from the schedule.
    utilization : numpy.ndarray
        float, shape (L,): per link busy / cycles.
    per_step : numpy.ndarray
        float, shape (steps,): per timestep transfers x chunk_flits / (links x period).
    mean, min : float
        Mean and least of ``utilization``.
    cycles : int
        The run's cycles.
    steps : int
        Timesteps of the schedule.
    chunk_flits : int
        F, flits per chunk.
    busy_matches_schedule : bool
        Every link's busy counter equals the schedule's.
    ratio_to_steps_x_flits : float
        cycles / (steps x chunk_flits).
    """

    busy: np.ndarray  # busy cycles per link
    expected_busy: np.ndarray  # transfers x chunk_flits per link, from the schedule
    utilization: np.ndarray  # per link: busy / cycles
    per_step: np.ndarray  # per timestep: transfers x chunk_flits / (links x period)
    mean: float
    min: float
    cycles: int
    steps: int
    chunk_flits: int

    @property
    def busy_matches_schedule(self) -> bool:
        """Every link's busy counter equals transfers x chunk_flits from the schedule."""
        return bool((self.busy == self.expected_busy).all())

    @property
    def ratio_to_steps_x_flits(self) -> float:
        """cycles / (steps x chunk_flits)."""
        return self.cycles / (self.steps * self.chunk_flits)


def link_stats(image: NetworkImage, busy: np.ndarray, cycles: int, period: int) -> LinkStats:
    """``busy[link]``: the busy counter of each link after a run of ``cycles`` cycles of a design with
    ``period`` cycles per timestep.

    Parameters
    ----------
    image : NetworkImage
        The compiled schedule.
    busy : array_like of int
        Shape (L,): busy cycles per link.
    cycles : int
        The run's cycles (> 0).
    period : int
        Cycles per timestep.

    Returns
    -------
    LinkStats
    """
    busy = np.asarray(busy, dtype=np.int64)
    util = busy / cycles
    transfers = sum(r.out_valid.sum(axis=1) for r in image.routers)  # per step
    per_step = transfers * image.chunk_flits / (len(busy) * period)
    return LinkStats(
        busy,
        image.link_transfers * image.chunk_flits,
        util,
        per_step,
        float(util.mean()),
        float(util.min()),
        cycles,
        image.steps,
        image.chunk_flits,
    )
