"""A spill register: the cut between a packet input buffer and its relay (pipeline 2).

Seed 004, Section 4 (the MultiWrite relay) releases an input flit only when every branch of
its copy took it, so the input buffer's read handshake is the relay's release decision. Without
a cut that decision runs, in the cycle it is made, into the buffer's read pointer and level
(measured at 8x8 on the ECP5: ``buf_E.fifo.r_rdy -> buf_E.fifo.inner_level``, 6 logic levels,
the critical path of the router that carries schedule and packets, docs/fpga.md). FlooNoC cuts
such paths with its ``spill_register`` (common_cells): two entries, and the ``ready`` toward the
sender depends on the register's own state only.

This is that register, port for port and cycle for cycle: it holds up to two flits, ``o.valid``
means it holds one, ``i.ready`` that it holds fewer than two, and the flits leave in order a cycle
after they came at the earliest. Here ``i.ready`` is a single flip-flop (``~spare_valid``), and the
flit presented on ``o`` always comes straight from one register (``head``): FlooNoC's version
shows a multiplexer of its two entries there.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class SpillRegister(wiring.Component):
    """Two entries between a stream sender and a receiver, no combinational path between them.

    Parameters
    ----------
    shape : the payload's shape (a :mod:`amaranth.lib.data` layout: a packet flit).

    Ports
    -----
    i : In(stream)  -- from the sender. ``i.ready`` is a register: the spare entry is empty.
    o : Out(stream)  -- to the receiver. ``o.valid`` and ``o.payload`` are registers (``head``).
    """

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        head_valid, head = Signal(), Signal(self.shape)     # the flit presented on ``o``
        spare_valid, spare = Signal(), Signal(self.shape)   # the flit behind it, taken while ``o`` refused
        take = self.i.valid & self.i.ready
        advance = self.o.ready | ~head_valid  # the head leaves, or there is none: it takes the next flit

        m.d.comb += [
            self.i.ready.eq(~spare_valid),
            self.o.valid.eq(head_valid),
            self.o.payload.eq(head),
        ]
        with m.If(advance):
            m.d.sync += [head_valid.eq(spare_valid | take), spare_valid.eq(0)]
            with m.If(spare_valid):
                m.d.sync += head.eq(spare)
            with m.Elif(take):
                m.d.sync += head.eq(self.i.payload)
        with m.Elif(take):  # the head stays: the new flit waits behind it
            m.d.sync += [spare_valid.eq(1), spare.eq(self.i.payload)]
        m.d.sync += Assert(head_valid | ~spare_valid, "spill register: a flit behind an empty head")
        return m
