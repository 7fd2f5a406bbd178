"""The ROM compiler (pure Python): lane/slot assignment against the schedule semantics, and rejection."""

import numpy as np
import pytest

from equimesh.rtl.rom import MAX_CHUNK_FLITS, RomError, compile_schedule, entry_layout
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.storage import StorageConflict, check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def _replay_allgather(image, sched):
    """Interpret the ROM tables step by step (no hardware) and return what each (node, lane, slot) holds."""
    t = sched.topology
    held = {}
    for v in range(t.nodes):
        for (root, c), (lane, slot) in image.initial[v].items():
            held[(v, lane, slot)] = (root, c)
    for s in range(image.steps):
        sent = {}
        for i, l in enumerate(t.links):
            r = image.routers[l.src]
            o = r.lanes.index(l.src_port)
            if r.out_valid[s, o]:
                lane = r.out_lane[s, o]
                assert r.rd_en[s, lane]
                sent[i] = held[(l.src, lane, r.rd_slot[s, lane])]
        for i, x in sent.items():
            l = t.links[i]
            r = image.routers[l.dst]
            p = r.lanes.index(l.dst_port)
            assert r.wr_en[s, p] and r.wr_mask[s, p] == 1 << p and not r.wr_acc[s, p]
            held[(l.dst, p, r.wr_slot[s, p])] = x
    return held


@pytest.mark.parametrize(
    "kind,rows,cols,k",
    [("equimesh", 2, 3, 4), ("equimesh", 4, 4, 2), ("mesh", 3, 3, 2), ("overflow", 3, 4, 2), ("torus", 3, 3, 1)],
)
def test_allgather_tables_replay_to_every_chunk(kind, rows, cols, k):
    t = build(kind, rows, cols)
    sched = synthesize(t, k, "allgather")
    image = compile_schedule(sched, 4, t)
    held = _replay_allgather(image, sched)
    for v in range(t.nodes):
        for root in range(t.nodes):
            for c in range(k):
                lane, slot = image.final[v][(root, c)]
                assert held[(v, lane, slot)] == (root, c)
    busy = np.zeros(len(t.links), dtype=np.int64)
    for step in sched.phases[0].steps:
        np.add.at(busy, np.asarray(step)[:, 0], 1)
    assert (image.link_transfers == busy).all()


def test_rom_words_round_trip_through_the_layout():
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 2, t)
    for v, r in enumerate(image.routers):
        lay = entry_layout(len(r.lanes), image.slots)
        for s, word in enumerate(image.rom_words(v)):
            e = lay.from_bits(word)
            for i in range(len(r.lanes)):
                assert (e.lane[i].rd_en, e.lane[i].rd_slot) == (r.rd_en[s, i], r.rd_slot[s, i])
                assert (e.lane[i].wr_en, e.lane[i].wr_slot, e.lane[i].wr_acc, e.lane[i].wr_mask) == (
                    r.wr_en[s, i],
                    r.wr_slot[s, i],
                    r.wr_acc[s, i],
                    r.wr_mask[s, i],
                )
                assert (e.out[i].valid, e.out[i].lane) == (r.out_valid[s, i], r.out_lane[s, i])


def test_reducescatter_accumulates_where_it_later_sends():
    t = build("equimesh", 2, 3)
    sched = synthesize(t, 2, "reducescatter")
    image = compile_schedule(sched, 1, t)
    for s, step in enumerate(sched.phases[0].steps):
        for link, root, c in np.asarray(step).tolist():
            l = t.links[link]
            r = image.routers[l.src]
            o = r.lanes.index(l.src_port)
            assert r.out_lane[s, o] == o  # out-port p sends from lane p
            lane, slot = image.initial[l.dst][(root, c)]
            d = image.routers[l.dst]
            assert d.wr_acc[s, lane] and d.wr_slot[s, lane] == slot
            assert d.wr_mask[s, lane] >> d.lanes.index(l.dst_port) & 1


def _flooding_allgather(t, k):
    """A valid AllGather that ignores the lane rule: each link sends the lowest chunk its receiver lacks."""
    n = t.nodes
    have = [{(v, c) for c in range(k)} for v in range(n)]
    steps = []
    while any(len(h) < n * k for h in have):
        tr, got = [], set()
        for i, l in enumerate(t.links):
            for x in sorted(have[l.src] - have[l.dst]):
                if (l.dst, x) not in got:
                    got.add((l.dst, x))
                    tr.append((i, *x))
                    break
        for i, r, c in tr:
            have[t.links[i].dst].add((r, c))
        steps.append(np.array(tr, dtype=np.int64))
    return Schedule("allgather", "flooding", k, t, [Phase("allgather", steps)])


def test_rejects_a_valid_schedule_the_lanes_cannot_execute():
    t = build("mesh", 2, 2)
    sched = _flooding_allgather(t, 3)
    verify(sched)
    with pytest.raises(StorageConflict):
        check_storage(sched)
    with pytest.raises(RomError, match="cannot execute") as e:
        compile_schedule(sched, 4, t)
    assert "\n" not in str(e.value)


def test_rejects_a_schedule_for_another_topology():
    a, b = build("equimesh", 2, 3), build("equimesh", 3, 3)
    with pytest.raises(RomError, match="2x3 equimesh.*3x3 equimesh"):
        compile_schedule(synthesize(a, 1, "allgather"), 4, b)
    with pytest.raises(RomError, match="mesh"):
        compile_schedule(synthesize(build("mesh", 2, 3), 1, "allgather"), 4, a)


@pytest.mark.parametrize("flits", [0, MAX_CHUNK_FLITS + 1])
def test_rejects_chunk_flits_out_of_range(flits):
    t = build("equimesh", 2, 3)
    with pytest.raises(RomError, match=rf"chunk_flits must be 1\.\.{MAX_CHUNK_FLITS} \(got {flits}\)"):
        compile_schedule(synthesize(t, 1, "allgather"), flits, t)


def test_rejects_an_invalid_schedule():
    t = build("equimesh", 2, 3)
    sched = synthesize(t, 1, "allgather")
    sched.phases[0].steps = sched.phases[0].steps[:-1]
    with pytest.raises(RomError, match="never receives"):
        compile_schedule(sched, 4, t)
