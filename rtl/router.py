"""The schedule-driven router (S4NOC style: a timestep counter and a table).

Seed 000, Section III: every EquiMesh router is the mesh's 5-port router; on
an edge the boundary port carries the ring link in and out. The overflow
baseline's perimeter nodes get extra ports X0, X1, ... (6-port routers).
Ports with no link are tied off (outputs constant 0, inputs unread), so
synthesis removes them.

Datapath, per timestep of ``max(chunk_flits, 2)`` cycles (README "Router"):

* stage A: the ROM entry of the current step (combinational ROM read) gives
  every lane's send slot; the lanes' read ports are addressed
  ``slot * chunk_flits + flit``;
* stage B: the crossbar connects lanes to out-ports as the entry says; the
  result is registered onto the links;
* stage C: the flit is on the link; the receiver writes it into the lane and
  slot its own entry names, for ReduceScatter adding the lane's old value
  (read at stage B through the read-modify-write port) and all in-ports in
  the entry's mask, word by word with wrapping 32-bit adds.

The crossbar has one input per lane and one output per network port plus
``L``: the local output reads any lane for the host (``host_*``) while the
router is not running; there is no local input, the node's data is preloaded
into its lanes.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .crossbar import Crossbar
from .flit import add_flits, flit_layout, link_signature
from .lane import Lane
from .rom import MIN_PERIOD, entry_layout


class Router(wiring.Component):
    """One router and its node storage.

    Parameters
    ----------
    ports : the router design's network ports (``N E S W`` and any ``X<i>``).
    lanes : the ports that carry links, in lane order (one lane each).
    slots, chunk_flits : lane size in chunks, chunk size in flits.
    rom : the schedule table, one integer per timestep (:func:`~equimesh.rtl.rom.entry_layout`).
    reduce : build the ReduceScatter adders and read-modify-write ports.
    lane_init : per lane, its initial flits (integers).

    Ports
    -----
    start : In(1)  -- begin the schedule (sampled while idle).
    done : Out(1)  -- high once the last flit is written; stays high.
    i_<port>, o_<port> : the links of each port (``valid`` + ``flit``).
    host_lane, host_addr : In -- a flit to read through the crossbar's ``L`` output
        while the router is not running; ``host_data`` is valid the next cycle.
    """

    def __init__(self, ports, lanes, slots: int, chunk_flits: int, rom: list[int], reduce: bool,
                 flit_bits: int = 64, lane_init=None):
        self.ports, self.lanes = tuple(ports), tuple(lanes)
        self.slots, self.chunk_flits, self.rom, self.reduce = slots, chunk_flits, list(rom), reduce
        self.flit_bits = flit_bits
        # Built here so that a testbench can reach the lane memories.
        self.lane_units = [Lane(slots * chunk_flits, flit_bits, reduce, init)
                           for init in (lane_init or [[] for _ in self.lanes])]
        link = link_signature(flit_bits)
        members = {"start": In(1), "done": Out(1)}
        for p in self.ports:
            members[f"i_{p}"] = In(link)
            members[f"o_{p}"] = Out(link)
        members.update({"host_lane": In(range(len(self.lanes))),
                        "host_addr": In(range(slots * chunk_flits)),
                        "host_data": Out(flit_layout(flit_bits))})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        F, P, S, n = self.chunk_flits, max(self.chunk_flits, MIN_PERIOD), len(self.rom), len(self.lanes)
        entry_lay = entry_layout(n, self.slots)

        # Timestep counter: `flit` counts the cycles of a step, `step` the ROM address.
        run, over = Signal(), Signal()
        step, flit = Signal(range(S)), Signal(range(P))
        with m.If(run):
            with m.If(flit == P - 1):
                m.d.sync += flit.eq(0)
                with m.If(step == S - 1):
                    m.d.sync += [run.eq(0), over.eq(1)]
                with m.Else():
                    m.d.sync += step.eq(step + 1)
            with m.Else():
                m.d.sync += flit.eq(flit + 1)
        with m.Elif(self.start & ~over):
            m.d.sync += run.eq(1)
        drained = Signal()  # the last write happens two cycles after the last read
        m.d.sync += [drained.eq(over), self.done.eq(drained)]

        # Schedule table.
        m.submodules.rom = rom = Memory(shape=unsigned(entry_lay.size), depth=S, init=self.rom)
        rom_rd = rom.read_port(domain="comb")
        m.d.comb += rom_rd.addr.eq(step)
        entry = data.View(entry_lay, rom_rd.data)

        # Stage A: address the lanes.
        a_live = run & (flit < F)
        lanes = self.lane_units
        for i, port in enumerate(self.lanes):
            m.submodules[f"lane_{port}"] = lane = lanes[i]
            m.d.comb += lane.rd_addr.eq(Mux(run, entry.lane[i].rd_slot * F + flit, self.host_addr))

        # Stage B: crossbar onto the link registers.
        b_live, b_flit = Signal(), Signal(range(P))
        b_ops = Signal(entry_lay)
        b_host_lane = Signal.like(self.host_lane)
        m.d.sync += [b_live.eq(a_live), b_flit.eq(flit), b_ops.eq(entry), b_host_lane.eq(self.host_lane)]
        m.submodules.xbar = xbar = Crossbar(n, n + 1, self.flit_bits)
        for i, lane in enumerate(lanes):
            m.d.comb += xbar.i[i].eq(lane.rd_data)
        for o, port in enumerate(self.lanes):
            link = getattr(self, f"o_{port}")
            sel_valid = b_live & b_ops.out[o].valid
            m.d.comb += [xbar.sel[o].valid.eq(sel_valid), xbar.sel[o].input.eq(b_ops.out[o].lane)]
            m.d.sync += [link.valid.eq(sel_valid), link.flit.eq(xbar.o[o])]
        m.d.comb += [xbar.sel[n].valid.eq(1), xbar.sel[n].input.eq(b_host_lane),
                     self.host_data.eq(xbar.o[n])]
        if self.reduce:
            for i, lane in enumerate(lanes):
                m.d.comb += lane.acc_addr.eq(b_ops.lane[i].wr_slot * F + b_flit)

        # Stage C: the flits are on the links; write (and reduce) them into the lanes.
        c_live, c_flit = Signal(), Signal(range(P))
        c_ops = Signal(data.ArrayLayout(entry_lay["lane"].shape.elem_shape, n))
        m.d.sync += [c_live.eq(b_live), c_flit.eq(b_flit), c_ops.eq(b_ops.lane)]
        ins = [getattr(self, f"i_{port}") for port in self.lanes]
        arrived = Signal(n)
        m.d.comb += arrived.eq(Cat(link.valid for link in ins))
        for i, lane in enumerate(lanes):
            op = c_ops[i]
            en = c_live & op.wr_en
            m.d.sync += Assert(~en | ((arrived & op.wr_mask) == op.wr_mask),
                               f"lane {self.lanes[i]} writes from an in-port with no flit")
            m.d.comb += [lane.wr_en.eq(en), lane.wr_addr.eq(op.wr_slot * F + c_flit)]
            if self.reduce:
                fl = flit_layout(self.flit_bits)
                terms = [fl(Mux(op.wr_acc, lane.acc_data.as_value(), 0))]
                terms += [fl(Mux(op.wr_mask[j], ins[j].flit.as_value(), 0)) for j in range(n)]
                m.d.comb += lane.wr_data.eq(add_flits(terms, self.flit_bits))
            else:
                # AllGather: lane i is written only from its own in-port.
                m.d.comb += lane.wr_data.eq(ins[i].flit)
        return m
