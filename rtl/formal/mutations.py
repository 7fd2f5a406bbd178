"""Deliberate bugs, each of which a named property must catch with a counterexample (issue 40: a
property that cannot fail proves nothing).

A mutation is a context manager that changes the design while the wrapper is built and converted,
and restores it afterwards: it replaces a block's ``elaborate`` (the crossbar, the relay, the input
buffer, the packet router's allocator), a function the router calls (the relay's copy rewrite), or a ``tap_*`` hook of a formal
wrapper, the point where the wrapper hands a block's output to its properties. No design file is
edited.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable
from unittest import mock

from amaranth.hdl import Const, Signal
from amaranth.lib import data

__all__ = ["MUTATIONS", "Mutation"]


@dataclass(frozen=True)
class Mutation:
    """A deliberate bug that a named property must catch with a counterexample (see the module docstring).

    Attributes
    ----------
    name : str
        The mutation's name.
    block : str
        The block it changes (``crossbar``, ``router``, ``relay``, ``input_buffer``).
    caught_by : str
        The property of that block whose proof must fail under it.
    what : str
        The bug, in words.
    patch : Callable
        A context manager factory that applies the change while a wrapper is built and converted and
        restores the design afterwards.
    """

    name: str
    block: str
    caught_by: str
    what: str
    patch: Callable


@contextmanager
def _elaborating_with(block, attr: str, stand_in, wire=None):
    """While ``block`` elaborates, its attribute ``attr`` is ``stand_in(self, real)`` instead of the real
    value, which is put back afterwards; ``wire(self, stand_in, real)``, if given, returns statements that
    drive the stand-in from the real value, added to the module.

    Parameters
    ----------
    block : type
        The block class whose ``elaborate`` is patched.
    attr : str
        The attribute its elaboration reads.
    stand_in : Callable
        ``stand_in(self, real)``: what the elaboration reads instead.
    wire : Callable, optional
        ``wire(self, stand_in, real)``: combinational statements that drive the stand-in.

    Yields
    ------
    None
        While the patch is in place.
    """
    original = block.elaborate

    def elaborate(self, platform):
        real = getattr(self, attr)
        fake = stand_in(self, real)
        setattr(self, attr, fake)
        try:
            m = original(self, platform)
        finally:
            setattr(self, attr, real)
        if wire is not None:
            m.d.comb += wire(self, fake, real)
        return m

    with mock.patch.object(block, "elaborate", elaborate):
        yield


def _swap_selects():
    """The crossbar's outputs 0 and 1 take each other's select."""
    from ..crossbar import Crossbar

    return _elaborating_with(
        Crossbar,
        "sel",
        lambda self, real: data.View(real.shape(), Signal(real.shape().size, name="sel_swapped")),
        lambda self, fake, real: [fake[o].eq(real[k]) for o, k in enumerate([1, 0] + list(range(2, self.outputs)))],
    )


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


@contextmanager
def _drop_bit():
    """The split drops node 0 from every copy's bitmap: each copy's words are masked with ``mask & ~1``."""
    from .. import relay

    original = relay.rewrite

    def rewrite(m, fmt, out, flit, pos, mask, multi):
        return original(m, fmt, out, flit, pos, mask & ~1, multi)

    with mock.patch.object(relay, "rewrite", rewrite):
        yield


def _early_release():
    """The relay releases a flit without waiting for the local delivery: it sees the local ready always up."""
    from ..relay import Relay

    return _elaborating_with(
        Relay,
        "ready",
        lambda self, real: Signal(len(real), name="ready_local_ignored"),
        lambda self, fake, real: fake.eq(real | (1 << self.outs)),
    )


def _small_room():
    """The input buffer reserves room for a packet one flit shorter than it is."""
    from ..packet_router import InputBuffer

    class Shorter:
        def __init__(self, fmt):
            self._fmt = fmt

        def __getattr__(self, name):
            return getattr(self._fmt, name)

        @property
        def packet_flits(self):
            return self._fmt.packet_flits - 1

    return _elaborating_with(InputBuffer, "fmt", lambda self, real: Shorter(real))


def _grant_busy():
    """The packet router's allocator sees every output free: it may grant an output another packet holds."""
    from ..packet_router import MatrixAllocator

    return _elaborating_with(MatrixAllocator, "free", lambda self, real: Const((1 << self.outputs) - 1, self.outputs))


MUTATIONS = {
    mu.name: mu
    for mu in [
        Mutation(
            "swap_selects", "crossbar", "xbar_select", "outputs 0 and 1 swap their crossbar selects", _swap_selects
        ),
        Mutation("done_late", "router", "done_timing", "done rises one cycle late", _done_late),
        Mutation("addr_off_by_one", "router", "lane_addr", "a lane's read address is one flit too far", _addr_plus_one),
        Mutation("drop_bitmap_bit", "relay", "split_cover", "the split drops node 0's bit from every copy", _drop_bit),
        Mutation(
            "early_release",
            "relay",
            "release_after_all",
            "the input is released before the local delivery took the flit",
            _early_release,
        ),
        Mutation(
            "small_room", "input_buffer", "buffer_room", "the input buffer reserves room for one flit less", _small_room
        ),
        Mutation(
            "grant_busy",
            "packet_router",
            "one_driver",
            "the allocator grants an output that another packet still holds",
            _grant_busy,
        ),
    ]
}
