"""The bit-exact check reads the addresses in ``image.final``; here that list is checked independently.

For ReduceScatter and AllReduce (AllGather: tests/test_rtl_rom.py) the ROM tables are replayed the
way the router executes them (read before write in a step; a lane's write takes the inputs of
``wr_mask``, added to the slot when ``wr_acc``), tracking which nodes' partials each slot holds.
The reference is the semantics of docs/architecture.md, written out by hand: after ReduceScatter node v holds
the full sum of (v, c) for every chunk c; after AllReduce every node holds the full sum of every
(root, chunk). The compiler's ``final`` must list exactly those, at slots that hold full sums.
"""

import pytest

from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.program import final_entries


def _replay(image):
    """What every (node, lane, slot) holds at the end: ((root, chunk), frozenset of contributing nodes)."""
    t = image.topology
    held = {}
    for v in range(t.nodes):
        for key, (lane, slot) in image.initial[v].items():
            held[(v, lane, slot)] = (key, frozenset([v]))
    for s in range(image.steps):
        arriving = {}  # (node, in-port lane index) -> value carried by the link into it
        for l in t.links:
            r = image.routers[l.src]
            o = r.lanes.index(l.src_port)
            if r.out_valid[s, o]:
                lane = int(r.out_lane[s, o])
                assert r.rd_en[s, lane]
                arriving[(l.dst, image.routers[l.dst].lanes.index(l.dst_port))] = held[
                    (l.src, lane, int(r.rd_slot[s, lane]))
                ]
        writes = {}
        for v, r in enumerate(image.routers):
            for lane in range(len(r.lanes)):
                if not r.wr_en[s, lane]:
                    continue
                ins = [arriving.pop((v, p)) for p in range(len(r.lanes)) if r.wr_mask[s, lane] >> p & 1]
                assert ins, f"step {s}: node {v} lane {lane} writes with an empty mask"
                slot = int(r.wr_slot[s, lane])
                acc = [held[(v, lane, slot)]] if r.wr_acc[s, lane] else []
                vals = acc + ins
                key = vals[0][0]
                assert all(x[0] == key for x in vals), f"step {s}: node {v} adds partials of different chunks"
                parts = frozenset()
                for _, c in vals:
                    assert not parts & c, f"step {s}: node {v} counts a partial twice"
                    parts |= c
                writes[(v, lane, slot)] = (key, parts)
        assert not arriving, f"step {s}: data arrives that no lane writes: {sorted(arriving)}"
        held.update(writes)
    return held


CASES = [
    ("equimesh", 2, 3, 2, "reducescatter"),
    ("equimesh", 3, 3, 2, "reducescatter"),
    ("mesh", 3, 4, 1, "reducescatter"),
    ("overflow", 3, 3, 1, "reducescatter"),
    ("torus", 3, 3, 2, "reducescatter"),
    ("equimesh", 2, 3, 2, "allreduce"),
    ("equimesh", 4, 4, 1, "allreduce"),
    ("mesh", 3, 3, 2, "allreduce"),
    ("overflow", 3, 4, 1, "allreduce"),
    ("torus", 3, 3, 1, "allreduce"),
]


@pytest.mark.parametrize("kind,rows,cols,k,collective", CASES)
def test_final_lists_every_chunk_the_collective_defines(kind, rows, cols, k, collective):
    t = build(kind, rows, cols)
    n = t.nodes
    image = compile_schedule(synthesize(t, k, collective), 2, t)
    held = _replay(image)
    everyone = frozenset(range(n))
    for v in range(n):
        want = (
            {(v, c) for c in range(k)}
            if collective == "reducescatter"
            else {(r, c) for r in range(n) for c in range(k)}
        )
        assert set(image.final[v]) == want, f"node {v}"
        for key, (lane, slot) in image.final[v].items():
            assert held[(v, lane, slot)] == (key, everyone), f"node {v} {key}: not the full sum"
    # and the harness's bit-exact check reads exactly those chunks, chunk_flits words each
    per_node = [0] * n
    for v in final_entries(image)[:, 0]:
        per_node[v] += image.chunk_flits
    assert per_node == [2 * k * (1 if collective == "reducescatter" else n)] * n
