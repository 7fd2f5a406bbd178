"""A lane: the chunk buffer behind one network port (README "Node storage").

``slots x chunk_flits`` flits in one :class:`~amaranth.lib.memory.Memory`
with one write port and one or two synchronous read ports:

* ``rd``: the send read port, streaming a slot out to the crossbar;
* ``acc``: the read-modify-write port of ReduceScatter, present only when the
  network reduces (the lane is then 2R1W).

With ``transparent`` (the unpipelined router, ``pipeline=0``) both read ports
are transparent for the write port, so a flit written in a cycle can be read in
that same cycle: this is what lets that router's step last only
``max(chunk_flits, 2)`` cycles. The pipelined router (``pipeline=1``) uses plain
read ports, which map onto block RAM without bypass logic behind their outputs
(``rtl/rom.py`` ``MIN_PERIOD``).
"""

from __future__ import annotations

from amaranth.hdl import Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .flit import flit_layout

__all__ = ["Lane"]


class Lane(wiring.Component):
    """Ports: ``rd_addr`` -> ``rd_data`` one cycle later; ``acc_addr`` -> ``acc_data`` likewise
    (only with ``reduce``); ``wr_en``, ``wr_addr``, ``wr_data`` write at the clock edge.

    The router multiplexes the host's load port onto the write port while it is not running.

    Parameters
    ----------
    depth : int
        Flits the lane holds: slots x chunk_flits.
    flit_bits : int
        The flit width, a positive multiple of 32.
    reduce : bool
        Add the ``acc`` read port of ReduceScatter (the lane is then 2R1W).
    transparent : bool
        Read ports transparent for the write port (the unpipelined router, ``pipeline=0``).

    Attributes
    ----------
    depth : int
    reduce : bool
    transparent : bool
        As given.
    mem : amaranth.lib.memory.Memory
        ``depth`` words of ``flit_bits`` bits, initially zero.
    """

    def __init__(self, depth: int, flit_bits: int, reduce: bool, transparent: bool = True):
        self.depth, self.reduce, self.transparent = depth, reduce, transparent
        flit = flit_layout(flit_bits)
        addr = range(depth)
        members = {
            "rd_addr": In(addr),
            "rd_data": Out(flit),
            "wr_en": In(1),
            "wr_addr": In(addr),
            "wr_data": In(flit),
        }
        if reduce:
            members.update({"acc_addr": In(addr), "acc_data": Out(flit)})
        super().__init__(members)
        self.mem = Memory(shape=unsigned(flit_bits), depth=depth, init=[])

    def elaborate(self, platform):
        """Build the hardware: the memory, its write port and its read port(s).

        Parameters
        ----------
        platform : object or None
            Unused.

        Returns
        -------
        amaranth.hdl.Module
        """
        m = Module()
        m.submodules.mem = mem = self.mem
        wr = mem.write_port()
        m.d.comb += [wr.en.eq(self.wr_en), wr.addr.eq(self.wr_addr), wr.data.eq(self.wr_data)]
        bypass = (wr,) if self.transparent else ()
        rd = mem.read_port(transparent_for=bypass)
        m.d.comb += [rd.addr.eq(self.rd_addr), self.rd_data.eq(rd.data)]
        if self.reduce:
            acc = mem.read_port(transparent_for=bypass)
            m.d.comb += [acc.addr.eq(self.acc_addr), self.acc_data.eq(acc.data)]
        return m
