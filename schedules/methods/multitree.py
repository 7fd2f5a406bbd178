"""MultiTree AllGather baseline (Huang et al., ISCA 2021; seed 000 ref. [26]).

One spanning tree per root, all built together timestep by timestep on free
links: in each step the trees take turns (round robin, the tree with the
fewest nodes first), and each turn adds one link ``(u, w)`` with ``u`` in the
tree since an earlier step, ``w`` not yet in it, and the link still free in
this step. The K chunks of a root then follow that root's tree, pipelined:
every (tree edge, chunk) transfer is list-scheduled at the earliest step after
its parent edge delivered the chunk in which the link is free.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase
from ..topology import Topology

__all__ = ["build_trees", "multitree"]


def build_trees(topo: Topology) -> list[list[tuple[int, int]]]:
    """Per root, the tree edges as ``(link, tree_step)`` in the order they were added.

    Each tree step, the trees take turns (fewest nodes first) adding one free link from a node
    in the tree since an earlier step to a node not yet in it, until no tree can grow.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    list of list of tuple of (int, int)
        N lists, one per root: ``(link id, tree step)``, tree steps counted from 0.

    Raises
    ------
    RuntimeError
        If the trees stall: the topology is not strongly connected.
    """
    n = topo.nodes
    src, dst = topo.link_src, topo.link_dst
    in_tree = np.eye(n, dtype=bool)  # in_tree[root, node]
    edges: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    step = 0
    while not in_tree.all():
        free = np.ones(len(src), dtype=bool)
        before = in_tree.copy()
        added = True
        while added:
            added = False
            for r in np.argsort(in_tree.sum(axis=1), kind="stable"):
                cand = np.nonzero(free & before[r, src] & ~in_tree[r, dst])[0]
                if len(cand) == 0:
                    continue
                l = int(cand[0])
                free[l] = False
                in_tree[r, dst[l]] = True
                edges[r].append((l, step))
                added = True
        if in_tree.sum() == before.sum():
            raise RuntimeError(f"MultiTree stalled on {topo.name}: not strongly connected")
        step += 1
    return edges


def multitree(topo: Topology, chunks: int) -> Phase:
    """The MultiTree AllGather baseline (seed 000, ref. [26]; module docstring).

    Every (tree edge, chunk) transfer is list-scheduled at the earliest step after its parent
    edge delivered the chunk in which the link is free. The node storage lanes are not modelled.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard (>= 1).

    Returns
    -------
    Phase
        An AllGather phase of ``[link, root, chunk]`` rows, sorted in each step.

    Raises
    ------
    RuntimeError
        If the topology is not strongly connected.
    """
    src, dst = topo.link_src, topo.link_dst
    trees = build_trees(topo)
    jobs = []  # (tree_step, chunk, root, link)
    for r, es in enumerate(trees):
        for l, s in es:
            for c in range(chunks):
                jobs.append((s, c, r, l))
    jobs.sort()
    arrive: dict[tuple[int, int, int], int] = {}  # (node, root, chunk) -> step received
    busy: dict[int, set[int]] = {}
    out: dict[int, list[tuple[int, int, int]]] = {}
    for _, c, r, l in jobs:
        u = int(src[l])
        t = 0 if u == r else arrive[(u, r, c)] + 1
        used = busy.setdefault(l, set())
        while t in used:
            t += 1
        used.add(t)
        arrive[(int(dst[l]), r, c)] = t
        out.setdefault(t, []).append((l, r, c))
    steps = [np.array(sorted(out.get(t, [])), dtype=np.int64).reshape(-1, 3) for t in range(max(out) + 1)]
    return Phase("allgather", steps)
