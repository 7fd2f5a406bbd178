"""The schedule-driven router (S4NOC style: a timestep counter and a table).

Seed 000, Section III: every EquiMesh router is the mesh's 5-port router; on
an edge the boundary port carries the ring link in and out. The overflow
baseline's perimeter nodes get extra ports X0, X1, ... (6-port routers).
Ports with no link are tied off (outputs constant 0, inputs unread), so
synthesis removes them.

Datapath, per timestep of ``period`` cycles (``rtl/rom.py``: ``max(chunk_flits,
MIN_PERIOD)``), flit ``f`` of a step in its cycle ``f``; ``pipeline`` (a design
parameter) sets the depth. The registers of every stage:

* stage T (pipeline 1 and 2; the table entry, read ahead): the table memory's
  read port is addressed with ``nxt``, the step after the current one; its
  output is registered in ``tab_q`` every cycle and copied into ``entry`` at the
  step boundary (at ``start``, one fill cycle takes entry 0, which the host must
  have written at least two cycles before ``start``; an assertion checks it).
  Registers: the table port's own read register, ``tab_q`` (a block RAM's
  output register), ``nxt``, ``entry``, ``tab_we_q``. With pipeline 0 the table
  is read combinationally at ``step``;
* stage A: the counters (``run``, ``step``, ``flit``, ``last``, ``fill``) and
  the entry give every lane's send slot; the lanes' read ports are addressed
  ``rd_slot * chunk_flits + flit``. Registers: the lanes' read registers;
* stage R (pipeline 1 and 2): the lane read data is registered (``rd_q``, a
  block RAM's output register), so no path runs from a memory output through the
  crossbar; ``r_live``, ``r_flit``, ``r_ops`` carry the entry along. The
  read-modify-write port of ReduceScatter is addressed here;
* stage B: the crossbar connects lanes (``rd_q``, or with pipeline 0 the read
  ports themselves) to out-ports as ``b_ops`` says; the result is registered
  onto the links (``sched_valid``, ``sched_flit``: the link registers).
  ``b_live``, ``b_flit``, ``b_ops`` carry the entry. With pipeline 0 the
  read-modify-write port is addressed here; from pipeline 1 on its data is
  registered (``acc_q``);
* stage C: the flit is on the link; the receiver writes it into the lane and
  slot its own entry (``c_ops``) names, for ReduceScatter adding the lane's old
  value and all in-ports in the entry's mask, word by word with wrapping 32-bit
  adds (``c_live``, ``c_flit``, ``c_ops`` carry the entry; the lane's write
  port registers the write). ``done`` follows the last write through a chain of
  registers (``drain_*``, ``done``);
* stage W (pipeline 2 only): the lane's write (enable, address and the received
  or summed flit) is registered once more (``w_en_*``, ``w_addr_*``,
  ``w_data_*``) before the write port. With pipeline 2 the read addresses are
  registers too (``rd_addr_*``: counters loaded with a step's first flit from the
  entry read ahead, ``acc_addr_*`` from stage A's entry): a large lane's block
  RAMs, spread over the die, take every input straight from a register.

The crossbar has one input per lane and one output per network port; there
is no local input, the node's data is preloaded into its lanes. The host reads
any lane (``host_*``) through the lanes' send read ports (and ``rd_q``) while the
router is not running.

Packets (``packets=``, seed 004 Section 4; ``docs/relay.md``): the same router
also carries MultiWrite packets, over the same links. The packet path
(:class:`~equimesh.rtl.packet_router.PacketPath`) switches its flits on a
crossbar of its own, as the packet router does (the network inputs' heads and
``inject``, one-hot selects), so neither mode's flits pass a multiplexer of the
other's before their crossbar; the links take the schedule's link registers or
the packet path's, whichever is valid, and gain ``ready``. Packets flow only
while no schedule runs: ``hold`` stops new packets from ``inject``, and the
network starts the schedule once every router is ``idle`` (no packet held
anywhere, :class:`~equimesh.rtl.network.Network`). From the cycle after ``start`` to the one after ``done``
the packet path sees no link and takes no packet (``schedule``, a register, holds it; the
packet path's ``hold`` reads a copy of it, ``schedule_hold``, equal in every cycle and
asserted so); after ``done`` packets flow again.
From pipeline 1 on the packet path has its own registers (stages Q, A, G and L of
``rtl/relay.py``): its crossbar selects are registers (the outputs' owners) and its
flits leave through the packet path's link registers, which the links carry
whenever the schedule's link registers are idle.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Assert, Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .crossbar import Crossbar, select_layout
from .flit import add_flits, flit_layout, link_signature
from .lane import Lane
from .packet_router import PacketConfig, PacketPath
from .relay import forwarding_ports
from .rom import entry_layout
from .timing import DEFAULT_PIPELINE, period

__all__ = ["Router"]


class Router(wiring.Component):
    """One router and its node storage.

    The router's Verilog depends only on its design parameters: the schedule table and the lanes
    are memories the host loads (docs/architecture.md, "Schedule tables in hardware"; S4NOC's TDM tables).

    Parameters
    ----------
    ports : the router design's network ports (``N E S W`` and any ``X<i>``).
    lanes : the ports that carry links, in lane order (one lane each).
    slots, chunk_flits : lane size in chunks, chunk size in flits.
    depth : schedule-table entries (the longest schedule the router runs).
    reduce : build the ReduceScatter adders and read-modify-write ports.
    packets : also carry MultiWrite packets (:class:`~equimesh.rtl.packet_router.PacketConfig`).
    pipeline : 0, 1 or 2, the schedule path's pipeline depth (stages above; ``rtl/rom.py`` its timing).

    Ports
    -----
    start : In(1)  -- begin the schedule (taken while not running); ``steps`` is its length.
    done : Out(1)  -- high once the last flit is written; stays high until the next ``start``.
    i_<port>, o_<port> : the links of each port (``valid`` + ``flit``, and ``ready`` with packets).
    tab_we, tab_addr, tab_data : In -- write schedule-table entry ``tab_addr``
        (:func:`~equimesh.rtl.rom.entry_layout`).
    load_we, load_addr, load_data : In -- write flit ``load_addr`` of lane ``i`` from
        ``load_data[i]`` where bit ``i`` of ``load_we`` is set (the node's DMA port).
    host_addr : In, host_data : Out -- flit ``host_addr`` of every lane, valid ``Design.host_latency`` cycles
        later (from pipeline 1 on through the read register ``rd_q``).
    The host loads and reads only while the router is not running, and from pipeline 1 on ends its
    table writes two cycles before ``start``.
    with ``packets``: own, reach : In (the node's forwarding entries, ``reach`` in lane order),
        inject : In(stream), eject_<port> : Out(stream) (one per lane port), hold : In(1),
        idle : Out(1) -- as :class:`~equimesh.rtl.packet_router.PacketPath`.
    """

    def __init__(
        self,
        ports,
        lanes,
        slots: int,
        chunk_flits: int,
        depth: int,
        reduce: bool,
        flit_bits: int = 64,
        packets: PacketConfig | None = None,
        pipeline: int = DEFAULT_PIPELINE,
    ):
        self.ports, self.lanes = tuple(ports), tuple(lanes)
        self.slots, self.chunk_flits, self.depth, self.reduce = slots, chunk_flits, depth, reduce
        self.flit_bits, self.packets, self.pipeline = flit_bits, packets, pipeline
        n = len(self.lanes)
        self.link_bits = flit_bits if packets is None else max(flit_bits, packets.flit_bits)
        link = link_signature(self.link_bits, ready=packets is not None)
        flit = flit_layout(flit_bits)
        members = {"start": In(1), "steps": In(range(1, depth + 1)), "done": Out(1)}
        for p in self.ports:
            members[f"i_{p}"] = In(link)
            members[f"o_{p}"] = Out(link)
        members.update(
            {
                "tab_we": In(1),
                "tab_addr": In(range(depth)),
                "tab_data": In(entry_layout(n, slots)),
                "load_we": In(n),
                "load_addr": In(range(slots * chunk_flits)),
                "load_data": In(data.ArrayLayout(flit, n)),
                "host_addr": In(range(slots * chunk_flits)),
                "host_data": Out(data.ArrayLayout(flit, n)),
            }
        )
        if packets is not None:
            pkt = stream.Signature(packets.fmt.flit)
            members.update({**forwarding_ports(packets.fmt, n), "inject": In(pkt), "hold": In(1), "idle": Out(1)})
            members.update({f"eject_{p}": Out(pkt) for p in self.lanes})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        F, P, n = self.chunk_flits, period(self.chunk_flits, self.pipeline), len(self.lanes)
        s = SimpleNamespace(
            F=F,
            P=P,
            n=n,
            piped=int(self.pipeline > 0),  # stages T and R
            entry_lay=entry_layout(n, self.slots),
        )
        self._timestep(m, s)
        self._table(m, s)
        self._stage_a(m, s)
        self._stages_r_b(m, s)
        self._crossbar(m, s)
        self._stage_c(m, s)
        for i, out in enumerate(s.lane_out):
            m.d.comb += s.xbar.i[i].eq(out)
        m.d.comb += [s.xbar.sel[o].eq(s.sched_sel[o]) for o in range(n)]
        if self.packets is None:
            for o, port in enumerate(self.lanes):
                link = getattr(self, f"o_{port}")
                m.d.comb += [link.valid.eq(s.sched_valid[o]), link.flit.eq(s.sched_flit[o])]
            return m
        self._packets(m, s)
        return m

    def _timestep(self, m: Module, s: SimpleNamespace) -> None:
        """The step counter and ``done``; sets ``s.run, over, fill, step, flit, last, boundary, drained``."""
        P, piped = s.P, s.piped
        # Timestep counter: `flit` counts the cycles of a step, `step` the table address.
        # From pipeline 1 on, `start` first takes one fill cycle, which reads table entry 0.
        run, over, fill = Signal(name="run"), Signal(name="over"), Signal(name="fill")
        step, flit = Signal(range(self.depth), name="step"), Signal(range(P), name="flit")
        last = Signal(range(self.depth))
        boundary = Signal()
        m.d.comb += boundary.eq(run & (flit == P - 1))
        with m.If(run):
            with m.If(boundary):
                m.d.sync += flit.eq(0)
                with m.If(step == last):
                    m.d.sync += [run.eq(0), over.eq(1)]
                with m.Else():
                    m.d.sync += step.eq(step + 1)
            with m.Else():
                m.d.sync += flit.eq(flit + 1)
        if piped:
            with m.Elif(fill):
                m.d.sync += [fill.eq(0), run.eq(1), step.eq(0), flit.eq(0)]
        with m.Elif(self.start):
            m.d.sync += [over.eq(0), last.eq(self.steps - 1)]
            m.d.sync += [fill.eq(1)] if piped else [run.eq(1), step.eq(0), flit.eq(0)]
        # `done` follows `over` through the read-to-write latency.
        drained = over
        for k in range(1 + self.pipeline):
            nxt_drain = Signal(name=f"drain_{k}")
            m.d.sync += nxt_drain.eq(drained & ~self.start)
            drained = nxt_drain
        m.d.sync += self.done.eq(drained & ~self.start)
        s.run, s.over, s.fill, s.step, s.flit, s.last, s.boundary = run, over, fill, step, flit, last, boundary
        s.drained = drained

    def _table(self, m: Module, s: SimpleNamespace) -> None:
        """The schedule table; sets ``s.entry`` (the current step's entry) and ``s.tab_q``."""
        piped, entry_lay, fill, step, last, boundary = s.piped, s.entry_lay, s.fill, s.step, s.last, s.boundary
        tab_q = None
        # Schedule table: written by the host; read combinationally at the current step (pipeline 0)
        # or one step ahead into `entry` (stage T).
        m.submodules.table = table = Memory(shape=unsigned(entry_lay.size), depth=self.depth, init=[])
        tab_wr = table.write_port()
        m.d.comb += [tab_wr.en.eq(self.tab_we), tab_wr.addr.eq(self.tab_addr), tab_wr.data.eq(self.tab_data)]
        if piped:
            tab_rd = table.read_port()
            nxt = Signal(range(self.depth))  # 0 whenever no schedule runs
            tab_q = Signal(entry_lay.size, reset_less=True)  # the table RAM's output register
            entry = Signal(entry_lay)
            m.d.comb += tab_rd.addr.eq(nxt)
            m.d.sync += tab_q.eq(tab_rd.data)
            with m.If(fill | boundary):
                m.d.sync += entry.eq(tab_q)
            # Entry 0 reaches `tab_q` two edges after the host wrote it.
            tab_we_q = Signal()
            m.d.sync += [
                tab_we_q.eq(self.tab_we),
                Assert(~self.start | ~(self.tab_we | tab_we_q), "start within two cycles of a table write"),
            ]
            with m.If(fill):
                m.d.sync += nxt.eq(nxt + 1)
            with m.If(boundary):
                m.d.sync += nxt.eq(Mux(step == last, 0, nxt + 1))
        else:
            tab_rd = table.read_port(domain="comb")
            m.d.comb += tab_rd.addr.eq(step)
            entry = data.View(entry_lay, tab_rd.data)
        s.entry, s.tab_q = entry, tab_q

    def _stage_a(self, m: Module, s: SimpleNamespace) -> None:
        """Stage A: the lanes and their read addresses; sets ``s.lanes`` and ``s.a_live``."""
        F, piped, entry_lay, run, fill, flit, boundary, entry, tab_q = (
            s.F,
            s.piped,
            s.entry_lay,
            s.run,
            s.fill,
            s.flit,
            s.boundary,
            s.entry,
            s.tab_q,
        )
        # Stage A: address the lanes.
        a_live = run & (flit < F)
        lanes = [Lane(self.slots * F, self.flit_bits, self.reduce, transparent=not piped) for _ in self.lanes]
        if self.pipeline > 1:  # the read addresses are counters: a step's first flit from the entry read ahead
            turn = fill | boundary
            tab_entry = data.View(entry_lay, tab_q)
        for i, port in enumerate(self.lanes):
            m.submodules[f"lane_{port}"] = lane = lanes[i]
            if self.pipeline > 1:
                rd_addr = Signal(range(self.slots * F), name=f"rd_addr_{port}")
                with m.If(turn):
                    m.d.sync += rd_addr.eq(tab_entry.lane[i].rd_slot * F)
                with m.Elif(run):  # beyond the chunk's last flit (F < MIN_PERIOD) it reads nothing
                    m.d.sync += rd_addr.eq(rd_addr + 1)
                with m.Else():
                    m.d.sync += rd_addr.eq(self.host_addr)
                m.d.sync += Assert(
                    ~a_live | (rd_addr == entry.lane[i].rd_slot * F + flit), f"lane {port}: read address"
                )
                m.d.comb += lane.rd_addr.eq(rd_addr)
            else:
                m.d.comb += lane.rd_addr.eq(Mux(run, entry.lane[i].rd_slot * F + flit, self.host_addr))
        s.lanes, s.a_live = lanes, a_live

    def _stages_r_b(self, m: Module, s: SimpleNamespace) -> None:
        """Stages R and B carry the entry along with its flits; the lanes' read data reaches stage B."""
        F, P, piped, entry_lay, flit, entry, lanes, a_live = (
            s.F,
            s.P,
            s.piped,
            s.entry_lay,
            s.flit,
            s.entry,
            s.lanes,
            s.a_live,
        )
        acc_live = acc_ops = None
        # Stage R (pipeline 1 and 2), then stage B: the entry follows its flits.
        live, fl, ops = a_live, flit, entry
        staged = {}
        for stage in ("r", "b")[1 - piped :]:
            s_live, s_flit, s_ops = (
                Signal(name=f"{stage}_live"),
                Signal(range(P), name=f"{stage}_flit"),
                Signal(entry_lay, name=f"{stage}_ops"),
            )
            staged[stage] = s_live, s_ops
            m.d.sync += [s_live.eq(live), s_flit.eq(fl), s_ops.eq(ops)]
            if stage == ("r", "b")[1 - piped] and self.reduce:  # the first stage after A
                acc_live, acc_ops = s_live, s_ops
                for i, lane in enumerate(lanes):
                    if self.pipeline > 1:  # registered a cycle ahead, from stage A's entry and flit
                        acc_addr = Signal(range(self.slots * F), name=f"acc_addr_{self.lanes[i]}")
                        m.d.sync += acc_addr.eq(ops.lane[i].wr_slot * F + fl)
                        m.d.comb += lane.acc_addr.eq(acc_addr)
                    else:
                        m.d.comb += lane.acc_addr.eq(s_ops.lane[i].wr_slot * F + s_flit)
            live, fl, ops = s_live, s_flit, s_ops
        b_live, b_flit, b_ops = live, fl, ops
        if piped:  # reset-less, like a block RAM's output register
            lane_out = [Signal(flit_layout(self.flit_bits), name=f"rd_q_{p}", reset_less=True) for p in self.lanes]
            m.d.sync += [q.eq(lane.rd_data) for q, lane in zip(lane_out, lanes)]
        else:
            lane_out = [lane.rd_data for lane in lanes]
        m.d.comb += [self.host_data[i].eq(out) for i, out in enumerate(lane_out)]
        s.staged, s.acc_live, s.acc_ops, s.lane_out = staged, acc_live, acc_ops, lane_out
        s.b_live, s.b_flit, s.b_ops = b_live, b_flit, b_ops

    def _crossbar(self, m: Module, s: SimpleNamespace) -> None:
        """Stage B: the crossbar onto the link registers; sets ``s.xbar`` and the schedule's selects and flits."""
        n, piped, lanes, b_live, b_ops = s.n, s.piped, s.lanes, s.b_live, s.b_ops
        acc_data = None
        m.submodules.xbar = xbar = Crossbar(n, n, self.link_bits)
        sched_sel = [Signal(select_layout(n), name=f"sched_sel_{p}") for p in self.lanes]
        sched_valid = [Signal(name=f"sched_valid_{p}") for p in self.lanes]
        sched_flit = [Signal(flit_layout(self.link_bits), name=f"sched_flit_{p}") for p in self.lanes]
        for o in range(n):
            valid, lane = b_live & b_ops.out[o].valid, b_ops.out[o].lane
            m.d.comb += sched_sel[o].eq(Cat(valid, lane))
            m.d.sync += [sched_valid[o].eq(valid), sched_flit[o].eq(xbar.o[o])]
        if self.reduce and piped:
            acc_data = [Signal(flit_layout(self.flit_bits), name=f"acc_q_{p}", reset_less=True) for p in self.lanes]
            m.d.sync += [q.eq(lane.acc_data) for q, lane in zip(acc_data, lanes)]
        elif self.reduce:
            acc_data = [lane.acc_data for lane in lanes]
        s.xbar, s.acc_data = xbar, acc_data
        s.sched_sel, s.sched_valid, s.sched_flit = sched_sel, sched_valid, sched_flit

    def _stage_c(self, m: Module, s: SimpleNamespace) -> None:
        """Stage C: the flits on the links are written (and reduced) into the lanes."""
        F, P, n, piped, entry_lay, entry, lanes, a_live = (
            s.F,
            s.P,
            s.n,
            s.piped,
            s.entry_lay,
            s.entry,
            s.lanes,
            s.a_live,
        )
        b_live, b_flit, b_ops, acc_live, acc_ops, acc_data = (
            s.b_live,
            s.b_flit,
            s.b_ops,
            s.acc_live,
            s.acc_ops,
            s.acc_data,
        )
        # Stage C: the flits are on the links; write (and reduce) them into the lanes.
        c_live, c_flit = Signal(), Signal(range(P))
        c_ops = Signal(data.ArrayLayout(entry_lay["lane"].shape.elem_shape, n))
        m.d.sync += [c_live.eq(b_live), c_flit.eq(b_flit), c_ops.eq(b_ops.lane)]
        ins = [getattr(self, f"i_{port}") for port in self.lanes]
        fl = flit_layout(self.flit_bits)
        in_flits = [fl(link.flit.as_value()[: self.flit_bits]) for link in ins]
        arrived = Signal(n)
        m.d.comb += arrived.eq(Cat(link.valid for link in ins))
        for i, lane in enumerate(lanes):
            op = c_ops[i]
            en = c_live & op.wr_en
            m.d.sync += Assert(
                ~en | ((arrived & op.wr_mask) == op.wr_mask),
                f"lane {self.lanes[i]} writes from an in-port with no flit",
            )
            if self.reduce:
                terms = [fl(Mux(op.wr_acc, acc_data[i].as_value(), 0))]
                terms += [fl(Mux(op.wr_mask[j], in_flits[j].as_value(), 0)) for j in range(n)]
                received = add_flits(terms, self.flit_bits)
            else:
                # AllGather: lane i is written only from its own in-port.
                received = in_flits[i].as_value()
            # The host's load port has the lane's write port whenever stage C does not write.
            write = [
                en,
                en | (~c_live & self.load_we[i]),
                Mux(c_live, op.wr_slot * F + c_flit, self.load_addr),
                Mux(c_live, received, self.load_data[i].as_value()),
            ]
            if self.pipeline > 1:  # stage W: the write, registered once more beside the lane's RAMs
                w_regs = [
                    Signal(name=f"w_sched_{self.lanes[i]}"),
                    Signal(name=f"w_en_{self.lanes[i]}"),
                    Signal(range(self.slots * F), name=f"w_addr_{self.lanes[i]}"),
                    Signal(self.flit_bits, name=f"w_data_{self.lanes[i]}", reset_less=True),
                ]
                m.d.sync += [r.eq(v) for r, v in zip(w_regs, write)]
                write = w_regs
            sched_we, wr_en, wr_addr, wr_data = write
            m.d.comb += [lane.wr_en.eq(wr_en), lane.wr_addr.eq(wr_addr), lane.wr_data.eq(wr_data)]
            if piped:  # what lets the plain read ports map onto block RAM with no collision logic
                reads = [(a_live & entry.lane[i].rd_en, lane.rd_addr)]
                if self.reduce:
                    reads.append((acc_live & acc_ops.lane[i].wr_en & acc_ops.lane[i].wr_acc, lane.acc_addr))
                m.d.sync += Assert(
                    ~sched_we | ~Cat(used & (a == lane.wr_addr) for used, a in reads).any(),
                    f"lane {self.lanes[i]} reads a flit in the cycle it is written",
                )

    def _packets(self, m: Module, s: SimpleNamespace) -> None:
        """The packet path, with a crossbar of its own, on the same links whenever no schedule uses them."""
        run, fill, over, drained, sched_valid, sched_flit = (
            s.run,
            s.fill,
            s.over,
            s.drained,
            s.sched_valid,
            s.sched_flit,
        )
        # Packets share the links while no schedule runs (from ``start`` to ``done``), each mode switching
        # its flits onto its own output registers. ``schedule`` is ``run | fill | (over & ~done)``, kept
        # as a register of its own (it holds the packet path): set when ``start`` is taken (``_timestep``: not
        # while running or filling), cleared when ``done`` rises (its next value is ``drained & ~start``).
        schedule = Signal(name="schedule")
        # A copy of it for the packet path's ``hold`` alone, which ends in the allocator's choice: it steps from
        # itself (so synthesis does not merge the two) and sits by the packet path, not by the schedule's
        # counters and the links (8x8: ``schedule`` -> ``hold`` -> the choice was the critical path; 8x8 router
        # for both 143.4 -> 156.6 MHz with it, median of 3 seeds; 16x16 138.9 -> 134.9, within the seeds' spread).
        hold_schedule = Signal(name="schedule_hold")
        m.d.sync += [
            schedule.eq((self.start & ~run & ~fill) | (schedule & ~(drained & ~self.start))),
            hold_schedule.eq((self.start & ~run & ~fill) | (hold_schedule & ~(drained & ~self.start))),
            Assert(schedule == (run | fill | (over & ~self.done)), "the registered schedule flag"),
            Assert(hold_schedule == schedule, "the schedule flag's copy"),
        ]
        # A scheduled flit is on a link only while ``schedule`` is up (it leaves a neighbour's stage-B
        # register, a cycle or more after ``start``, and ``done`` waits for the last one; every router runs
        # the same steps from the same start), and a packet only while it is down (the network starts a
        # schedule with every router idle, and ``schedule`` holds the packet path): so ``schedule``, a
        # register, keeps scheduled flits out of the packet inputs, off the input buffers' timing paths.
        cfg = self.packets
        m.submodules.packets = pkt = PacketPath(cfg.fmt, self.lanes, cfg.depth, self.link_bits, self.pipeline)
        m.d.comb += [
            pkt.hold.eq(self.hold | hold_schedule),
            self.idle.eq(pkt.idle),
            pkt.own.eq(self.own),
            pkt.reach.eq(self.reach),
        ]
        wiring.connect(m, wiring.flipped(self.inject), pkt.inject)
        pkt.switch(m, "packet_xbar")  # the packets' crossbar, the packet router's
        fmt_bits = cfg.fmt.flit.size
        for o, port in enumerate(self.lanes):
            link, out = getattr(self, f"o_{port}"), getattr(pkt, f"o_{port}")
            m.d.comb += [
                link.valid.eq(sched_valid[o] | out.valid),
                link.flit.eq(Mux(sched_valid[o], sched_flit[o].as_value(), out.payload.as_value())),
                out.ready.eq(link.ready),
            ]
            m.d.sync += [
                Assert(~(sched_valid[o] & out.valid), f"port {port}: a packet on a link the schedule drives"),
                Assert(~sched_valid[o] | schedule, f"port {port}: a scheduled flit outside the schedule"),
            ]
        for port in self.lanes:
            link, inp = getattr(self, f"i_{port}"), getattr(pkt, f"i_{port}")
            m.d.comb += [
                inp.valid.eq(link.valid & ~schedule),
                inp.payload.eq(link.flit.as_value()[:fmt_bits]),
                link.ready.eq(inp.ready | schedule),  # scheduled flits never wait
            ]
            wiring.connect(m, getattr(pkt, f"eject_{port}"), wiring.flipped(getattr(self, f"eject_{port}")))
        m.d.sync += Assert(~run | pkt.idle, "a packet in the router while the schedule runs")
