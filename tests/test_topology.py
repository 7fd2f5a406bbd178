"""Topologies: Algorithm 1 index lists, Fig. 5a rings, degrees, ports and crosspoints."""

import pytest

from equimesh.schedules.topology import KINDS, MAX_SIDE, TopologyError, build, edge_ring, ring_links


def _expected_ring(n, anticlockwise):
    # Written from the paper's description, independent of the implementation:
    # all odd indices ascending then all even indices descending (clockwise), or the reverse ring.
    odds = [i for i in range(n) if i % 2 == 1]
    evens = [i for i in range(n) if i % 2 == 0]
    return evens + odds[::-1] if anticlockwise else odds + evens[::-1]


@pytest.mark.parametrize("n", range(2, 10))
@pytest.mark.parametrize("anticlockwise", [False, True])
def test_algorithm1_index_lists(n, anticlockwise):
    ring = edge_ring(n, anticlockwise)
    assert ring == _expected_ring(n, anticlockwise)
    assert sorted(ring) == list(range(n))
    # consecutive ring members are at most two apart along the edge (edge links, corner links)
    assert all(abs(ring[i] - ring[(i + 1) % n]) <= 2 for i in range(n))


def test_algorithm1_directions_are_reverses():
    for n in range(2, 10):
        cw, acw = edge_ring(n, False), edge_ring(n, True)
        succ_cw = {cw[i]: cw[(i + 1) % n] for i in range(n)}
        succ_acw = {acw[i]: acw[(i + 1) % n] for i in range(n)}
        assert all(succ_acw[succ_cw[a]] == a for a in range(n))


def _cycle(links):
    succ = dict(links)
    start = min(succ)
    out, v = [start], succ[start]
    while v != start:
        out.append(v)
        v = succ[v]
    return out + [start]


def test_fig5a_top_ring_of_5_columns():
    assert _cycle(ring_links("top", 4, 5, False)) == [0, 1, 3, 4, 2, 0]


def test_fig5a_left_ring_of_4x5():
    assert _cycle(ring_links("left", 4, 5, False)) == [0, 5, 15, 10, 0]


@pytest.mark.parametrize("rows", range(2, 13))
@pytest.mark.parametrize("cols", range(2, 13))
def test_equimesh_degree_four_everywhere(rows, cols):
    t = build("equimesh", rows, cols)
    assert (t.in_degree == 4).all() and (t.out_degree == 4).all()
    assert (t.router_ports == 5).all()  # no router needs a sixth port
    m = t.mirror()
    assert (m.in_degree == 4).all() and (m.out_degree == 4).all()


def test_ring_links_use_outward_ports():
    t = build("equimesh", 4, 5)
    for l in t.links:
        if l.src_port == l.dst_port:  # ring links leave and enter through the same outward port
            r1, c1 = divmod(l.src, 5)
            r2, c2 = divmod(l.dst, 5)
            side = {
                "N": r1 == 0 and r2 == 0,
                "S": r1 == 3 and r2 == 3,
                "W": c1 == 0 and c2 == 0,
                "E": c1 == 4 and c2 == 4,
            }
            assert side[l.src_port]


def test_mirror_reverses_every_ring():
    t = build("equimesh", 3, 4)
    m = t.mirror()
    rings = {(l.src, l.dst, l.src_port) for l in t.links if l.src_port == l.dst_port}
    mrings = {(l.dst, l.src, l.src_port) for l in m.links if l.src_port == l.dst_port}
    assert rings == mrings


def test_overflow_needs_six_ports_on_edges():
    t = build("overflow", 3, 3)
    ports = t.router_ports
    # Fig. 2b: edge (non-corner) nodes 1, 3, 5, 7 get 5 links -> 6-port routers
    assert [int(p) for p in ports] == [5, 6, 5, 6, 5, 6, 5, 6, 5]
    assert t.crosspoints == 5 * 25 + 4 * 36
    assert (t.in_degree >= 4).all()


def test_mesh_degrees_and_diameter():
    t = build("mesh", 3, 4)
    assert sorted(set(t.in_degree.tolist())) == [2, 3, 4]
    assert t.diameter == 2 + 3
    assert len(t.links) == 2 * (3 * 3 + 4 * 2)


def test_torus_size_two_has_one_neighbour():
    t = build("torus", 2, 5)
    pairs = [(l.src, l.dst) for l in t.links]
    assert len(pairs) == len(set(pairs))  # no parallel links
    assert (t.in_degree == 3).all()
    assert t.diameter == 1 + 2


@pytest.mark.parametrize("bad", [(1, 4), (4, 1), (0, 0), (MAX_SIDE + 1, 4), (2, 10**12)])
def test_bad_sizes(bad):
    with pytest.raises(TopologyError, match="rows and cols must be"):
        build("equimesh", *bad)


def test_unknown_kind():
    with pytest.raises(TopologyError):
        build("hypercube", 4, 4)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_strongly_connected(kind):
    assert build(kind, 3, 5).strongly_connected
