"""Every baseline of the evaluation (seed 000, Section V-A) and failed-link resynthesis pass the verifier."""

import numpy as np
import pytest

from equimesh.schedules.failures import DegradedTopology, Disconnected, degrade, parse_fail_links, random_failures
from equimesh.schedules.methods.tacos import tacos
from equimesh.schedules.methods.tidalmesh import tidalmesh
from equimesh.schedules.methods.tto import tto, tto_trees
from equimesh.schedules.schedule import lower_bound, schedule_bound
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import TopologyError, build
from equimesh.schedules.verify import verify
from equimesh.sim.analytic.evaluate import ALGORITHMS

SIZES = [(2, 2), (3, 3), (2, 5), (4, 5), (5, 4)]


@pytest.mark.parametrize("rows,cols", SIZES)
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_verifies(name, rows, cols):
    algo = ALGORITHMS[name]
    topo = build(algo.kind, rows, cols)
    k = algo.chunk_counts[1]
    for collective in algo.collectives:
        sched = algo.make(topo, k, collective)
        verify(sched)
        assert sched.num_steps >= schedule_bound(sched)
        for ph in [] if sched.overlapped else sched.phases:
            assert ph.num_steps >= lower_bound(topo, k, ph.collective)


@pytest.mark.parametrize("make", [tacos, tto, tidalmesh])
def test_reducescatter_alone_verifies(make):
    topo = build("mesh", 3, 4)
    sched = make(topo, 2, "reducescatter")
    assert [p.collective for p in sched.phases] == ["reducescatter"]
    verify(sched)


def test_tacos_reaches_the_mesh_bound_on_2x2():
    # 2x2 mesh, K = 1: every node must take 3 chunks through 2 in-links: ceil(3/2) = 2 steps.
    sched = tacos(build("mesh", 2, 2), 1, "allgather")
    assert sched.num_steps == 2


def test_tto_trees_span_from_their_root_and_prefer_fresh_links():
    topo = build("mesh", 3, 3)
    trees = tto_trees(topo)
    for t in range(3):
        for root in range(topo.nodes):
            p = trees[t, root]
            assert p[root] == -1
            for v in range(topo.nodes):  # following parents from any node reaches the root
                hops = 0
                while v != root:
                    assert topo.link_dst[p[v]] == v
                    v, hops = int(topo.link_src[p[v]]), hops + 1
                    assert hops < topo.nodes

    # The centre (out-degree 4) starts its three trees on three different links; a
    # corner (out-degree 2) can give only two trees a link of their own.
    def own_first_links(root):  # can each tree be given a distinct link out of the root?
        outs = [set(int(l) for l in trees[t, root] if l >= 0 and topo.link_src[l] == root) for t in range(3)]
        return any(len({a, b, c}) == 3 for a in outs[0] for b in outs[1] for c in outs[2])

    assert own_first_links(4)
    assert not own_first_links(0)


def test_tidalmesh_rejects_other_topologies():
    with pytest.raises(ValueError, match="complete 2D mesh"):
        tidalmesh(build("equimesh", 3, 3), 2, "allgather")


@pytest.mark.parametrize("collective", ["allgather", "allreduce"])
def test_failed_link_schedule_verifies(collective):
    topo = build("equimesh", 4, 5)
    failed = parse_fail_links("6-7,0>1", topo)
    deg = degrade(topo, failed)
    assert len(deg.links) == len(topo.links) - len(failed)
    sched = synthesize(deg, 4, collective, "mirrorxtree" if collective == "allreduce" else "xtree")
    verify(sched)
    used = {int(l) for ph in sched.phases for s in ph.steps for l in np.asarray(s)[:, 0]}
    assert all(0 <= l < len(deg.links) for l in used)


def test_degraded_mirror_lacks_reverse_of_failed_ring_link():
    topo = build("equimesh", 3, 4)
    ring = next(l for l in topo.links if l.src_port == l.dst_port)  # an edge-ring link
    deg = DegradedTopology(topo, [ring.as_list()])
    mirror_pairs = {(l.src, l.dst, l.src_port) for l in deg.mirror().links}
    assert (ring.dst, ring.src, ring.dst_port) not in mirror_pairs
    assert len(deg.mirror().links) == len(topo.links) - 1


def test_random_failures_are_seeded_and_distinct():
    topo = build("mesh", 4, 4)
    a, b = random_failures(topo, 3, seed=7), random_failures(topo, 3, seed=7)
    assert a == b and len({tuple(x) for x in a}) == 3


def test_disconnecting_failures_are_reported():
    topo = build("mesh", 2, 3)
    with pytest.raises(Disconnected, match="disconnects the network: node 0"):
        degrade(topo, parse_fail_links("0-1,0-3", topo))


def test_degraded_mirror_is_the_reverse_graph():
    topo = build("equimesh", 3, 4)
    deg = degrade(topo, random_failures(topo, 6, seed=3))
    fwd = sorted((l.src, l.dst) for l in deg.links)
    rev = sorted((l.dst, l.src) for l in deg.mirror().links)
    assert fwd == rev


def test_bad_fail_links_text():
    topo = build("mesh", 2, 2)
    with pytest.raises(TopologyError, match="no link"):
        parse_fail_links("0-3", topo)
    with pytest.raises(TopologyError, match="not U-V"):
        parse_fail_links("0:1", topo)
