"""TTO-style baseline: three link-disjoint trees per root with chunk pipelining, and the tree list scheduler.

Source: seed 000, Section V-A ("TTO [27]", Laskar et al., HPCA 2024): "generates three
trees, where a corner node does not participate", and Section II-B: "builds
non-interlaced trees spatially combining chunk pipelining". The HPCA paper itself was
not available to us, so this is an APPROXIMATION built from that description:

* every root gets three broadcast trees, grown in turns, each preferring links the
  root's other trees do not use (:func:`tto_trees`); a corner has in-degree 2, so it
  cannot hang from three link-disjoint trees (the reason a corner sits out of one tree
  in TTO); here a tree that finds no unused link reuses one instead of leaving the
  corner out, so the result is a complete AllGather;
* chunk ``c`` of a shard travels on tree ``c mod 3``, so ``K`` should be a multiple of 3
  and larger ``K`` pipelines more;
* the trees are turned into timesteps by :func:`schedule_trees`, a list scheduler that
  gives each link, every step, the ready chunk with the deepest remaining subtree.

ReduceScatter is the time- and direction-reverse of the AllGather on the mirror
topology (seed 000, Algorithm 3; for the mesh the mirror is the mesh itself).
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase, Schedule
from ..topology import Topology
from .reverse import reverse_onto

__all__ = ["TREES", "schedule_trees", "tto", "tto_allgather", "tto_trees"]

TREES = 3


def schedule_trees(topo: Topology, chunks: int, parent_link: np.ndarray) -> Phase:
    """Timesteps for broadcast trees: ``parent_link[root * chunks + chunk, v]`` = link into ``v`` (-1 at the root).

    Per step, every link carries the ready transfer (sender holds the chunk) with the
    largest remaining subtree height below its receiver, ties to the lowest
    ``(root * chunks + chunk + link) mod (N K)`` so no root is always first.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    parent_link : numpy.ndarray
        int ``[N K, N]``: per root and chunk (``root * chunks + chunk``), the link into each node; -1 at the root.

    Returns
    -------
    Phase
        An AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.

    Raises
    ------
    ValueError
        If the trees do not span the topology from their roots.
    """
    n = topo.nodes
    x_count = n * chunks
    xs, vs = np.nonzero(parent_link >= 0)
    e_link = parent_link[xs, vs]
    e_src, e_dst = topo.link_src[e_link], vs
    # subtree height below each receiver: repeated relaxation over the tree edges
    height = np.zeros((x_count, n), dtype=np.int64)
    for _ in range(n):
        h_new = height.copy()
        np.maximum.at(h_new, (xs, e_src), height[xs, e_dst] + 1)
        if (h_new == height).all():
            break
        height = h_new
    prio = height[xs, e_dst]
    tie = (xs + e_link) % x_count
    have = np.zeros((n, x_count), dtype=bool)
    have[np.arange(n)[:, None], np.arange(n)[:, None] * chunks + np.arange(chunks)] = True
    done = np.zeros(len(xs), dtype=bool)
    steps = []
    while not done.all():
        ready = np.flatnonzero(~done & have[e_src, xs])
        if not len(ready):
            raise ValueError("tree schedule is stuck: the trees do not span the topology from their roots")
        order = ready[np.lexsort((tie[ready], -prio[ready], e_link[ready]))]
        first = np.concatenate([[True], np.diff(e_link[order]) != 0])
        pick = order[first]
        done[pick] = True
        have[e_dst[pick], xs[pick]] = True
        steps.append(np.stack([e_link[pick], xs[pick] // chunks, xs[pick] % chunks], axis=1))
    return Phase("allgather", steps)


def tto_trees(topo: Topology) -> np.ndarray:
    """``trees[t, root, v]``: link into ``v`` in tree ``t`` of ``root``.

    The three trees of a root grow in turns, one node each, so none can take every
    good link first. A tree takes a link no tree of that root uses yet, from its
    shallowest node; only when no such link reaches a new node does it reuse one (a
    corner, in-degree 2, is reached by at most two trees over distinct links).

    Parameters
    ----------
    topo : Topology
        The topology.

    Returns
    -------
    numpy.ndarray
        int ``[TREES, N, N]``; -1 at the root.

    Raises
    ------
    ValueError
        If the topology is not strongly connected.
    """
    n, n_links = topo.nodes, len(topo.links)
    src, dst = topo.link_src, topo.link_dst
    trees = np.full((TREES, n, n), -1, dtype=np.int64)
    for r in range(n):
        inside = np.zeros((TREES, n), dtype=bool)
        inside[:, r] = True
        depth = np.zeros((TREES, n), dtype=np.int64)
        used = np.zeros(n_links, dtype=bool)
        while not inside.all():
            for t in range(TREES):
                grow = inside[t, src] & ~inside[t, dst]
                if not grow.any():
                    if not inside[t].all():
                        raise ValueError(
                            f"{topo.name} is not strongly connected: "
                            f"node {int(np.argmin(inside[t]))} is unreachable from {r}"
                        )
                    continue
                fresh = grow & ~used
                cand = np.flatnonzero(fresh if fresh.any() else grow)
                l = cand[np.lexsort(((cand + t * n_links // TREES) % n_links, depth[t, src[cand]]))[0]]
                w = dst[l]
                inside[t, w], depth[t, w], used[l] = True, depth[t, src[l]] + 1, True
                trees[t, r, w] = l
    return trees


def tto_allgather(topo: Topology, chunks: int) -> Phase:
    """TTO-style AllGather: chunk ``c`` of each shard travels on tree ``c mod 3`` of its root (:func:`tto_trees`),
    scheduled by :func:`schedule_trees`.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.

    Returns
    -------
    Phase
        An AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.
    """
    trees = tto_trees(topo)
    parent = np.stack([trees[c % TREES] for c in range(chunks)], axis=1).reshape(topo.nodes * chunks, topo.nodes)
    return schedule_trees(topo, chunks, parent)


def tto(topo: Topology, chunks: int, collective: str) -> Schedule:
    """TTO-style AllGather, ReduceScatter or AllReduce (ReduceScatter then AllGather).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    collective : str
        ``"allgather"``, ``"reducescatter"`` or ``"allreduce"``.

    Returns
    -------
    Schedule
        ReduceScatter is the reverse of the AllGather on the mirror topology (seed 000, Algorithm 3).
    """
    phases = []
    if collective in ("reducescatter", "allreduce"):
        m = topo.mirror()
        phases.append(reverse_onto(tto_allgather(m, chunks), m, topo))
    if collective in ("allgather", "allreduce"):
        phases.append(tto_allgather(topo, chunks))
    return Schedule(collective, "tto", chunks, topo, phases)
