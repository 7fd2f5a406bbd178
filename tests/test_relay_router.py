"""One packet router in the Amaranth simulator: mask split, header rewrite, and the multicast
backpressure contract (seed 004, Section 4.3.3; FlooNoC: an input flit is released only after
every branch took it)."""

import pytest
from amaranth.sim import Simulator

from equimesh.rtl.packet import Opcode, PacketFormat
from equimesh.rtl.packet_router import PacketConfig, PacketRouter
from equimesh.schedules.routing import xy_table
from equimesh.schedules.topology import build

PORTS = ["N", "E", "S", "W"]


def _router(pipeline=1):
    topo = build("mesh", 4, 4)
    table = xy_table(topo)
    fmt = PacketFormat(topo.nodes, payload_flits=3)
    reach = {p: table.reach[5][p] for p in PORTS}
    return fmt, table, PacketRouter(PacketConfig(fmt, 5, reach, depth=fmt.packet_flits + 2, pipeline=pipeline), PORTS)


def _flits(fmt, src, seq, bitmap):
    head = {"first": 1, "last": 0, "body": {"header": {"opcode": Opcode.MULTIWRITE, "src": src, "seq": seq,
                                                      "bitmap": bitmap}}}
    out = [head]
    for i in range(1, fmt.payload_flits + 1):
        out.append({"first": 0, "last": int(i == fmt.payload_flits),
                    "body": {"payload": fmt.payload_word(src, seq, i)}})
    return out


def _run(stall=None, pipeline=1):
    """Inject one MultiWrite at router 5 of the 4x4 mesh (XY) for nodes {1, 4, 6, 9, 13, 15};
    ``stall = (port, first, end)``: that port refuses flits in cycles first..end-1.
    Returns what each port took, per cycle, and the cycles the input released a flit."""
    fmt, table, dut = _router(pipeline)
    dests = [1, 4, 6, 9, 13, 15]
    bitmap = fmt.bitmap(dests, src=5)
    got = {p: [] for p in PORTS}
    released = []

    async def bench(ctx):
        for p in PORTS:
            ctx.set(getattr(dut, f"o_{p}").ready, 1)
        flits = _flits(fmt, 5, 7, bitmap)
        cycle = 0
        while flits or cycle < 12:
            if stall:
                port, first, end = stall
                ctx.set(getattr(dut, f"o_{port}").ready, int(not first <= cycle < end))
            if flits:
                ctx.set(dut.inject.payload, flits[0])
                ctx.set(dut.inject.valid, 1)
            else:
                ctx.set(dut.inject.valid, 0)
            await ctx.delay(1e-7)
            if ctx.get(dut.inject.valid) and ctx.get(dut.inject.ready):
                released.append(cycle)
                flits.pop(0)
            for p in PORTS:
                o = getattr(dut, f"o_{p}")
                if ctx.get(o.valid) and ctx.get(o.ready):
                    got[p].append((cycle, ctx.get(o.payload)))
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
        assert h.bitmap == parts[p], f"port {p}: bitmap {h.bitmap:#x}, want {parts[p]:#x}"
        single = parts[p] & (parts[p] - 1) == 0
        assert h.opcode == (Opcode.WRITE if single else Opcode.MULTIWRITE)
        assert (h.src, h.seq) == (5, 7)
        for i, f in enumerate(flits[1:], start=1):
            assert f.body.payload == fmt.payload_word(5, 7, i)
        assert flits[-1].last


@pytest.mark.parametrize("pipeline", [0, 1])
def test_input_released_only_when_every_branch_took_the_flit(pipeline):
    """S refuses payload flits in cycles 2..5, shifted by the header's delay ``d``: with pipeline 1
    the header waits a cycle in stage Q (its route registered) and one in stage G (its grant
    registered), so it leaves in cycle 2 instead of 0 (rtl/relay.py). The other branches take each
    flit once and wait."""
    d = 2 * pipeline
    fmt, table, bitmap, got, released = _run(stall=("S", 2 + d, 6 + d), pipeline=pipeline)
    assert released[0] == got["S"][0][0] == got["N"][0][0] == d  # header: all branches together
    for p in PORTS:
        assert [f.as_value().value for _, f in got[p]] == [f.as_value().value for _, f in _run(pipeline=pipeline)[3][p]]
    for i, (cycle, _) in enumerate(got["S"]):
        # flit i leaves the input in the cycle its last branch (here always S) takes it
        assert released[i] == cycle
        for p in ("N", "E", "W"):
            assert got[p][i][0] <= cycle
    assert got["S"][2][0] == 6 + d and got["N"][2][0] == 2 + d  # the other branches ran ahead by one flit
    assert got["N"][3][0] == 7 + d  # and waited there: flit 3 only after S took flit 2


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
    with pytest.raises(AssertionError, match="body flit arrived without its header"):
        sim.run()
