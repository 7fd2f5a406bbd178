"""Algorithm 2 of seed 000 as printed (schedules/methods/xtree_paper.py): validity, the readings, hand cases."""

import numpy as np
import pytest

from equimesh.schedules.methods.xtree import xtree
from equimesh.schedules.methods.xtree_paper import ASSIGN, xtree_paper
from equimesh.schedules.schedule import Schedule, lower_bound
from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import ALGORITHMS, synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def _sched(topo, k, phase, lanes):
    return Schedule("allgather", "xtree-paper", k, topo, [phase], {"storage": "lanes"} if lanes else {})


@pytest.mark.parametrize(
    "kind,rows,cols", [("equimesh", 2, 3), ("equimesh", 4, 4), ("mesh", 3, 5), ("equimesh", 3, 5), ("torus", 3, 4)]
)
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("assign", ASSIGN)
@pytest.mark.parametrize("lanes", [False, True])
def test_every_reading_is_a_valid_allgather(kind, rows, cols, k, assign, lanes):
    t = build(kind, rows, cols)
    ph = xtree_paper(t, k, lanes=lanes, assign=assign)
    s = _sched(t, k, ph, lanes)
    verify(s)  # every node ends with every chunk, data only from holders
    if lanes:
        check_storage(s)
    assert ph.num_steps >= lower_bound(t, k, "allgather")


def test_2x2_mesh_by_hand():
    # 2x2 mesh, K = 1, every tree's farthest target is the diagonal node at distance 2.
    # Step 1: tree 0 (first in order) takes both out-links of node 0, and so on: all 8 links busy.
    # Step 2: each tree reaches its diagonal node over one of two links; the four link pairs are
    # disjoint, so 2 steps (the bound max(D = 2, ceil(3 / 2))).
    t = build("mesh", 2, 2)
    ph = xtree_paper(t, 1)
    assert ph.num_steps == 2
    assert len(ph.steps[0]) == 8 and len(ph.steps[1]) == 4
    first = ph.steps[0]
    assert all(t.link_src[link] == root for link, root, _ in first)


def test_one_per_tree_grows_each_tree_by_one_node_per_step():
    t = build("equimesh", 3, 4)
    for step in xtree_paper(t, 4, assign="one-per-tree").steps:
        keys = step[:, 1] * 4 + step[:, 2]
        assert len(np.unique(keys)) == len(keys)


def test_sender_held_the_chunk_when_the_step_began():
    # the reading the module rules out: a node added in a step never forwards in that same step
    t = build("equimesh", 4, 4)
    for assign in ASSIGN:
        ph = xtree_paper(t, 4, assign=assign)
        for step in ph.steps:
            got = {(int(t.link_dst[link]), int(r), int(c)) for link, r, c in step}
            assert not any((int(t.link_src[link]), int(r), int(c)) in got for link, r, c in step)


def test_priority_serves_the_first_tree_fully():
    # priority reading: the first tree of the first step (root 0, chunk 0; every tree of a vertex-
    # transitive torus ties) takes every out-link of its root
    t = build("torus", 3, 3)
    first = xtree_paper(t, 1, assign="priority").steps[0]
    mine = first[(first[:, 1] == 0) & (first[:, 2] == 0)]
    assert sorted(t.link_dst[mine[:, 0]].tolist()) == sorted(t.link_dst[t.link_src == 0].tolist())


def test_options_are_checked():
    t = build("equimesh", 2, 3)
    with pytest.raises(ValueError, match="assign"):
        xtree_paper(t, 4, assign="greedy")
    with pytest.raises(ValueError, match="distance"):
        xtree_paper(t, 4, distance="hops")


@pytest.mark.parametrize("distance", ["tree", "root"])
@pytest.mark.parametrize("seed", [None, 3])
def test_distance_and_seed_readings_are_valid(distance, seed):
    t = build("equimesh", 3, 5)
    ph = xtree_paper(t, 4, distance=distance, seed=seed)
    verify(_sched(t, 4, ph, False))


def test_registry_names_both_and_keeps_the_old_name():
    assert {"xtree-paper", "xtree-matching", "xtree"} <= set(ALGORITHMS)
    t = build("equimesh", 3, 4)
    old = synthesize(t, 4, "allgather", "xtree", lanes=False)
    new = synthesize(t, 4, "allgather", "xtree-matching", lanes=False)
    assert old.num_steps == new.num_steps == xtree(t, 4).num_steps
    paper = synthesize(t, 4, "allreduce", "xtree-paper", lanes=True)  # MirrorXTree on Algorithm 2
    verify(paper)
    check_storage(paper)
