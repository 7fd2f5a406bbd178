"""The timing model of the schedule path, per router pipeline depth (``Design.pipeline``, ``rtl/router.py``).

One home for the constants every other module derives from; ``docs/architecture.md`` ("Timing model")
states the same contract in prose.

A step lasts ``max(chunk_flits, MIN_PERIOD)`` cycles: a flit written at stage C of step s must be
readable at stage A of step s + 1.

* pipeline 0: read at A, crossbar at B, written at C, two cycles after the read; the lanes' read
  ports are transparent, so A of step s + 1 may be C's cycle: ``MIN_PERIOD`` 2.
* pipeline 1: the lane read data is registered (stage R) before the crossbar, so the write is three
  cycles after the read, and the read ports are not transparent (block RAM without bypass logic):
  A of step s + 1 comes at least a cycle after C: ``MIN_PERIOD`` 4.
* pipeline 2: as 1, and the lanes' writes are registered once more (stage W) after the link, so the
  flit reaches a lane's block RAMs from a register that can sit beside them (the 16x16 lanes span 67
  block RAMs across the die, ``docs/fpga.md``): the write is four cycles after the read:
  ``MIN_PERIOD`` 5.

A run lasts ``steps x period + LATENCY`` cycles from the edge that takes ``start`` to the edge after
which ``done`` is high: the read-to-write latency, one cycle for ``done`` to register, and with
pipeline 1 and 2 one cycle to read the first table entry ahead.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PIPELINE", "LATENCY", "MIN_PERIOD", "PIPELINES", "period", "run_cycles"]

PIPELINES = (0, 1, 2)
MIN_PERIOD = {0: 2, 1: 4, 2: 5}
LATENCY = {0: 3, 1: 5, 2: 6}
# The default depth: the EquiMesh router clocks best with it at 8x8 and 16x16, and keeps 16x16 within
# 10 % of 4x4 (docs/fpga.md).
DEFAULT_PIPELINE = 2


def period(chunk_flits: int, pipeline: int = DEFAULT_PIPELINE) -> int:
    """Cycles per timestep of a router.

    Parameters
    ----------
    chunk_flits : int
        Flits per chunk, F.
    pipeline : int
        The router's pipeline depth, one of ``PIPELINES``.

    Returns
    -------
    int
        ``max(chunk_flits, MIN_PERIOD[pipeline])``.
    """
    return max(chunk_flits, MIN_PERIOD[pipeline])


def run_cycles(steps: int, chunk_flits: int, pipeline: int = DEFAULT_PIPELINE) -> int:
    """Clock edges from the one that takes ``start`` to the one after which ``done`` is high.

    Parameters
    ----------
    steps : int
        Timesteps of the schedule.
    chunk_flits : int
        Flits per chunk, F.
    pipeline : int
        The router's pipeline depth, one of ``PIPELINES``.

    Returns
    -------
    int
        ``steps x period + LATENCY[pipeline]``.
    """
    return steps * period(chunk_flits, pipeline) + LATENCY[pipeline]
