"""Deliberate bugs, each of which a named property must catch with a counterexample (issue 40: a
property that cannot fail proves nothing).

A mutation is a context manager that changes the design while the wrapper is built and converted,
and restores it afterwards: it replaces a block's ``elaborate`` (the crossbar) or a ``tap_*`` hook
of a formal wrapper, the point where the wrapper hands a block's output to its properties. No design
file is edited.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable
from unittest import mock

from amaranth.hdl import Signal
from amaranth.lib import data

__all__ = ["MUTATIONS", "Mutation"]


@dataclass(frozen=True)
class Mutation:
    name: str
    block: str
    caught_by: str
    what: str
    patch: Callable


@contextmanager
def _swap_selects():
    """The crossbar's outputs 0 and 1 take each other's select."""
    from ..crossbar import Crossbar

    original = Crossbar.elaborate

    def elaborate(self, platform):
        real = self.sel
        swapped_sel = data.View(real.shape(), Signal(real.shape().size, name="sel_swapped"))
        self.sel = swapped_sel  # the original elaboration reads the swapped selects
        try:
            m = original(self, platform)
        finally:
            self.sel = real
        order = [1, 0] + list(range(2, self.outputs))
        m.d.comb += [swapped_sel[o].eq(real[k]) for o, k in enumerate(order)]
        return m

    with mock.patch.object(Crossbar, "elaborate", elaborate):
        yield


@contextmanager
def _done_late():
    """``done`` one cycle after the timing model's cycle."""
    from . import router

    def tap_done(m, done):
        late = Signal(name="done_late")
        m.d.sync += late.eq(done)
        return late

    with mock.patch.object(router, "tap_done", tap_done):
        yield


@contextmanager
def _addr_plus_one():
    """Every lane reads one flit past its slot's flit."""
    from . import router

    with mock.patch.object(router, "tap_rd_addr", lambda m, addr: addr + 1):
        yield


MUTATIONS = {
    mu.name: mu
    for mu in [
        Mutation(
            "swap_selects", "crossbar", "xbar_select", "outputs 0 and 1 swap their crossbar selects", _swap_selects
        ),
        Mutation("done_late", "router", "done_timing", "done rises one cycle late", _done_late),
        Mutation("addr_off_by_one", "router", "lane_addr", "a lane's read address is one flit too far", _addr_plus_one),
    ]
}
