"""One packet router in the Amaranth simulator: mask split, header rewrite, and the multicast
backpressure contract (seed 004, Section 4.3.3; FlooNoC: an input flit is released only after
every branch took it)."""

import pytest
from amaranth.sim import Simulator

from equimesh.rtl.packet import Opcode, PacketFormat
from equimesh.rtl.packet_network import PacketSetup
from equimesh.rtl.packet_router import InputBuffer, PacketRouter
from equimesh.schedules.routing import xy_table
from equimesh.schedules.topology import build

PORTS = ["N", "E", "S", "W"]


def _router(pipeline=1):
    """Router 5 of the 4x4 mesh, its forwarding inputs tied to node 5's entries of the XY table."""
    topo = build("mesh", 4, 4)
    table = xy_table(topo)
    setup = PacketSetup(table, payload_flits=3)
    return setup.fmt, table, setup.for_node(PacketRouter(setup.config, PORTS, pipeline), 5, PORTS)


def _flits(fmt, src, seq, bitmap):
    """The packet's flits: header, bitmap words (bit i of word j = node j * width + i), payload."""
    words = [bitmap >> (j * fmt.width) & ((1 << fmt.width) - 1) for j in range(fmt.bitmap_flits)]
    head = {"first": 1, "last": 0, "body": {"header": {"opcode": Opcode.MULTIWRITE, "src": src, "seq": seq}}}
    out = [head] + [{"first": 0, "last": 0, "body": {"payload": w}} for w in words]
    for i in range(1, fmt.payload_flits + 1):
        out.append(
            {"first": 0, "last": int(i == fmt.payload_flits), "body": {"payload": fmt.payload_word(src, seq, i)}}
        )
    return out


def _all_ready(ctx, dut):
    """Every output link and local lane of ``dut`` takes what it is offered."""
    for p in PORTS:
        ctx.set(getattr(dut, f"o_{p}").ready, 1)
        ctx.set(getattr(dut, f"eject_{p}").ready, 1)


def _run(stall=None, pipeline=1, source="inject", src=5, dests=(1, 4, 6, 9, 13, 15), eject_stall=None):
    """Send one MultiWrite from node ``src`` for ``dests`` into router 5 of the 4x4 mesh (XY), through
    ``source`` (``inject``, or the network input ``i_<port>``); ``stall = (port, first, end)``: that
    output refuses flits in cycles first..end-1; ``eject_stall = (port, first, end)``: that local
    lane refuses them. Returns what each output took, per cycle, the cycles the input released a
    flit (``inject``) or the local lanes took one (a network input), and the format, table and bitmap."""
    fmt, table, dut = _router(pipeline)
    bitmap = fmt.bitmap(list(dests), src=src)
    got = {p: [] for p in PORTS}
    released = []
    inp = getattr(dut, source)

    async def bench(ctx):
        _all_ready(ctx, dut)
        flits = _flits(fmt, src, 7, bitmap)
        cycle = 0
        while flits or cycle < 16:
            for window, kind in ((stall, "o"), (eject_stall, "eject")):
                if window:
                    port, first, end = window
                    ctx.set(getattr(dut, f"{kind}_{port}").ready, int(not first <= cycle < end))
            if flits:
                ctx.set(inp.payload, flits[0])
                ctx.set(inp.valid, 1)
            else:
                ctx.set(inp.valid, 0)
            await ctx.delay(1e-7)
            if ctx.get(inp.valid) and ctx.get(inp.ready):
                flits.pop(0)
                if source == "inject":
                    released.append(cycle)
            for p in PORTS:
                o, lane = getattr(dut, f"o_{p}"), getattr(dut, f"eject_{p}")
                if ctx.get(o.valid) and ctx.get(o.ready):
                    got[p].append((cycle, ctx.get(o.payload)))
                if ctx.get(lane.valid) and ctx.get(lane.ready):
                    released.append(cycle)
            await ctx.tick()
            cycle += 1
            assert cycle < 100, "router did not release the packet"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return fmt, table, bitmap, got, released


@pytest.mark.parametrize("pipeline", [0, 1])
def test_mask_split_and_header_rewrite(pipeline):
    fmt, table, bitmap, got, _ = _run(pipeline=pipeline)
    parts = table.split(5, bitmap)
    # XY, columns first: 1 -> N, 4 -> W, 6 and 15 -> E, 9 and 13 -> S.
    assert parts == {"N": 1 << 1, "W": 1 << 4, "E": (1 << 6) | (1 << 15), "S": (1 << 9) | (1 << 13)}
    for p in PORTS:
        if p not in parts:
            assert got[p] == []
            continue
        flits = [f for _, f in got[p]]
        assert len(flits) == fmt.packet_flits
        h = flits[0].body.header
        assert flits[0].first and not flits[0].last
        assert fmt.bitmap_flits == 1  # 16 nodes: one 64-bit bitmap word
        assert flits[1].body.payload == parts[p], f"port {p}: bitmap {flits[1].body.payload:#x}, want {parts[p]:#x}"
        single = parts[p] & (parts[p] - 1) == 0
        assert h.opcode == (Opcode.WRITE if single else Opcode.MULTIWRITE)
        assert (h.src, h.seq) == (5, 7)
        for i, f in enumerate(flits[2:], start=1):
            assert f.body.payload == fmt.payload_word(5, 7, i)
        assert flits[-1].last


@pytest.mark.parametrize("pipeline", [0, 1])
@pytest.mark.parametrize("source", ["inject", "i_W"])
def test_each_packet_gets_its_own_opcode(pipeline, source):
    """Two packets back to back through one input: the first has two destinations east of node 5 (6 and
    15, XY: columns first), so its east copy is a MULTIWRITE; the second has only node 6 there, so its
    east copy is a plain WRITE (seed 004, Section 4.3.3, rule 2). The second packet's opcode must come
    from its own bitmap, not from what the first one left in the relay."""
    fmt, _, dut = _router(pipeline)
    packets = [_flits(fmt, 0, 1, fmt.bitmap([6, 15], src=0)), _flits(fmt, 0, 2, fmt.bitmap([6], src=0))]
    flits = [f for packet in packets for f in packet]
    headers = []
    inp = getattr(dut, source)

    async def bench(ctx):
        _all_ready(ctx, dut)
        for _ in range(80):
            ctx.set(inp.valid, int(bool(flits)))
            if flits:
                ctx.set(inp.payload, flits[0])
            await ctx.delay(1e-7)
            if flits and ctx.get(inp.ready):
                flits.pop(0)
            east = dut.o_E
            if ctx.get(east.valid) and ctx.get(east.payload.first):
                h = ctx.get(east.payload.body.header)
                headers.append((h.seq, h.opcode))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert headers == [(1, Opcode.MULTIWRITE), (2, Opcode.WRITE)]


def test_input_released_only_when_every_branch_took_the_flit():
    """Pipeline 0: the relay takes the header and the bitmap word in cycles 0 and 1 (its parse stage) and
    presents the header in 2, where it leaves to every branch at once; the bitmap word follows in 3 and
    payload flit 1 in 4. S refuses in cycles 5..8: the other branches take payload flit 2 in 5 and wait,
    S takes it in 9, and flit 3 goes everywhere in 10."""
    fmt, table, bitmap, got, released = _run(stall=("S", 5, 9), pipeline=0)
    assert released[:2] == [0, 1]  # the parse stage: header and bitmap word
    assert got["S"][0][0] == got["N"][0][0] == 2  # header: all branches together
    for p in PORTS:
        assert [f.as_value().value for _, f in got[p]] == [f.as_value().value for _, f in _run(pipeline=0)[3][p]]
    for i, (cycle, _) in enumerate(got["S"][2:], start=2):
        # payload flit i leaves the input in the cycle its last branch (here always S) takes it
        assert released[i] == cycle
        for p in ("N", "E", "W"):
            assert got[p][i][0] <= cycle
    assert got["S"][3][0] == 9 and got["N"][3][0] == 5  # the other branches ran ahead by one flit
    assert got["N"][4][0] == 10  # and waited there: flit 4 only after S took flit 3


def test_input_released_only_when_every_branch_took_the_flit_pipelined():
    """Pipeline 1, by hand (rtl/relay.py, rtl/packet_router.py): the relay takes the header and the
    bitmap word from ``inject`` in cycles 0 and 1 (parse) and presents the header in 2 (p); it waits
    in stages Q, A and G (2, 3, 4) and leaves the relay in p + 3 = 5; each output's link register
    presents it a cycle later, in 6. The bitmap word follows in 6 (link 7) and payload flit i leaves
    the input in 6 + i (link 7 + i).
    With virtual cut-through no network output refuses a flit of a granted packet, so only the local
    delivery can hold the input. A packet from node 6 arriving on E for nodes 1, 4, 5 and 9 (XY:
    1 -> N, 4 -> W, 9 -> S, 5 local): written into E's buffer in cycles 0..4 (a flit written in t is
    the head in t + 1), its header is the head in 1 and the bitmap word in 2 (parse), presented in 3,
    leaves in 6 (Q, A, G: 3, 4, 5), on N, W and S in 7 and into lane E in 6; flit i leaves in 6 + i.
    Lane E refuses in cycles 8..10: N, W and S take payload flit 1 in 8 (on the links in 9) and wait,
    the lane takes it in 11, and flits 2 and 3 follow in 12 and 13 (on the links in 13 and 14)."""
    fmt, table, bitmap, got, released = _run(pipeline=1)
    assert released == [0, 1, 7, 8, 9] and all([c for c, _ in got[p]] == [6, 7, 8, 9, 10] for p in PORTS)
    arrival = dict(source="i_E", src=6, dests=(1, 4, 5, 9))
    fmt, table, bitmap, free, local = _run(pipeline=1, **arrival)
    assert local == [6, 7, 8, 9, 10]
    assert all([c for c, _ in free[p]] == [7, 8, 9, 10, 11] for p in ("N", "W", "S")) and free["E"] == []
    fmt, table, bitmap, got, local = _run(pipeline=1, eject_stall=("E", 8, 11), **arrival)
    assert local == [6, 7, 11, 12, 13]
    for p in ("N", "W", "S"):
        assert [c for c, _ in got[p]] == [7, 8, 9, 13, 14]
        assert [f.as_value().value for _, f in got[p]] == [f.as_value().value for _, f in free[p]]


def test_network_output_that_refuses_a_granted_packet_trips_the_assertion():
    """Pipeline 1 relies on virtual cut-through (a receiver refuses no flit of a packet it took the
    header of); an output that refuses a body flit breaks that contract, and the simulation says so."""
    with pytest.raises(AssertionError, match="output S refused a flit of a granted packet"):
        _run(stall=("S", 7, 11), pipeline=1)


def test_invariant_assertions_fire():
    """The simulation-time assertions are live: a body flit with no header before it trips the relay's."""
    import pytest

    fmt, _, dut = _router()

    async def bench(ctx):
        ctx.set(dut.inject.payload, {"first": 0, "last": 1, "body": {"payload": 5}})
        ctx.set(dut.inject.valid, 1)
        for _ in range(3):
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    with pytest.raises(AssertionError, match="a packet without its header"):
        sim.run()


def test_matrix_allocator_by_hand_and_its_invariants():
    """The pipeline-1 allocator (rtl/packet_router.py, MatrixAllocator): its choice is the next cycle's
    grant. By hand, 3 inputs and 2 outputs, the order 0, 1, 2 at reset, 0 wants output 0, 1 both, 2
    output 1. Cycle 0, all free: 0 is chosen; 1 is blocked by 0, and 2 by 1 (eligible, before it, same
    output) although 1 is not chosen. Cycle 1: 0 is granted, nothing is chosen; the order becomes 1, 2, 0.
    Cycle 2: output 0 taken, 1 cannot go, 2 is chosen. Cycle 3: its grant, no choice; the order 1, 0, 2.
    Cycle 4: both free, 0 and 1 wait: 1 is chosen and blocks 0.
    Then random requests with outputs held for random times: a grant goes only to an input that was
    eligible in the cycle before, no two grants share an output, and whenever an input was eligible in
    a cycle without a grant some input is granted in the next cycle."""
    import random

    from equimesh.rtl.packet_router import MatrixAllocator

    dut = MatrixAllocator(3, 2)
    req = (0b01, 0b11, 0b10)
    script = [
        ((1, 1, 1), 0b11, 0b001),
        ((0, 1, 1), 0b10, 0b000),
        ((0, 1, 1), 0b10, 0b100),
        ((1, 1, 0), 0b00, 0b000),
        ((1, 1, 0), 0b11, 0b010),
    ]
    rng = random.Random(4)
    seen = []

    async def bench(ctx):
        for j, r in enumerate(req):
            ctx.set(dut.req[j], r)
        for pending, free, _ in script:
            ctx.set(dut.pending, sum(b << j for j, b in enumerate(pending)))
            ctx.set(dut.free, free)
            await ctx.tick()
            seen.append(ctx.get(dut.grant))
        pending, reqs, busy = [0, 0, 0], [0, 0, 0], [0, 0]
        ctx.set(dut.pending, 0)
        await ctx.tick()
        eligible_before = set()
        for _ in range(400):
            for j in range(3):
                if not pending[j] and rng.random() < 0.5:
                    pending[j], reqs[j] = 1, rng.choice([0, 1, 2, 3])
                ctx.set(dut.req[j], reqs[j])
            free = sum((busy[k] == 0 and rng.random() < 0.8) << k for k in range(2))
            ctx.set(dut.pending, sum(p << j for j, p in enumerate(pending)))
            ctx.set(dut.free, free)
            await ctx.delay(1e-8)
            grant = ctx.get(dut.grant)  # chosen in the cycle before
            granted = [j for j in range(3) if grant >> j & 1]
            assert set(granted) <= eligible_before
            assert all(reqs[a] & reqs[b] == 0 for a in granted for b in granted if a < b)
            assert granted or not eligible_before
            for j in granted:  # served: its outputs are held for a while from now on
                pending[j] = 0
                for k in range(2):
                    if reqs[j] >> k & 1:
                        busy[k] = rng.randint(1, 4)
            ctx.set(dut.pending, sum(p << j for j, p in enumerate(pending)))
            free &= ~sum((busy[k] > 0) << k for k in range(2))
            ctx.set(dut.free, free)
            eligible_before = set() if granted else {j for j in range(3) if pending[j] and reqs[j] & ~free == 0}
            await ctx.tick()
            busy = [max(0, b - 1) for b in busy]

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [want for *_, want in script]


@pytest.mark.parametrize("registered, b_taken", [(False, [4, 5, 6]), (True, [5, 6, 7])])
def test_input_buffer_by_hand(registered, b_taken):
    """A 5-flit buffer, 3-flit packets (header, bitmap word, payload; room for a header: at most 2 flits buffered). Packet A is written
    in cycles 0..2 and is the head from cycle 2 (a memory with a registered read). A's header leaves
    in 3; then B's header waits: 3 flits buffered. The buffer takes it once 2 are left: in 4 (the
    combinational ready) or in 5 (the registered one, computed a cycle ahead, counting no read), and
    its body in the next two cycles: 5 flits, full. From 8 on the head leaves every cycle, in order."""
    fmt = PacketFormat(4, payload_flits=1)
    dut = InputBuffer(fmt, depth=5, registered=registered)
    a, b = _flits(fmt, 1, 1, 0b0100), _flits(fmt, 2, 2, 0b1000)
    words = lambda flits: [fmt.flit.const(f).as_value().value for f in flits]  # noqa: E731
    taken, popped, empty = [], [], []

    async def bench(ctx):
        pending = a + b
        for cycle in range(14):
            ctx.set(dut.o.ready, int(cycle == 3 or cycle >= 8))
            ctx.set(dut.i.valid, int(bool(pending)))
            if pending:
                ctx.set(dut.i.payload, pending[0])
            await ctx.delay(1e-7)
            if ctx.get(dut.i.valid) and ctx.get(dut.i.ready):
                taken.append(cycle)
                pending.pop(0)
            pop = ctx.get(dut.o.valid) and ctx.get(dut.o.ready)
            ctx.set(dut.advance, pop)  # a consumer that presents each flit as it pops it
            if pop:
                popped.append((cycle, ctx.get(dut.o.payload).as_value().value))
                assert ctx.get(dut.shown).as_value().value == popped[-1][1]
            empty.append(ctx.get(dut.empty))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert taken == [0, 1, 2] + b_taken
    assert popped == list(zip([3, 8, 9, 10, 11, 12], words(a + b)))
    assert empty == [1] + [0] * 12 + [1]


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8, 9, 16])
def test_several_is_two_or_more_bits_set(width):
    """The relay's destination count (:func:`~equimesh.rtl.relay.several`) against a bit count, every value:
    any is one bit or more, several two or more."""
    from amaranth.hdl import Module, Signal

    from equimesh.rtl.relay import several

    x, y, z = Signal(width), Signal(), Signal()
    m = Module()
    any_, sev = several(m, x, "word")
    m.d.comb += [y.eq(any_), z.eq(sev)]
    sim = Simulator(m)

    async def bench(ctx):
        for v in range(1 << width):
            ctx.set(x, v)
            ones = bin(v).count("1")
            assert (ctx.get(y), ctx.get(z)) == (ones >= 1, ones >= 2), v

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width", [7, 8, 12])
def test_summaries_count_every_group(width):
    """Every level of :func:`~equimesh.rtl.relay.summaries` (the groups the relay registers, ``GROUP_BITS``
    at a time) against bit counts of each group of ``2**l`` bits, every value: the bit at a multiple of
    ``2**l`` is any (one bit or more) and several (two or more) of that group."""
    from amaranth.hdl import Module, Signal

    from equimesh.rtl.relay import summaries

    x = Signal(width)
    m = Module()
    levels = summaries(m, x, "word")
    shown = []
    for level, (a, s) in enumerate(levels):
        for p in range(0, width, 1 << level):
            y, z = Signal(name=f"any_{level}_{p}"), Signal(name=f"sev_{level}_{p}")
            m.d.comb += [y.eq(a[p]), z.eq(s[p])]
            shown.append((level, p, y, z))
    sim = Simulator(m)

    async def bench(ctx):
        for v in range(1 << width):
            ctx.set(x, v)
            for level, p, y, z in shown:
                ones = bin((v >> p) & ((1 << (1 << level)) - 1)).count("1")
                assert (ctx.get(y), ctx.get(z)) == (ones >= 1, ones >= 2), (v, level, p)

    sim.add_testbench(bench)
    sim.run()
