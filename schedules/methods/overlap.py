"""Overlapped AllReduce: ReduceScatter and AllGather of different chunks share the links (format version 2).

Seed 000, Section II-B and V-A: TidalMesh [29] overlaps the ReduceScatter and AllGather of
different chunks, which lifts a mesh AllReduce from the corners' degree bound (each phase
needs K (N-1) / 2 steps, one after the other) towards the link-count bound of docs/architecture.md,
ceil(2 K N (N-1) / L): on a mesh a corner's out-links carry mostly reduce traffic and its
in-links mostly gather traffic, so the two phases fit side by side. The TidalMesh paper
was not available; this is a direct synthesis with the same aim, for any topology:

1. **Trees.** Every ``(root, chunk)`` gets a reduce in-tree and a gather out-tree:
   shortest-path trees in which each node picks, among its neighbours one hop closer to the
   root, the link with the least load so far (rip-up and reroute over a few rounds), so
   every link ends up within about one transfer of the mean load ``2 K N (N-1) / L``. Any
   spanning tree costs N-1 transfers; only the spread over the links depends on the choice.
   The trees of a phased AllReduce (e.g. MirrorXTree's) are the other candidate set.
2. **Steps.** A list scheduler: every step each link carries, among its ready transfers, the
   one with the earliest deadline. A reduce transfer is ready once all of its sender's
   children have delivered; a gather transfer once the sender holds the sum (the root:
   once its last partial has arrived). The first pass takes deadlines from a pipeline in
   which the chunks' sums complete one after the other in random order (reduce: that time
   minus the sender's hops to the root; gather: plus the receiver's depth). Then
   backward-forward passes (the justification of project scheduling): schedule the
   reversed dependencies latest-finish first, then forward again in the order of those
   start times, keeping the shortest result.

The result is an ``allreduce`` :class:`Schedule` with one phase of typed transfers.
"""

from __future__ import annotations

import numpy as np

from ..schedule import OP_GATHER, OP_REDUCE, Phase, Schedule
from ..topology import Topology

__all__ = [
    "PASSES",
    "ROUNDS",
    "SPACING",
    "TREE_ALGORITHMS",
    "balanced_trees",
    "overlapped_allreduce",
    "phased_trees",
    "schedule_overlapped",
]

ROUNDS = 6  # rip-up-and-reroute passes over all trees
SPACING = 0.5  # turn times of the first pass, in units of the link bound's time per chunk
PASSES = 4  # backward-forward improvement passes


def balanced_trees(topo: Topology, chunks: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(reduce, gather)``: arrays ``[root * chunks + chunk, node]`` of the link a node sends its partial
    on (reduce in-tree) and of the link it receives the sum on (gather out-tree); -1 at the root.

    Both are shortest-path trees: a node at distance d from the root sends its partial to a
    neighbour at d - 1 (reduce) and receives the sum from one at d - 1 (gather), so every
    chain is at most the diameter long. Among those neighbours it takes the link with the
    least load so far; trees are placed in random order and re-placed ``ROUNDS`` times.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    seed : int
        Seed of the random placement order and tie-breaks.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``reduce`` and ``gather``, each int64 of shape (N x K, N): link ids, -1 at the root.
    """
    n, x_count = topo.nodes, topo.nodes * chunks
    dist, src, dst = topo.distances, topo.link_src, topo.link_dst
    rng = np.random.default_rng(seed)
    load = np.zeros(len(topo.links))
    trees = np.full((2, x_count, n), -1, dtype=np.int64)
    for rnd in range(ROUNDS):
        for x in rng.permutation(x_count):
            r = x // chunks
            for t in (0, 1):
                tree = trees[t, x]
                if rnd:
                    np.subtract.at(load, tree[tree >= 0], 1)
                if t == 0:  # reduce: u -> w with w one hop closer to the root
                    cand, owner = np.flatnonzero(dist[dst, r] == dist[src, r] - 1), src
                else:  # gather: u -> v with u one hop closer to the root
                    cand, owner = np.flatnonzero(dist[r, src] == dist[r, dst] - 1), dst
                cand = cand[np.lexsort((rng.random(len(cand)), load[cand], owner[cand]))]
                pick = cand[np.unique(owner[cand], return_index=True)[1]]
                tree[owner[pick]] = pick
                np.add.at(load, pick, 1)
    return trees[0], trees[1]


def _depths(parent_node: np.ndarray) -> np.ndarray:
    """Per tree and node: hops to the root (``parent_node`` = -1 at the root)."""
    x_count, n = parent_node.shape
    rows = np.arange(x_count)[:, None]
    depth = np.zeros((x_count, n), dtype=np.int64)
    cur = parent_node.copy()
    while (cur >= 0).any():
        depth += cur >= 0
        cur = np.where(cur >= 0, parent_node[rows, np.maximum(cur, 0)], -1)
    return depth


def _list_schedule(link: np.ndarray, before: np.ndarray, after: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Step of every transfer: each step, every link carries its ready transfer of least ``key``.

    Transfer ``after[j]`` is ready once transfer ``before[j]`` (and all its other predecessors)
    ran at an earlier step. Transfers are renumbered in (link, key) order, so a step is one
    scan: the first ready transfer of each link.
    """
    perm = np.lexsort((key, link))
    new = np.empty_like(perm)
    new[perm] = np.arange(len(perm))
    lk = link[perm]
    b, a = new[before], new[after]
    ptr = np.zeros(len(perm) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(b, minlength=len(perm)))
    succ = a[np.argsort(b, kind="stable")]
    indeg = np.bincount(a, minlength=len(perm))
    step = np.full(len(perm), -1, dtype=np.int64)
    s = 0
    while True:
        cand = np.flatnonzero((indeg == 0) & (step < 0))
        if not len(cand):
            break
        pick = cand[np.flatnonzero(np.diff(lk[cand], prepend=-1))]
        step[pick] = s
        lo, cnt = ptr[pick], ptr[pick + 1] - ptr[pick]
        at = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
        np.subtract.at(indeg, succ[at], 1)
        s += 1
    if (step < 0).any():
        raise RuntimeError("overlapped schedule: no transfer is ready (the trees are inconsistent)")
    return step[new]


def schedule_overlapped(topo: Topology, chunks: int, reduce: np.ndarray, gather: np.ndarray) -> Phase:
    """List-schedule the reduce in-trees and gather out-trees into typed timesteps (see module docstring).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    reduce, gather : numpy.ndarray
        int64, shape (N x K, N), as :func:`balanced_trees` gives them.

    Returns
    -------
    Phase
        Collective ``allreduce``; each step an int64 array of shape (n, 4):
        ``[link, root, chunk, op]`` with op :data:`OP_REDUCE` or :data:`OP_GATHER`.

    Raises
    ------
    RuntimeError
        If the trees are inconsistent (no transfer is ever ready).
    """
    n, x_count = topo.nodes, topo.nodes * chunks
    src, dst = topo.link_src, topo.link_dst
    xr, ur = np.nonzero(reduce >= 0)  # reduce edge: node ur sends its partial of x
    xg, vg = np.nonzero(gather >= 0)  # gather edge: node vg receives x
    lr, lg = reduce[xr, ur], gather[xg, vg]
    rs_parent = np.full((x_count, n), -1, dtype=np.int64)
    rs_parent[xr, ur] = dst[lr]
    ag_parent = np.full((x_count, n), -1, dtype=np.int64)
    ag_parent[xg, vg] = src[lg]
    rs_depth, ag_depth = _depths(rs_parent), _depths(ag_parent)
    root = np.arange(x_count) // chunks
    nr = len(xr)
    e_x = np.concatenate([xr, xg])
    e_link = np.concatenate([lr, lg])
    e_op = np.concatenate([np.full(nr, OP_REDUCE), np.full(len(xg), OP_GATHER)])
    # transfer ids: reduce edge of (x, u) and gather edge into (x, v)
    rid = np.full((x_count, n), -1, dtype=np.int64)
    rid[xr, ur] = np.arange(nr)
    gid = np.full((x_count, n), -1, dtype=np.int64)
    gid[xg, vg] = nr + np.arange(len(xg))
    # dependencies: a partial waits for its children's; a gather waits for the sender's copy (the root: its sum)
    p = dst[lr]
    a_from = [rid[xr, ur][p != root[xr]]]
    a_to = [rid[xr, p][p != root[xr]]]
    u = src[lg]
    at_root = u == root[xg]
    a_from.append(gid[xg, u][~at_root])
    a_to.append(gid[xg, vg][~at_root])
    # every partial into the root precedes every gather out of the root (a join on x)
    into = np.flatnonzero(p == root[xr])
    into = into[np.argsort(xr[into], kind="stable")]
    outof = np.flatnonzero(at_root)
    outof = outof[np.argsort(xg[outof], kind="stable")]
    per_x = np.bincount(xg[outof], minlength=x_count)
    rep = per_x[xr[into]]
    first = np.cumsum(per_x) - per_x
    offset = np.arange(rep.sum()) - np.repeat(np.cumsum(rep) - rep, rep)
    a_from.append(np.repeat(into, rep))
    a_to.append(nr + outof[np.repeat(first[xr[into]], rep) + offset])
    a_from, a_to = np.concatenate(a_from), np.concatenate(a_to)
    fwd, bwd = (a_from, a_to), (a_to, a_from)
    # first priority: deadlines of a pipeline in which chunk x's sum completes at turn[x]
    turn = np.random.default_rng(1).permutation(x_count) * (SPACING * 2 * (n - 1) / len(topo.links))
    key = np.concatenate([turn[xr] - rs_depth[xr, ur], turn[xg] + ag_depth[xg, vg]])
    best = _list_schedule(e_link, *fwd, key)
    step = best
    for _ in range(PASSES):
        back = _list_schedule(e_link, *bwd, -step)  # latest first, in reverse time
        step = _list_schedule(e_link, *fwd, back.max() - back)
        if step.max() < best.max():
            best = step
    order = np.argsort(best, kind="stable")
    bounds = np.searchsorted(best[order], np.arange(best.max() + 2))
    rows = np.stack([e_link, root[e_x], e_x % chunks, e_op], axis=1)[order]
    return Phase("allreduce", [rows[bounds[s] : bounds[s + 1]] for s in range(best.max() + 1)])


def phased_trees(sched: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """The reduce and gather trees of a phased AllReduce (ReduceScatter, then AllGather), as :func:`balanced_trees`.

    Parameters
    ----------
    sched : Schedule
        A phased AllReduce: two phases of ``[link, root, chunk]`` rows.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``reduce`` (link each node sends its partial on) and ``gather`` (link each node receives
        the sum on), each int64 of shape (N x K, N), -1 where none.
    """
    n, k = sched.topology.nodes, sched.chunks
    trees = np.full((2, n * k, n), -1, dtype=np.int64)
    ends = (sched.topology.link_src, sched.topology.link_dst)
    for t, phase in enumerate(sched.phases):
        a = np.concatenate([np.asarray(s, dtype=np.int64).reshape(-1, 3) for s in phase.steps])
        trees[t, a[:, 1] * k + a[:, 2], ends[t][a[:, 0]]] = a[:, 0]
    return trees[0], trees[1]


TREE_ALGORITHMS = ("xtree", "mirrorxtree", "multitree", "ring2d")


def overlapped_allreduce(topo: Topology, chunks: int, phased: Schedule) -> Schedule:
    """The overlapped AllReduce of ``topo`` with ``chunks`` chunks per shard (one typed phase).

    Two tree sets are list-scheduled and the shorter result is kept: the link-balanced shortest-path
    trees, and the trees of the phased AllReduce ``phased`` (for MirrorXTree, seed 000, Algorithm 3:
    trees that already balance the in- and out-degrees).

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        Chunks per shard, K.
    phased : Schedule
        A phased AllReduce of ``topo`` (ReduceScatter, then AllGather) by one of ``TREE_ALGORITHMS``.

    Returns
    -------
    Schedule
        The overlapped AllReduce (format version 2), method ``overlap``.

    Raises
    ------
    ValueError
        If ``phased.algorithm`` is not one of ``TREE_ALGORITHMS``.
    """
    if phased.algorithm not in TREE_ALGORITHMS:
        raise ValueError(
            f"the overlapped AllReduce takes the trees of {', '.join(TREE_ALGORITHMS)} (got {phased.algorithm!r})"
        )
    best = None
    for reduce, gather in (balanced_trees(topo, chunks), phased_trees(phased)):
        phase = schedule_overlapped(topo, chunks, reduce, gather)
        if best is None or phase.num_steps < best.num_steps:
            best = phase
    return Schedule("allreduce", f"{phased.algorithm}+overlap", chunks, topo, [best], meta={"method": "overlap"})
