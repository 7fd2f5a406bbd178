"""The schedule compiler's output by hand (issue 37): the table entry layout as docs/architecture.md
("Schedule tables in hardware") defines it, and every table, lane map and count of hand-made schedules on
the 2x2 mesh, derived in the comments from the compiler's rules (the module docstring of rtl/rom.py and
docs/rtl.md): a received AllGather chunk goes to the lane of its in-port, a node's own chunk c to lane
``ports[c mod P]``, each chunk to the lowest free slot of its lane; a ReduceScatter partial lives in the
lane of the port it is later sent from (the root's in its home lane) and every partial received is added
there; an AllReduce's AllGather reuses the slots of spent partials. No expectation is read from the
compiler's output. Pure Python, no simulator.
"""

import re

import numpy as np
import pytest
from amaranth.hdl import Shape
from test_rtl_rom import _flooding_allgather

import equimesh.rtl.rom as rom
from equimesh.rtl.rom import (
    RomError,
    compile_schedule,
    design_ports,
    entry_layout,
    lane_op_layout,
    out_sel_layout,
    same_topology,
)
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.storage import StorageConflict, check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import Topology, build, default_ring_dirs

# The 2x2 mesh, nodes 0 1 / 2 3. Link ids: 0: 0->1 (E->W), 1: 1->0 (W->E), 2: 0->2 (S->N), 3: 2->0
# (N->S), 4: 1->3 (S->N), 5: 3->1 (N->S), 6: 2->3 (E->W), 7: 3->2 (W->E). Lanes (the ports with a
# link, canonical order N E S W): node 0 [E, S], node 1 [S, W], node 2 [N, E], node 3 [N, W]; lane i of
# a node is also its out-port i and its in-port i.
T = build("mesh", 2, 2)
LANES = [("E", "S"), ("S", "W"), ("N", "E"), ("N", "W")]

# AllGather, K = 1 (the 2-step schedule of tests/test_oracle_boundaries.py): step 0 every link carries
# its source's chunk; step 1 each node passes on, across its row, the chunk its column neighbour sent.
AG = [
    [[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 2, 0], [4, 1, 0], [5, 3, 0], [6, 2, 0], [7, 3, 0]],
    [[1, 3, 0], [0, 2, 0], [7, 1, 0], [6, 0, 0]],
]
# ReduceScatter, K = 1: AG reversed in time and direction.
RS = [
    [[0, 3, 0], [1, 2, 0], [6, 1, 0], [7, 0, 0]],
    [[0, 1, 0], [1, 0, 0], [2, 2, 0], [3, 0, 0], [4, 3, 0], [5, 1, 0], [6, 3, 0], [7, 2, 0]],
]


def _phase(collective, steps):
    return Phase(collective, [np.array(s, dtype=np.int64).reshape(-1, 3) for s in steps])


def _sched(collective, steps, k=1):
    return Schedule(collective, "hand", k, T, [_phase(collective, steps)])


def _allreduce():
    return Schedule("allreduce", "hand", 1, T, [_phase("reducescatter", RS), _phase("allgather", AG)])


def _twice(steps):
    """K = 2: chunk 0 by ``steps``, then chunk 1 by the same steps after them."""
    return list(steps) + [[[l, r, 1] for l, r, _ in s] for s in steps]


# Expected tables, written sparsely: READS[(step, node, lane)] = rd_slot, WRITES[(step, node, lane)] =
# (wr_slot, wr_mask), OUTS[(step, node, out-port)] = lane; every other field is 0.
#
# AllGather. Initial: each node's chunk (v, 0) in lane 0 (ports[0 mod 2]), slot 0.
# Step 0: every node reads lane 0 slot 0 onto both out-ports. Arrivals go to the in-port's lane, lowest
# free slot: node 0 gets root 1 on E (lane 0, slot 1) and root 2 on S (lane 1, slot 0); node 1 root 0 on
# W (lane 1, slot 0) and root 3 on S (lane 0, slot 1); node 2 root 0 on N (lane 0, slot 1) and root 3 on
# E (lane 1, slot 0); node 3 root 1 on N (lane 0, slot 1) and root 2 on W (lane 1, slot 0).
# Step 1: link 1 (1->0, out-port W = 1) root 3 from node 1's lane 0 slot 1 into node 0's lane 0 slot 2;
# link 0 (0->1, out-port E = 0) root 2 from node 0's lane 1 slot 0 into node 1's lane 1 slot 1; link 7
# (3->2, out-port W = 1) root 1 from node 3's lane 0 slot 1 into node 2's lane 1 slot 1; link 6 (2->3,
# out-port E = 1) root 0 from node 2's lane 0 slot 1 into node 3's lane 1 slot 1.
# An AllGather lane is written only from its own in-port: wr_mask = 1 << lane.
AG_READS = {(0, v, 0): 0 for v in range(4)} | {(1, 1, 0): 1, (1, 0, 1): 0, (1, 3, 0): 1, (1, 2, 0): 1}
AG_OUTS = {(0, v, o): 0 for v in range(4) for o in range(2)} | {(1, 1, 1): 0, (1, 0, 0): 1, (1, 3, 1): 0, (1, 2, 1): 0}
AG_WRITES = {
    (0, 0, 0): (1, 0b01),
    (0, 0, 1): (0, 0b10),
    (0, 1, 1): (0, 0b10),
    (0, 1, 0): (1, 0b01),
    (0, 2, 0): (1, 0b01),
    (0, 2, 1): (0, 0b10),
    (0, 3, 0): (1, 0b01),
    (0, 3, 1): (0, 0b10),
    (1, 0, 0): (2, 0b01),
    (1, 1, 1): (1, 0b10),
    (1, 2, 1): (1, 0b10),
    (1, 3, 1): (1, 0b10),
}
AG_FINAL = [
    {(0, 0): (0, 0), (1, 0): (0, 1), (2, 0): (1, 0), (3, 0): (0, 2)},
    {(1, 0): (0, 0), (0, 0): (1, 0), (3, 0): (0, 1), (2, 0): (1, 1)},
    {(2, 0): (0, 0), (0, 0): (0, 1), (3, 0): (1, 0), (1, 0): (1, 1)},
    {(3, 0): (0, 0), (1, 0): (0, 1), (2, 0): (1, 0), (0, 0): (1, 1)},
]

# ReduceScatter. Each partial starts in the lane of the port its node sends it from; the root's own in
# lane 0 (its home); slots by root order. Node 0 sends root 3 (step 0) and root 1 (step 1) on E (lane
# 0), root 2 on S (lane 1): root 0 -> (0, 0), root 1 -> (0, 1), root 2 -> (1, 0), root 3 -> (0, 2).
# Node 1 sends roots 2 and 0 on W (lane 1), root 3 on S (lane 0): (1, 0), (0, 0), (1, 1), (0, 1) for
# roots 0..3. Node 2 sends root 1 and 3 on E (lane 1), root 0 on N (lane 0): (0, 0), (1, 0), (0, 1),
# (1, 1). Node 3 sends roots 0 and 2 on W (lane 1), root 1 on N (lane 0): (1, 0), (0, 0), (1, 1), (0, 1).
RS_INITIAL = [
    {(0, 0): (0, 0), (1, 0): (0, 1), (2, 0): (1, 0), (3, 0): (0, 2)},
    {(0, 0): (1, 0), (1, 0): (0, 0), (2, 0): (1, 1), (3, 0): (0, 1)},
    {(0, 0): (0, 0), (1, 0): (1, 0), (2, 0): (0, 1), (3, 0): (1, 1)},
    {(0, 0): (1, 0), (1, 0): (0, 0), (2, 0): (1, 1), (3, 0): (0, 1)},
]
# Out-port p always sends from lane p. Step 0: node 0 reads root 3 (lane 0, slot 2), node 1 root 2
# (lane 1, slot 1), node 2 root 1 (lane 1, slot 0), node 3 root 0 (lane 1, slot 0); each receiver adds
# into that partial's place: node 1 root 3 in (0, 1) from in-port W (bit 1), node 0 root 2 in (1, 0) from
# E (bit 0), node 3 root 1 in (0, 0) from W (bit 1), node 2 root 0 in (0, 0) from E (bit 1).
# Step 1: every link; every node reads both lanes and adds both in-ports into its own root's place.
RS_READS = {
    (0, 0, 0): 2,
    (0, 1, 1): 1,
    (0, 2, 1): 0,
    (0, 3, 1): 0,
    (1, 0, 0): 1,
    (1, 0, 1): 0,
    (1, 1, 1): 0,
    (1, 1, 0): 1,
    (1, 2, 0): 0,
    (1, 2, 1): 1,
    (1, 3, 0): 0,
    (1, 3, 1): 1,
}
RS_OUTS = {(0, 0, 0): 0, (0, 1, 1): 1, (0, 2, 1): 1, (0, 3, 1): 1} | {(1, v, o): o for v in range(4) for o in range(2)}
RS_WRITES = {
    (0, 1, 0): (1, 0b10),
    (0, 0, 1): (0, 0b01),
    (0, 3, 0): (0, 0b10),
    (0, 2, 0): (0, 0b10),
    (1, 0, 0): (0, 0b11),
    (1, 1, 0): (0, 0b11),
    (1, 2, 0): (1, 0b11),
    (1, 3, 0): (1, 0b11),
}
RS_FINAL = [{(0, 0): (0, 0)}, {(1, 0): (0, 0)}, {(2, 0): (0, 1)}, {(3, 0): (0, 1)}]

# AllReduce = RS then AG (steps 2, 3). After the RS only each root's sum is live; the freed slots are
# reused lowest first. Node 0: lane 0 free {1, 2}, lane 1 free {0}; node 1: lane 0 {1}, lane 1 {0, 1};
# nodes 2 and 3: lane 0 {0}, lane 1 {0, 1}. Step 2: every node reads its sum onto both out-ports (nodes 0
# and 1 from slot 0, nodes 2 and 3 from slot 1); node 0 gets root 1 in (0, 1), root 2 in (1, 0); node 1
# root 0 in (1, 0), root 3 in (0, 1); node 2 root 0 in (0, 0), root 3 in (1, 0); node 3 root 1 in (0, 0),
# root 2 in (1, 0). Step 3 forwards as AG's step 1 does: node 1 reads (0, 1), node 0 (1, 0), node 3
# (0, 0), node 2 (0, 0); node 0 writes (0, 2), nodes 1, 2, 3 write (1, 1).
AR_READS = (
    RS_READS | {(2, v, 0): (0, 0, 1, 1)[v] for v in range(4)} | {(3, 1, 0): 1, (3, 0, 1): 0, (3, 3, 0): 0, (3, 2, 0): 0}
)
AR_OUTS = RS_OUTS | {(s + 2, v, o): lane for (s, v, o), lane in AG_OUTS.items()}
AR_AG_WRITES = {
    (2, 0, 0): (1, 0b01),
    (2, 0, 1): (0, 0b10),
    (2, 1, 1): (0, 0b10),
    (2, 1, 0): (1, 0b01),
    (2, 2, 0): (0, 0b01),
    (2, 2, 1): (0, 0b10),
    (2, 3, 0): (0, 0b01),
    (2, 3, 1): (0, 0b10),
    (3, 0, 0): (2, 0b01),
    (3, 1, 1): (1, 0b10),
    (3, 2, 1): (1, 0b10),
    (3, 3, 1): (1, 0b10),
}
AR_FINAL = [
    {(0, 0): (0, 0), (1, 0): (0, 1), (2, 0): (1, 0), (3, 0): (0, 2)},
    {(1, 0): (0, 0), (0, 0): (1, 0), (3, 0): (0, 1), (2, 0): (1, 1)},
    {(2, 0): (0, 1), (0, 0): (0, 0), (3, 0): (1, 0), (1, 0): (1, 1)},
    {(3, 0): (0, 1), (1, 0): (0, 0), (2, 0): (1, 0), (0, 0): (1, 1)},
]


def _expected(steps, reads, writes, outs, acc_steps):
    """The eight table arrays of every node, [steps, 2 lanes] each, from the sparse lists."""
    z = lambda: [np.zeros((steps, 2), dtype=np.int64) for _ in range(4)]  # noqa: E731
    e = {name: z() for name in ("rd_en", "rd_slot", "wr_en", "wr_slot", "wr_acc", "wr_mask", "out_valid", "out_lane")}
    for (s, v, lane), slot in reads.items():
        e["rd_en"][v][s, lane], e["rd_slot"][v][s, lane] = 1, slot
    for (s, v, lane), (slot, mask) in writes.items():
        e["wr_en"][v][s, lane], e["wr_slot"][v][s, lane], e["wr_mask"][v][s, lane] = 1, slot, mask
        e["wr_acc"][v][s, lane] = int(s in acc_steps)
    for (s, v, o), lane in outs.items():
        e["out_valid"][v][s, o], e["out_lane"][v][s, o] = 1, lane
    return e


def _check_tables(image, expected):
    for v, r in enumerate(image.routers):
        assert (r.node, r.ports, r.lanes) == (v, ("N", "E", "S", "W"), LANES[v])
        for name, want in expected.items():
            got = getattr(r, name)
            assert got.shape == want[v].shape and (got == want[v]).all(), (name, v, got.tolist(), want[v].tolist())


def test_allgather_tables_by_hand():
    image = compile_schedule(_sched("allgather", AG), 5, T)
    assert (image.collective, image.chunks, image.chunk_flits, image.steps) == ("allgather", 1, 5, 2)
    assert (image.slots, image.lane_flits, image.reduce) == (3, 15, False)  # node 0's lane 0 holds 3 chunks
    assert image.initial == [{(v, 0): (0, 0)} for v in range(4)]
    assert image.final == AG_FINAL
    assert image.link_transfers.tolist() == [2, 2, 1, 1, 1, 1, 2, 2]  # links 0, 1, 6, 7 carry both steps
    _check_tables(image, _expected(2, AG_READS, AG_WRITES, AG_OUTS, acc_steps=()))


def test_reducescatter_tables_by_hand():
    image = compile_schedule(_sched("reducescatter", RS), 1, T)
    assert (image.collective, image.steps, image.slots, image.reduce) == ("reducescatter", 2, 3, True)
    assert image.initial == RS_INITIAL
    assert image.final == RS_FINAL  # only the root's sums
    assert image.link_transfers.tolist() == [2, 2, 1, 1, 1, 1, 2, 2]
    _check_tables(image, _expected(2, RS_READS, RS_WRITES, RS_OUTS, acc_steps=(0, 1)))


def test_allreduce_reuses_spent_slots_by_hand():
    image = compile_schedule(_allreduce(), 2, T)
    assert (image.collective, image.steps, image.slots, image.reduce) == ("allreduce", 4, 3, True)
    assert image.initial == RS_INITIAL
    assert image.final == AR_FINAL
    assert image.link_transfers.tolist() == [4, 4, 2, 2, 2, 2, 4, 4]
    _check_tables(image, _expected(4, AR_READS, RS_WRITES | AR_AG_WRITES, AR_OUTS, acc_steps=(0, 1)))


def test_chunk_c_starts_in_lane_c_mod_p():
    # K = 2 on nodes of 2 lanes: chunk 0 in lane 0, chunk 1 in lane 1, each the lane's first slot.
    ag = compile_schedule(_sched("allgather", _twice(AG), k=2), 1, T)
    assert ag.initial == [{(v, 0): (0, 0), (v, 1): (1, 0)} for v in range(4)]
    # ReduceScatter, K = 2, node 0 (roots in order, chunk 0 before 1): its own chunks in lanes 0 and 1;
    # roots 1 and 3 are sent on E (lane 0), root 2 on S (lane 1).
    rs = compile_schedule(_sched("reducescatter", _twice(RS), k=2), 1, T)
    assert rs.initial[0] == {
        (0, 0): (0, 0),
        (0, 1): (1, 0),
        (1, 0): (0, 1),
        (1, 1): (0, 2),
        (2, 0): (1, 1),
        (2, 1): (1, 2),
        (3, 0): (0, 3),
        (3, 1): (0, 4),
    }


def _layout_fields(n, s):
    """The entry of docs/architecture.md as (name, offset, width), packed from bit 0 in the order shown."""
    sel = max(1, (n - 1).bit_length())
    op = [("rd_en", 1), ("rd_slot", s), ("wr_en", 1), ("wr_slot", s), ("wr_acc", 1), ("wr_mask", n)]
    out, off = [], 0
    for i in range(n):
        for name, w in op:
            out.append((f"lane{i}.{name}", off, w))
            off += w
    for i in range(n):
        for name, w in (("valid", 1), ("lane", sel)):
            out.append((f"out{i}.{name}", off, w))
            off += w
    return out, off


# (lanes, slots, S = max(1, ceil(log2 slots)), ceil(log2 lanes)) written out
@pytest.mark.parametrize(
    "n,slots,s,sel",
    [(2, 1, 1, 1), (2, 2, 1, 1), (2, 3, 2, 1), (3, 4, 2, 2), (4, 5, 3, 2), (5, 16, 4, 3), (6, 17, 5, 3), (4, 2, 1, 2)],
)
def test_entry_layout_is_the_documented_one(n, slots, s, sel):
    op, out = lane_op_layout(n, slots), out_sel_layout(n)
    assert [(name, Shape.cast(f.shape).width) for name, f in op] == [
        ("rd_en", 1),
        ("rd_slot", s),
        ("wr_en", 1),
        ("wr_slot", s),
        ("wr_acc", 1),
        ("wr_mask", n),
    ]
    assert [(name, Shape.cast(f.shape).width) for name, f in out] == [("valid", 1), ("lane", sel)]
    lay = entry_layout(n, slots)
    want, size = _layout_fields(n, s)
    assert lay.size == size == n * (3 + 2 * s + n) + n * (1 + sel)
    got = []
    for i in range(n):
        e = lay["lane"].offset + i * lay["lane"].shape.elem_shape.size
        got += [(f"lane{i}.{name}", e + f.offset, Shape.cast(f.shape).width) for name, f in op]
    for i in range(n):
        e = lay["out"].offset + i * lay["out"].shape.elem_shape.size
        got += [(f"out{i}.{name}", e + f.offset, Shape.cast(f.shape).width) for name, f in out]
    assert got == want


def test_entry_of_a_step_by_hand():
    ag = compile_schedule(_sched("allgather", AG), 1, T)
    e = ag.routers[0].entry(0)  # node 0, step 0 (AG_READS, AG_WRITES, AG_OUTS)
    assert e == {
        "lane": [
            {"rd_en": 1, "rd_slot": 0, "wr_en": 1, "wr_slot": 1, "wr_acc": 0, "wr_mask": 1},
            {"rd_en": 0, "rd_slot": 0, "wr_en": 1, "wr_slot": 0, "wr_acc": 0, "wr_mask": 2},
        ],
        "out": [{"valid": 1, "lane": 0}, {"valid": 1, "lane": 0}],
    }
    rs = compile_schedule(_sched("reducescatter", RS), 1, T)
    e = rs.routers[0].entry(1)  # node 0, step 1
    assert e == {
        "lane": [
            {"rd_en": 1, "rd_slot": 1, "wr_en": 1, "wr_slot": 0, "wr_acc": 1, "wr_mask": 3},
            {"rd_en": 1, "rd_slot": 0, "wr_en": 0, "wr_slot": 0, "wr_acc": 0, "wr_mask": 0},
        ],
        "out": [{"valid": 1, "lane": 0}, {"valid": 1, "lane": 1}],
    }
    assert all(type(x) is int for d in e["lane"] + e["out"] for x in d.values())


def test_rom_words_by_hand():
    ag = compile_schedule(_sched("allgather", AG), 1, T)
    # 2 lanes, 3 slots: S = 2, a lane op is 9 bits (rd_en 0, rd_slot 1-2, wr_en 3, wr_slot 4-5, wr_acc 6,
    # wr_mask 7-8), the out array starts at bit 18 (valid, lane: 2 bits each); 22 bits.
    # Node 0, step 0: lane 0 rd_en, wr_en, wr_slot 1, wr_mask 1; lane 1 wr_en, wr_mask 2; both outs valid
    # from lane 0.
    lane0 = 1 << 0 | 1 << 3 | 1 << 4 | 1 << 7
    lane1 = 1 << 3 | 2 << 7
    assert ag.rom_words(0)[0] == lane0 | lane1 << 9 | 1 << 18 | 1 << 20
    rs = compile_schedule(_sched("reducescatter", RS), 1, T)
    # Node 0, step 1: lane 0 rd_en, rd_slot 1, wr_en, wr_acc, wr_mask 3; lane 1 rd_en; out 0 from lane 0,
    # out 1 from lane 1.
    lane0 = 1 << 0 | 1 << 1 | 1 << 3 | 1 << 6 | 3 << 7
    assert rs.rom_words(0)[1] == lane0 | 1 << 9 | 1 << 18 | 0b11 << 20
    # The same entry in a design of 16 slots: S = 4, a lane op is 13 bits, the out array at bit 26.
    lane0 = 1 << 0 | 1 << 1 | 1 << 5 | 1 << 10 | 3 << 11
    assert rs.rom_words(0, slots=16)[1] == lane0 | 1 << 13 | 1 << 26 | 0b11 << 28
    assert len(rs.rom_words(3)) == 2
    assert (rs.layout(0).size, rs.layout(0, 16).size) == (22, 30)
    with pytest.raises(RomError, match=r"^the schedule needs 3 slots per lane; the design has 2$"):
        rs.rom_words(0, slots=2)
    with pytest.raises(RomError, match=r"^the schedule needs 3 slots per lane; the design has 2$"):
        rs.table_bits(slots=2)


def test_table_bits_pad_to_the_widest_router():
    # The 2x3 mesh has routers of 2 lanes (corners) and 3 lanes (nodes 1 and 4). With 16 slots (S = 4):
    # 2 lanes take 2 x 13 + 2 x 2 = 30 bits, 3 lanes 3 x 14 + 3 x 3 = 51 bits.
    t = build("mesh", 2, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 1, t)
    bits = image.table_bits(slots=16)
    assert bits.shape == (6, image.steps, 51) and bits.dtype == np.uint8
    assert set(np.unique(bits)) <= {0, 1}
    for v, r in enumerate(image.routers):
        n = len(r.lanes)
        size = 30 if n == 2 else 51
        assert n == (3 if v in (1, 4) else 2)
        assert not bits[v, :, size:].any()
        lay = entry_layout(n, 16)
        for s in range(image.steps):
            e = lay.from_bits(int("".join(str(b) for b in bits[v, s, :size][::-1]), 2))  # Amaranth decodes
            for i in range(n):
                op = e.lane[i]
                assert (op.rd_en, op.rd_slot, op.wr_en, op.wr_slot, op.wr_acc, op.wr_mask) == (
                    r.rd_en[s, i],
                    r.rd_slot[s, i],
                    r.wr_en[s, i],
                    r.wr_slot[s, i],
                    r.wr_acc[s, i],
                    r.wr_mask[s, i],
                )
                assert (e.out[i].valid, e.out[i].lane) == (r.out_valid[s, i], r.out_lane[s, i])
    assert image.table_bits(slots=16, width=60).shape == (6, image.steps, 60)
    assert (image.table_bits(slots=16, width=60)[..., :51] == bits).all()


def test_design_ports():
    assert design_ports(T, 0) == ("N", "E", "S", "W")  # node 0 has links on E and S only
    o = build("overflow", 3, 4)
    assert design_ports(o, 0) == ("N", "E", "S", "W", "X0", "X1")  # a corner: two overflow ports
    assert design_ports(o, 5) == ("N", "E", "S", "W")  # an inner node


def test_same_topology():
    links = build("mesh", 2, 2).links
    assert same_topology(T, build("mesh", 2, 2))
    assert not same_topology(T, Topology("torus", 2, 2, list(links)))  # kind
    assert not same_topology(T, Topology("mesh", 1, 4, list(links)))  # size
    assert not same_topology(T, Topology("mesh", 4, 1, list(links)))
    assert not same_topology(T, Topology("mesh", 2, 2, list(links[::-1])))  # order
    dirs = default_ring_dirs(3, 3)
    flipped = dict(dirs, top=not dirs["top"])
    assert not same_topology(build("equimesh", 3, 3, dirs), build("equimesh", 3, 3, flipped))


def test_refusals_name_the_networks():
    a, b = build("mesh", 2, 3), build("equimesh", 2, 3)
    with pytest.raises(RomError) as e:  # 2x3 mesh: 7 neighbour pairs; 2x3 EquiMesh: 6 nodes x 4 ports
        compile_schedule(synthesize(a, 1, "allgather"), 4, b)
    assert str(e.value) == "the schedule is for the 2x3 mesh (14 links), but the network is the 2x3 equimesh (24 links)"
    dirs = default_ring_dirs(3, 3)
    c, d = build("equimesh", 3, 3, dirs), build("equimesh", 3, 3, dict(dirs, top=not dirs["top"]))
    with pytest.raises(RomError) as e:
        compile_schedule(synthesize(c, 1, "allgather"), 4, d)
    assert str(e.value) == (
        "the schedule is for the 3x3 equimesh (36 links), but the network is the 3x3 equimesh (36 links); "
        "their links differ (ring directions or ports)"
    )
    with pytest.raises(RomError) as e:  # an AllToAll that moves nothing: the first pair (0 -> 1) is never served
        compile_schedule(Schedule("alltoall", "hand", 1, T, [Phase("alltoall", [])]), 4, T)
    assert str(e.value) == "the hardware cannot execute this schedule: chunk 0->1: never reaches node 1"
    # A schedule verify accepts but the lane rule refuses: the lane rule's own line, behind the prefix.
    bad = _flooding_allgather(T, 3)
    with pytest.raises(StorageConflict) as why:
        check_storage(bad)
    with pytest.raises(RomError) as e:
        compile_schedule(bad, 4, T)
    assert str(e.value) == f"the hardware cannot execute this schedule: {why.value}"


def test_chunk_flits_bounds():
    # 1..65536 flits per chunk, the range `--chunk-flits` documents (tests/test_cli_bad_input.py).
    sched = _sched("allgather", AG)
    assert compile_schedule(sched, 1).chunk_flits == 1
    assert compile_schedule(sched, 65536).lane_flits == 3 * 65536
    for bad in (0, 65537):
        with pytest.raises(RomError, match=rf"^chunk_flits must be 1\.\.65536 \(got {bad}\)$"):
            compile_schedule(sched, bad)


@pytest.fixture
def unchecked(monkeypatch):
    """The compiler's last guards alone: verify and the lane rule switched off."""
    monkeypatch.setattr(rom, "verify", lambda sched: None)
    monkeypatch.setattr(rom, "check_storage", lambda sched: None)


def test_guard_one_slot_read_per_lane(unchecked):
    # K = 3 on 2 lanes: node 0's chunks 0 and 2 both start in lane 0 (E), slots 0 and 1.
    fan_out = [[[0, 0, 0], [2, 0, 0]]]  # one chunk on both out-ports: one slot read
    compile_schedule(_sched("allgather", fan_out, k=3), 1, T)
    with pytest.raises(RomError) as e:
        compile_schedule(_sched("allgather", [[[0, 0, 0], [2, 0, 2]]], k=3), 1, T)
    assert str(e.value) == "step 0, link 2: lane E of node 0 would read two slots in one step"


def _send_all_rest(sent):
    """Later steps in which each node sends every partial not in ``sent`` (node, root), one a step, on
    one link (so each partial has a sending lane and no lane reads or adds two slots in one step): node 0
    on link 0 (to 1), 1 on link 1 (to 0), 2 on link 6 (to 3), 3 on link 7 (to 2)."""
    out = {0: 0, 1: 1, 2: 6, 3: 7}
    rest = [[root for root in range(4) if root != v and (v, root) not in sent] for v in range(4)]
    return [[[out[v], r[j], 0] for v, r in enumerate(rest) if j < len(r)] for j in range(3)]


def test_guard_one_accumulated_slot_per_lane(unchecked):
    # Node 1 sends roots 0, 2 and 3 all on W (lane 1): slots 0, 1, 2 of lane 1. In step 0 it receives
    # root 3 on W and root 2 on S: both add into lane 1, into slots 2 and 1.
    steps = [[[0, 3, 0], [5, 2, 0]], *_send_all_rest({(0, 3), (3, 2)})]
    with pytest.raises(RomError) as e:
        compile_schedule(_sched("reducescatter", steps), 1, T)
    assert str(e.value) == "step 0, link 5: lane W of node 1 would accumulate two slots in one step"
    # Inside: root 2 on both in-ports (from node 0 and node 3) adds into one slot, lane 1's.
    steps = [[[0, 2, 0], [5, 2, 0]], *_send_all_rest({(0, 2), (3, 2)})]
    image = compile_schedule(_sched("reducescatter", steps), 1, T)
    assert image.routers[1].wr_mask[0].tolist() == [0, 0b11]


def test_guard_a_partial_is_sent_from_its_lane(unchecked):
    # Node 0 sends root 3's partial on E (lane 0) and on S (lane 1) in one step: it can sit in one lane
    # only, so one of the two sends is from the wrong lane.
    steps = [[[0, 3, 0], [2, 3, 0]], *_send_all_rest({(0, 3)})]
    with pytest.raises(RomError) as e:
        compile_schedule(_sched("reducescatter", steps), 1, T)
    m = re.fullmatch(
        r"step 0, link (\d): node 0 must send root 3, chunk 0 from lane (\w), but it is in lane (\w)", str(e.value)
    )
    assert m, str(e.value)
    link, want, held = m.groups()
    assert (want, held) == {"0": ("E", "S"), "2": ("S", "E")}[link]


# The 2x2 EquiMesh: the mesh's links 0-7 as above, then Algorithm 1's rings; every node has all four
# ports, lane 0 is N.
EQ22 = [
    *[list(l) for l in [(0, 1, "E", "W"), (1, 0, "W", "E"), (0, 2, "S", "N"), (2, 0, "N", "S")]],
    *[list(l) for l in [(1, 3, "S", "N"), (3, 1, "N", "S"), (2, 3, "E", "W"), (3, 2, "W", "E")]],
    *[list(l) for l in [(1, 0, "N", "N"), (0, 1, "N", "N"), (3, 2, "S", "S"), (2, 3, "S", "S")]],
    *[list(l) for l in [(2, 0, "W", "W"), (0, 2, "W", "W"), (3, 1, "E", "E"), (1, 3, "E", "E")]],
]


def test_a_schedule_that_needs_one_slot_per_lane():
    # AllGather, K = 1, on the 2x2 EquiMesh, in which every node receives its three chunks on three
    # different ports, none of them N (lane 0, where its own chunk starts): one chunk per lane, 1 slot.
    # Step 0: each node sends its chunk to both neighbours (0 on links 0 and 13, 1 on 1 and 15, 2 on 3
    # and 6, 3 on 5 and 7); step 1: node 2 forwards root 3 to 0 (link 12, into W) and root 0 to 3 (link
    # 11, into S), node 3 root 2 to 1 (link 14, into E) and root 1 to 2 (link 10, into S).
    t = build("equimesh", 2, 2)
    assert [l.as_list() for l in t.links] == EQ22
    steps = [
        [[0, 0, 0], [13, 0, 0], [1, 1, 0], [15, 1, 0], [3, 2, 0], [6, 2, 0], [5, 3, 0], [7, 3, 0]],
        [[12, 3, 0], [11, 0, 0], [14, 2, 0], [10, 1, 0]],
    ]
    sched = Schedule("allgather", "hand", 1, t, [_phase("allgather", steps)])
    image = compile_schedule(sched, 8, t)
    assert (image.slots, image.lane_flits) == (1, 8)
    # Node 0 (lanes N E S W): its own chunk in N, root 1 from E, root 2 from S, root 3 from W.
    assert image.final[0] == {(0, 0): (0, 0), (1, 0): (1, 0), (2, 0): (2, 0), (3, 0): (3, 0)}
