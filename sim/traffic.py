"""Packet traffic on the MultiWrite network: patterns, the scoreboard, the Amaranth-simulator harness.

Patterns (the generators' table contents, seed 004 Sections 3 and 5.2):

* ``multicast``: every packet goes to ``fanout`` distinct random nodes (not the source);
* ``unicast`` (or ``uniform``): every packet goes to one uniformly random node;
* ``transpose``: node (r, c) sends to (c, r) on a square grid, ``bitcomp``: node i to ``nodes - 1 - i``
  (the bit complement when ``nodes`` is a power of two); a node that would address itself sends nothing;
* ``hotspot``: a packet goes to the centre node with probability :data:`HOTSPOT_SHARE`, else uniformly
  (the names of BookSim's synthetic patterns, Dally and Towles, Section 3.2);
* ``allgather-multiwrite``: each node sends its shard as ``packets`` MultiWrites to all other nodes;
* ``allgather-unicast``: the same shard as ``packets * (nodes - 1)`` unicasts, destinations staggered
  (node ``s`` sends to ``s+1, s+2, ...``) so no node is every source's first target.

The :class:`Scoreboard` is the independent reference: it sees the generators'
headers as they enter the network and every flit the sinks take, and checks
each arrival against the bitmaps sent: one intact copy per destination, none
elsewhere, payload words as the source built them.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass

import numpy as np

from ..rtl.packet import FLIT_BITS, SEQ_BITS, Opcode, PacketError, PacketFormat
from ..rtl.timing import DEFAULT_PIPELINE
from ..schedules.routing import ForwardingTable

__all__ = [
    "BLOCK",
    "DRAIN_LIMIT",
    "HOTSPOT_SHARE",
    "LIMIT_MAX",
    "MAX_CYCLES",
    "PACKET_MODELS",
    "PATTERNS",
    "ROM_DEPTH",
    "Run",
    "SOAK_BACKLOG",
    "Scoreboard",
    "TABLE_MAX",
    "Traffic",
    "WATCHDOG",
    "bit_matrix",
    "completion",
    "copy_latency",
    "counter_ports",
    "finished",
    "make_traffic",
    "packet_model",
    "packet_segments",
    "phase_figures",
    "read_counters",
    "read_traffic",
    "run_compiled",
    "run_verilog",
    "simulate",
    "soak_verdict",
    "target_flits",
    "traffic_load",
    "whole_top_kind",
]

PATTERNS = (
    "multicast",
    "unicast",
    "uniform",
    "transpose",
    "bitcomp",
    "hotspot",
    "allgather-multiwrite",
    "allgather-unicast",
)
HOTSPOT_SHARE = 0.2  # hotspot pattern: the share of packets addressed to the centre node
ROM_DEPTH = 256  # random patterns loop over this many bitmaps per node
WATCHDOG = 2000  # cycles without any flit taken, with packets in flight, that count as deadlock
BLOCK = 10_000  # counters-only soaks: cycles between progress checks while injecting
DRAIN_LIMIT = 1_000_000  # counters-only soaks: drain cycles after which the run counts as deadlocked
# The soak's source queues: at rate 1 an unbounded queue grows by every packet the network refuses (a 4x4
# queued 160,000 in 10,000 cycles, for a drain past DRAIN_LIMIT); four per source keep the network
# saturated and the drain short.
SOAK_BACKLOG = 4
TABLE_MAX = 4096  # generator table entries per node: an AllGather pattern's packets x copies
LIMIT_MAX = 2**32 - 2  # a generator's packet limit (the register's all-ones value means "until stopped")
MAX_CYCLES = 2**31  # injection cycles: every program deadline, drain included, fits 32 bits


@dataclass
class Traffic:
    """What the generators send: ``roms[v]`` bitmaps, ``counts[v]`` packets (None: until stopped);
    ``silent`` nodes send nothing (a permutation's fixed points).

    Attributes
    ----------
    pattern : str
        The pattern's name (:data:`PATTERNS`, or ``file``).
    roms : list of list of int
        Per node, its generator's bitmap table, all of one length.
    counts : list of int or None
        Per node, the packets it sends; None: until stopped (random traffic).
    rate : float
        Probability that a node creates a packet in a cycle.
    silent : tuple of int
        Nodes that send nothing.
    backlog : int
        The most packets a source queue holds (0: no bound; the soak's saturation, :data:`SOAK_BACKLOG`).
    """

    pattern: str
    roms: list[list[int]]
    counts: list[int] | None
    rate: float
    silent: tuple[int, ...] = ()
    backlog: int = 0

    def bitmap(self, src: int, seq: int) -> int:
        rom = self.roms[src]
        return rom[seq % len(rom)]

    @property
    def depth(self) -> int:
        """The generators' table depth for this traffic: :data:`ROM_DEPTH`, or the next power of two
        that holds a longer table; so every random pattern, seed and rate of a network, and every
        AllGather up to that many packets, runs on one compiled model."""
        return max(ROM_DEPTH, 1 << (len(self.roms[0]) - 1).bit_length())


def traffic_load(fmt: PacketFormat, traffic: Traffic, stall: float):
    """The host's load of the generators' tables, rate, table length and packet limits and the sinks'
    stall probability (:class:`~equimesh.rtl.packet_network.TrafficTop`), generators stopped: a
    :class:`~equimesh.sim.program.Drive` every backend runs before the traffic (the last frame writes
    nothing; the values it leaves stay).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.
    stall : float
        Probability that a sink's lane refuses a flit.

    Returns
    -------
    Drive
        The load, one frame per table entry and group, plus the last.
    """
    from ..rtl.packet_endpoints import probability
    from ..rtl.packet_network import TrafficLoad
    from .program import Drive, pack_bits, scalar

    n, length = fmt.nodes, len(traffic.roms[0])
    if any(len(rom) != length for rom in traffic.roms):
        raise PacketError("every generator's table must have the same length")
    load = TrafficLoad(n)
    g, groups, fb = load.group, load.groups, load.field_bits
    frames = groups * length + 1
    f = np.arange(frames)
    grp, addr = np.minimum(f // length, groups - 1), np.minimum(f % length, length - 1)
    live = f < groups * length
    bits = np.zeros((groups * g, length, fb), dtype=np.uint8)
    for v, rom in enumerate(traffic.roms):
        bits[v, :, :n] = bit_matrix(rom, n)
    data = bits.reshape(groups, g, length, fb)[grp, :, addr]  # [frames, g, fb]
    limits = np.full(groups * g, 2**32 - 1, dtype=np.uint32)  # until stopped
    if traffic.counts is not None:
        limits[:n] = traffic.counts
    limits[list(traffic.silent)] = 0
    const = np.ones(frames, dtype=np.uint64)
    return Drive(
        frames,
        {
            "stop": scalar(const, 1),
            "rate": scalar(const * probability(traffic.rate), 17),
            "stall": scalar(const * probability(stall), 17),
            "table_len": scalar(const * length, 32),
            "backlog": scalar(const * traffic.backlog, 32),
            "table_we": scalar(live, 1),
            "table_group": scalar(grp, 32),
            "table_addr": scalar(addr, 32),
            "table_data": pack_bits(data.reshape(frames, -1)),
            "table_limit": np.ascontiguousarray(limits.reshape(groups, g)[grp]),
        },
    )


def make_traffic(
    fmt: PacketFormat,
    pattern: str,
    *,
    fanout: int = 4,
    rate: float = 1.0,
    packets: int = 4,
    seed: int = 1,
    bitmap: int | None = None,
    src: int | None = None,
    grid: tuple[int, int] | None = None,
) -> Traffic:
    """Build the generators' tables. ``bitmap`` (with ``src``) replaces the random choice: only node ``src``
    sends, always to ``bitmap`` (the others' tables hold one entry and ``count`` stops them). ``grid``:
    (rows, cols) of the network, node ``r * cols + c`` at (r, c), for ``transpose`` and ``hotspot``.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    pattern : str
        One of :data:`PATTERNS` (module docstring; seed 004 Sections 3 and 5.2).
    fanout : int
        Destinations per ``multicast`` packet.
    rate : float
        Probability that a node creates a packet in a cycle, in (0, 1].
    packets : int
        AllGather: packets per shard; with ``bitmap``: packets node ``src`` sends.
    seed : int
        Seed of the random bitmaps.
    bitmap : int, optional
        The only destination set, of node ``src``'s packets.
    src : int, optional
        The only sending node, with ``bitmap``.
    grid : tuple[int, int], optional
        (rows, cols) of the network.

    Returns
    -------
    Traffic
        The generators' tables; bad input raises :class:`~equimesh.rtl.packet.PacketError` (one line).
    """
    n = fmt.nodes
    if pattern not in PATTERNS:
        raise PacketError(f"unknown pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")
    from ..rtl.packet_endpoints import RATE_BITS, probability

    if not 0.0 < rate <= 1.0:
        raise PacketError(f"--rate must be in (0, 1] packets per node per cycle (got {rate})")
    if probability(rate) == 0:
        raise PacketError(f"--rate {rate} is below the generators' resolution of 2**-{RATE_BITS}")
    if not 1 <= packets <= LIMIT_MAX:
        raise PacketError(f"--packets must be 1..{LIMIT_MAX} (got {packets})")
    if pattern.startswith("allgather") and bitmap is None:
        per = packets if pattern == "allgather-multiwrite" else packets * (n - 1)
        if per > TABLE_MAX:
            raise PacketError(
                f"--pattern {pattern} with --packets {packets} needs {per} table entries per "
                f"generator; they hold at most {TABLE_MAX} (use --packets "
                f"{TABLE_MAX * packets // per} or fewer)"
            )
    rng = random.Random(seed)
    others = [[d for d in range(n) if d != s] for s in range(n)]
    if bitmap is not None:
        if src is None or not 0 <= src < n:
            raise PacketError(f"source node {src} does not exist (nodes are 0..{n - 1})")
        fmt.check_bitmap(bitmap, src)
        if pattern in ("allgather-multiwrite", "allgather-unicast"):
            raise PacketError("an explicit bitmap goes with --pattern multicast or unicast")
        if pattern == "unicast" and bitmap & (bitmap - 1):
            raise PacketError(f"a unicast bitmap has one bit (got {bitmap:#x})")
        roms = [[bitmap] if v == src else [1 << others[v][0]] for v in range(n)]
        return Traffic(pattern, roms, [packets if v == src else 0 for v in range(n)], rate)
    if pattern == "multicast":
        if not 1 <= fanout <= n - 1:
            raise PacketError(f"--fanout must be 1..{n - 1} on {n} nodes (got {fanout})")
        roms = [[fmt.bitmap(rng.sample(others[s], fanout), s) for _ in range(ROM_DEPTH)] for s in range(n)]
        return Traffic(pattern, roms, None, rate)
    if pattern in ("unicast", "uniform"):
        roms = [[fmt.bitmap([rng.choice(others[s])], s) for _ in range(ROM_DEPTH)] for s in range(n)]
        return Traffic(pattern, roms, None, rate)
    if pattern in ("transpose", "bitcomp", "hotspot"):
        rows, cols = grid if grid is not None else (1, n)
        if pattern == "transpose" and rows != cols:
            raise PacketError(f"--pattern transpose needs a square network (got {rows}x{cols})")
        if pattern == "hotspot":
            hot = rows // 2 * cols + cols // 2
            roms = [
                [
                    fmt.bitmap([hot if s != hot and rng.random() < HOTSPOT_SHARE else rng.choice(others[s])], s)
                    for _ in range(ROM_DEPTH)
                ]
                for s in range(n)
            ]
            return Traffic(pattern, roms, None, rate)
        dest = [(s % cols) * cols + s // cols if pattern == "transpose" else n - 1 - s for s in range(n)]
        silent = tuple(s for s in range(n) if dest[s] == s)
        roms = [[1 << (others[s][0] if s in silent else dest[s])] for s in range(n)]
        return Traffic(pattern, roms, None, rate, silent)
    if pattern == "allgather-multiwrite":
        roms = [[fmt.bitmap(others[s], s)] * packets for s in range(n)]
        return Traffic(pattern, roms, [packets] * n, 1.0)
    roms = [[1 << ((s + k) % n) for _ in range(packets) for k in range(1, n)] for s in range(n)]
    return Traffic(pattern, roms, [packets * (n - 1)] * n, 1.0)


def read_traffic(fmt: PacketFormat, text: str, name: str, rate: float = 1.0) -> Traffic:
    """A traffic file (docs/packets.md, "Traffic files"): JSON ``{"packets": [{"src": S, "dests": [..]} or
    {"src": S, "bitmap": "0x.."}, ...]}``, each source's packets sent in file order at ``rate`` packets
    per cycle (seed 004's MultiWrite: a destination list or bitmap per write).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format: its node count bounds the sources and destinations.
    text : str
        The file's contents.
    name : str
        The file's name, for the error messages.
    rate : float
        Packets per node per cycle, in (0, 1].

    Returns
    -------
    Traffic
        Pattern ``file``: source ``s``'s table holds its packets' bitmaps in order, ``counts[s]`` of them.

    Raises
    ------
    PacketError
        One line naming the file and the packet: not JSON, a missing or unknown field, a source or
        destination outside the network, a packet to its own source or to nobody, or more packets per
        source than a generator's table holds (:data:`TABLE_MAX`).
    """
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise PacketError(f"traffic file {name}: not JSON ({e})") from None
    packets = doc.get("packets") if isinstance(doc, dict) else None
    if not isinstance(packets, list) or not packets:
        raise PacketError(f'traffic file {name}: expected {{"packets": [...]}} with at least one packet')
    roms: list[list[int]] = [[] for _ in range(fmt.nodes)]
    for i, pkt in enumerate(packets):
        where = f"traffic file {name}, packet {i}"
        if not isinstance(pkt, dict) or set(pkt) - {"src", "dests", "bitmap"} or "src" not in pkt:
            raise PacketError(
                f'{where}: expected {{"src": node, "dests": [nodes]}} or {{"src": node, "bitmap": "0x.."}}'
            )
        src = pkt["src"]
        if not isinstance(src, int) or isinstance(src, bool) or not 0 <= src < fmt.nodes:
            raise PacketError(f"{where}: source node {src!r} does not exist (nodes are 0..{fmt.nodes - 1})")
        if ("dests" in pkt) == ("bitmap" in pkt):
            raise PacketError(f"{where}: give dests or bitmap, one of them")
        try:
            if "dests" in pkt:
                dests = pkt["dests"]
                if not isinstance(dests, list) or not all(
                    isinstance(d, int) and not isinstance(d, bool) for d in dests
                ):
                    raise PacketError(f"dests must be a list of node numbers (got {dests!r})")
                bitmap = fmt.bitmap(dests, src)
            else:
                try:
                    bitmap = int(pkt["bitmap"], 0) if isinstance(pkt["bitmap"], str) else None
                except ValueError:
                    bitmap = None
                if bitmap is None or bitmap < 0:
                    raise PacketError(
                        f'bitmap must be a non-negative integer as a string, e.g. "0x8421" (got {pkt["bitmap"]!r})'
                    )
                fmt.check_bitmap(bitmap, src)
        except PacketError as e:
            raise PacketError(f"{where}: {e}") from None
        roms[src].append(bitmap)
    length = max(map(len, roms))
    if length > TABLE_MAX:
        busiest = max(range(fmt.nodes), key=lambda v: len(roms[v]))
        raise PacketError(
            f"traffic file {name}: node {busiest} sends {length} packets; a generator holds at most {TABLE_MAX}"
        )
    counts = [len(rom) for rom in roms]
    filler = [1 << (1 if v == 0 else 0) for v in range(fmt.nodes)]  # never sent: count stops the generator
    roms = [rom + [rom[-1] if rom else filler[v]] * (length - len(rom)) for v, rom in enumerate(roms)]
    return Traffic("file", roms, counts, rate)


class Scoreboard:
    """Checks every arrival against the packets the generators sent (see module docstring).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.
    lane_nodes : list of int
        Per eject lane, the node it delivers to.
    """

    def __init__(self, fmt: PacketFormat, traffic: Traffic, lane_nodes: list[int]):
        self.fmt, self.traffic, self.lane_nodes = fmt, traffic, lane_nodes
        self.sent: dict[tuple[int, int], tuple[int, int]] = {}  # (src, seq) -> (bitmap, header cycle)
        self.got: dict[tuple[int, int], int] = {}  # (src, seq) -> bitmap of intact arrivals
        self.lane_pkt: list[list | None] = [None] * len(lane_nodes)
        self.expected = self.delivered = self.duplicates = self.corrupted = self.misdelivered = 0
        self.latencies: list[int] = []
        self.errors: list[str] = []
        self.last_arrival = 0
        self.inj_pkt: list[list | None] = [None] * fmt.nodes  # per source: a header whose bitmap is coming
        self._src_mask, self._seq_shift = (1 << fmt.src_bits) - 1, 1 + fmt.src_bits
        self._word_mask = (1 << fmt.width) - 1

    def _header(self, body: int) -> tuple[int, int, int]:
        return body & 1, (body >> 1) & self._src_mask, (body >> self._seq_shift) & ((1 << SEQ_BITS) - 1)

    def _error(self, msg: str) -> None:
        if len(self.errors) < 10:
            self.errors.append(msg)

    @property
    def injecting(self) -> bool:
        """A header has entered the network and its bitmap words have not all followed yet."""
        return any(p is not None for p in self.inj_pkt)

    def inject(self, cycle: int, node: int, flit: int) -> None:
        """One flit the generator of ``node`` handed to its router; a packet counts as sent with its
        last bitmap word (the header and ``bitmap_flits`` words, :mod:`equimesh.rtl.packet`)."""
        fmt = self.fmt
        first, body = flit & 1, flit >> 2
        if first:
            _, src, seq = self._header(body)
            self.inj_pkt[node] = [src, seq, cycle, 0, 0]  # ..., words seen, bitmap
            return
        pkt = self.inj_pkt[node]
        if pkt is None:
            return
        src, seq, start, j, bitmap = pkt
        bitmap |= (body & self._word_mask) << (j * fmt.width)
        pkt[3], pkt[4] = j + 1, bitmap
        if j + 1 < fmt.bitmap_flits:
            return
        self.inj_pkt[node] = None
        want = self.traffic.bitmap(node, seq)
        if src != node or bitmap != want:
            self._error(f"generator {node} sent seq {seq} to {bitmap:#x}, expected {want:#x}")
        self.sent[(src, seq)] = (bitmap, start)
        self.expected += bin(bitmap).count("1")

    def eject(self, cycle: int, lane: int, flit: int) -> None:
        fmt = self.fmt
        node = self.lane_nodes[lane]
        first, last, body = flit & 1, (flit >> 1) & 1, flit >> 2
        if first:
            opcode, src, seq = self._header(body)
            self.lane_pkt[lane] = [src, seq, 1, opcode == Opcode.WRITE.value and not last]
            return
        pkt = self.lane_pkt[lane]
        if pkt is None:
            self._error(f"cycle {cycle}: node {node} got a payload flit without a header")
            self.corrupted += 1
            return
        src, seq, idx, ok = pkt
        if idx <= fmt.bitmap_flits:  # a bitmap word: this node's bit alone
            ok = ok and body == ((1 << node) >> ((idx - 1) * fmt.width)) & self._word_mask and not last
        else:
            k = idx - fmt.bitmap_flits
            ok = ok and body == fmt.payload_word(src, seq, k) and bool(last) == (k == fmt.payload_flits)
        pkt[2], pkt[3] = idx + 1, ok
        if not last:
            return
        self.lane_pkt[lane] = None
        self.last_arrival = cycle
        if (src, seq) not in self.sent or not self.sent[(src, seq)][0] >> node & 1:
            self.misdelivered += 1
            self._error(f"cycle {cycle}: node {node} got ({src}, {seq}), not addressed to it")
            return
        have = self.got.get((src, seq), 0)
        if have >> node & 1:
            self.duplicates += 1
            self._error(f"cycle {cycle}: node {node} got ({src}, {seq}) twice")
            return
        if not ok:
            self.corrupted += 1
            self._error(f"cycle {cycle}: node {node} got ({src}, {seq}) corrupted")
            return
        self.got[(src, seq)] = have | 1 << node
        self.delivered += 1
        self.latencies.append(cycle - self.sent[(src, seq)][1])

    @property
    def in_flight(self) -> int:
        return self.expected - self.delivered - self.corrupted

    def results(self, cycles: int, link_flits: list[int], deadlock: bool) -> dict:
        lat = np.array(self.latencies) if self.latencies else np.zeros(1)
        hops = int(sum(link_flits))
        links = len(link_flits)
        return {
            "packets": len(self.sent),
            "expected": self.expected,
            "delivered": self.delivered,
            "duplicates": self.duplicates,
            "lost": self.expected - self.delivered - self.corrupted,
            "corrupted": self.corrupted,
            "misdelivered": self.misdelivered,
            "deadlock": deadlock,
            "cycles": cycles,
            "completion": self.last_arrival + 1,  # cycles until the last flit was taken
            "flit_hops": hops,
            "link_utilization": round(hops / (links * max(cycles, 1)), 4),
            "latency_mean": round(float(lat.mean()), 2),
            "latency_p99": float(np.percentile(lat, 99)),
            "errors": self.errors,
        }


class Run:
    """One run's control and checking, independent of the simulator (Amaranth or cocotb).

    Random patterns inject for ``cycles`` cycles, then stop and drain; AllGather
    patterns run until every generator is done and nothing is in flight. The
    watchdog ends a run that takes no flit for ``WATCHDOG`` cycles while packets
    are in flight or generators still have packets to send: a deadlock.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.
    lane_nodes : list of int
        Per eject lane, the node it delivers to.
    cycles : int
        Injection cycles of random traffic.
    """

    def __init__(self, fmt: PacketFormat, traffic: Traffic, lane_nodes: list[int], cycles: int):
        self.sb = Scoreboard(fmt, traffic, lane_nodes)
        self.total = sum(traffic.counts) if traffic.counts is not None else None
        self.cycles = cycles
        self.cycle = self.idle = 0
        self.deadlock = False

    @property
    def stop(self) -> bool:
        return self.total is None and self.cycle >= self.cycles

    def observe(self, inj, ej, paused: bool = False) -> bool:
        """One cycle's monitors, lists of ``(valid, ready, flit)``; True when the run is over.
        ``paused``: packets are not expected to move this cycle (a schedule owns the links), so the
        cycle does not count towards the watchdog."""
        sb = self.sb
        moved = False
        for v, (valid, ready, flit) in enumerate(inj):
            if valid and ready:
                sb.inject(self.cycle, v, flit)
                moved = True
        for k, (valid, ready, flit) in enumerate(ej):
            if valid and ready:
                sb.eject(self.cycle, k, flit)
                moved = True
        done_sending = self.stop if self.total is None else len(sb.sent) == self.total
        self.cycle += 1
        self.idle = 0 if moved else self.idle + (not paused)
        queued = any(valid for valid, _, _ in inj)  # a source still offers a packet (its queue is not empty)
        if done_sending and not queued and sb.in_flight == 0 and not any(sb.lane_pkt) and not sb.injecting:
            return True
        if self.idle >= WATCHDOG:
            self.deadlock = True
            return True
        return False

    def results(self, link_flits: list[int]) -> dict:
        return self.sb.results(self.cycle, link_flits, self.deadlock)


def simulate(
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    *,
    cycles: int = 2000,
    stall: float = 0.0,
    vcd: str | None = None,
    pipeline: int = DEFAULT_PIPELINE,
    flit_bits: int = FLIT_BITS,
) -> dict:
    """Run ``traffic`` on the Amaranth simulator (routers of pipeline depth ``pipeline``, rtl/relay.py),
    every flit checked by the :class:`Scoreboard`.

    Parameters
    ----------
    table : ForwardingTable
        The forwarding table (seed 004, Section 4.3).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    cycles : int
        Injection cycles of random traffic (finite traffic runs to its end).
    stall : float
        Probability that a sink's lane refuses a flit.
    vcd : str, optional
        A VCD waveform to write.
    pipeline : int
        The routers' pipeline depth.
    flit_bits : int
        Width of a flit's body.

    Returns
    -------
    dict
        The scoreboard's results (deliveries, duplicates, losses, corruption, deadlock, cycles, latency,
        link flits) and ``created``.
    """
    from amaranth.sim import Simulator

    from ..rtl.packet_network import PacketNetwork, TrafficTop
    from .harness import drive, run_to_end

    top = TrafficTop(
        PacketNetwork(table, payload_flits, pipeline=pipeline, flit_bits=flit_bits), traffic.depth, check=False
    )
    load = traffic_load(top.fmt, traffic, stall)
    sigs = []
    for mon in list(top.inject_mon) + list(top.eject_mon):
        sigs += [mon.valid, mon.ready, mon.payload.as_value()]
    n_inj = len(top.inject_mon)
    run = Run(top.fmt, traffic, [v for v, _ in top.net.lanes], cycles)
    out = {}

    async def bench(ctx):
        await drive(ctx, top, load)
        sampler = ctx.tick().sample(*sigs).__aiter__()
        while True:
            ctx.set(top.stop, run.stop)
            _, _, *vals = await sampler.__anext__()
            mons = [tuple(vals[i : i + 3]) for i in range(0, len(vals), 3)]
            if run.observe(mons[:n_inj], mons[n_inj:]):
                break
        out.update(run.results([ctx.get(s) for s in top.link_flits]))
        out["created"] = sum(ctx.get(c) for c in top.created)

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    run_to_end(sim, 1e-6, vcd or None)
    return out


def bit_matrix(values: list[int], width: int) -> np.ndarray:
    """Integers of ``width`` bits (bitmaps of any width) as a uint64 0/1 matrix ``[len(values), width]``, bit 0
    first.

    Parameters
    ----------
    values : list of int
        The integers, each below ``2**width``.
    width : int
        Bits per integer.

    Returns
    -------
    numpy.ndarray
        The matrix, ``[len(values), width]``.
    """
    nbytes = -(-width // 8)
    raw = np.frombuffer(b"".join(v.to_bytes(nbytes, "little") for v in values), dtype=np.uint8)
    return np.unpackbits(raw.reshape(len(values), nbytes), axis=1, bitorder="little")[:, :width].astype(np.uint64)


def soak_verdict(
    fmt: PacketFormat,
    traffic: Traffic,
    *,
    created,
    sent,
    count,
    key_sum,
    key_sq_sum,
    errors,
    ejected,
    cycles,
    deadlock,
    link_flits,
) -> dict:
    """Compare the hardware checkers' counters with what the generators' tables say was sent.

    Source ``s`` sent packets ``0 .. sent[s]-1``, packet ``q`` to ``traffic.bitmap(s, q)``; so node
    ``d`` must have counted exactly the copies with bit ``d`` set, and the sums of their keys
    ``s << 24 | q`` and of the keys' squares (mod 2**32) are known too (see
    :class:`~equimesh.rtl.packet_endpoints.Checker`).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.
    created, sent : list of int
        Per node, packets its generator created and injected.
    count, key_sum, key_sq_sum : list of int
        Per node, its checker's copy count and sums (mod 2**32).
    errors : dict[str, int]
        ``header`` and ``payload`` errors, summed over the checkers.
    ejected : int
        Flits all sinks took.
    cycles : int
        The run's cycles.
    deadlock : bool
        The run did not finish (the watchdog).
    link_flits : list of int
        Flits carried by each link.

    Returns
    -------
    dict
        The results in the scoreboard's form (:meth:`Scoreboard.results`); a short ``ejected`` counts as a
        deadlock, and ``sum_mismatch_nodes`` lists nodes whose counts agree but sums do not.
    """
    n = fmt.nodes
    mask = np.uint64((1 << 32) - 1)
    want = np.zeros(n, dtype=np.uint64)
    want_sum = np.zeros(n, dtype=np.uint64)  # uint64 arithmetic wraps mod 2**64: exact mod 2**32
    want_sq = np.zeros(n, dtype=np.uint64)
    for s in range(n):
        rom = traffic.roms[s]
        seqs = np.arange(sent[s], dtype=np.uint64)
        entry = (seqs % np.uint64(len(rom))).astype(np.int64)  # packet q uses table entry q mod len(rom)
        keys = ((np.uint64(s) << np.uint64(SEQ_BITS)) | seqs) & mask
        per_entry = [np.bincount(entry, minlength=len(rom)).astype(np.uint64)]
        for values in (keys, keys * keys):
            acc = np.zeros(len(rom), dtype=np.uint64)
            np.add.at(acc, entry, values & mask)
            per_entry.append(acc)
        hits = bit_matrix(rom, n)  # [entry, destination]
        want += per_entry[0] @ hits
        want_sum += per_entry[1] @ hits
        want_sq += per_entry[2] @ hits
    want, want_sum, want_sq = want.astype(np.int64), [int(x) for x in want_sum & mask], [int(x) for x in want_sq & mask]
    expected = int(want.sum())
    extra = sum(max(0, count[d] - int(want[d])) for d in range(n))
    lost = sum(max(0, int(want[d]) - count[d]) for d in range(n))
    mismatched = [
        d for d in range(n) if count[d] == want[d] and (key_sum[d], key_sq_sum[d]) != (want_sum[d], want_sq[d])
    ]
    hops = int(sum(link_flits))
    return {
        "created": int(sum(created)),
        "packets": int(sum(sent)),
        "expected": expected,
        "delivered": int(sum(count)) - extra,
        "duplicates": extra,
        "lost": lost,
        "corrupted": errors["payload"],
        "misdelivered": errors["header"],
        "sum_mismatch_nodes": mismatched,
        "deadlock": bool(deadlock or ejected != expected * fmt.packet_flits),
        "cycles": cycles,
        "flit_hops": hops,
        "link_utilization": round(hops / (len(link_flits) * max(cycles, 1)), 4),
        "latency_mean": None,
        "latency_p99": None,
        "errors": [],
    }


def copy_latency(fmt: PacketFormat, copies: np.ndarray, start: int, window: tuple[int, int] | None = None) -> dict:
    """Latency of the copies the compiled model's harness logged, in cycles from injection to the last flit's
    delivery, as the scoreboard measures it (:class:`Scoreboard`).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format (``stamp_bits``).
    copies : numpy.ndarray
        A ``(stamp, cycle)`` row per copy: the cycle its lane took the last flit, and the cycle its source's
        router took the header, mod ``2**stamp_bits``.
    start : int
        The edge at which the traffic started.
    window : tuple[int, int], optional
        Only the copies injected in these cycles from the start (a sweep's measurement phase).

    Returns
    -------
    dict
        ``latency_mean``, ``latency_p99`` (None when no copy counts, or when a stamp is too narrow to
        tell a copy's latency: below) and ``latency_copies``.

    A latency is known mod ``2**stamp_bits`` and is at most the cycles from ``start`` to the copy's
    delivery; when that span reaches ``2**stamp_bits`` for some copy (narrow flits leave few bits for
    the stamp: 32-bit flits on 36 nodes leave one), its latency is not determined, and none is reported.
    """
    mask = (1 << fmt.stamp_bits) - 1
    lat = (copies[:, 1] - copies[:, 0]) & mask
    if np.any(copies[:, 1] - start - lat > mask):
        return {"latency_mean": None, "latency_p99": None, "latency_copies": 0}
    if window is not None:
        injected = copies[:, 1] - lat - start
        lat = lat[(injected >= window[0]) & (injected < window[1])]
    if not len(lat):
        return {"latency_mean": None, "latency_p99": None, "latency_copies": 0}
    return {
        "latency_mean": round(float(lat.mean()), 2),
        "latency_p99": float(np.percentile(lat, 99)),
        "latency_copies": int(len(lat)),
    }


def read_counters(get, nodes: int, links: int) -> dict:
    """The endpoints' and checkers' counters of a :class:`~equimesh.rtl.packet_network.TrafficTop` built
    with ``check``, read through ``get(port name)`` (flattened Verilog names): :func:`soak_verdict`'s inputs.

    Parameters
    ----------
    get : callable
        Returns a port's value by name.
    nodes : int
        Nodes of the network.
    links : int
        Links of the network.

    Returns
    -------
    dict
        The keyword arguments of :func:`soak_verdict` that come from the hardware.
    """
    return {
        "created": [get(f"created__{v}") for v in range(nodes)],
        "sent": [get(f"sent__{v}") for v in range(nodes)],
        "count": [get(f"count__{d}") for d in range(nodes)],
        "key_sum": [get(f"key_sum__{d}") for d in range(nodes)],
        "key_sq_sum": [get(f"key_sq_sum__{d}") for d in range(nodes)],
        "errors": {k: get(f"{k}_errors") for k in ("header", "payload")},
        "ejected": get("ejected"),
        "link_flits": [get(f"link_flits__{i}") for i in range(links)],
    }


def counter_ports(nodes: int, links: int) -> list[str]:
    """The port names :func:`read_counters` reads.

    Parameters
    ----------
    nodes : int
        Nodes of the network.
    links : int
        Links of the network.

    Returns
    -------
    list of str
        The names, in :func:`read_counters`' order.
    """
    names = []
    read_counters(lambda n: names.append(n), nodes, links)
    return names


def target_flits(fmt: PacketFormat, traffic: Traffic) -> int | None:
    """Flits the sinks take in all for finite traffic (None for random traffic).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.

    Returns
    -------
    int or None
        ``packet_flits`` per copy of every packet sent, or None.
    """
    if traffic.counts is None:
        return None
    return fmt.packet_flits * sum(
        bin(traffic.bitmap(s, q)).count("1") for s, c in enumerate(traffic.counts) for q in range(c)
    )


def packet_segments(fmt: PacketFormat, traffic: Traffic, cycles: int, start: int = 0) -> list:
    """The compiled model's program for a counters-only run from edge ``start`` (no Python per cycle):
    random traffic injects for ``cycles`` cycles in blocks of :data:`BLOCK` (a block that ejects nothing
    is a deadlock), then stops and drains until :data:`WATCHDOG` edges eject nothing; finite traffic
    runs until the sinks took every flit or :data:`WATCHDOG` edges take none. The last segment's mark
    ends the run (:func:`completion`, :func:`finished`).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    traffic : Traffic
        What the generators send.
    cycles : int
        Injection cycles of random traffic.
    start : int
        The edge the traffic starts at (after the load).

    Returns
    -------
    list
        The program's segments (:mod:`~equimesh.sim.program`).
    """
    from .program import Set, Settle, Until, scalar

    target = target_flits(fmt, traffic)
    if target is None:
        return [
            Set({"stop": scalar([0], 1)}),
            Settle("ejected", BLOCK, start + cycles),
            Set({"stop": scalar([1], 1)}),
            Until("ejected", 2**64 - 1, start + cycles + DRAIN_LIMIT, WATCHDOG),
        ]
    return [Set({"stop": scalar([0], 1)}), Until("ejected", target, 2**32 - 1, WATCHDOG)]


def completion(mark, finite: bool) -> int:
    """The edge that took the last flit: where a finite run reached its target, else the drain's last
    change of ``ejected``.

    Parameters
    ----------
    mark : Mark
        The last segment's mark (:func:`packet_segments`).
    finite : bool
        The traffic is finite.

    Returns
    -------
    int
        The edge.
    """
    return mark.edge if finite and mark.reached else mark.changed


def finished(mark, finite: bool) -> bool:
    """Did the run that ``mark`` ends deliver everything: the target reached (finite traffic), or the
    drain quiet for :data:`WATCHDOG` edges before its deadline (random traffic)?

    Parameters
    ----------
    mark : Mark
        The last segment's mark (:func:`packet_segments`).
    finite : bool
        The traffic is finite.

    Returns
    -------
    bool
        True when the run delivered everything.
    """
    return mark.reached if finite else mark.edge - mark.changed >= WATCHDOG


PACKET_MODELS = ("auto", "tiled", "flat", "hierarchical")


def whole_top_kind(nodes: int) -> str:
    """The model kind of a packet top compiled whole (``build_top``): ``flat`` where the schedule
    networks are flat (``model_kind``), ``hierarchical`` above, where a flat packet router's C++ is
    written once per instance (8x8: 94 MB of it; at 16x16 its compile ran out of 23 GB; docs/packets.md).

    Parameters
    ----------
    nodes : int
        Nodes of the network.

    Returns
    -------
    str
        ``flat`` or ``hierarchical``.
    """
    from .backends import model_kind

    return "flat" if model_kind("auto", nodes) == "flat" else "hierarchical"


def packet_model(model: str, nodes: int, pipeline: int, trace: str | None, threads: int = 1) -> str:
    """The Verilator model kind of a packet run. ``tiled`` (:mod:`~equimesh.sim.tiled_traffic`: one compiled
    tile per distinct node, the links wired in C++) is ``auto``'s choice, except for a waveform (the
    tiles have no shared trace) and pipeline 0 (combinational paths between routers): then the whole
    top's (:func:`whole_top_kind`).

    Parameters
    ----------
    model : str
        One of :data:`PACKET_MODELS`.
    nodes : int
        Nodes of the network.
    pipeline : int
        The routers' pipeline depth.
    trace : str or None
        The waveform's kind, if one is written.
    threads : int
        The run's threads (more than one only on the tiled model).

    Returns
    -------
    str
        ``tiled``, ``flat`` or ``hierarchical``; a kind that cannot run this (``tiled`` with a waveform
        or pipeline 0, threads on another kind) raises :class:`~equimesh.rtl.packet.PacketError`.
    """
    tiles = pipeline > 0 and trace is None
    if model == "tiled" and not tiles:
        raise PacketError("the tiled model needs pipeline 1 or 2 and writes no waveform: use --model flat")
    kind = model if model != "auto" else "tiled" if tiles else whole_top_kind(nodes)
    if threads > 1 and kind != "tiled":
        raise PacketError(f"--threads needs the tiled model (this run uses the {kind} model)")
    return kind


def phase_figures(fmt, copies: np.ndarray, start: int, warmup: int, measure: int) -> dict:
    """The measurement phase's accepted load and latency from a compiled run's copy log (``copies``:
    ``(stamp, cycle)`` rows, :func:`~equimesh.sim.traffic.copy_latency`), the traffic starting at edge ``start``.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    copies : numpy.ndarray
        The copy log.
    start : int
        The edge the traffic started at.
    warmup : int
        Cycles before the measurement phase.
    measure : int
        Cycles of the measurement phase.

    Returns
    -------
    dict
        ``injected`` and ``accepted`` (flits per node per cycle in the phase) and the phase's latency
        (:func:`copy_latency`).
    """

    lat = copy_latency(fmt, copies, start, (warmup, warmup + measure))
    arrived = copies[:, 1] - start
    delivered = int(np.count_nonzero((arrived >= warmup) & (arrived < warmup + measure)))
    accepted = delivered * fmt.packet_flits / (fmt.nodes * measure)
    injected = lat["latency_copies"] * fmt.packet_flits / (fmt.nodes * measure)  # copies injected in the phase
    return {"injected": round(injected, 5), "accepted": round(accepted, 5), **lat}


def run_compiled(
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    workdir,
    *,
    cycles: int = 2000,
    stall: float = 0.0,
    log=None,
    pipeline: int = DEFAULT_PIPELINE,
    vcd: str | None = None,
    flit_bits: int = FLIT_BITS,
    phase: tuple[int, int] | None = None,
    model: str = "auto",
    threads: int = 1,
) -> dict:
    """Run ``traffic`` on the compiled Verilator model of the network with its endpoints and checkers
    (cached per design, ``sim/verilator.py``; kind: :func:`packet_model`): the harness clocks it with no Python per cycle and
    Python judges the checkers' counters at the end (:func:`soak_verdict`). Random traffic: as
    ``run_verilog(mode="soak")``; finite traffic: as ``mode="count"``. ``cycles`` and ``completion``
    are the edge that took the last flit, as in :func:`simulate`. ``vcd``: a waveform of the whole run,
    the load included (FST for a ``.fst`` name), from a model built with tracing (cached apart). Latency
    (every copy's, from the harness's copy log: :func:`copy_latency`); ``phase`` = (warm-up, measurement)
    cycles adds the measurement phase's figures (:func:`phase_figures`).

    Parameters
    ----------
    table : ForwardingTable
        The forwarding table (seed 004, Section 4.3).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    workdir : str or Path
        Where the program and result files go.
    cycles : int
        Injection cycles of random traffic.
    stall : float
        Probability that a sink's lane refuses a flit.
    log : callable, optional
        Takes a progress line (a model build).
    pipeline : int
        The routers' pipeline depth.
    vcd : str, optional
        A waveform to write.
    flit_bits : int
        Width of a flit's body.
    phase : tuple[int, int], optional
        Warm-up and measurement cycles.
    model : str
        The model kind, one of :data:`PACKET_MODELS`.
    threads : int
        Threads of the tiled model (each clocks a share of the nodes; the same records for any count).

    Returns
    -------
    dict
        :func:`soak_verdict`'s results with the latency, ``completion``, the build and run seconds, whether
        the model was cached, and ``phase`` when asked.
    """
    from pathlib import Path

    from ..rtl.packet_network import PacketNetwork, TrafficTop
    from .backends import trace_kind
    from .program import Capture, Program
    from .tiled_traffic import build_tiled
    from .verilator import build_top

    def make_top():
        return TrafficTop(
            PacketNetwork(table, payload_flits, pipeline=pipeline, instances=True, flit_bits=flit_bits),
            traffic.depth,
            check=True,
        )

    fmt, links = PacketFormat(table.topology.nodes, payload_flits, flit_bits), len(table.topology.links)
    kind = packet_model(model, fmt.nodes, pipeline, trace_kind(vcd), threads)
    if kind == "tiled":
        model, widths = build_tiled(table, payload_flits, traffic.depth, pipeline, flit_bits, log)
    else:
        model, widths = build_top(
            make_top,
            json.dumps(["traffic", table.to_json(), traffic.depth, payload_flits, pipeline, flit_bits]),
            log,
            kind=kind,
            trace=trace_kind(vcd),
        )
    load = traffic_load(fmt, traffic, stall)
    t0 = load.frames  # the program's edges count from reset, the load's frames first
    segments = [load] + packet_segments(fmt, traffic, cycles, start=t0)
    names = counter_ports(fmt.nodes, links)
    program = Program(segments + [Capture(names)], widths)
    rec = model.run(program, Path(workdir), trace=str(Path(vcd).resolve()) if vcd else None, threads=threads)
    marks = rec["marks"]
    end = marks[len(segments) - 1]
    got = rec["captures"][len(segments)]
    counters = read_counters(lambda n: int(got[n][0]), fmt.nodes, links)
    finite = traffic.counts is not None
    deadlock = not finished(end, finite) or (not finite and marks[2].reached)  # or a silent injection block
    last = completion(end, finite) - t0
    r = soak_verdict(fmt, traffic, cycles=last, deadlock=deadlock, **counters)
    r.update(copy_latency(fmt, rec["copies"], t0))
    if phase is not None:  # a sweep's warm-up and measurement cycles (sim/traffic_sweep.py)
        r["phase"] = phase_figures(fmt, rec["copies"], t0, *phase)
    r.update(
        {
            "completion": last,
            "simulator": "verilator",
            "build_seconds": round(model.build_seconds, 1),
            "cached": model.cached,
            "sim_seconds": round(sum(m.seconds for m in marks.values()), 3),
            "threads": threads,
            "solo_cycles": rec["solo_cycles"],
            "router_clocked": rec["router_clocked"],
            "input_clocked": rec["input_clocked"],
        }
    )
    return r


def run_verilog(
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    build_dir,
    *,
    mode: str = "trace",
    cycles: int = 2000,
    stall: float = 0.0,
    simulator: str = "icarus",
    pipeline: int = DEFAULT_PIPELINE,
    flit_bits: int = FLIT_BITS,
) -> dict:
    """Export the network with its endpoints to Verilog and run it under cocotb (Icarus or Verilator).

    ``mode="trace"`` checks every flit in Python (as :func:`simulate`); ``mode="soak"`` (random
    traffic) and ``mode="count"`` (finite traffic, exact completion cycle) add the hardware checkers
    and read only their counters, for long runs.

    Parameters
    ----------
    table : ForwardingTable
        The forwarding table (seed 004, Section 4.3).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    build_dir : str or Path
        Where the Verilog and the simulator's build go (created).
    mode : str
        ``trace``, ``soak`` or ``count``.
    cycles : int
        Injection cycles of random traffic.
    stall : float
        Probability that a sink's lane refuses a flit.
    simulator : str
        ``icarus`` or ``verilator`` (cocotb's).
    pipeline : int
        The routers' pipeline depth.
    flit_bits : int
        Width of a flit's body.

    Returns
    -------
    dict
        The run's results in the scoreboard's form, ``simulator`` and ``build_seconds``; a missing simulator
        raises :class:`~equimesh.rtl.packet.PacketError` (one line).
    """
    from pathlib import Path

    from ..rtl.packet_network import PacketNetwork, TrafficTop
    from .verilog_sim import SimulatorMissing, bench_verilog, check_simulator, run_bench

    try:
        check_simulator(simulator)
    except SimulatorMissing as e:
        raise PacketError(str(e)) from None
    build = Path(build_dir).resolve()
    build.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    text, facts = bench_verilog(
        lambda: TrafficTop(
            PacketNetwork(table, payload_flits, pipeline=pipeline, flit_bits=flit_bits),
            traffic.depth,
            check=mode != "trace",
        ),
        "equimesh_traffic",
        json.dumps(["traffic", table.to_json(), traffic.depth, payload_flits, pipeline, flit_bits, mode != "trace"]),
        lambda top: {"lanes": [v for v, _ in top.net.lanes]},
    )
    export = time.perf_counter() - t0
    fmt = PacketFormat(table.topology.nodes, payload_flits, flit_bits)
    out, build_s, _ = run_bench(
        text,
        "equimesh_traffic",
        build,
        simulator,
        "equimesh.sim.traffic_cocotb",
        "EQUIMESH_TRAFFIC",
        {
            "mode": mode,
            "nodes": fmt.nodes,
            "payload_flits": payload_flits,
            "flit_bits": fmt.width,
            "pattern": traffic.pattern,
            "roms": traffic.roms,
            "counts": traffic.counts,
            "rate": traffic.rate,
            "silent": list(traffic.silent),
            "backlog": traffic.backlog,
            "stall": stall,
            "cycles": cycles,
            "links": len(table.topology.links),
            "lanes": facts["lanes"],
            "target_flits": target_flits(fmt, traffic),
        },
    )
    build_s += export
    out["simulator"] = simulator
    out["build_seconds"] = round(build_s, 1)
    return out
