"""The spill register (rtl/spill.py, FlooNoC's cut) and the packet path with it (pipeline 2, seed 004
Section 4): its handshake by hand, against a two-entry queue, and the network's every-copy-once check."""

import random

import pytest
from amaranth.sim import Simulator

from equimesh.rtl.spill import SpillRegister

# Per cycle: (i.valid, i.payload, o.ready) -> (i.ready, o.valid, o.payload if o.valid), worked by hand.
# 0: empty, takes 1. 1: shows 1, refused; 2 waits behind it. 2: full, takes nothing. 3: 1 leaves; the
# register was full at the edge, so still no room (ready does not follow o.ready). 4: 2 leaves, 3 comes.
# 5: 3 leaves. 6: empty. 7-10: a stream passes one a cycle, a cycle late; 11: its last flit.
SCRIPT = [
    ((1, 1, 1), (1, 0, None)),
    ((1, 2, 0), (1, 1, 1)),
    ((1, 3, 0), (0, 1, 1)),
    ((1, 3, 1), (0, 1, 1)),
    ((1, 3, 1), (1, 1, 2)),
    ((0, 0, 1), (1, 1, 3)),
    ((0, 0, 1), (1, 0, None)),
    ((1, 4, 1), (1, 0, None)),
    ((1, 5, 1), (1, 1, 4)),
    ((1, 6, 1), (1, 1, 5)),
    ((0, 0, 1), (1, 1, 6)),
    ((0, 0, 1), (1, 0, None)),
]


def _drive(dut, stimulus):
    """Apply (i.valid, i.payload, o.ready) per cycle; return (i.ready, o.valid, o.payload) per cycle."""
    seen = []

    async def bench(ctx):
        for valid, payload, ready in stimulus:
            ctx.set(dut.i.valid, valid)
            ctx.set(dut.i.payload, payload)
            ctx.set(dut.o.ready, ready)
            await ctx.delay(1e-8)
            seen.append((ctx.get(dut.i.ready), ctx.get(dut.o.valid), ctx.get(dut.o.payload)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


def test_spill_register_handshake_by_hand():
    seen = _drive(SpillRegister(8), [s for s, _ in SCRIPT])
    assert [(r, v, p if v else None) for r, v, p in seen] == [want for _, want in SCRIPT]


def test_spill_register_is_a_two_entry_queue():
    """Random traffic against a queue of at most two flits: ready while it holds fewer than two, the
    oldest flit presented; ``i.ready`` is never a function of this cycle's ``o.ready``."""
    rng = random.Random(15)
    stimulus = [(rng.random() < 0.7, rng.randrange(256), rng.random() < 0.6) for _ in range(300)]
    seen = _drive(SpillRegister(8), stimulus)
    queue = []
    for (valid, payload, ready), (i_ready, o_valid, o_payload) in zip(stimulus, seen):
        assert (i_ready, o_valid) == (len(queue) < 2, bool(queue))
        if queue:
            assert o_payload == queue[0]
            if ready:
                queue.pop(0)
        if valid and i_ready:
            queue.append(payload)


@pytest.mark.parametrize("stall", [0.0, 0.4], ids=["free", "backpressure"])
def test_random_bitmaps_exactly_once_pipeline_2(stall):
    """As tests/test_relay_network.py at pipeline 1, on the 2x3 EquiMesh: every destination gets one
    intact copy, nothing lost or duplicated behind the spill registers, no deadlock."""
    from equimesh.rtl.packet import PacketFormat
    from equimesh.schedules.routing import forwarding_table
    from equimesh.schedules.topology import build
    from equimesh.sim.traffic import simulate
    from test_relay_network import PAYLOAD, _random_bitmaps

    topo = build("equimesh", 2, 3)
    table = forwarding_table(topo)
    fmt = PacketFormat(topo.nodes, PAYLOAD)
    r = simulate(table, _random_bitmaps(fmt, seed=23), PAYLOAD, cycles=400, stall=stall, pipeline=2)
    assert r["errors"] == [] and not r["deadlock"]
    assert r["packets"] >= 5 * topo.nodes and r["link_utilization"] > 0.08
    assert (r["duplicates"], r["lost"], r["corrupted"], r["misdelivered"]) == (0, 0, 0, 0)
    assert r["delivered"] == r["expected"]
