"""Endpoints of the packet network for tests, benchmarks and the soak: generator, sink, checker.

* :class:`Generator` streams packets whose destination bitmaps come from a ROM
  that :mod:`equimesh.sim.traffic` fills per pattern (random multicast with a
  fan-out, uniform unicast, AllGather by MultiWrite, AllGather by unicasts).
  Packet ``seq`` uses ROM entry ``seq mod depth``, so the Python scoreboard
  knows every bitmap sent from the ``sent`` count alone.
* :class:`Sink` takes local copies, with optional random backpressure per lane.
* :class:`Checker` counts, per source, the copies a node received, their
  sequence-number sum, and order, header and payload errors: the compiled soak
  reads these counters instead of watching every flit.
"""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .packet import SEQ_BITS, Opcode, PacketFormat

COUNTER_BITS = 32
RATE_BITS = 16


def _lfsr_step(m: Module, lfsr: Signal) -> None:
    """16-bit Galois LFSR (taps 0xB400), one step per cycle."""
    m.d.sync += lfsr.eq(Mux(lfsr[0], (lfsr >> 1) ^ 0xB400, lfsr >> 1))


def _seed(*keys: int) -> int:
    x = 0x1D87
    for k in keys:
        x = (x * 0x9E37 + k * 0x79B9 + 0x5A5A) & 0xFFFF
    return x or 1


def payload_word(fmt: PacketFormat, src, seq, index) -> Cat:
    """Hardware twin of :meth:`PacketFormat.payload_word`: index (8 bits), src, seq, repeated."""
    idx8 = Signal(8)
    unit = Cat(idx8, Const(src, fmt.src_bits) if isinstance(src, int) else src, seq)
    reps = -(-fmt.width // len(unit))
    return idx8, Cat(*([unit] * reps))[:fmt.width]


class Generator(wiring.Component):
    """ROM-driven source of one node.

    Parameters
    ----------
    bitmaps : the destination bitmap of packet ``seq`` is ``bitmaps[seq % len(bitmaps)]``.
    count : packets to send, or None to loop over the ROM until ``stop``.
    rate : probability that an idle generator starts a packet in a cycle (1.0 = saturation).

    Ports
    -----
    o : Out(stream)  -- to the router's ``inject``.
    stop : In(1)     -- no new packet starts while high (a started packet completes).
    sent : Out(32)   -- packets whose header has been taken (the next ``seq``).
    """

    def __init__(self, fmt: PacketFormat, node: int, bitmaps: list[int], count: int | None, rate: float):
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"injection rate must be in (0, 1] (got {rate})")
        self.fmt, self.node, self.bitmaps, self.count, self.rate = fmt, node, list(bitmaps), count, rate
        super().__init__({"o": Out(stream.Signature(fmt.flit)), "stop": In(1), "sent": Out(COUNTER_BITS)})

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        depth = len(self.bitmaps)
        m.submodules.rom = rom = Memory(shape=fmt.nodes, depth=depth, init=self.bitmaps)
        rd = rom.read_port(domain="comb")

        seq = Signal(SEQ_BITS)
        idx = Signal(range(fmt.payload_flits + 1))  # 0 = header
        sending = Signal()
        lfsr = Signal(RATE_BITS, init=_seed(self.node, 1))
        _lfsr_step(m, lfsr)
        fire = 1 if self.rate >= 1.0 else lfsr < int(self.rate * (1 << RATE_BITS))
        more = 1 if self.count is None else self.sent < self.count
        start = fire & ~self.stop & more

        bitmap = rd.data
        idx8, word = payload_word(fmt, self.node, seq, idx)
        out = self.o.payload
        m.d.comb += [idx8.eq(idx), out.first.eq(idx == 0), out.last.eq(idx == fmt.payload_flits),
                     self.o.valid.eq(sending)]
        with m.If(idx == 0):
            m.d.comb += [
                out.body.header.opcode.eq(Mux((bitmap & (bitmap - 1)) != 0, Opcode.MULTIWRITE, Opcode.WRITE)),
                out.body.header.src.eq(self.node),
                out.body.header.seq.eq(seq),
                out.body.header.bitmap.eq(bitmap),
            ]
        with m.Else():
            m.d.comb += out.body.payload.eq(word)

        take = self.o.valid & self.o.ready
        with m.If(take & (idx == 0)):
            m.d.sync += self.sent.eq(self.sent + 1)
        with m.If(take):
            m.d.sync += idx.eq(Mux(out.last, 0, idx + 1))
            with m.If(out.last):
                m.d.sync += [seq.eq(seq + 1), rd.addr.eq(Mux(rd.addr == depth - 1, 0, rd.addr + 1)),
                             sending.eq(start)]
        with m.Elif(~sending):
            m.d.sync += sending.eq(start)
        return m


class Sink(wiring.Component):
    """Takes every local copy of one node; with ``stall`` > 0 each lane refuses a flit with that probability.

    Ports
    -----
    i : In(stream).array(lanes)
    """

    def __init__(self, fmt: PacketFormat, node: int, lanes: int, stall: float):
        if not 0.0 <= stall < 1.0:
            raise ValueError(f"sink stall probability must be in [0, 1) (got {stall})")
        self.node, self.lanes, self.stall = node, lanes, stall
        super().__init__({"i": In(stream.Signature(fmt.flit)).array(lanes)})

    def elaborate(self, platform):
        m = Module()
        for k in range(self.lanes):
            if self.stall == 0.0:
                m.d.comb += self.i[k].ready.eq(1)
                continue
            lfsr = Signal(RATE_BITS, init=_seed(self.node, k, 7))
            _lfsr_step(m, lfsr)
            m.d.comb += self.i[k].ready.eq(lfsr >= int(self.stall * (1 << RATE_BITS)))
        return m


class Checker(wiring.Component):
    """Watches one node's local lanes and counts per source what arrived (for the compiled soak).

    A source's copies to one node all follow the same route (destination-based
    tables, FIFO links), so they arrive in ``seq`` order: a repeated or older
    ``seq`` is a duplicate (``order_errors``). Losses show as ``count[s]`` below
    what source ``s`` sent to this node; the Python side compares ``count`` and
    ``seq_sum`` with the bitmaps in the generators' ROMs.

    Ports
    -----
    i : In(monitor).array(lanes)  -- valid, ready, payload of each lane (all inputs).
    count, seq_sum : Out(32).array(nodes)  -- per source: copies received, sum of their ``seq``.
    order_errors, header_errors, payload_errors : Out(32)
    """

    def __init__(self, fmt: PacketFormat, node: int, lanes: int):
        self.fmt, self.node, self.lanes = fmt, node, lanes
        mon = wiring.Signature({"valid": Out(1), "ready": Out(1), "payload": Out(fmt.flit)})
        super().__init__({
            "i": In(mon).array(lanes),
            "count": Out(COUNTER_BITS).array(fmt.nodes),
            "seq_sum": Out(COUNTER_BITS).array(fmt.nodes),
            "order_errors": Out(COUNTER_BITS),
            "header_errors": Out(COUNTER_BITS),
            "payload_errors": Out(COUNTER_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        count, seq_sum = Array(self.count), Array(self.seq_sum)
        last = Array(Signal(SEQ_BITS, name=f"last_{s}") for s in range(fmt.nodes))
        seen = Array(Signal(name=f"seen_{s}") for s in range(fmt.nodes))
        errs = {"order": 0, "header": 0, "payload": 0}
        for k in range(self.lanes):
            lane = self.i[k]
            take = lane.valid & lane.ready
            flit = lane.payload
            hdr = flit.body.header
            src = Signal(fmt.src_bits, name=f"src_{k}")
            seq = Signal(SEQ_BITS, name=f"seq_{k}")
            idx = Signal(range(fmt.payload_flits + 1), name=f"idx_{k}")
            idx8, word = payload_word(fmt, src, seq, idx)
            m.d.comb += idx8.eq(idx)
            bad_hdr = Signal(name=f"bad_hdr_{k}")
            bad_order = Signal(name=f"bad_order_{k}")
            bad_payload = Signal(name=f"bad_payload_{k}")
            m.d.comb += [
                bad_hdr.eq(take & flit.first & ((hdr.bitmap != (1 << self.node)) | (hdr.opcode != Opcode.WRITE)
                                               | (hdr.src >= fmt.nodes) | flit.last)),
                bad_order.eq(take & flit.first & seen[hdr.src] & (hdr.seq <= last[hdr.src])),
                bad_payload.eq(take & ~flit.first & ((flit.body.payload != word)
                                                     | (flit.last != (idx == fmt.payload_flits)))),
            ]
            with m.If(take):
                with m.If(flit.first):
                    m.d.sync += [src.eq(hdr.src), seq.eq(hdr.seq), idx.eq(1),
                                 count[hdr.src].eq(count[hdr.src] + 1),
                                 seq_sum[hdr.src].eq(seq_sum[hdr.src] + hdr.seq),
                                 last[hdr.src].eq(hdr.seq), seen[hdr.src].eq(1)]
                with m.Else():
                    m.d.sync += idx.eq(idx + 1)
            errs["order"] = errs["order"] + bad_order
            errs["header"] = errs["header"] + bad_hdr
            errs["payload"] = errs["payload"] + bad_payload
        m.d.sync += [
            self.order_errors.eq(self.order_errors + errs["order"]),
            self.header_errors.eq(self.header_errors + errs["header"]),
            self.payload_errors.eq(self.payload_errors + errs["payload"]),
        ]
        # Two lanes never bring the same source's headers in one cycle (one route per source).
        for a in range(self.lanes):
            for b in range(a + 1, self.lanes):
                la, lb = self.i[a], self.i[b]
                m.d.sync += Assert(~(la.valid & la.ready & la.payload.first & lb.valid & lb.ready & lb.payload.first
                                     & (la.payload.body.header.src == lb.payload.body.header.src)),
                                   f"checker {self.node}: one source on two lanes at once")
        return m
