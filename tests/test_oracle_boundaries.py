"""Boundary cases of the oracle (issue 37): for every rule of ``verify`` and ``check_storage``, one
schedule just inside it and one just outside, for AllGather, ReduceScatter, AllReduce in phases and the
overlapped AllReduce; the step bound where its diameter term decides; OpTree's WRHT step counts at
N = m^theta.

Every schedule here is written by hand on the 2x2 mesh, whose links are listed below; every expected
value is derived in a comment, not computed by the code under test.
"""

import numpy as np
import pytest

from equimesh.schedules.schedule import OP_GATHER, OP_REDUCE, Phase, Schedule, lower_bound
from equimesh.schedules.storage import StorageConflict, check_storage
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify

# The 2x2 mesh, nodes 0 1 / 2 3. Link ids: 0: 0->1, 1: 1->0, 2: 0->2, 3: 2->0, 4: 1->3, 5: 3->1,
# 6: 2->3, 7: 3->2 (the reverse of link i is i ^ 1). Ports (canonical order N E S W): node 0 [E, S],
# node 1 [S, W], node 2 [N, E], node 3 [N, W]; link i enters its destination on port DST_PORT[i].
MESH22 = [
    (0, 1, "E", "W"),
    (1, 0, "W", "E"),
    (0, 2, "S", "N"),
    (2, 0, "N", "S"),
    (1, 3, "S", "N"),
    (3, 1, "N", "S"),
    (2, 3, "E", "W"),
    (3, 2, "W", "E"),
]
T = build("mesh", 2, 2)

# AllGather, K = 1, 2 steps (the bound max(D = 2, ceil(3 / 2)) = 2): step 0 every link carries its
# source's chunk; step 1 each node passes on, across its row, the chunk its column neighbour sent.
AG = [
    [[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 2, 0], [4, 1, 0], [5, 3, 0], [6, 2, 0], [7, 3, 0]],
    [[1, 3, 0], [0, 2, 0], [7, 1, 0], [6, 0, 0]],
]
# ReduceScatter, K = 1: AG reversed in time and direction. Step 0: 0 sends root 3's partial to 1,
# 1 root 2's to 0, 2 root 1's to 3, 3 root 0's to 2; step 1 every link carries its destination's root,
# each sender having added what it received in step 0.
RS = [
    [[0, 3, 0], [1, 2, 0], [6, 1, 0], [7, 0, 0]],
    [[0, 1, 0], [1, 0, 0], [2, 2, 0], [3, 0, 0], [4, 3, 0], [5, 1, 0], [6, 3, 0], [7, 2, 0]],
]


def _sched(steps, collective="allgather", k=1):
    return Schedule(
        collective, "hand", k, T, [Phase(collective, [np.array(s, dtype=np.int64).reshape(-1, 3) for s in steps])]
    )


def _edit(steps, remove=(), add=()):
    """``steps`` without the transfers ``remove`` ``(step, transfer)`` and with ``add`` ones."""
    out = [[list(t) for t in s] for s in steps]
    for s, t in remove:
        out[s].remove(list(t))
    for s, t in add:
        while len(out) <= s:
            out.append([])
        out[s].append(list(t))
    return out


def _twice(steps):
    """K = 2: chunk 0 by ``steps``, then chunk 1 by the same steps shifted after them."""
    return [s for s in steps] + [[[l, r, 1] for l, r, _ in s] for s in steps]


def _ok(sched):
    verify(sched)


def _bad(sched, text):
    with pytest.raises(ScheduleInvalid) as e:
        verify(sched)
    assert text in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_hand_topology_is_the_2x2_mesh():
    assert [(l.src, l.dst, l.src_port, l.dst_port) for l in T.links] == MESH22


# ----- AllGather -------------------------------------------------------------------------------------
# A 3-step AllGather where node 1 gets root 3 in step 1 (link 5) and passes it to node 0 in step 2.
AG_LATE = [
    [[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 2, 0], [4, 1, 0], [6, 2, 0], [7, 3, 0]],
    [[5, 3, 0], [0, 2, 0], [7, 1, 0], [6, 0, 0]],
    [[1, 3, 0]],
]


def test_allgather_causality_one_step_after_arrival_is_inside():
    _ok(_sched(AG))
    _ok(_sched(AG_LATE))


def test_allgather_causality_in_the_arrival_step_is_outside():
    _bad(
        _sched(_edit(AG_LATE, remove=[(2, [1, 3, 0])], add=[(1, [1, 3, 0])])),
        "step 1, link 1 (1->0), root 3, chunk 0: sender 1 does not hold the chunk before this step",
    )


def test_allgather_link_capacity():
    two = _twice(AG)
    _ok(_sched(two, k=2))
    # chunk 1 of root 0 on link 2 moved from step 2 into step 0, where link 2 carries chunk 0 already
    _bad(
        _sched(_edit(two, remove=[(2, [2, 0, 1])], add=[(0, [2, 0, 1])]), k=2),
        "step 0, link 2 (0->2), root 0, chunk 1: link already carries another chunk in this step",
    )
    # ... into step 1, where link 2 is free (node 2 forwards it in step 3): inside
    _ok(_sched(_edit(two, remove=[(2, [2, 0, 1])], add=[(1, [2, 0, 1])]), k=2))


def test_allgather_root_and_duplicate_and_missing():
    _bad(_sched(_edit(AG, add=[(2, [1, 0, 0])])), "node 0 is the root and already holds its own chunk")
    _bad(_sched(_edit(AG, add=[(1, [4, 0, 0])])), "node 3 receives this chunk a second time")
    _bad(_sched(_edit(AG, remove=[(1, [6, 0, 0])])), "node 3 never receives root 0, chunk 0")


@pytest.mark.parametrize(
    "column,outside,name",
    [(0, 8, "link"), (0, -1, "link"), (1, 4, "root"), (1, -1, "root"), (2, 1, "chunk"), (2, -1, "chunk")],
)
@pytest.mark.parametrize("collective,base", [("allgather", AG), ("reducescatter", RS)])
def test_ranges(collective, base, column, outside, name):
    """The bases use link 7, root 3 and chunk 0 (K = 1): the last values inside."""
    _ok(_sched(base, collective))
    bad = [list(t) for t in base[1]]
    bad[-1][column] = outside
    _bad(_sched([base[0], bad], collective), f"{name} {outside} is out of range")


# ----- ReduceScatter ---------------------------------------------------------------------------------
def test_reducescatter_forwarding_one_step_after_the_child_is_inside():
    _ok(_sched(RS, "reducescatter"))


def test_reducescatter_forwarding_in_the_childs_step_is_outside():
    """Node 2 gets root 0's partial from node 3 in step 0; sending its own in step 0 too is too early."""
    _bad(
        _sched(_edit(RS, remove=[(1, [3, 0, 0])], add=[(0, [3, 0, 0])]), "reducescatter"),
        "step 0, link 7 (3->2), root 0, chunk 0: node 2 sends its partial at step 0, before this child's partial arrives",
    )


def test_reducescatter_link_capacity():
    two = _twice(RS)
    _ok(_sched(two, "reducescatter", 2))
    # node 0's partial of root 3, chunk 1, moved from step 2 to step 0, where link 0 carries chunk 0's
    _bad(
        _sched(_edit(two, remove=[(2, [0, 3, 1])], add=[(0, [0, 3, 1])]), "reducescatter", 2),
        "link 0 (0->1), root 3, chunk 1: link already carries another chunk in this step",
    )


def test_reducescatter_root_duplicate_and_missing():
    _bad(
        _sched(_edit(RS, add=[(0, [2, 0, 0])]), "reducescatter"),
        "node 0 is the root and must not send its own shard's sum",
    )
    _bad(_sched(_edit(RS, add=[(0, [4, 0, 0])]), "reducescatter"), "node 1 sends its partial a second time")
    _bad(
        _sched(_edit(RS, remove=[(0, [7, 0, 0])]), "reducescatter"), "node 3 never sends its partial of root 0, chunk 0"
    )


# ----- AllReduce in two phases -----------------------------------------------------------------------
def _allreduce(rs, ag):
    p = [
        Phase("reducescatter", [np.array(s, dtype=np.int64).reshape(-1, 3) for s in rs]),
        Phase("allgather", [np.array(s, dtype=np.int64).reshape(-1, 3) for s in ag]),
    ]
    return Schedule("allreduce", "hand", 1, T, p)


def test_allreduce_phases():
    _ok(_allreduce(RS, AG))
    _bad(
        _allreduce(_edit(RS, remove=[(1, [3, 0, 0])], add=[(0, [3, 0, 0])]), AG),
        "phase 0 (reducescatter): step 0, link 7 (3->2)",
    )
    _bad(
        _allreduce(RS, _edit(AG_LATE, remove=[(2, [1, 3, 0])], add=[(1, [1, 3, 0])])),
        "phase 1 (allgather): step 1, link 1 (1->0), root 3, chunk 0: sender 1 does not hold",
    )


# ----- the overlapped AllReduce (format version 2) ---------------------------------------------------
# RS in steps 0-1; root 0's gather starts at step 2 (its last partials arrive in step 1); the rest of
# AG's step 0 at step 3 and AG's step 1 at step 4.
R, G = OP_REDUCE, OP_GATHER
OV = [
    [t + [R] for t in RS[0]],
    [t + [R] for t in RS[1]],
    [[0, 0, 0, G], [2, 0, 0, G]],
    [t + [G] for t in AG[0] if t[1] != 0],
    [t + [G] for t in AG[1]],
]


def _overlapped(steps):
    return Schedule(
        "allreduce", "hand", 1, T, [Phase("allreduce", [np.array(s, dtype=np.int64).reshape(-1, 4) for s in steps])]
    )


def test_overlapped_root_gathers_one_step_after_its_last_partial_is_inside():
    _ok(_overlapped(OV))


def test_overlapped_root_gathers_in_the_step_its_last_partial_arrives_is_outside():
    late = _edit(OV, remove=[(1, [1, 0, 0, R]), (1, [3, 0, 0, R])], add=[(2, [1, 0, 0, R]), (2, [3, 0, 0, R])])
    _bad(
        _overlapped(late),
        "gather: step 2, link 0 (0->1), root 0, chunk 0: root 0 sends before its sum is "
        "complete (its last partial arrives at step 2)",
    )


def test_overlapped_link_carries_one_transfer_across_both_ops():
    # root 0's gather on link 0 moved into step 1, where link 0 carries a reduce transfer
    _bad(
        _overlapped(_edit(OV, remove=[(2, [0, 0, 0, G])], add=[(1, [0, 0, 0, G])])),
        "step 1, link 0 (0->1), root 0, chunk 0: link already carries another chunk in this step",
    )


def test_overlapped_reduce_and_gather_rules():
    _bad(
        _overlapped(_edit(OV, remove=[(1, [3, 0, 0, R])], add=[(0, [3, 0, 0, R])])),
        "reduce: step 0, link 7 (3->2), root 0, chunk 0: node 2 sends its partial at step 0",
    )
    _bad(_overlapped(_edit(OV, remove=[(4, [6, 0, 0, G])])), "gather: node 3 never receives root 0, chunk 0")


# ----- storage: one chunk per lane per step ----------------------------------------------------------
# AllGather with K = 2: a node's own chunk c sits in its home lane ports[c mod 2]: node 1's chunk 0
# in lane S. What node 1 receives from node 3 (link 5, in-port S) also lands in lane S.
def _storage(steps, collective, k=2):
    check_storage(_sched(steps, collective, k))


def test_storage_allgather_one_lane_fans_one_chunk_out():
    _storage([[[1, 1, 0], [4, 1, 0]]], "allgather")  # lane S of node 1 read once, to two ports


def test_storage_allgather_one_lane_read_for_two_chunks_is_outside():
    base = [[[5, 3, 0]], [[1, 1, 0]], [[4, 3, 0]]]  # root 3 arrives in lane S; reads in steps 1, 2
    _storage(base, "allgather")
    with pytest.raises(StorageConflict, match="step 1, link 4, node 1, root 3, chunk 0: lane S of node 1 reads two"):
        _storage([[[5, 3, 0]], [[1, 1, 0], [4, 3, 0]]], "allgather")
    _storage([[[5, 3, 0]], [[1, 1, 1], [4, 3, 0]]], "allgather")  # chunk 1 of node 1 is in lane W


# ReduceScatter: a node adds each partial it receives into the lane of the port it later sends that
# chunk on; the root into the chunk's home lane. Node 1 is root 1 (chunk 0: lane S); it sends root 3's
# partial on link 4, out-port S, so root 3 accumulates in lane S of node 1 too.
def test_storage_reducescatter_two_in_ports_add_one_chunk():
    _storage([[[0, 1, 0], [5, 1, 0]]], "reducescatter")  # 0->1 and 3->1 both add root 1 into lane S


def test_storage_reducescatter_one_lane_accumulates_two_chunks_is_outside():
    _storage([[[5, 1, 0]], [[0, 3, 0]], [[4, 3, 0]]], "reducescatter")
    with pytest.raises(StorageConflict, match="node 1, root .*: lane S of node 1 accumulates two different chunks"):
        _storage([[[5, 1, 0], [0, 3, 0]], [[4, 3, 0]]], "reducescatter")


# ----- the step bound (seed 000, Section III-A) ------------------------------------------------------
# 2x3 EquiMesh (cccc): every node has in- and out-degree 4 (two or three mesh links plus one or two
# ring links). Node 0's out-neighbours are {1, 3} (mesh and the top and left rings), node 5's
# in-neighbours {2, 4} (mesh and the bottom and right rings): d(0, 5) = 3 = D, so for K = 1
# AllGather max(D = 3, ceil(5 / 4) = 2) = 3; the same for ReduceScatter; AllReduce 3 + 3 = 6.
# Overlapped: L = 14 mesh + 10 ring links = 24; max(ceil(2 * 1 * 6 * 5 / 24) = 3, 2, 2) = 3.
# 2x3 mesh: min in-degree 2 (corners), D = 3: max(3, ceil(5 / 2) = 3) = 3; K = 2: max(3, 5) = 5.
# Overlapped mesh 2x3, K = 1: L = 14, ceil(60 / 14) = 5.
@pytest.mark.parametrize(
    "kind,k,coll,overlapped,bound",
    [
        ("equimesh", 1, "allgather", False, 3),
        ("equimesh", 1, "reducescatter", False, 3),
        ("equimesh", 1, "allreduce", False, 6),
        ("equimesh", 1, "allreduce", True, 3),
        ("equimesh", 4, "allgather", False, 5),
        ("mesh", 1, "allgather", False, 3),
        ("mesh", 2, "allgather", False, 5),
        ("mesh", 1, "allreduce", False, 6),
        ("mesh", 1, "allreduce", True, 5),
    ],
)
def test_lower_bound_by_hand(kind, k, coll, overlapped, bound):
    t = build(
        kind, 2, 3, {"top": False, "bottom": False, "left": False, "right": False} if kind == "equimesh" else None
    )
    assert lower_bound(t, k, coll, overlapped) == bound


# Lane ids (storage.lane_table numbers (node, port) in node order, ports in canonical order):
# node 0: E 0, S 1; node 1: S 2, W 3; node 2: N 4, E 5; node 3: N 6, W 7. With K = 2, node v's chunk c
# sits in its home lane ports[c mod 2]: the lanes 2v (c = 0) and 2v + 1 (c = 1). Every other
# (node, root, chunk) that the phase does not bring to the node has no lane: -1.
def _lanes_by_hand(extra):
    want = np.full((4, 4, 2), -1)
    for v in range(4):
        want[v, v] = [2 * v, 2 * v + 1]
    for (v, root, chunk), lane in extra.items():
        want[v, root, chunk] = lane
    return want


def test_storage_lane_maps_by_hand():
    from equimesh.schedules.storage import allgather_lanes, reducescatter_lanes

    empty = Phase("allgather", [])
    assert (allgather_lanes(T, 2, empty) == _lanes_by_hand({})).all()
    assert (reducescatter_lanes(T, 2, Phase("reducescatter", [])) == _lanes_by_hand({})).all()
    # AllGather: root 3's chunk 0 enters node 1 on link 5, in-port S: lane 2.
    ag = Phase("allgather", [np.array([[5, 3, 0]])])
    assert (allgather_lanes(T, 2, ag) == _lanes_by_hand({(1, 3, 0): 2})).all()
    # ReduceScatter: node 3 sends root 1's chunk 1 on link 5, out-port N: it accumulates it in lane 6.
    rs = Phase("reducescatter", [np.array([[5, 1, 1]])])
    assert (reducescatter_lanes(T, 2, rs) == _lanes_by_hand({(3, 1, 1): 6})).all()


def test_storage_accepts_an_empty_phase():
    check_storage(Schedule("allreduce", "hand", 2, T, [Phase("reducescatter", []), Phase("allgather", [])]))


def test_a_phase_without_steps():
    """No transfer at all: the first (node, root, chunk) in that order that is missing is node 0's
    root 1, chunk 0 (node 0 is root 0 and holds that one)."""
    _bad(_sched([]), "node 0 never receives root 1, chunk 0")
    _bad(_sched([], "reducescatter"), "node 0 never sends its partial of root 1, chunk 0")
    _bad(_overlapped([]), "reduce: node 0 never sends its partial of root 1, chunk 0")


def test_schedule_bound_of_the_hand_schedules():
    """2x2 mesh, K = 1: D = 2, in- and out-degree 2, L = 8. AllGather and ReduceScatter max(2, ceil(3 / 2))
    = 2; AllReduce in phases 2 + 2 = 4; overlapped max(ceil(2 * 1 * 4 * 3 / 8) = 3, 2, 2) = 3."""
    from equimesh.schedules.schedule import schedule_bound

    assert schedule_bound(_sched(AG)) == 2
    assert schedule_bound(_sched(RS, "reducescatter")) == 2
    assert schedule_bound(_allreduce(RS, AG)) == 4
    assert schedule_bound(_overlapped(OV)) == 3


def test_lower_bound_with_unequal_in_and_out_degrees():
    """The 2x3 EquiMesh (cccc) without its mesh links 0->1 and 2->1: node 1 keeps 2 in-links (from 4, and
    the top ring's 0->1), nodes 0 and 2 keep 3 out-links; every other degree stays 4. K = 4:
    AllGather max(D, ceil(20 / 2)) = 10, ReduceScatter max(D, ceil(20 / 3)) = 7 (D <= 5 on 6 nodes),
    AllReduce 10 + 7 = 17 (the default: phases, not overlapped)."""
    from equimesh.schedules.failures import DegradedTopology

    t = DegradedTopology(
        build("equimesh", 2, 3, {"top": False, "bottom": False, "left": False, "right": False}),
        [(0, 1, "E", "W"), (2, 1, "W", "E")],
    )
    assert (lower_bound(t, 4, "allgather"), lower_bound(t, 4, "reducescatter"), lower_bound(t, 4, "allreduce")) == (
        10,
        7,
        17,
    )


@pytest.mark.parametrize("other", [(2, 0), (3, 0)])
def test_storage_two_chunks_in_one_lane_whatever_their_numbers(other):
    """Node 1 gets root 0's chunk 1, then ``other``, both on link 0 (in-port W, lane 3), and reads both in
    step 2: a conflict for any pair of distinct (root, chunk), e.g. (0, 1) and (2, 0), whose root / K +
    chunk agree, or (0, 1) and (3, 0), whose root K - chunk lie a step apart."""
    root, chunk = other
    steps = [[[0, 0, 1]], [[0, root, chunk]], [[4, 0, 1], [1, root, chunk]]]
    with pytest.raises(
        StorageConflict,
        match=r"^step 2, link [14], node 1, root [0-3], chunk [01]: lane W of node 1 "
        r"reads two different chunks in one step \(one chunk per lane per "
        r"step; see README 'Node storage'\)$",
    ):
        _storage(steps, "allgather")


def test_storage_a_lane_in_consecutive_steps():
    """Node 3's chunk 1 (lane 7, the highest) in step 0, node 0's chunk 1 (lane 1) in step 1: one read per
    lane per step, whatever the lane numbers."""
    _storage([[[7, 3, 1]], [[2, 0, 1]]], "allgather")


def test_storage_fan_out_after_other_reads():
    """A read in step 0, then lane S of node 1 fans its chunk 0 out to both ports in step 1: no conflict."""
    _storage([[[0, 0, 0]], [[1, 1, 0], [4, 1, 0]]], "allgather")


def test_storage_of_the_whole_hand_schedules():
    """The 2-step AllGather and ReduceScatter read and accumulate one chunk per lane per step (each node
    forwards one chunk at a time); so do their K = 2 repetitions and the AllReduce of both."""
    check_storage(_sched(AG))
    check_storage(_sched(RS, "reducescatter"))
    check_storage(_sched(_twice(AG), k=2))
    check_storage(_allreduce(RS, AG))


def test_storage_names_the_phase_of_an_allreduce():
    bad_ag = [[[5, 3, 0]], [[1, 1, 0], [4, 3, 0]]]  # the AllGather conflict above, with K = 1
    with pytest.raises(StorageConflict, match=r"^phase 1 \(allgather\): step 1, link 4, node 1, root 3"):
        check_storage(_allreduce(RS, bad_ag))
    with pytest.raises(StorageConflict, match=r"^step 1, link 4, node 1, root 3, chunk 0: lane S of node 1 reads"):
        check_storage(_sched(bad_ag))


# ----- exact messages, K > 1, and the corners the first mutation runs found --------------------------
def _exactly(sched, message):
    with pytest.raises(ScheduleInvalid) as e:
        verify(sched)
    assert str(e.value) == message


def _repeat(steps, k):
    """Chunk c by ``steps`` shifted by c times their length: K = k copies one after the other."""
    return [[[l, r, c] for l, r, _ in s] for c in range(k) for s in steps]


def test_exact_messages_of_one_phase():
    _exactly(
        _sched(_edit(AG, add=[(2, [1, 0, 0])])),
        "step 2, link 1 (1->0), root 0, chunk 0: node 0 is the root and already holds its own chunk",
    )
    _exactly(
        _sched(_edit(AG, add=[(1, [4, 0, 0])])),
        "step 1, link 4 (1->3), root 0, chunk 0: node 3 receives this chunk a second time",
    )
    _exactly(_sched(_edit(AG, remove=[(1, [6, 0, 0])])), "node 3 never receives root 0, chunk 0")
    _exactly(
        _sched(_edit(RS, add=[(0, [2, 0, 0])]), "reducescatter"),
        "step 0, link 2 (0->2), root 0, chunk 0: node 0 is the root and must not send its own shard's sum",
    )
    _exactly(
        _sched(_edit(RS, add=[(0, [4, 0, 0])]), "reducescatter"),
        "step 1, link 1 (1->0), root 0, chunk 0: node 1 sends its partial a second time",
    )
    _exactly(
        _sched(_edit(RS, remove=[(0, [7, 0, 0])]), "reducescatter"),
        "node 3 never sends its partial of root 0, chunk 0: the reduction tree does not span every node",
    )


def test_the_phase_functions_label_nothing_by_default():
    from equimesh.schedules.verify import verify_allgather, verify_reducescatter

    bad = _sched(_edit(AG, remove=[(1, [6, 0, 0])]))
    with pytest.raises(ScheduleInvalid, match=r"^node 3 never receives"):
        verify_allgather(bad, bad.phases[0])
    bad = _sched(_edit(RS, remove=[(0, [7, 0, 0])]), "reducescatter")
    with pytest.raises(ScheduleInvalid, match=r"^node 3 never sends"):
        verify_reducescatter(bad, bad.phases[0])


def test_two_transfers_and_nothing_else_on_one_link():
    _exactly(
        _sched([[[0, 0, 0], [0, 0, 0]]]),
        "step 0, link 0 (0->1), root 0, chunk 0: link already carries another chunk in this step",
    )


def test_more_steps_than_links():
    """K = 5 copies of the 2-step AllGather: 10 steps on 8 links, still one chunk per link per step."""
    _ok(_sched(_repeat(AG, 5), k=5))


def test_reducescatter_forwarding_of_another_root_and_chunk():
    """K = 2: node 3 gets root 1's chunk 1 from node 2 in step 2 and sends its own in step 2 too."""
    two = _repeat(RS, 2)
    _ok(_sched(two, "reducescatter", 2))
    _exactly(
        _sched(_edit(two, remove=[(3, [5, 1, 1])], add=[(2, [5, 1, 1])]), "reducescatter", 2),
        "step 2, link 6 (2->3), root 1, chunk 1: node 3 sends its partial at step 2, before this child's "
        "partial arrives",
    )
    _exactly(
        _sched(_edit(two, remove=[(3, [3, 0, 1])], add=[(2, [3, 0, 1])]), "reducescatter", 2),
        "step 2, link 7 (3->2), root 0, chunk 1: node 2 sends its partial at step 2, before this child's "
        "partial arrives",
    )


def test_overlapped_exact_messages_and_chunk_1():
    _exactly(
        _overlapped(_edit(OV, remove=[(2, [0, 0, 0, G])], add=[(1, [0, 0, 0, G])])),
        "step 1, link 0 (0->1), root 0, chunk 0: link already carries another chunk in this step",
    )
    # a gather transfer into its own root, late: the root-holds rule, not the early-gather rule
    _exactly(
        _overlapped(_edit(OV, add=[(5, [1, 0, 0, G])])),
        "gather: step 5, link 1 (1->0), root 0, chunk 0: node 0 is the root and already holds its own chunk",
    )
    # K = 2: chunk 1 by OV shifted 5 steps; root 0's chunk-1 partials moved into its first gather step
    ov2 = [[t for t in s] for s in OV] + [[[l, r, 1, o] for l, r, _, o in s] for s in OV]
    _ok(Schedule("allreduce", "hand", 2, T, [Phase("allreduce", [np.array(s).reshape(-1, 4) for s in ov2])]))
    late = _edit(ov2, remove=[(6, [1, 0, 1, R]), (6, [3, 0, 1, R])], add=[(7, [1, 0, 1, R]), (7, [3, 0, 1, R])])
    with pytest.raises(ScheduleInvalid) as e:
        verify(Schedule("allreduce", "hand", 2, T, [Phase("allreduce", [np.array(s).reshape(-1, 4) for s in late])]))
    assert str(e.value) == (
        "gather: step 7, link 0 (0->1), root 0, chunk 1: root 0 sends before its sum is complete "
        "(its last partial arrives at step 7)"
    )
