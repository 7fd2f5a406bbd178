"""Forwarding tables, reach masks, mask split and the channel-dependency deadlock check (pure Python)."""

import json
import random

import pytest

from equimesh.schedules.routing import (
    DeadlockError,
    ForwardingTable,
    RoutingError,
    channel_dependencies,
    check_deadlock_free,
    forwarding_table,
    load,
    xy_table,
)
from equimesh.schedules.topology import build

SIZES = [
    ("mesh", 2, 3),
    ("equimesh", 2, 3),
    ("mesh", 4, 4),
    ("equimesh", 4, 4),
    ("mirror-equimesh", 4, 4),
    ("equimesh", 8, 8),
    ("torus", 4, 4),
    ("overflow", 3, 4),
]


def _manhattan(topo, s, d):
    (rs, cs), (rd, cd) = divmod(s, topo.cols), divmod(d, topo.cols)
    return abs(rs - rd) + abs(cs - cd)


def _torus_distance(topo, s, d):
    (rs, cs), (rd, cd) = divmod(s, topo.cols), divmod(d, topo.cols)
    dr, dc = abs(rs - rd), abs(cs - cd)
    return min(dr, topo.rows - dr) + min(dc, topo.cols - dc)


@pytest.mark.parametrize("kind,rows,cols", SIZES)
def test_tables_route_everywhere_and_are_deadlock_free(kind, rows, cols):
    """Every route is a chain of links from s to d; XY takes exactly the Manhattan distance (by hand),
    shortcut routing never more; on the torus shortcut routes take the wrap-around distance."""
    topo = build(kind, rows, cols)
    for alg in ("xy", "shortcut"):
        t = forwarding_table(topo, alg)
        hops = t.hops()
        for s in range(topo.nodes):
            for d in range(topo.nodes):
                route = t.route(s, d)
                at = s
                for i in route:
                    assert topo.links[i].src == at
                    at = topo.links[i].dst
                assert at == d and hops[s][d] == len(route)
                if alg == "xy":
                    assert hops[s][d] == _manhattan(topo, s, d)
                else:
                    assert topo.distances[s, d] <= hops[s][d] <= _manhattan(topo, s, d)
                    if kind == "torus":
                        assert hops[s][d] == _torus_distance(topo, s, d)
        check_deadlock_free(t)


def test_shortcut_uses_equimesh_rings_and_shortens_routes():
    topo = build("equimesh", 4, 4)
    xy, sc = forwarding_table(topo, "xy"), forwarding_table(topo, "shortcut")
    n = topo.nodes
    ring = {i for i, l in enumerate(topo.links) if l.src_port == l.dst_port}  # rings use one port at both ends
    used = {i for s in range(n) for d in range(n) for i in sc.route(s, d)}
    assert used & ring, "shortcut routing uses no ring link"
    assert sum(map(sum, sc.hops())) < sum(map(sum, xy.hops()))
    # 2x3 EquiMesh: every route is a shortest path.
    small = build("equimesh", 2, 3)
    t = forwarding_table(small)
    assert t.hops() == small.distances.tolist()


@pytest.mark.parametrize("kind,rows,cols", [("mesh", 4, 4), ("equimesh", 4, 4)])
def test_reach_masks_partition_the_other_nodes(kind, rows, cols):
    topo = build(kind, rows, cols)
    t = forwarding_table(topo)
    full = (1 << topo.nodes) - 1
    for v in range(topo.nodes):
        masks = list(t.reach[v].values())
        assert sum(masks) == full
        for i, a in enumerate(masks):
            for b in masks[i + 1 :]:
                assert a & b == 0
        assert t.reach[v]["L"] == 1 << v


def test_mask_split_follows_the_recursive_rules():
    """Seed 004, Section 4.3.3: one copy per distinct egress port, each with its sub-mask; following
    the copies recursively reaches every destination exactly once and nothing else."""
    topo = build("equimesh", 4, 4)
    t = forwarding_table(topo)
    rng = random.Random(4)
    for _ in range(300):
        src = rng.randrange(topo.nodes)
        dests = rng.sample([d for d in range(topo.nodes) if d != src], rng.randint(1, topo.nodes - 1))
        bitmap = sum(1 << d for d in dests)
        delivered = []
        todo = [(src, bitmap)]
        while todo:
            v, m = todo.pop()
            parts = t.split(v, m)
            assert sum(parts.values()) == m  # the masks partition the bitmap
            for port, sub in parts.items():
                if port == "L":
                    assert sub == 1 << v
                    delivered.append(v)
                else:
                    todo.append((topo.links[t.out_link[v][port]].dst, sub))
        assert sorted(delivered) == sorted(dests)
    # The example of the docstring: router 5 of the 4x4 mesh, XY, destinations {1, 6, 9}.
    m = xy_table(build("mesh", 4, 4))
    assert m.split(5, (1 << 1) | (1 << 6) | (1 << 9) | (1 << 5)) == {"N": 1 << 1, "E": 1 << 6, "S": 1 << 9, "L": 1 << 5}


def _clockwise_2x2() -> ForwardingTable:
    """Two-hop routes that all turn clockwise on the 2x2 mesh: the textbook cyclic dependency."""
    topo = build("mesh", 2, 2)
    t = xy_table(topo)
    t.algorithm = "clockwise"
    # 0 -> 3 via 1 (E, S); 1 -> 2 via 3 (S, W); 3 -> 0 via 2 (W, N); 2 -> 1 via 0 (N, E)
    t.ports[0][3], t.ports[1][2], t.ports[3][0], t.ports[2][1] = "E", "S", "W", "N"
    return t


def test_checker_rejects_a_cyclic_table():
    with pytest.raises(DeadlockError, match="channel dependency cycle"):
        check_deadlock_free(_clockwise_2x2())


def test_a_table_changed_after_its_check_is_checked_again():
    """A table that passed is not checked twice, but one whose ports changed since is: the clockwise
    turns planted into the XY table that passed are found."""
    t = xy_table(build("mesh", 2, 2))
    check_deadlock_free(t)
    t.ports[0][3], t.ports[1][2], t.ports[3][0], t.ports[2][1] = "E", "S", "W", "N"
    with pytest.raises(DeadlockError, match="channel dependency cycle"):
        check_deadlock_free(t)


def test_wormhole_tree_multicast_is_cyclic_even_with_xy():
    """Replication adds dependencies between sibling branches when packets can stall mid-flight
    (wormhole): XY tree multicast on a mesh then deadlocks, which is why the router is cut-through."""
    t = xy_table(build("mesh", 2, 3))
    check_deadlock_free(t, "cut-through")
    with pytest.raises(DeadlockError, match="wormhole"):
        check_deadlock_free(t, "wormhole")


def test_bad_tables_are_rejected(tmp_path):
    topo = build("mesh", 2, 2)
    t = xy_table(topo)
    t.ports[0][3] = "N"  # router 0 has no north link
    with pytest.raises(RoutingError, match="no outgoing link"):
        check_deadlock_free(t)
    t = xy_table(topo)
    t.ports[0][3], t.ports[1][3] = "E", "W"  # 0 -> 1 -> 0 -> ...
    with pytest.raises(RoutingError, match="loop from node 0 to node 3"):  # the first looping pair
        check_deadlock_free(t)
    path = tmp_path / "cw.json"
    path.write_text(json.dumps(_clockwise_2x2().to_json()))
    with pytest.raises(DeadlockError):
        load(path)
    path.write_text(json.dumps(forwarding_table(build("equimesh", 2, 3)).to_json()))
    assert load(path).topology.name == "2x3 equimesh"


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "torus", "overflow"])
def test_channel_dependencies_are_the_consecutive_links_of_every_route(kind):
    """The definition, by the table's own routes: every source to every destination, each pair of
    consecutive links (channel_dependencies builds the same set per destination, without the routes)."""
    for algorithm in ("xy", "shortcut"):
        t = forwarding_table(build(kind, 4, 5), algorithm)
        n = t.topology.nodes
        want = {pair for s in range(n) for d in range(n) for pair in zip(t.route(s, d), t.route(s, d)[1:])}
        assert channel_dependencies(t) == want


def test_a_cached_table_is_the_one_built_and_a_damaged_one_is_built_again(tmp_path, monkeypatch):
    """``routing_table`` reads back exactly the table ``forwarding_table`` built (without building it
    again), and a cached record that no longer passes the checks (router 0 keeping node 11's packets) is
    built again, not used."""
    from equimesh import args as cli_args

    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path))
    topo = build("equimesh", 3, 4)
    first = cli_args.routing_table(topo)
    assert first.ports == forwarding_table(topo).ports and first.algorithm == "shortcut"
    calls = []
    monkeypatch.setattr(cli_args, "forwarding_table", lambda *a: calls.append(a) or forwarding_table(*a))
    again = cli_args.routing_table(topo)
    assert calls == [] and again.ports == first.ports and again.algorithm == first.algorithm
    (path,) = (tmp_path / "routing").glob("*.json")
    rec = json.loads(path.read_text())
    rec["ports"][0][11] = "L"  # node 0 would keep packets for node 11
    path.write_text(json.dumps(rec))
    assert cli_args.routing_table(topo).ports == first.ports and len(calls) == 1
    assert not path.exists()  # the damaged record is gone; the next run writes a good one
