"""A schedule file is checked against the topology it names, not against the links it lists (issue 37).

Each way a file can lie about its network -- an extra link, a missing link, swapped ports, a wrong ring
direction, a kind that does not match its links, links out of order -- is one line naming the first
difference, from the loader (:class:`ScheduleFileError`) and from every command that reads a file
(exit 1). The expected links of each case are written by hand from the kinds' definitions (seed 000,
Section II-A and Algorithm 1), not taken from ``build``.
"""

import json

import pytest

from equimesh.cli import main
from equimesh.schedules.schedule import ScheduleFileError, load

# The 2x2 mesh by hand, in the order the format fixes (node by node, row-major; per node east then
# south, each link followed by its reverse): node ids 0 1 / 2 3.
MESH22 = [
    [0, 1, "E", "W"],
    [1, 0, "W", "E"],
    [0, 2, "S", "N"],
    [2, 0, "N", "S"],
    [1, 3, "S", "N"],
    [3, 1, "N", "S"],
    [2, 3, "E", "W"],
    [3, 2, "W", "E"],
]

# A valid 2-step AllGather on the 2x2 mesh, K = 1 (its bound: max(D = 2, ceil(3 / 2)) = 2).
# Link ids of MESH22: 0: 0->1, 1: 1->0, 2: 0->2, 3: 2->0, 4: 1->3, 5: 3->1, 6: 2->3, 7: 3->2.
# Step 0: every link carries its source's chunk; step 1: each node forwards, across the row, the
# chunk it got from its column neighbour, which is the diagonal node's chunk the receiver lacks.
AG22 = [
    [[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 2, 0], [4, 1, 0], [5, 3, 0], [6, 2, 0], [7, 3, 0]],
    [[1, 3, 0], [0, 2, 0], [7, 1, 0], [6, 0, 0]],
]


def _file(tmp_path, links, kind="mesh", rows=2, cols=2, steps=AG22, **extra):
    d = {
        "format": "equimesh-schedule",
        "version": 1,
        "collective": "allgather",
        "algorithm": "hand",
        "chunks": 1,
        "topology": {"kind": kind, "rows": rows, "cols": cols, "nodes": rows * cols, "links": links, **extra},
        "steps": steps,
    }
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    return p


def _rejected(tmp_path, capsys, path, text):
    with pytest.raises(ScheduleFileError) as e:
        load(path)
    assert "\n" not in str(e.value) and text in str(e.value), str(e.value)
    assert main(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and text in err, err


def test_the_honest_file_is_valid(tmp_path, capsys):
    assert main(["verify", str(_file(tmp_path, MESH22))]) == 0
    assert "valid allgather" in capsys.readouterr().out


def test_extra_diagonal_links_give_no_one_step_allgather(tmp_path, capsys):
    """The issue's reproduction: 4 diagonal links reusing port names make a 1-step AllGather 'valid'."""
    diag = [[0, 3, "E", "W"], [3, 0, "W", "E"], [1, 2, "S", "N"], [2, 1, "N", "S"]]
    links = MESH22 + diag
    one_step = [
        [
            [0, 0, 0],
            [2, 0, 0],
            [8, 0, 0],
            [1, 1, 0],
            [4, 1, 0],
            [10, 1, 0],
            [3, 2, 0],
            [6, 2, 0],
            [11, 2, 0],
            [5, 3, 0],
            [7, 3, 0],
            [9, 3, 0],
        ]
    ]
    _rejected(
        tmp_path,
        capsys,
        _file(tmp_path, links, steps=one_step),
        "topology has 12 links but the 2x2 mesh has 8: link 8 [0, 3, 'E', 'W'] is extra",
    )


def test_missing_link(tmp_path, capsys):
    _rejected(
        tmp_path,
        capsys,
        _file(tmp_path, MESH22[:-1], steps=[]),
        "topology has 7 links but the 2x2 mesh has 8: link 7 [3, 2, 'W', 'E'] is missing",
    )


def test_swapped_ports(tmp_path, capsys):
    links = [list(l) for l in MESH22]
    links[2] = [0, 2, "N", "S"]
    _rejected(
        tmp_path,
        capsys,
        _file(tmp_path, links),
        "topology link 2 is [0, 2, 'N', 'S'] but link 2 of the 2x2 mesh is [0, 2, 'S', 'N']",
    )


def test_reordered_links(tmp_path, capsys):
    links = [MESH22[1], MESH22[0], *MESH22[2:]]
    _rejected(tmp_path, capsys, _file(tmp_path, links), "topology link 0 is [1, 0, 'W', 'E']")


# The 2x3 EquiMesh (nodes 0 1 2 / 3 4 5): the mesh links, then the rings of Algorithm 1 in the order
# top, bottom, left, right. An edge of length 3 clockwise (anticlockwise = False) visits
# odds + reversed(evens) = [1, 2, 0]; anticlockwise: evens + reversed(odds) = [0, 2, 1]. The left
# and right edges have length 2: [1, 0] clockwise, [0, 1] anticlockwise (the same 2-cycle).
MESH23 = [
    [0, 1, "E", "W"],
    [1, 0, "W", "E"],
    [0, 3, "S", "N"],
    [3, 0, "N", "S"],
    [1, 2, "E", "W"],
    [2, 1, "W", "E"],
    [1, 4, "S", "N"],
    [4, 1, "N", "S"],
    [2, 5, "S", "N"],
    [5, 2, "N", "S"],
    [3, 4, "E", "W"],
    [4, 3, "W", "E"],
    [4, 5, "E", "W"],
    [5, 4, "W", "E"],
]


def _ring(nodes, order, port):
    seq = [nodes[i] for i in order]
    return [[seq[i], seq[(i + 1) % len(seq)], port, port] for i in range(len(seq))]


def _equimesh23(top_anticlockwise=False):
    return (
        MESH23
        + _ring([0, 1, 2], [0, 2, 1] if top_anticlockwise else [1, 2, 0], "N")
        + _ring([3, 4, 5], [1, 2, 0], "S")
        + _ring([0, 3], [1, 0], "W")
        + _ring([2, 5], [1, 0], "E")
    )


def test_honest_equimesh_loads(tmp_path):
    p = _file(tmp_path, _equimesh23(), kind="equimesh", rows=2, cols=3, steps=[], ring_dirs="cccc")
    assert [l.as_list() for l in load(p).topology.links] == _equimesh23()


def test_wrong_ring_direction(tmp_path, capsys):
    """The file says the top ring runs clockwise (``c``) but lists the anticlockwise ring."""
    p = _file(
        tmp_path, _equimesh23(top_anticlockwise=True), kind="equimesh", rows=2, cols=3, steps=[], ring_dirs="cccc"
    )
    _rejected(
        tmp_path, capsys, p, "topology link 14 is [0, 2, 'N', 'N'] but link 14 of the 2x3 equimesh is [1, 2, 'N', 'N']"
    )


def test_kind_that_does_not_match_its_links(tmp_path, capsys):
    """EquiMesh links under the name 'mesh': the rings are extra links of a mesh."""
    p = _file(tmp_path, _equimesh23(), kind="mesh", rows=2, cols=3, steps=[])
    _rejected(tmp_path, capsys, p, "topology has 24 links but the 2x3 mesh has 14: link 14 [1, 2, 'N', 'N'] is extra")
    p = _file(tmp_path, MESH23, kind="equimesh", rows=2, cols=3, steps=[], ring_dirs="cccc")
    _rejected(tmp_path, capsys, p, "link 14 [1, 2, 'N', 'N'] is missing")


def test_ring_dirs_on_a_kind_without_rings(tmp_path, capsys):
    _rejected(tmp_path, capsys, _file(tmp_path, MESH22, ring_dirs="aaaa"), "a mesh has no rings")


def test_failed_links_must_be_links_of_the_named_topology(tmp_path, capsys):
    links = [l for l in MESH22 if l != [0, 1, "E", "W"]]
    assert load(_file(tmp_path, links, steps=[], failed_links=[[0, 1, "E", "W"]])).topology.failed == [(0, 1, "E", "W")]
    _rejected(
        tmp_path,
        capsys,
        _file(tmp_path, links, steps=[], failed_links=[[0, 3, "E", "W"]]),
        "failed link [0, 3, 'E', 'W'] is not a link of the 2x2 mesh",
    )


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--kind", "mesh", "--rows", "2", "--cols", "2", "--chunks", "1", "--chunk-flits", "1"],
        [
            "verilog",
            "--kind",
            "mesh",
            "--rows",
            "2",
            "--cols",
            "2",
            "--chunks",
            "1",
            "--chunk-flits",
            "1",
            "--out",
            "OUT",
        ],
        ["mixed", "--kind", "mesh", "--rows", "2", "--cols", "2", "--chunks", "1", "--chunk-flits", "1"],
    ],
)
def test_every_command_that_reads_a_file_rejects_it(tmp_path, capsys, command):
    links = [list(l) for l in MESH22]
    links[0] = [0, 1, "W", "E"]
    p = _file(tmp_path, links)
    argv = [a.replace("OUT", str(tmp_path / "v")) for a in command] + ["--schedule", str(p)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "topology link 0 is [0, 1, 'W', 'E']" in err, err


def test_a_saved_file_edited_in_place_is_rejected(tmp_path, capsys):
    """The layout ``Schedule.save`` writes (read by the numpy fast path) gets the same check."""
    from equimesh.schedules.synth import synthesize
    from equimesh.schedules.topology import build

    p = tmp_path / "s.json"
    synthesize(build("equimesh", 2, 3), 1, "allgather").save(p)
    text = p.read_text()
    assert load(p).topology.name == "2x3 equimesh"
    p.write_text(text.replace('[1, 2, "N", "N"]', '[2, 1, "N", "N"]', 1))
    _rejected(
        tmp_path, capsys, p, "topology link 14 is [2, 1, 'N', 'N'] but link 14 of the 2x3 equimesh is [1, 2, 'N', 'N']"
    )


def test_algorithm1_edges_refuse_what_they_cannot_build():
    from equimesh.schedules.topology import TopologyError, edge_nodes, edge_ring

    with pytest.raises(TopologyError) as e:
        edge_ring(1, False)
    assert str(e.value) == "edge length must be >= 2, got 1"
    with pytest.raises(TopologyError) as e:
        edge_nodes("middle", 2, 2)
    assert str(e.value) == "unknown edge 'middle'; expected one of top, bottom, left, right"


def test_build_limits_and_messages():
    from equimesh.schedules.topology import TopologyError, build

    assert build("mesh", 64, 2).nodes == 128 and build("mesh", 2, 64).nodes == 128  # MAX_SIDE = 64 is allowed
    for args, message in [
        (
            ("ring", 2, 2),
            "unknown topology kind 'ring'; expected one of mesh, equimesh, mirror-equimesh, overflow, torus, supermesh",
        ),
        (("mesh", 1, 2), "rows and cols must be >= 2 (got 1x2)"),
        (("mesh", 65, 2), "rows and cols must be <= 64 (got 65x2)"),
        (("mesh", 2, 65), "rows and cols must be <= 64 (got 2x65)"),
        (("equimesh", 2, 2, {"top": False}), "ring_dirs must name exactly the edges top, bottom, left, right"),
    ]:
        with pytest.raises(TopologyError) as e:
            build(*args)
        assert str(e.value) == message
    assert build("mesh", 2, 2).ring_dirs is None


def test_supermesh_and_overflow_links_by_hand():
    from equimesh.schedules.topology import build

    # SM(2, 3): each row of 3 fully connected (6 directed links per row), each column of 2 (2 per column)
    assert len(build("supermesh", 2, 3).links) == 2 * 6 + 3 * 2
    # the 2x2 overflow: every link is on the perimeter, so each gets a duplicate on extra ports X0, X1, ...,
    # numbered per node in the order the pairs (src < dst) come: 0-1, 0-2, 1-3, 2-3
    assert [l.as_list() for l in build("overflow", 2, 2).links] == [list(l) for l in MESH22] + [
        [0, 1, "X0", "X0"],
        [1, 0, "X0", "X0"],
        [0, 2, "X1", "X0"],
        [2, 0, "X0", "X1"],
        [1, 3, "X1", "X0"],
        [3, 1, "X0", "X1"],
        [2, 3, "X1", "X1"],
        [3, 2, "X1", "X1"],
    ]


def test_torus_wrap_links_by_hand():
    """Seed 003: wrap-around links on a side longer than 2 (a side of 2 already joins its ends)."""
    from equimesh.schedules.topology import build

    # 2x3 (nodes 0 1 2 / 3 4 5): each row wraps 2 -> 0 and 5 -> 3 through E / W; the columns do not
    assert [l.as_list() for l in build("torus", 2, 3).links] == MESH23 + [
        [2, 0, "E", "W"],
        [0, 2, "W", "E"],
        [5, 3, "E", "W"],
        [3, 5, "W", "E"],
    ]
    # 3x2 (nodes 0 1 / 2 3 / 4 5): each column wraps 4 -> 0 and 5 -> 1 through S / N; the rows do not
    mesh32 = [l.as_list() for l in build("mesh", 3, 2).links]
    assert [l.as_list() for l in build("torus", 3, 2).links] == mesh32 + [
        [4, 0, "S", "N"],
        [0, 4, "N", "S"],
        [5, 1, "S", "N"],
        [1, 5, "N", "S"],
    ]
