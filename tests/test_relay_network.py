"""The MultiWrite network in the Amaranth simulator, checked flit by flit by the Python scoreboard:
random bitmaps on the 2x3 and 4x4 mesh and EquiMesh, with and without random sink backpressure.
Every destination gets exactly one intact copy; nothing is duplicated, lost, corrupted or
delivered to a node outside the bitmap; the watchdog sees no deadlock."""

import gc

import pytest

from equimesh.rtl.packet import PacketFormat
from equimesh.rtl.packet_network import PacketNetwork
from equimesh.schedules.routing import DeadlockError, forwarding_table, xy_table
from equimesh.schedules.topology import build
from equimesh.sim.traffic import Scoreboard, make_traffic, simulate

PAYLOAD = 3


def _random_bitmaps(fmt, seed):
    """Random fan-out per packet (1..N-1): ``multicast`` ROMs with a fan-out drawn per entry."""
    import random

    rng = random.Random(seed)
    roms = []
    for s in range(fmt.nodes):
        others = [d for d in range(fmt.nodes) if d != s]
        roms.append([fmt.bitmap(rng.sample(others, rng.randint(1, len(others))), s) for _ in range(64)])
    tr = make_traffic(fmt, "multicast", fanout=1, rate=0.25, seed=seed)
    tr.roms = roms
    return tr


@pytest.mark.parametrize(
    "kind,rows,cols,cycles,stall",
    [  # the mesh's XY routes at 2x3, free and under backpressure; the rings' at 2x3 and at 4x4 (the 4x4
        # under backpressure only: the slowest run, and the one that holds packets longest in the rings)
        ("mesh", 2, 3, 100, 0.0),
        ("mesh", 2, 3, 100, 0.4),
        ("equimesh", 2, 3, 100, 0.0),
        ("equimesh", 2, 3, 100, 0.4),
        ("equimesh", 4, 4, 30, 0.4),
    ],
)
def test_random_bitmaps_exactly_once(kind, rows, cols, cycles, stall):
    topo = build(kind, rows, cols)
    table = forwarding_table(topo)
    fmt = PacketFormat(topo.nodes, PAYLOAD)
    r = simulate(table, _random_bitmaps(fmt, seed=rows * 10 + cols), PAYLOAD, cycles=cycles, stall=stall)
    assert r["errors"] == []
    assert not r["deadlock"]
    # The network was loaded. The generators create packets at rate 0.25 into source queues whatever
    # the network accepts, and the run lasts until the queues drain: 30 injection cycles make the 4x4
    # runs 121 packets (976 copies) in 932 (no stall) and 1,072 (backpressure) cycles of saturated traffic,
    # at link utilization 0.101 and 0.088 (400 injection cycles: 1,588 packets in 10,700 and 12,900
    # cycles, 0.113 and 0.093); 100 make the 2x3 runs 156 packets in 900 to 1,100 cycles.
    assert r["packets"] >= 5 * topo.nodes and r["link_utilization"] > 0.08
    assert (r["duplicates"], r["lost"], r["corrupted"], r["misdelivered"]) == (0, 0, 0, 0)
    assert r["delivered"] == r["expected"]


def test_multiwrite_allgather_saves_flit_hops():
    """Seed 004's claim, in flit-hops: AllGather by MultiWrite injects each shard once."""
    topo = build("equimesh", 2, 3)
    table = forwarding_table(topo)
    fmt = PacketFormat(topo.nodes, PAYLOAD)
    mw = simulate(table, make_traffic(fmt, "allgather-multiwrite", packets=2), PAYLOAD)
    uc = simulate(table, make_traffic(fmt, "allgather-unicast", packets=2), PAYLOAD)
    for r in (mw, uc):
        assert r["delivered"] == r["expected"] == topo.nodes * (topo.nodes - 1) * 2
        assert not r["deadlock"] and r["errors"] == []
    hops = table.hops()
    unicast_hops = 2 * fmt.packet_flits * sum(map(sum, hops))
    assert uc["flit_hops"] == unicast_hops
    assert mw["flit_hops"] < unicast_hops


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_network_rejects_a_cyclic_table():
    t = xy_table(build("mesh", 2, 2))
    t.ports[0][3], t.ports[1][2], t.ports[3][0], t.ports[2][1] = "E", "S", "W", "N"
    with pytest.raises(DeadlockError):
        PacketNetwork(t, PAYLOAD)
    gc.collect()  # the refused network is never elaborated: let its warning fire here, where it is ignored


def test_scoreboard_catches_duplicates_losses_and_corruption():
    """The reference must be able to fail: feed it a hand-made bad delivery stream."""
    fmt = PacketFormat(6, 2)
    tr = make_traffic(fmt, "multicast", bitmap=0b001010, src=0, packets=1)
    sb = Scoreboard(fmt, tr, lane_nodes=[1, 3, 2])

    def flit(first, last, body):
        return first | last << 1 | body << 2

    sb.inject(0, 0, flit(1, 0, fmt.header_bits(1, 0, 0)))
    sb.inject(1, 0, flit(0, 0, 0b001010))  # the bitmap word (6 nodes: one word)

    def copy(lane, node, cycle, word2=None):
        sb.eject(cycle, lane, flit(1, 0, fmt.header_bits(0, 0, 0)))
        sb.eject(cycle, lane, flit(0, 0, 1 << node))
        sb.eject(cycle + 1, lane, flit(0, 0, fmt.payload_word(0, 0, 1)))
        sb.eject(cycle + 2, lane, flit(0, 1, word2 if word2 is not None else fmt.payload_word(0, 0, 2)))

    copy(0, 1, 5)
    copy(0, 1, 9)  # duplicate at node 1
    copy(2, 2, 9)  # node 2 is not a destination
    r = sb.results(20, [0], False)
    assert (r["delivered"], r["duplicates"], r["misdelivered"], r["lost"]) == (1, 1, 1, 1)  # node 3 lost
    copy(1, 3, 12, word2=123)  # node 3's copy arrives corrupted
    r = sb.results(20, [0], False)
    assert (r["corrupted"], r["lost"]) == (1, 0)
    sb = Scoreboard(fmt, tr, lane_nodes=[1, 3, 2])  # a fresh run: node 1's copy names node 3 in its bitmap word
    sb.inject(0, 0, flit(1, 0, fmt.header_bits(1, 0, 0)))
    sb.inject(1, 0, flit(0, 0, 0b001010))
    sb.eject(5, 0, flit(1, 0, fmt.header_bits(0, 0, 0)))
    sb.eject(6, 0, flit(0, 0, 1 << 3))
    sb.eject(7, 0, flit(0, 0, fmt.payload_word(0, 0, 1)))
    sb.eject(8, 0, flit(0, 1, fmt.payload_word(0, 0, 2)))
    assert (sb.results(10, [0], False)["corrupted"], sb.delivered) == (1, 0)


def test_tree_sum_of_hundreds_of_terms_simulates():
    """The 8x8 networks' counters add hundreds of one-bit terms (224-256 eject lanes); a linear
    chain of adds was too deep for the Amaranth simulator's compiler (RecursionError)."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    from equimesh.rtl.packet_network import tree_sum

    bits = [Signal(name=f"b{i}") for i in range(300)]
    total = Signal(range(301))
    m = Module()
    m.d.comb += total.eq(tree_sum(bits))
    sim = Simulator(m)
    got = {}

    async def bench(ctx):
        for i, b in enumerate(bits):
            ctx.set(b, i % 3 == 0)
        got["total"] = ctx.get(total)

    sim.add_testbench(bench)
    sim.run()
    assert got["total"] == 100


def test_generator_tables_load_in_groups(monkeypatch):
    """Above TABLE_BITS of bitmaps per frame (16x16 and up) the host loads the generators' tables a
    group of nodes at a time. A 6-node network with 64 table bits per frame loads in 3 groups of 2;
    the scoreboard checks every injected header against the pattern's table, so a node that got
    another node's table, or an entry at the wrong address, is an error."""
    from equimesh.rtl import packet_network
    from equimesh.rtl.packet_network import TrafficLoad
    from equimesh.sim.traffic import traffic_load

    monkeypatch.setattr(packet_network, "TABLE_BITS", 64)
    topo = build("equimesh", 2, 3)
    fmt = PacketFormat(topo.nodes, 2)
    traffic = make_traffic(fmt, "allgather-unicast", packets=2)  # a different bitmap per entry and node
    load = TrafficLoad(topo.nodes)
    assert (load.group, load.groups) == (2, 3)
    assert traffic_load(fmt, traffic, 0.0).frames == 3 * len(traffic.roms[0]) + 1
    r = simulate(forwarding_table(topo), traffic, 2)
    assert r["errors"] == [] and not r["deadlock"]
    assert r["delivered"] == r["expected"] == topo.nodes * (topo.nodes - 1) * 2


@pytest.mark.parametrize("backlog", [0, 1, 3])
def test_a_source_queue_holds_at_most_its_backlog(backlog):
    """A generator that creates a packet every cycle (rate 2**16) and is never taken from: with a
    backlog it stops at that many queued packets; without one (0) it creates one packet per cycle."""
    from amaranth.sim import Simulator

    from equimesh.rtl.packet_endpoints import Generator

    dut = Generator(PacketFormat(4, 1), 4)
    seen = []

    async def bench(ctx):
        ctx.set(dut.seed, 1)
        ctx.set(dut.rate, 2**16)
        ctx.set(dut.limit, 2**32 - 1)
        ctx.set(dut.length, 1)
        ctx.set(dut.backlog, backlog)
        ctx.set(dut.o.ready, 0)
        ctx.set(dut.stop, 1)
        ctx.set(dut.data, 0b0010)  # the limit is kept with a table write
        ctx.set(dut.we, 1)
        await ctx.tick()
        ctx.set(dut.we, 0)
        ctx.set(dut.stop, 0)
        for _ in range(12):
            await ctx.tick()
            seen.append((ctx.get(dut.created), ctx.get(dut.sent)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    created = [c for c, _ in seen]
    assert all(s == 0 for _, s in seen)  # nothing was taken
    if backlog:
        assert max(created) == created[-1] == backlog
    else:
        assert created[-1] >= 10 and created == sorted(created)


def test_a_sink_draws_its_stall_once_per_offered_flit():
    """A sink lane's ``ready`` is ``state >= stall`` of a 16-bit Galois LFSR (taps 0xB400) that starts at
    the lane's seed and steps only in cycles in which the lane offers a flit; the expected sequence
    comes from the LFSR's definition, stepped in Python, over an offer pattern with gaps."""
    from amaranth.sim import Simulator

    from equimesh.rtl.packet_endpoints import Sink

    dut = Sink(PacketFormat(4, 1), 2)
    offers = [1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1] * 3
    stall, seeds = 0x6000, (0xACE1, 0x1234)
    want = []
    state = list(seeds)
    for valid in offers:
        want.append(tuple(int(x >= stall) for x in state))
        if valid:  # lane 0 offers in these cycles; lane 1 in every cycle
            state[0] = (state[0] >> 1) ^ 0xB400 if state[0] & 1 else state[0] >> 1
        state[1] = (state[1] >> 1) ^ 0xB400 if state[1] & 1 else state[1] >> 1
    got = []

    async def bench(ctx):
        ctx.set(dut.stall, stall)
        for k, seed in enumerate(seeds):
            ctx.set(dut.seed[k], seed)
        ctx.set(dut.i[1].valid, 1)
        for valid in offers:
            ctx.set(dut.i[0].valid, valid)
            got.append((ctx.get(dut.i[0].ready), ctx.get(dut.i[1].ready)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == want
    assert len({w[0] for w in want}) == 2  # the stall both refuses and takes within the pattern
