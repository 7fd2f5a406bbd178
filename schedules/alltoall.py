"""AllToAll: the chunk naming of the schedule format and the step lower bound with its binding term.

Format (docs/alltoall.md): a transfer ``[link, root, chunk]`` of an ``alltoall`` schedule moves the
chunk that source ``root`` addresses to destination ``chunk // K``, part ``chunk % K`` of ``K``
(``K`` = the file's ``chunks``, chunks per (source, destination) pair). Every node starts with
``K (N - 1)`` chunks, ``K`` per other node (seed 003, Section 3.6: "each rank has N chunks, one
destined for each rank", its own staying put), and ends holding every chunk addressed to it.

Lower bound (issue 41; seed 003, Section 3.6: AllToAll is bisection-bound), in steps, the largest of

* ``diameter``: a chunk to the farthest node needs D hops;
* ``node-in`` / ``node-out``: node ``v`` receives (sends) ``K (N - 1)`` chunks over its in- (out-)
  links, one per link per step: ``max_v ceil(K (N - 1) / deg(v))``;
* ``row-cut`` / ``column-cut``: for every cut between two adjacent rows (columns) and each
  direction, the ``K |A| |B|`` chunks from side A to side B, over the links from A to B;
* ``hops``: every chunk crosses at least ``dist(s, d)`` links and a step carries at most one
  chunk per link: ``ceil(K sum_{s,d} dist(s, d) / L)``.
"""

from __future__ import annotations

import math

import numpy as np

from .topology import Topology

__all__ = ["TERMS", "bound_terms", "lower_bound", "binding", "destination"]

TERMS = ("diameter", "node-in", "node-out", "row-cut", "column-cut", "hops")


def destination(chunk, chunks: int):
    """The destination node of chunk field ``chunk`` for ``chunks`` (K) chunks per pair."""
    return chunk // chunks


def _cut_bound(topo: Topology, side: np.ndarray, k: int) -> int:
    """Worst direction of the cut of nodes with ``side`` True (A) against the rest (B)."""
    a = int(side.sum())
    b = topo.nodes - a
    if a == 0 or b == 0:
        return 0
    s, d = side[topo.link_src], side[topo.link_dst]
    worst = 0
    for n_links in (int((s & ~d).sum()), int((~s & d).sum())):
        if n_links == 0:
            raise ValueError(f"the {topo.name} has no link across a cut: AllToAll is impossible")
        worst = max(worst, math.ceil(k * a * b / n_links))
    return worst


def bound_terms(topo: Topology, chunks: int) -> dict[str, int]:
    """Every term of the module docstring's bound, in steps, for ``chunks`` (K) chunks per pair."""
    n, k = topo.nodes, chunks
    work = k * (n - 1)
    row = np.arange(n) // topo.cols
    col = np.arange(n) % topo.cols
    return {
        "diameter": int(topo.diameter),
        "node-in": int(max(math.ceil(work / int(d)) for d in topo.in_degree)),
        "node-out": int(max(math.ceil(work / int(d)) for d in topo.out_degree)),
        "row-cut": max([_cut_bound(topo, row < i, k) for i in range(1, topo.rows)], default=0),
        "column-cut": max([_cut_bound(topo, col < j, k) for j in range(1, topo.cols)], default=0),
        "hops": math.ceil(k * int(topo.distances.sum()) / len(topo.links)),
    }


def lower_bound(topo: Topology, chunks: int) -> int:
    """The AllToAll step bound: the largest term of :func:`bound_terms`."""
    return max(bound_terms(topo, chunks).values())


def binding(topo: Topology, chunks: int) -> str:
    """The term(s) equal to the bound, in :data:`TERMS` order, joined by ``=`` (e.g. ``row-cut=column-cut``)."""
    terms = bound_terms(topo, chunks)
    top = max(terms.values())
    return "=".join(t for t in TERMS if terms[t] == top)
