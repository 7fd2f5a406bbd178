"""Fixed-width packet flits (seed 004, Section 6.4): the destination bitmap follows the header in
``ceil(nodes / flit_bits)`` words, at every network size. Hand-computed sizes, the header's minimum
width, and networks whose bitmap spans two words, checked flit by flit by the Python scoreboard."""

import pytest

from equimesh.rtl.packet import PacketError, PacketFormat, bitmap_overhead
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.topology import build
from equimesh.sim.traffic import make_traffic, simulate


@pytest.mark.parametrize(
    "nodes,flit_bits,words", [(16, 64, 1), (64, 64, 1), (65, 64, 2), (256, 64, 4), (1024, 64, 16), (36, 32, 2)]
)
def test_bitmap_words_are_nodes_over_flit_bits_rounded_up(nodes, flit_bits, words):
    fmt = PacketFormat(nodes, 8, flit_bits)
    assert (fmt.bitmap_flits, fmt.packet_flits, fmt.flit.size) == (words, 1 + words + 8, flit_bits + 2)


def test_bitmap_words_split_a_wide_bitmap_in_node_order():
    fmt = PacketFormat(100, 1)
    assert fmt.bitmap_words((1 << 3) | (1 << 64) | (1 << 99)) == [1 << 3, 1 | 1 << 35]


def test_a_flit_too_narrow_for_the_header_names_the_minimum():
    # header: opcode 1 bit + src 4 bits (16 nodes) + seq 24 bits = 29 bits
    with pytest.raises(PacketError, match="minimum flit width is 29 bits"):
        PacketFormat(16, 2, flit_bits=28)
    assert PacketFormat(16, 2, flit_bits=29).bitmap_flits == 1


def test_bitmap_overhead_beside_seed_004():
    """Seed 004 Section 6.4: 1,024 bits of a 4,096-byte payload, 3.13 %."""
    assert bitmap_overhead(1024, 4096) == 1024 / 32768 == 0.03125
    assert bitmap_overhead(1024, 256) == 0.5


def test_two_bitmap_words_exactly_once():
    """6x6 EquiMesh with 32-bit flits: 36 nodes, two bitmap words (the second holds nodes 32..35).
    Random fan-out 1..35 per packet, sinks stalling: every destination gets one intact copy."""
    import random

    topo = build("equimesh", 6, 6)
    fmt = PacketFormat(topo.nodes, 2, flit_bits=32)
    assert fmt.bitmap_flits == 2
    rng = random.Random(4)
    tr = make_traffic(fmt, "multicast", fanout=1, rate=0.1, seed=4)
    tr.roms = [
        [fmt.bitmap(rng.sample([d for d in range(36) if d != s], rng.randint(1, 35)), s) for _ in range(16)]
        for s in range(36)
    ]
    # 10 injection cycles: the generators queue about 35 packets (about 570 copies), delivered in about
    # 260 cycles (100 injection cycles queued ten times as many, for the same check on a longer run).
    r = simulate(forwarding_table(topo), tr, 2, cycles=10, stall=0.3, flit_bits=32)
    assert r["errors"] == [] and not r["deadlock"]
    assert (r["duplicates"], r["lost"], r["corrupted"], r["misdelivered"]) == (0, 0, 0, 0)
    assert r["delivered"] == r["expected"] > 100


def test_bitmap_overhead_command(capsys):
    """1,024 nodes, 64-bit flits: 16 bitmap flits. 4,096 B = 512 payload flits: 1024 / 32768 of the payload,
    16 / (1 + 16 + 512) of the flits; 256 B = 32 flits: 1024 / 2048 and 16 / 49."""
    import json

    from equimesh.cli import main

    assert main(["bitmap-overhead", "--payloads", "256,4096", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["bitmap_flits"], r["packet_flits"]) for r in rows] == [(16, 49), (16, 529)]
    assert [r["share_of_payload"] for r in rows] == [0.5, 0.03125]
    assert [r["share_of_flits"] for r in rows] == [16 / 49, 16 / 529]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--payloads", "100"], "a 100-byte payload is not a whole number of 64-bit flits"),
        (["--flit-bits", "8"], "the minimum flit width is 35 bits"),
        (["--payloads", "x"], "--payloads entries must be integers"),
    ],
)
def test_bitmap_overhead_bad_input_is_one_line(argv, message, capsys):
    from equimesh.cli import main

    assert main(["bitmap-overhead", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_a_stamp_too_narrow_for_the_run_reports_no_latency():
    """36 nodes at 32-bit flits: opcode, src (6 bits) and seq (24) leave the header one stamp bit, so a
    latency is known mod 2. A copy delivered at cycle 10 with stamp 1 (run from cycle 0) may have taken
    1, 3, 5, 7 or 9 cycles: no latency. One delivered at cycle 9, one cycle after a start at 8, took 1
    (stamp 0 = cycle 8 mod 2). At 64-bit flits the stamp has 32 bits: 10 - 1 = 9 cycles, exactly."""
    import numpy as np

    from equimesh.sim.traffic import copy_latency

    narrow = PacketFormat(36, 2, flit_bits=32)
    assert narrow.stamp_bits == 1
    none = {"latency_mean": None, "latency_p99": None, "latency_copies": 0}
    assert copy_latency(narrow, np.array([[1, 10]]), 0) == none
    assert copy_latency(narrow, np.array([[0, 9]]), 8) == {"latency_mean": 1.0, "latency_p99": 1.0, "latency_copies": 1}
    wide = PacketFormat(36, 2)
    assert copy_latency(wide, np.array([[1, 10]]), 0) == {"latency_mean": 9.0, "latency_p99": 9.0, "latency_copies": 1}


@pytest.mark.parametrize(
    "words,errors",
    [
        ((0, 1 << 1), 0),  # node 33 alone: bit 1 of word 1 (nodes 32..35)
        ((0, 0), 1),  # word 1 lost the node's bit
        ((0, 1 << 1 | 1), 1),  # word 1 also names node 32
        ((1 << 1, 0), 2),  # the bit in word 0 (node 1) instead: both words wrong
    ],
)
def test_the_checker_compares_each_bitmap_word_with_the_nodes_own(words, errors):
    """The compiled soak's hardware checker (``rtl/packet_endpoints.py``, ``Checker``) at a node whose bit
    lies in the second of two bitmap words (36 nodes, 32-bit flits; node 33). By seed 004 Section 4.1 a
    copy delivered to a node carries that node alone, so the words must be 0 and ``1 << 1`` (node 33 =
    32 + 1); each wrong word of the copy is one header error. The flits come from ``PacketFormat.packet``."""
    from amaranth.sim import Simulator

    from equimesh.rtl.packet import Opcode
    from equimesh.rtl.packet_endpoints import Checker

    fmt = PacketFormat(36, 2, flit_bits=32)
    flits = fmt.packet(Opcode.WRITE, 5, 1, 1 << 33)
    flits[1:3] = [(0, 0, w) for w in words]
    dut = Checker(fmt, 1)
    got = {}

    async def bench(ctx):
        ctx.set(dut.own, 1 << 33)
        lane = dut.i[0]
        for first, last, body in flits:
            ctx.set(lane.payload.as_value(), first | last << 1 | body << 2)
            ctx.set(lane.valid, 1)
            ctx.set(lane.ready, 1)
            await ctx.tick()
        ctx.set(lane.valid, 0)
        await ctx.tick()
        got.update(count=ctx.get(dut.count), header=ctx.get(dut.header_errors), payload=ctx.get(dut.payload_errors))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == {"count": 1, "header": errors, "payload": 0}
