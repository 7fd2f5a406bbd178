"""XTree AllGather as printed: seed 000, Section IV-A, Algorithm 2, line by line.

This is the paper's algorithm with nothing added (``--algorithm xtree-paper``);
the project's own variant, which matches links to trees per step, caps each
tree's growth and orders chunks at random, is :mod:`.xtree`
(``--algorithm xtree-matching``, also reachable as ``xtree``).

Lines 1-3 make one tree ``T(v, c)`` per root ``v`` and chunk ``c``, in the
order of the loops (chunk-major). Each timestep (line 6) starts from a fresh
copy ``E'`` of the links; line 7 sorts the trees by the farthest distance to
their remaining target nodes, descending; lines 8-13 give a free link
``(u, w)`` with ``u`` in the tree and ``w`` outside it to a tree and remove
it from ``E'``. The text around the algorithm says the loop "continues as
long as available edges remain ... until no further edges can be assigned in
the current step".

Where the text leaves a choice open, this module takes one reading and
offers the others as arguments of :func:`xtree_paper`:

* **What ``break`` leaves (``assign``).** ``"priority"`` (default): the
  ``break`` of line 11 ends the loop over the sorted trees and the enclosing
  loop the text describes starts it again from the first tree, so every link
  goes to the highest-priority tree that can still use one. That tree takes a
  link to every node it can reach this step before the next tree is served.
  ``"round-robin"``: ``break`` ends only the search for an edge, so each pass
  over the sorted trees gives each tree at most one link and passes repeat
  until none is assigned. ``"one-per-tree"``: a single pass, each tree at most
  one link per timestep.
* **Distance (``distance``).** ``"tree"`` (default): the text's "farthest
  distance from the nodes already included in each tree to the target nodes",
  i.e. ``max`` over nodes ``w`` outside the tree of the hop distance from the
  nearest tree node to ``w``. ``"root"``: the distance from the root ``v``.
* **Ties and the choice among several free links (``seed``).** ``None``
  (default): trees in the order of lines 1-3 (stable sort), links in the
  order of ``E``; an integer shuffles both orders with that seed.
* **Which nodes may send (not an option).** ``u`` must have been in the tree
  when the timestep began: a node added in this timestep has not received the
  chunk yet. The reading where a node added in line 10 may forward in the same
  timestep gives schedules that deliver data before it arrives.

``lanes=True`` also honours the node storage rule of :mod:`..storage`, which
the paper does not have: a link is skipped when its source's lane holding the
chunk was already read for another chunk in this timestep.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase
from ..storage import home_lanes, lane_table, link_lanes
from ..topology import Topology

__all__ = ["ASSIGN", "DISTANCE", "xtree_paper"]

ASSIGN = ("priority", "round-robin", "one-per-tree")
DISTANCE = ("tree", "root")


class _Lanes:
    """Where every node keeps every chunk (tree), and which chunk each lane sends in this timestep."""

    def __init__(self, topo: Topology, chunks: int):
        n = topo.nodes
        self.src_lane, self.dst_lane = link_lanes(topo)
        self.where = np.full((chunks * n, n), -1, dtype=np.int64)  # where[tree, node] = lane
        home = home_lanes(topo, chunks)  # home[v, c]
        t = np.arange(chunks * n)
        self.where[t, t % n] = home[t % n, t // n]
        self.reading = np.full(int(lane_table(topo)[1].sum()), -1, dtype=np.int64)
        self.src = topo.link_src

    def usable(self, tree: int, links: np.ndarray) -> np.ndarray:
        """Which of ``links`` may send ``tree``'s chunk: its lane is idle or sends that chunk already."""
        r = self.reading[self.where[tree, self.src[links]]]
        return (r < 0) | (r == tree)

    def send(self, tree: int, links: np.ndarray) -> None:
        self.reading[self.where[tree, self.src[links]]] = tree


def _farthest(held: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Line 7's key: per tree, the largest distance to a node outside it (0 when complete)."""
    return np.where(held, 0, near).max(axis=1)


def _take(tree, cand, free, held_now, dst, lanes, one):
    """Give ``tree`` free links among ``cand`` (in order) to distinct nodes outside it; ``one``: at most one."""
    ls = cand[free[cand] & ~held_now[tree, dst[cand]]]
    if lanes is not None and len(ls):
        ls = ls[lanes.usable(tree, ls)]
    if len(ls) == 0:
        return ls
    if one:
        ls = ls[:1]
    else:
        _, first = np.unique(dst[ls], return_index=True)
        ls = ls[np.sort(first)]
    free[ls] = False
    held_now[tree, dst[ls]] = True
    if lanes is not None:
        lanes.send(tree, ls)
    return ls


def _timestep(order, U, free, held_now, dst, lanes, assign, link_order):
    """Lines 8-13 (and the enclosing loop of the text) for one timestep; returns (links, trees)."""
    r, c = np.nonzero(U[order][:, link_order])
    cut = np.searchsorted(r, np.arange(len(order) + 1))
    cands = {int(order[i]): link_order[c[cut[i] : cut[i + 1]]] for i in np.unique(r)}
    active = [int(order[i]) for i in np.unique(r)]  # np.unique keeps line 7's order (i ascending)
    got_l, got_t = [], []
    left = int(free.sum())
    while active and left:
        nxt = []
        for t in active:
            ls = _take(t, cands[t], free, held_now, dst, lanes, one=assign != "priority")
            if len(ls):
                got_l.append(ls)
                got_t.append(np.full(len(ls), t, dtype=np.int64))
                nxt.append(t)
                left -= len(ls)
                if not left:  # E' is empty: no tree can take a link
                    break
        if assign != "round-robin":
            break
        active = nxt
    if not got_l:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(got_l), np.concatenate(got_t)


def xtree_paper(
    topo: Topology,
    chunks: int,
    lanes: bool = False,
    assign: str = "priority",
    distance: str = "tree",
    seed: int | None = None,
) -> Phase:
    """Algorithm 2 of seed 000 as printed: an AllGather of ``chunks`` chunks per shard on ``topo``.

    Parameters
    ----------
    topo : Topology
        The graph ``G(V, E)``.
    chunks : int
        The chunk count ``C`` (``K`` elsewhere in equimesh).
    lanes : bool
        Also honour the node storage rule (not in the paper; module docstring).
    assign : str
        The reading of line 11's ``break``: one of ``ASSIGN`` (module docstring).
    distance : str
        Line 7's distance: ``"tree"`` (from the tree's nodes) or ``"root"``.
    seed : int or None
        ``None``: ties and free links in index order; an integer: both orders shuffled.

    Returns
    -------
    Phase
        The ``allgather`` phase; step ``s`` lists ``[link, root, chunk]``.
    """
    if assign not in ASSIGN:
        raise ValueError(f"assign must be one of {', '.join(ASSIGN)} (got {assign!r})")
    if distance not in DISTANCE:
        raise ValueError(f"distance must be one of {', '.join(DISTANCE)} (got {distance!r})")
    if not topo.strongly_connected:
        raise ValueError(f"{topo.name} is not strongly connected: no AllGather exists")
    n, K = topo.nodes, chunks
    src, dst, D = topo.link_src, topo.link_dst, topo.distances
    T = n * K
    root = np.arange(T) % n  # lines 1-3: tree t = (root t mod n, chunk t div n)
    held = np.zeros((T, n), dtype=bool)
    held[np.arange(T), root] = True
    near = D[root].copy()  # distance from the tree (or its root) to every node
    rng = np.random.default_rng(seed) if seed is not None else None
    tie = rng.permutation(T) if rng is not None else np.arange(T)
    store = _Lanes(topo, K) if lanes else None
    steps: list[np.ndarray] = []
    while not held.all():  # line 5
        key = _farthest(held, near)  # line 7, at the start of the timestep
        order = tie[np.argsort(-key[tie], kind="stable")]
        order = order[key[order] > 0]
        link_order = rng.permutation(len(src)) if rng is not None else np.arange(len(src))
        U = held[:, src] & ~held[:, dst]  # (u, w): u in the tree when the step began, w not
        free = np.ones(len(src), dtype=bool)  # line 6: E' <- E
        if store is not None:
            store.reading[:] = -1
        links, trees = _timestep(order, U, free, held.copy(), dst, store, assign, link_order)
        if len(links) == 0:
            raise RuntimeError(f"Algorithm 2 stalled on {topo.name}")
        held[trees, dst[links]] = True
        if distance == "tree":
            np.minimum.at(near, trees, D[dst[links]])
        if store is not None:
            store.where[trees, dst[links]] = store.dst_lane[links]
        steps.append(np.stack([links, root[trees], trees // n], axis=1).astype(np.int64))
    return Phase("allgather", steps)
