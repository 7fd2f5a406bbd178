"""AllToAll (issue 41; docs/alltoall.md): format, verifier, lower bound, synthesized schedules.

Every expected bound below is derived by hand in the comment beside it, from the definitions in
docs/alltoall.md, never from the code under test.
"""

import numpy as np
import pytest

from equimesh.schedules import alltoall
from equimesh.schedules.schedule import Phase, Schedule, ScheduleFileError, from_dict
from equimesh.schedules.synth import SynthesisError, synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify
from equimesh.sim.analytic.alphabeta import LinkModel, simulate


def _link(topo, src, dst):
    return next(i for i, l in enumerate(topo.links) if l.src == src and l.dst == dst)


def _sched(topo, steps, k=1):
    """Steps given as lists of (src, dst, source, destination[, part]) for readability."""
    arrays = []
    for step in steps:
        rows = [[_link(topo, a, b), s, d * k + (p[0] if p else 0)] for a, b, s, d, *p in step]
        arrays.append(np.array(rows, dtype=np.int64).reshape(-1, 3))
    return Schedule("alltoall", "hand", k, topo, [Phase("alltoall", arrays)])


# 2x2 mesh: nodes 0 1 / 2 3. The 8 neighbour chunks take 1 hop and the 4 diagonal ones 2: 16 hops
# = 8 links x 2 steps, so a 2-step schedule keeps every link busy in both steps. Diagonals 0->3 and
# 3->0 go clockwise (0->1->3, 3->2->0), 1->2 and 2->1 anticlockwise (1->0->2, 2->3->1); each link
# also carries its own neighbour chunk in the step its diagonal hop leaves free.
def _mesh22_valid(topo):
    step0 = [
        (0, 1, 0, 3),
        (3, 2, 3, 0),
        (1, 3, 1, 3),
        (2, 0, 2, 0),
        (1, 0, 1, 2),
        (2, 3, 2, 1),
        (0, 2, 0, 2),
        (3, 1, 3, 1),
    ]
    step1 = [
        (1, 3, 0, 3),
        (2, 0, 3, 0),
        (0, 1, 0, 1),
        (3, 2, 3, 2),
        (0, 2, 1, 2),
        (3, 1, 2, 1),
        (1, 0, 1, 0),
        (2, 3, 2, 3),
    ]
    return _sched(topo, [step0, step1])


def test_mesh22_hand_schedule_is_valid_and_at_the_bound():
    topo = build("mesh", 2, 2)
    s = _mesh22_valid(topo)
    verify(s)
    # bound: node-in ceil(3 / 2) = 2; row cut 2x2 = 4 chunks over 2 links = 2; diameter 2;
    # hops: per node 1 + 1 + 2 = 4, total 16 over 8 links = 2.  So 2, and every term ties.
    assert alltoall.bound_terms(topo, 1) == {
        "diameter": 2,
        "node-in": 2,
        "node-out": 2,
        "row-cut": 2,
        "column-cut": 2,
        "hops": 2,
    }
    assert s.num_steps == alltoall.lower_bound(topo, 1) == 2


def test_mesh23_bound_is_the_column_cut():
    # 2x3 mesh, K = 1. Column cut after column 0: 2 nodes | 4 nodes, 8 chunks each way over 2 links
    # -> 4. Row cut: 3 | 3, 9 chunks over 3 links -> 3. Node-in: a corner has in-degree 2, 5 chunks
    # -> 3. Diameter 3. Hops: horizontal sum over ordered pairs = rows^2 * (2 * (1 + 2 + 1)) = 32,
    # vertical = cols^2 * 2 = 18; 50 over 14 links -> ceil(3.57) = 4.
    topo = build("mesh", 2, 3)
    assert alltoall.bound_terms(topo, 1) == {
        "diameter": 3,
        "node-in": 3,
        "node-out": 3,
        "row-cut": 3,
        "column-cut": 4,
        "hops": 4,
    }
    assert alltoall.binding(topo, 1) == "column-cut=hops"
    # K = 2 doubles every chunk count: cut 16 / 2 = 8, hops ceil(100 / 14) = 8, node 5.
    assert alltoall.lower_bound(topo, 2) == 8


def test_torus44_bisection():
    # 4x4 torus: the cut between rows 1 and 2 has 8 nodes each side, 64 chunks each way, crossed
    # downwards by each column's row1->row2 link and its wrap link row0->row3: 8 links -> 8 steps.
    # Hops: per node the offsets 0,1,2,1 in each dimension sum to 4 x 4 = 16 per dimension, 32 per
    # node, 512 in all over 64 links -> 8. Node-in: 15 / 4 -> 4. Diameter 2 + 2 = 4.
    # Seed 003, Section 3.6: (d_max / 8) M / BW = M / 2, and 8 steps of M / 16 chunks is M / 2.
    topo = build("torus", 4, 4)
    assert alltoall.bound_terms(topo, 1) == {
        "diameter": 4,
        "node-in": 4,
        "node-out": 4,
        "row-cut": 8,
        "column-cut": 8,
        "hops": 8,
    }
    assert alltoall.binding(topo, 1) == "row-cut=column-cut=hops"


def test_mesh44_bisection_is_seed003_mesh_formula():
    # 4x4 mesh: middle row cut 8 x 8 = 64 chunks over 4 links -> 16 steps of M/16: M / BW, which is
    # seed 003's (d_max / 4) M / BW with d_max = 4. Hops: per dimension the ordered offsets sum to
    # 4^2 * 2 * (3*1 + 2*2 + 1*3) = 320, both dimensions 640, over 48 links -> ceil(13.3) = 14.
    topo = build("mesh", 4, 4)
    terms = alltoall.bound_terms(topo, 1)
    assert terms["row-cut"] == terms["column-cut"] == 16
    assert terms["hops"] == 14
    assert alltoall.lower_bound(topo, 1) == 16


def _error(sched) -> str:
    with pytest.raises(ScheduleInvalid) as e:
        verify(sched)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_verifier_rejects_a_missing_chunk():
    topo = build("mesh", 2, 2)
    s = _mesh22_valid(topo)
    s.phases[0].steps[1] = s.phases[0].steps[1][:-1]
    assert "never reaches" in _error(s)


def test_verifier_rejects_a_second_delivery():
    topo = build("mesh", 2, 2)
    s = _mesh22_valid(topo)
    s.phases[0].steps.append(np.array([[_link(topo, 0, 1), 0, 1]]))  # 0's chunk for 1, sent again
    msg = _error(s)
    assert msg.startswith("step 2, link ") and "chunk 0->1" in msg and "second time" in msg


def test_verifier_rejects_a_sender_without_the_chunk():
    topo = build("mesh", 2, 2)
    # node 1 forwards 0's chunk for 3 before it got it
    s = _sched(topo, [[(1, 3, 0, 3)]])
    msg = _error(s)
    assert msg.startswith("step 0, link ") and "(1->3)" in msg and "chunk 0->3" in msg and "does not hold" in msg


def test_verifier_rejects_two_chunks_on_one_link_in_one_step():
    topo = build("mesh", 2, 2)
    s = _sched(topo, [[(0, 1, 0, 1), (0, 1, 0, 3)]])
    assert "already carries" in _error(s)


def test_verifier_rejects_a_self_addressed_chunk_and_a_source_receiving():
    topo = build("mesh", 2, 2)
    assert "addresses no chunk to itself" in _error(_sched(topo, [[(0, 1, 0, 0)]]))
    assert "is its source" in _error(_sched(topo, [[(1, 0, 0, 1)]]))


def test_file_round_trip_and_chunk_range():
    topo = build("mesh", 2, 2)
    s = _mesh22_valid(topo)
    d = s.to_json()
    assert d["collective"] == "alltoall"
    verify(from_dict(d))
    d["steps"][0][0][2] = 4  # destination 4 does not exist in a 4-node network (K = 1)
    with pytest.raises(ScheduleFileError, match="chunk 4 is out of range"):
        from_dict(d)


# ----- synthesized schedules ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "overflow", "torus", "supermesh"])
@pytest.mark.parametrize("rows,cols", [(2, 2), (2, 3), (3, 5), (4, 4)])
def test_relay_schedules_verify_and_respect_the_bound(kind, rows, cols):
    topo = build(kind, rows, cols)
    s = synthesize(topo, 1, "alltoall", "relay", lanes=False)
    verify(s)  # independent check of the AllToAll rules
    assert s.num_steps >= alltoall.lower_bound(topo, 1)


def test_relay_reaches_the_cut_bound_on_the_mesh():
    # Dimension-ordered routes on an R x C mesh load a row link of the cut after column j with
    # R (j + 1) (C - j - 1) chunks, exactly the column-cut bound; the 8x8 mesh's middle cut is
    # 32 x 32 = 1024 chunks over 8 links = 128 steps.
    s = synthesize(build("mesh", 8, 8), 1, "alltoall", "relay", lanes=False)
    assert s.num_steps == 128


def test_synthesis_refuses_exact_lanes_and_other_methods():
    topo = build("mesh", 2, 2)
    with pytest.raises(SynthesisError, match="storage lanes"):
        synthesize(topo, 1, "alltoall", "cpsat", lanes=True)
    with pytest.raises(SynthesisError, match="AllToAll is scheduled by"):
        synthesize(topo, 1, "alltoall", "xtree", lanes=False)


# ----- seed 003, Section 3.6: ring-relay AllToAll at large M --------------------------------------


@pytest.mark.parametrize("kind,side,k", [("mesh", 4, 1), ("mesh", 8, 1), ("torus", 4, 2), ("torus", 8, 2)])
def test_alphabeta_alltoall_matches_seed003(kind, side, k):
    # Seed 003, Section 3.6: ring-relay AllToAll is bisection-bound, (d_max / 8) M / BW on a torus
    # and (d_max / 4) M / BW on a k-D mesh (half the bisection), d_max the largest dimension.
    model = LinkModel()
    message = 1e12  # alpha (20 ns per hop) is negligible against M / BW
    formula = (side / (8 if kind == "torus" else 4)) * message / model.bandwidth
    s = synthesize(build(kind, side, side), k, "alltoall", "relay", lanes=False)
    got = simulate(s, [message], model).completion[0]
    assert abs(got / formula - 1) <= 0.02


@pytest.mark.parametrize("rows,cols,bound", [(2, 2, 2), (2, 3, 4)])
def test_exact_model_reaches_the_hand_derived_mesh_bound(rows, cols, bound):
    # the bounds derived by hand above (2x2: every term 2; 2x3: the column cut, 4)
    s = synthesize(build("mesh", rows, cols), 1, "alltoall", "cpsat", lanes=False, time_limit=20)
    verify(s)
    assert s.num_steps == bound and s.meta["proven_optimal"]


# ----- command line: one line and a non-zero exit -------------------------------------------------


def _one_line(capsys, argv, code, text):
    from equimesh.cli import main

    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert text in err, err


def test_cli_verify_names_step_link_and_chunk(capsys, tmp_path):
    topo = build("mesh", 2, 2)
    s = _mesh22_valid(topo)
    s.phases[0].steps.append(np.array([[_link(topo, 0, 1), 0, 1]]))
    path = tmp_path / "a2a.json"
    s.save(path)
    _one_line(capsys, ["verify", str(path)], 1, "step 2, link ")
    s = _sched(topo, [[(1, 3, 0, 3)]])
    s.save(path)
    _one_line(capsys, ["verify", str(path)], 1, "chunk 0->3: sender 1 does not hold")


@pytest.mark.parametrize(
    "argv,code,text",
    [
        (
            [
                "schedule",
                "--kind",
                "mesh",
                "--rows",
                "2",
                "--cols",
                "2",
                "--collective",
                "alltoall",
                "--storage",
                "lanes",
                "--algorithm",
                "cpsat",
            ],
            1,
            "does not model the storage lanes",
        ),
        (
            [
                "schedule",
                "--kind",
                "mesh",
                "--rows",
                "2",
                "--cols",
                "2",
                "--collective",
                "alltoall",
                "--algorithm",
                "xtree",
            ],
            1,
            "AllToAll is scheduled by",
        ),
        (
            ["schedule", "--kind", "mesh", "--rows", "2", "--cols", "2", "--algorithm", "relay"],
            1,
            "relay schedules AllToAll only",
        ),
        (["bench", "alltoall", "--sizes", "1x8"], 2, "--sizes entries look like RxC"),
        (["bench", "alltoall", "--chunks", "0"], 2, "--chunks must be >= 1"),
    ],
)
def test_cli_bad_alltoall_input(capsys, argv, code, text):
    _one_line(capsys, argv, code, text)


# ----- skewed AllToAll (seed 003's hot experts) ---------------------------------------------------


def test_hot_nodes_spread_over_rows_and_columns():
    # 8 hot of 64 on 8x8: b = 0, 8, ..., 56 is row r = 0..7, column (8r + r) mod 8 = r: the diagonal
    assert alltoall.hot_nodes(64, 8, 8) == [9 * r for r in range(8)]
    # 2 hot of 6 on 2x3: b = 0 -> node 0; b = 3 -> row 1, column (3 + 1) mod 3 = 1 -> node 4
    assert alltoall.hot_nodes(6, 3, 2) == [0, 4]


def test_skewed_counts_bound_by_hand():
    # 2x2 mesh, node 0 hot at 3x: counts[s][0] = 3 for s != 0, every other pair 1.
    # node-in of node 0: 3 x 3 = 9 over 2 in-links -> 5. Row cut, bottom {2,3} -> top {0,1}: 3 + 3 + 1 + 1
    # = 8 over 2 links -> 4 (the other way 4 cold chunks -> 2); the column cut likewise 4. Hops: the
    # chunks into 0 weigh 3 x (1 + 1 + 2) = 12, the other 8 pairs 16 - 4 = 12: 24 over 8 links -> 3.
    topo = build("mesh", 2, 2)
    counts = alltoall.skewed_counts(4, 2, 1, 1, 3)
    assert counts == [[0, 1, 1, 1], [3, 0, 1, 1], [3, 1, 0, 1], [3, 1, 1, 0]]
    assert alltoall.bound_terms(topo, 3, counts) == {
        "diameter": 2,
        "node-in": 5,
        "node-out": 3,
        "row-cut": 4,
        "column-cut": 4,
        "hops": 3,
    }
    assert alltoall.binding(topo, 3, counts) == "node-in"


def test_skewed_relay_verifies_and_counts_are_enforced():
    topo = build("mesh", 2, 3)
    counts = alltoall.skewed_counts(6, 3, 1, 2, 4)
    s = synthesize(topo, 4, "alltoall", "relay", lanes=False, counts=counts)
    verify(s)
    back = from_dict(s.to_json())
    assert back.meta["counts"] == counts
    verify(back)
    # a cold pair (1 -> 2) has one chunk: part 1 of it is not in the AllToAll
    s.phases[0].steps.append(np.array([[_link(topo, 1, 2), 1, 2 * 4 + 1]]))
    assert "only 1 chunk(s)" in _error(s)
    # dropping a hot chunk's last transfer leaves it undelivered
    s = synthesize(topo, 4, "alltoall", "relay", lanes=False, counts=counts)
    last = s.phases[0].steps[-1]
    s.phases[0].steps[-1] = last[1:]
    assert "never reaches" in _error(s)
