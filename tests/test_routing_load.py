"""The default forwarding table against XY: link loads, hops, MultiWrite trees (pure Python).

The loads here are computed from the topology and the table's ports alone (walking the
ports, not ``ForwardingTable.route``), and the XY reference from node coordinates, so the
checks do not rely on the code under test.
"""

import pytest

from equimesh.schedules.routing import check_deadlock_free, forwarding_table
from equimesh.schedules.topology import build


def _walk(topo, ports, s, d):
    """Link ids from ``s`` to ``d`` following ``ports[v][d]``."""
    out = {(l.src, l.src_port): i for i, l in enumerate(topo.links)}
    path, v = [], s
    while v != d:
        i = out[(v, ports[v][d])]
        path.append(i)
        v = topo.links[i].dst
        assert len(path) <= topo.nodes, f"routing loop {s} -> {d}"
    return path


def _loads(topo, ports):
    """(routes per link, source trees per link, total hops) for all-to-all traffic."""
    pairs, trees, hops = [0] * len(topo.links), [0] * len(topo.links), 0
    for s in range(topo.nodes):
        tree = set()
        for d in range(topo.nodes):
            if d != s:
                p = _walk(topo, ports, s, d)
                hops += len(p)
                tree.update(p)
                for i in p:
                    pairs[i] += 1
        for i in tree:
            trees[i] += 1
    return pairs, trees, hops


def _xy_reference(rows, cols):
    """Max routes per link, max trees per link and total hops of XY (columns first) on the mesh."""
    pairs, trees, hops = {}, {}, 0
    for s in range(rows * cols):
        tree = set()
        for d in range(rows * cols):
            if d == s:
                continue
            (r, c), (rd, cd) = divmod(s, cols), divmod(d, cols)
            steps = []
            while c != cd:
                c2 = c + (1 if cd > c else -1)
                steps.append(((r, c), (r, c2)))
                c = c2
            while r != rd:
                r2 = r + (1 if rd > r else -1)
                steps.append(((r, c), (r2, c)))
                r = r2
            hops += len(steps)
            tree.update(steps)
            for e in steps:
                pairs[e] = pairs.get(e, 0) + 1
        for e in tree:
            trees[e] = trees.get(e, 0) + 1
    return max(pairs.values()), max(trees.values()), hops


def test_8x8_equimesh_no_hotter_than_the_mesh_and_shorter():
    """The complaint this table fixes: the old greedy put 210 routes on one ring link of the 8x8
    EquiMesh (mesh XY: 128), and the unicast AllGather ran 2.2x longer than on the mesh."""
    topo = build("equimesh", 8, 8)
    t = forwarding_table(topo)
    pairs, trees, hops = _loads(topo, t.ports)
    mesh_pairs, mesh_trees, mesh_hops = _xy_reference(8, 8)
    assert (mesh_pairs, mesh_trees) == (128, 56)
    assert max(pairs) <= mesh_pairs
    assert max(trees) <= mesh_trees
    assert hops < mesh_hops  # mean hops 4.889 against 5.333
    ring = [i for i, l in enumerate(topo.links) if l.src_port == l.dst_port]
    assert all(pairs[i] > 0 for i in ring)  # every ring link carries traffic
    assert max(pairs[i] for i in ring) < mesh_pairs


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "mirror-equimesh", "torus", "overflow"])
def test_never_worse_than_xy(kind):
    """On every size up to 5x5: deadlock-free, no route longer than its XY route, and neither
    the routes nor the MultiWrite trees through any link more than XY's maximum."""
    for rows in range(2, 6):
        for cols in range(2, 6):
            topo = build(kind, rows, cols)
            t = forwarding_table(topo)
            check_deadlock_free(t)
            pairs, trees, _ = _loads(topo, t.ports)
            xy_pairs, xy_trees, _ = _xy_reference(rows, cols)
            assert max(pairs) <= xy_pairs and max(trees) <= xy_trees, (kind, rows, cols)
            for s in range(topo.nodes):
                for d in range(topo.nodes):
                    (r, c), (rd, cd) = divmod(s, cols), divmod(d, cols)
                    assert len(_walk(topo, t.ports, s, d)) <= abs(r - rd) + abs(c - cd)


@pytest.mark.parametrize(
    "kind,rows,cols",
    [("mesh", 4, 4), ("equimesh", 4, 4), ("equimesh", 5, 7), ("mirror-equimesh", 6, 6), ("overflow", 4, 5)],
)
def test_multiwrite_trees_are_trees(kind, rows, cols):
    """A source's MultiWrite copies reach every other node exactly once: its tree has N-1 links."""
    topo = build(kind, rows, cols)
    _, trees, _ = _loads(topo, forwarding_table(topo).ports)
    assert sum(trees) == topo.nodes * (topo.nodes - 1)
