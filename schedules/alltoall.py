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

__all__ = ["TERMS", "bound_terms", "lower_bound", "binding", "destination", "demand", "hot_nodes", "skewed_counts"]

TERMS = ("diameter", "node-in", "node-out", "row-cut", "column-cut", "hops")


def destination(chunk, chunks: int):
    """The destination node of chunk field ``chunk`` for ``chunks`` (K) chunks per pair.

    Parameters
    ----------
    chunk : int or numpy.ndarray
        The transfer's chunk field.
    chunks : int
        K, chunks per (source, destination) pair.

    Returns
    -------
    int or numpy.ndarray
        ``chunk // chunks``.
    """
    return chunk // chunks


def demand(n: int, chunks: int, counts=None) -> np.ndarray:
    """``W[s, d]``: chunks source ``s`` sends destination ``d``; ``chunks`` (K) for every pair unless
    ``counts`` (a skewed AllToAll, docs/alltoall.md) gives them; the diagonal is 0.

    Parameters
    ----------
    n : int
        N, the nodes.
    chunks : int
        K, chunks per (source, destination) pair.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`skewed_counts`); the diagonal is ignored.

    Returns
    -------
    numpy.ndarray
        int ``[N, N]``.
    """
    w = np.full((n, n), chunks, dtype=np.int64) if counts is None else np.array(counts, dtype=np.int64)
    np.fill_diagonal(w, 0)
    return w


def hot_nodes(n: int, cols: int, hot: int) -> list[int]:
    """``hot`` destinations spread over rows and columns: for ``b = i n // hot`` (row ``r = b // cols``),
    the node in row ``r`` and column ``(b + r) mod cols`` (on a square side ``hot`` the diagonal).

    Parameters
    ----------
    n : int
        N, the nodes.
    cols : int
        The topology's columns.
    hot : int
        The hot destinations, 1..N.

    Returns
    -------
    list of int
        The hot nodes, ascending.
    """
    return sorted((b // cols) * cols + (b + b // cols) % cols for b in (i * n // hot for i in range(hot)))


def skewed_counts(n: int, cols: int, chunks: int, hot: int, factor: int) -> list[list[int]]:
    """Seed 003's hot and cold experts: the :func:`hot_nodes` receive ``factor x chunks`` chunks from
    every source, the other nodes ``chunks``.

    Parameters
    ----------
    n : int
        N, the nodes.
    cols : int
        The topology's columns.
    chunks : int
        K, chunks per (source, destination) pair.
    hot : int
        The hot destinations (:func:`hot_nodes`).
    factor : int
        How many times more chunks a hot destination receives.

    Returns
    -------
    list of list of int
        ``counts[s][d]``, 0 on the diagonal.
    """
    hot_ids = set(hot_nodes(n, cols, hot))
    return [[0 if s == d else chunks * (factor if d in hot_ids else 1) for d in range(n)] for s in range(n)]


def _cut_bound(topo: Topology, side: np.ndarray, w: np.ndarray) -> int:
    """Worst direction of the cut of nodes with ``side`` True (A) against the rest (B)."""
    if side.all() or not side.any():
        return 0
    s, d = side[topo.link_src], side[topo.link_dst]
    worst = 0
    for n_links, load in (
        (int((s & ~d).sum()), w[side][:, ~side].sum()),
        (int((~s & d).sum()), w[~side][:, side].sum()),
    ):
        if n_links == 0:
            raise ValueError(f"the {topo.name} has no link across a cut: AllToAll is impossible")
        worst = max(worst, math.ceil(int(load) / n_links))
    return worst


def bound_terms(topo: Topology, chunks: int, counts=None) -> dict[str, int]:
    """Every term of the module docstring's bound, in steps, for ``chunks`` (K) chunks per pair, or
    for the per-pair ``counts`` of a skewed AllToAll (each term then sums the chunks it counts).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`skewed_counts`); the diagonal is ignored.

    Returns
    -------
    dict of str to int
        Each term of :data:`TERMS`, in steps.

    Raises
    ------
    ValueError
        If a row or column cut has no link in one direction.
    """
    n = topo.nodes
    w = demand(n, chunks, counts)
    row = np.arange(n) // topo.cols
    col = np.arange(n) % topo.cols
    dist = topo.distances
    return {
        "diameter": int(dist[w > 0].max(initial=0)),
        "node-in": int(max(math.ceil(int(x) / int(d)) for x, d in zip(w.sum(axis=0), topo.in_degree))),
        "node-out": int(max(math.ceil(int(x) / int(d)) for x, d in zip(w.sum(axis=1), topo.out_degree))),
        "row-cut": max([_cut_bound(topo, row < i, w) for i in range(1, topo.rows)], default=0),
        "column-cut": max([_cut_bound(topo, col < j, w) for j in range(1, topo.cols)], default=0),
        "hops": math.ceil(int((w * dist).sum()) / len(topo.links)),
    }


def lower_bound(topo: Topology, chunks: int, counts=None) -> int:
    """The AllToAll step bound: the largest term of :func:`bound_terms`.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`skewed_counts`); the diagonal is ignored.

    Returns
    -------
    int
        The bound in steps.
    """
    return max(bound_terms(topo, chunks, counts).values())


def binding(topo: Topology, chunks: int, counts=None) -> str:
    """The term(s) equal to the bound, in :data:`TERMS` order, joined by ``=`` (e.g. ``row-cut=column-cut``).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`skewed_counts`); the diagonal is ignored.

    Returns
    -------
    str
        The binding term names.
    """
    terms = bound_terms(topo, chunks, counts)
    top = max(terms.values())
    return "=".join(t for t in TERMS if terms[t] == top)
