"""Endpoints of the packet network for tests, benchmarks and the soak: generator, sink, checker.

* :class:`Generator` streams packets whose destination bitmaps come from a
  table the host loads before the run, as a traffic generator's DMA would
  (:mod:`equimesh.sim.traffic` fills it per pattern: random multicast with a
  fan-out, uniform unicast, AllGather by MultiWrite, AllGather by unicasts).
  Packet ``seq`` uses entry ``seq mod length``, so the Python scoreboard knows
  every bitmap sent from the ``sent`` count alone. The injection rate, the
  table's length and the packet limit are inputs too: one compiled model runs
  every pattern, seed and rate of a network.
* :class:`Sink` takes local copies, with random backpressure per lane (an input probability).
* :class:`Checker` counts the copies a node received and sums their keys, and
  counts header and payload errors: the compiled soak reads these counters
  instead of watching every flit.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .packet import SEQ_BITS, Opcode, PacketFormat
from .relay import mask_word

__all__ = ["COUNTER_BITS", "Checker", "Generator", "RATE_BITS", "Sink", "endpoint_seeds", "payload_word", "probability"]

COUNTER_BITS = 32
RATE_BITS = 16


def _seeded(state: Signal, seed: Value) -> Value:
    """A random source's current state: ``seed`` while the register still holds its reset value 0. Both
    sources below never step from a non-zero state to 0, so a source whose register starts at 0 and takes
    ``seed`` on its first step runs exactly as one whose register starts at ``seed``; the seed is then an
    input, and nodes that differ only in their seeds are one module (``rtl/packet_tile.py``)."""
    return Mux(state == 0, seed, state)


def _lfsr_step(m: Module, lfsr: Signal, seed: Value, step: Value) -> Value:
    """16-bit Galois LFSR (taps 0xB400), one step in each cycle with ``step`` (the sinks' backpressure);
    returns the state."""
    x = _seeded(lfsr, seed)
    with m.If(step):
        m.d.sync += lfsr.eq(Mux(x[0], (x >> 1) ^ 0xB400, x >> 1))
    return x


def _xorshift(m: Module, reg: Signal, seed: Value) -> Value:
    """Marsaglia's xorshift32 (shifts 13, 17, 5), one step per cycle; returns the state's upper 16 bits, a
    fresh uniform sample every cycle. (A Galois LFSR's consecutive states are about halves of each other, so
    ``lfsr < rate`` hits in runs and a Bernoulli source built on it starts about half the packets asked for.)"""
    x = _seeded(reg, seed)
    a = x ^ (x << 13)[:32]
    b = a ^ (a >> 17)
    m.d.sync += reg.eq(b ^ (b << 5)[:32])
    return x[16:]


def _seed(*keys: int) -> int:
    x = 0x1D87
    for k in keys:
        x = (x * 0x9E37 + k * 0x79B9 + 0x5A5A) & 0xFFFF
    return x or 1


def endpoint_seeds(node: int, lanes: int) -> dict:
    """The seeds of node ``node``'s random sources: its :class:`Generator`'s ``seed`` and its
    :class:`Sink`'s (one per lane), distinct per node and lane.

    Parameters
    ----------
    node : int
        The node.
    lanes : int
        Its sink's lanes.

    Returns
    -------
    dict
        ``gen`` (int, 32 bits) and ``sink`` (list of ``lanes`` 16-bit ints), all non-zero.
    """
    return {"gen": _seed(node, 1) << 16 | _seed(node, 2), "sink": [_seed(node, k, 7) for k in range(lanes)]}


def payload_word(fmt: PacketFormat, src, seq) -> tuple[Signal, Value]:
    """Hardware twin of :meth:`PacketFormat.payload_word`: index (8 bits), src, seq, repeated to the flit
    width.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    src : int or Value
        The source node (a constant or a signal).
    seq : Value
        The packet's sequence number.

    Returns
    -------
    tuple[Signal, Value]
        The 8-bit index signal the caller drives, and the word (``fmt.width`` bits).
    """
    idx8 = Signal(8)
    unit = Cat(idx8, Const(src, fmt.src_bits) if isinstance(src, int) else src, seq)
    reps = -(-fmt.width // len(unit))
    return idx8, Cat(*([unit] * reps))[: fmt.width]


class Generator(wiring.Component):
    """Traffic source of one node, driven by its bitmap table: a Bernoulli injection process and a
    source queue, as BookSim's injection (Dally and Towles, Section 23.1: the offered load is what the
    sources create, whatever the network accepts).

    Each cycle a packet is created with probability ``rate / 2**16`` (a fresh xorshift32 sample per
    cycle, independent of the network) while ``stop`` is low, until ``limit`` packets were created.
    Created packets wait in the source queue, a count (a packet's contents follow from its ``seq``),
    and are sent one after the other, header first. A ``backlog`` bounds the queue: no packet is
    created while that many wait (the soak's saturation, which would otherwise queue without end). Packet ``seq`` uses table entry ``seq mod length``,
    so the Python scoreboard knows every bitmap sent from the ``sent`` count alone. The header's
    ``stamp`` is the cycle the router takes it (its injection): latency is the network's, the source
    queue's wait excluded (BookSim's network latency).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    depth : int
        Entries of the bitmap table (its capacity; ``length`` of them are used).

    Ports
    -----
    o : Out(stream)       -- to the router's ``inject``.
    node : In(src_bits)   -- the node it injects at (the header's ``src``).
    seed : In(32)         -- its random stream's seed (non-zero, :func:`endpoint_seeds`).
    stop : In(1)          -- no packet is created while high (queued packets are still sent).
    backlog : In(32)      -- no packet is created while this many wait unsent (0: no bound).
    rate : In(17)         -- a packet is created in a cycle with probability ``rate / 2**16`` (2**16: every cycle).
    length : In(range(depth + 1)) -- packet ``seq`` goes to table entry ``seq mod length``.
    we, addr, data : In   -- the host's table write port.
    limit : In(32)        -- packets to create (2**32 - 1: until ``stop``), kept with every table write.
    now : In(32)          -- the cycle count; a header carries it (``stamp``) for the latency.
    created : Out(32)     -- packets created (the offered load).
    sent : Out(32)        -- packets whose header has been taken (the next ``seq``).
    """

    def __init__(self, fmt: PacketFormat, depth: int):
        self.fmt, self.depth = fmt, depth
        super().__init__(
            {
                "o": Out(stream.Signature(fmt.flit)),
                "node": In(fmt.src_bits),
                "seed": In(32),
                "stop": In(1),
                "backlog": In(COUNTER_BITS),
                "rate": In(RATE_BITS + 1),
                "length": In(range(depth + 1)),
                "limit": In(COUNTER_BITS),
                "we": In(1),
                "addr": In(range(depth)),
                "data": In(fmt.nodes),
                "now": In(COUNTER_BITS),
                "created": Out(COUNTER_BITS),
                "sent": Out(COUNTER_BITS),
            }
        )

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        m.submodules.table = table = Memory(shape=fmt.nodes, depth=self.depth, init=[])
        wr = table.write_port()
        m.d.comb += [wr.en.eq(self.we), wr.addr.eq(self.addr), wr.data.eq(self.data)]
        rd = table.read_port(domain="comb")
        limit = Signal(COUNTER_BITS)
        with m.If(self.we):
            m.d.sync += limit.eq(self.limit)

        rng = Signal(32)
        room = (self.backlog == 0) | (self.created - self.sent < self.backlog)
        create = (_xorshift(m, rng, self.seed) < self.rate) & ~self.stop & (self.created < limit) & room
        with m.If(create):
            m.d.sync += self.created.eq(self.created + 1)

        B, last = fmt.bitmap_flits, fmt.packet_flits - 1
        seq = Signal(SEQ_BITS)
        idx = Signal(range(fmt.packet_flits))  # the flit's position: 0 header, 1..B bitmap words, then payload
        bitmap = rd.data
        idx8, word = payload_word(fmt, self.node, seq)
        opcode = Mux((bitmap & (bitmap - 1)) != 0, Opcode.MULTIWRITE, Opcode.WRITE)
        header = Cat(opcode, self.node, seq, self.now[: fmt.stamp_bits])  # fmt.header's order
        bits = mask_word(fmt, bitmap, idx - 1)  # a choice among the words (no shift of the whole bitmap)
        # One expression for the whole flit: Icarus never evaluates a constant-driven `always @*`.
        m.d.comb += [
            idx8.eq(idx - B),
            self.o.valid.eq((idx != 0) | (self.created != self.sent)),  # a packet under way, or one queued
            self.o.payload.eq(Cat(idx == 0, idx == last, Mux(idx == 0, header, Mux(idx <= B, bits, word)))),
        ]
        take = self.o.valid & self.o.ready
        with m.If(take):
            m.d.sync += idx.eq(Mux(self.o.payload.last, 0, idx + 1))
            with m.If(idx == 0):
                m.d.sync += self.sent.eq(self.sent + 1)
            with m.If(self.o.payload.last):
                m.d.sync += [seq.eq(seq + 1), rd.addr.eq(Mux(rd.addr + 1 >= self.length, 0, rd.addr + 1))]
        return m


class Sink(wiring.Component):
    """Takes every local copy of one node; each lane refuses a flit with probability ``stall / 2**16``:
    an LFSR per lane, stepped in each cycle in which the lane offers a flit (one draw per offer, so a
    lane with nothing to offer changes no register: the tiled model's resting routers, whose clock the
    sinks share, ``rtl/packet_tile.py``).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    lanes : int
        Its local lanes (one per router port that delivers locally).

    Ports
    -----
    i : In(stream).array(lanes)
    stall : In(17)
    seed : In(16).array(lanes)  -- each lane's LFSR seed (non-zero, :func:`endpoint_seeds`).
    """

    def __init__(self, fmt: PacketFormat, lanes: int):
        self.lanes = lanes
        super().__init__(
            {
                "i": In(stream.Signature(fmt.flit)).array(lanes),
                "stall": In(RATE_BITS + 1),
                "seed": In(RATE_BITS).array(lanes),
            }
        )

    def elaborate(self, platform):
        m = Module()
        for k in range(self.lanes):
            lfsr = Signal(RATE_BITS, name=f"lfsr_{k}")
            m.d.comb += self.i[k].ready.eq(_lfsr_step(m, lfsr, self.seed[k], self.i[k].valid) >= self.stall)
        return m


def probability(p: float) -> int:
    """A probability as the generators' ``rate`` and the sinks' ``stall`` inputs take it (/ 2**16).

    Parameters
    ----------
    p : float
        The probability, in [0, 1].

    Returns
    -------
    int
        ``p * 2**16``, truncated.
    """
    return int(p * (1 << RATE_BITS))


class Checker(wiring.Component):
    """Watches one node's local lanes and sums what arrived (for the compiled soak).

    Each copy's key is ``src << 24 | seq`` (mod 2**32). The checker keeps the
    number of copies and the sums of ``key`` and ``key**2`` (mod 2**32); the
    Python side computes the same three numbers from the generators' tables for
    exactly the copies addressed to this node (:func:`~equimesh.sim.traffic.soak_verdict`).
    Equal counts and sums mean the node got every copy once: a duplicate or a
    stray copy raises the count, a loss lowers it, and a duplicate plus a loss
    changes the sums. Header and payload words are checked flit by flit.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    lanes : int
        Its local lanes.

    Ports
    -----
    i : In(monitor).array(lanes)  -- valid, ready, payload of each lane (all inputs).
    own : In(nodes)  -- the node's bit: the bitmap a copy for it must carry.
    count, key_sum, key_sq_sum : Out(32)
    header_errors, payload_errors : Out(32)
    done : Out(lanes)  -- lane ``k`` takes the last flit of a copy in this cycle;
    stamp : Out(32).array(lanes)  -- that copy's header ``stamp`` (its injection cycle; the latency is the
        cycle count now minus it, mod ``2**stamp_bits``).
    """

    def __init__(self, fmt: PacketFormat, lanes: int):
        self.fmt, self.lanes = fmt, lanes
        mon = wiring.Signature({"valid": Out(1), "ready": Out(1), "payload": Out(fmt.flit)})
        super().__init__(
            {
                "i": In(mon).array(lanes),
                "own": In(fmt.nodes),
                "count": Out(COUNTER_BITS),
                "key_sum": Out(COUNTER_BITS),
                "key_sq_sum": Out(COUNTER_BITS),
                "header_errors": Out(COUNTER_BITS),
                "payload_errors": Out(COUNTER_BITS),
                "done": Out(lanes),
                "stamp": Out(COUNTER_BITS).array(lanes),
            }
        )

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        B = fmt.bitmap_flits
        heads, keys, squares, bad_hdr, bad_payload = [], [], [], [], []
        for k in range(self.lanes):
            lane = self.i[k]
            take = lane.valid & lane.ready
            flit = lane.payload
            hdr = flit.body.header
            src = Signal(fmt.src_bits, name=f"src_{k}")
            seq = Signal(SEQ_BITS, name=f"seq_{k}")
            idx = Signal(range(fmt.packet_flits), name=f"idx_{k}")  # the position of the next flit
            stamp = Signal(fmt.stamp_bits, name=f"stamp_{k}")
            idx8, word = payload_word(fmt, src, seq)
            key = Signal(COUNTER_BITS, name=f"key_{k}")
            head = Signal(name=f"head_{k}")
            m.d.comb += [
                idx8.eq(idx - B),
                head.eq(take & flit.first),
                key.eq(Mux(head, (hdr.src << SEQ_BITS) | hdr.seq, 0)),
            ]
            m.d.comb += [self.done[k].eq(take & ~flit.first & flit.last), self.stamp[k].eq(stamp)]
            with m.If(take):
                with m.If(flit.first):
                    m.d.sync += [src.eq(hdr.src), seq.eq(hdr.seq), idx.eq(1), stamp.eq(hdr.stamp)]
                with m.Else():
                    m.d.sync += idx.eq(idx + 1)
            heads.append(head)
            keys.append(key)
            squares.append((key * key)[:COUNTER_BITS])
            in_bitmap = take & ~flit.first & (idx <= B)
            bad_hdr.append(
                (head & ((hdr.opcode != Opcode.WRITE) | flit.last))
                | (in_bitmap & ((flit.body.payload != mask_word(fmt, self.own, idx - 1)) | flit.last))
            )
            bad_payload.append(
                take
                & ~flit.first
                & (idx > B)
                & ((flit.body.payload != word) | (flit.last != (idx == fmt.packet_flits - 1)))
            )
        m.d.sync += [
            self.count.eq(self.count + sum(heads)),
            self.key_sum.eq(self.key_sum + sum(keys)),
            self.key_sq_sum.eq(self.key_sq_sum + sum(squares)),
            self.header_errors.eq(self.header_errors + sum(bad_hdr)),
            self.payload_errors.eq(self.payload_errors + sum(bad_payload)),
        ]
        return m
