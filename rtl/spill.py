"""A spill register: the cut between a packet input buffer and its relay (pipeline 2).

Seed 004, Section 4 (the MultiWrite relay) releases an input flit only when every branch of
its copy took it, so the input buffer's read handshake is the relay's release decision. Without
a cut that decision runs, in the cycle it is made, into the buffer's read pointer and level
(measured at 8x8 on the ECP5: ``buf_E.fifo.r_rdy -> buf_E.fifo.inner_level``, 6 logic levels,
the critical path of the router that carries schedule and packets, docs/fpga.md). FlooNoC cuts
such paths with its ``spill_register`` (common_cells): two entries, and the ``ready`` toward the
sender depends on the register's own state only.

This is that register: entry A takes the sender's flit, entry B holds A's flit while the
receiver refuses it, and the receiver is shown B first, else A. It holds up to two flits;
``o.valid`` means it holds one, ``i.ready`` that it holds fewer than two (a flip-flop, ``room``),
and a flit leaves a cycle after it came at the earliest. The release only sets the three state
bits: A loads the sender's flit whenever it has room and B copies A whenever B is empty (an
entry's data matters only once its valid bit says so), so the wide data registers are enabled by
registers and the relay's release never fans out to them (a first version with a single output
register moved the critical path to that register's clock enable). Measured at 8x8, it removes the
path it was built for but raises no router's Fmax: the output multiplexer (B, else A) becomes the
start of the next critical paths (docs/fpga.md, "Packet path, pipeline 2").
"""

from __future__ import annotations

from amaranth.hdl import Assert, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


class SpillRegister(wiring.Component):
    """Two entries between a stream sender and a receiver, no combinational path between them.

    Parameters
    ----------
    shape : the payload's shape (a :mod:`amaranth.lib.data` layout: a packet flit).

    Ports
    -----
    i : In(stream)  -- from the sender. ``i.ready`` is a register (``room``).
    o : Out(stream)  -- to the receiver: the older of the flits held (B, else A: registers and a 2:1 multiplexer).
    """

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        a_valid, a = Signal(), Signal(self.shape)
        b_valid, b = Signal(), Signal(self.shape)
        room = Signal(init=1)  # = ~a_valid | ~b_valid, registered from their next values
        a_fill = self.i.valid & room
        a_drain = a_valid & ~b_valid  # A's flit leaves: to the receiver, or into B while it refuses
        b_fill = a_drain & ~self.o.ready
        a_next = a_fill | (a_valid & ~a_drain)
        b_next = b_fill | (b_valid & ~self.o.ready)

        m.d.comb += [
            self.i.ready.eq(room),
            self.o.valid.eq(a_valid | b_valid),
            self.o.payload.eq(Mux(b_valid, b, a)),
        ]
        m.d.sync += [a_valid.eq(a_next), b_valid.eq(b_next), room.eq(~a_next | ~b_next)]
        with m.If(room):  # A is empty or passes its flit on in this cycle
            m.d.sync += a.eq(self.i.payload)
        with m.If(~b_valid):
            m.d.sync += b.eq(a)
        m.d.sync += Assert(room == (~a_valid | ~b_valid), "spill register: room")
        return m
