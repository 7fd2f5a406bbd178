"""The statistics block of a network top: a cycle counter and a busy counter per link.

Constellation keeps a utilization counter on every channel; here they sit in the
network top, outside the routers, so a router's synthesized cells stay
comparable across designs and a harness reads the counters once, after ``done``,
instead of watching the links every cycle (docs/architecture.md, "Timing model").
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["COUNTER_BITS", "Stats"]

COUNTER_BITS = 32


class Stats(wiring.Component):
    """Counts from the cycle that takes ``start`` until ``done``.

    Parameters
    ----------
    links : int
        The number of links (width of ``link_valid``, length of ``busy``).

    Attributes
    ----------
    links : int
        The number of links.

    Ports
    -----
    start : In(1) -- the routers take ``start`` at this clock edge; the counters restart.
    done : In(1) -- the network's ``done``.
    link_valid : In(links) -- bit ``i``: link ``i`` carries a flit this cycle.
    cycles : Out(32) -- clock edges from the one that took ``start`` to the one after which
        ``done`` is high (the run's length, ``steps x period + LATENCY``, ``rtl/rom.py``).
    busy : Out(32).array(links) -- cycles each link carried a flit during the run.
    """

    def __init__(self, links: int):
        self.links = links
        super().__init__(
            {
                "start": In(1),
                "done": In(1),
                "link_valid": In(links),
                "cycles": Out(COUNTER_BITS),
                "busy": Out(COUNTER_BITS).array(links),
            }
        )

    def elaborate(self, platform):
        """Build the hardware: the cycle and busy counters.

        Parameters
        ----------
        platform : object or None
            Unused.

        Returns
        -------
        amaranth.hdl.Module
        """
        m = Module()
        active = Signal()
        busy = self.busy
        with m.If(self.start):
            m.d.sync += [active.eq(1), self.cycles.eq(1)]
            m.d.sync += [b.eq(0) for b in busy]
        with m.Elif(active & ~self.done):
            m.d.sync += self.cycles.eq(self.cycles + 1)
            m.d.sync += [b.eq(b + v) for b, v in zip(busy, self.link_valid)]
        with m.Elif(self.done):
            m.d.sync += active.eq(0)
        return m
