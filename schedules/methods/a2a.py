"""Relay AllToAll: shortest paths balanced over the links, scheduled farthest-first per link.

Seed 003, Section 3.6 (ring relay): every chunk travels from its source to its destination along a
shortest path, hop by hop, forwarded by the nodes on the way without combining. Two stages:

1. **Routes.** Chunks are routed one at a time, longest first; at each node the chunk takes, among
   the out-links that shorten its distance to the destination, the one that has carried fewest
   chunks so far. This spreads the chunks that cross a row or column cut over all the links of the
   cut, which is what the cut bound (:mod:`..alltoall`) counts.
2. **Steps.** A list schedule: in each step every link sends, of the chunks waiting at its source
   that route over it, the one with most hops still to go (farthest first, then the lowest chunk
   number); a chunk received at step ``s`` may leave at ``s + 1``.

The result obeys the AllToAll rules of docs/alltoall.md by construction (each chunk moves along a
path, one link at a time); with ``lanes`` it also obeys the RTL's lane rule (:func:`..storage.alltoall_lanes`).
"""

from __future__ import annotations

import heapq

import numpy as np

from ..alltoall import demand
from ..schedule import Phase
from ..topology import Topology

__all__ = ["relay_alltoall", "routes"]


def _segments(topo: Topology, members: list[int]) -> dict[int, dict[int, int]]:
    """Distances inside the subgraph of the links joining two of ``members`` (one row or one
    column): ``dist[b][a]`` = hops from ``a`` to ``b`` (breadth-first search towards ``b``)."""
    inside = set(members)
    into = {v: [int(topo.link_src[l]) for l in topo.in_links[v] if int(topo.link_src[l]) in inside] for v in members}
    out = {}
    for b in members:
        dist, frontier = {b: 0}, [b]
        while frontier:
            nxt = []
            for v in frontier:
                for u in into[v]:
                    if u not in dist:
                        dist[u] = dist[v] + 1
                        nxt.append(u)
            frontier = nxt
        out[b] = dist
    return out


def _path(a: int, b: int, dist: dict[int, int], out_links: list[list[int]], ldst: list[int], i: int) -> list[int]:
    """A shortest path from ``a`` to ``b`` inside a segment; chunk ``i`` takes, at every node, option
    ``i mod (number of options)`` among the links that shorten the distance (ties spread over chunks)."""
    path, u = [], a
    while u != b:
        opts = [l for l in out_links[u] if dist.get(ldst[l], -1) == dist[u] - 1]
        l = opts[i % len(opts)]
        path.append(l)
        u = ldst[l]
    return path


def routes(topo: Topology, chunks: int, passes: int = 2, counts=None) -> tuple[np.ndarray, list[list[int]]]:
    """Stage 1: the chunk table ``[source, chunk field]`` and each chunk's route (its links); ``counts``:
    the per-pair chunk counts of a skewed AllToAll (:func:`..alltoall.demand`).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    passes : int
        Rounds in which every chunk in turn takes, of its row-first and its column-first route, the one whose
        most loaded link carries fewer chunks.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`..alltoall.skewed_counts`).

    Returns
    -------
    tuple of (numpy.ndarray, list of list of int)
        The chunk table, int ``[chunks, 2]`` rows ``[source, chunk field]`` (the field is
        ``destination * K + part``), and per row its route as link indices (rerouted by stage 1b when
        nodes x K <= :data:`RELIEVE_MAX`).
    """
    n, k, cols = topo.nodes, chunks, topo.cols
    rows_seg, cols_seg = {}, {}
    for r in range(topo.rows):
        rows_seg.update(_segments(topo, list(range(r * cols, (r + 1) * cols))))
    for c in range(cols):
        cols_seg.update(_segments(topo, list(range(c, n, cols))))
    out, ldst = topo.out_links, topo.link_dst.tolist()
    w = demand(n, k, counts).reshape(-1)
    pair = np.repeat(np.arange(n * n), w)
    part = np.arange(len(pair)) - np.repeat(np.cumsum(w) - w, w)  # 0 .. W[s, d] - 1 within each pair
    src_of, dst_of = pair // n, pair % n
    table = np.stack([src_of, dst_of * k + part], axis=1)
    cands = []
    for i, (s, d) in enumerate(zip(src_of.tolist(), dst_of.tolist())):
        turn_xy, turn_yx = (s // cols) * cols + d % cols, (d // cols) * cols + s % cols
        pair = [
            _path(s, mid, first[mid], out, ldst, i) + _path(mid, d, second[d], out, ldst, i)
            for mid, first, second in ((turn_xy, rows_seg, cols_seg), (turn_yx, cols_seg, rows_seg))
        ]
        cands.append(pair)
    load = [0] * len(topo.links)
    choice = [i % 2 for i in range(len(cands))]
    for i, c in enumerate(cands):
        for l in c[choice[i]]:
            load[l] += 1
    for _ in range(passes):
        for i, c in enumerate(cands):
            for l in c[choice[i]]:
                load[l] -= 1
            cost = [max((load[l] for l in p), default=0) for p in c]
            choice[i] = 1 if cost[1] < cost[0] or (cost[1] == cost[0] and i % 2) else 0
            for l in c[choice[i]]:
                load[l] += 1
    paths = [c[choice[i]] for i, c in enumerate(cands)]
    if n * k <= RELIEVE_MAX:
        _relieve(topo, table[:, 0], table[:, 1] // k, paths, load)
    return table, paths


RELIEVE_MAX = 512  # stage 1b runs when nodes x K is at most this (16x16 with K <= 2)
DETOUR = 4  # a rerouted chunk may take at most this many hops more than its old route


def _detour(topo: Topology, s: int, d: int, ok, limit: int) -> list[int] | None:
    """A shortest path from ``s`` to ``d`` over the links ``ok(l)`` allows, if one has at most ``limit`` hops."""
    prev = {s: None}
    frontier, hops = [s], 0
    ldst = topo.link_dst
    while frontier and d not in prev and hops < limit:
        nxt = []
        for u in frontier:
            for l in topo.out_links[u]:
                v = int(ldst[l])
                if v not in prev and ok(l):
                    prev[v] = l
                    nxt.append(v)
        frontier, hops = nxt, hops + 1
    if d not in prev:
        return None
    path, v = [], d
    while v != s:
        l = prev[v]
        path.append(l)
        v = int(topo.link_src[l])
    return path[::-1]


def _relieve(topo: Topology, src, dst, paths: list[list[int]], load: list[int]) -> None:
    """Stage 1b: while every link at the maximum load ``m`` can shed a chunk onto a route of links
    loaded at most ``m - 2`` (at most :data:`DETOUR` hops longer), move those chunks: ``m`` drops by one."""
    on = [set() for _ in load]
    for i, p in enumerate(paths):
        for l in p:
            on[l].add(i)
    while True:
        m = max(load)
        for hot in [l for l, x in enumerate(load) if x == m]:
            if load[hot] < m:
                continue
            for i in sorted(on[hot]):
                for l in paths[i]:
                    load[l] -= 1
                new = _detour(topo, int(src[i]), int(dst[i]), lambda l: load[l] <= m - 2, len(paths[i]) + DETOUR)
                for l in paths[i] if new is None else new:
                    load[l] += 1
                if new is not None:
                    for l in paths[i]:
                        on[l].discard(i)
                    for l in new:
                        on[l].add(i)
                    paths[i] = new
                    break
            else:
                return


def relay_alltoall(topo: Topology, chunks: int, counts=None, lanes: bool = False) -> Phase:
    """The relay AllToAll of the module docstring, as one ``alltoall`` phase (``counts``: skewed, per pair).

    With ``lanes`` the list schedule also obeys the RTL's lane rule (:func:`..storage.alltoall_lanes`): a link
    passes over a waiting chunk that arrived on the same in-port as a chunk another link of its
    node sends in this step, and takes the next one.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll (:func:`..alltoall.skewed_counts`).
    lanes : bool
        Obey the RTL's lane rule.

    Returns
    -------
    Phase
        The ``alltoall`` phase: per timestep, the ``(link, root, chunk)`` transfers.
    """
    table, paths = routes(topo, chunks, counts=counts)
    waiting: list[list] = [[] for _ in topo.links]  # per link: heap of (-hops left, chunk row, hop index)
    for i, p in enumerate(paths):
        heapq.heappush(waiting[p[0]], (-len(p), i, 0))
    ldst = topo.link_dst.tolist()
    busy = {l for l, w in enumerate(waiting) if w}
    steps = []
    while busy:
        sent, arrivals, used = [], [], set()
        for l in sorted(busy):
            skipped, item = [], None
            while waiting[l]:
                item = heapq.heappop(waiting[l])
                h = item[2]
                if not lanes or h == 0:
                    break
                into = (ldst[paths[item[1]][h - 1]], paths[item[1]][h - 1])  # (node, in-link): its lane
                if into not in used:
                    used.add(into)
                    break
                skipped.append(item)
                item = None
            for x in skipped:
                heapq.heappush(waiting[l], x)
            if item is None:
                continue
            neg, i, h = item
            sent.append((l, i))
            if h + 1 < len(paths[i]):
                arrivals.append((paths[i][h + 1], (neg + 1, i, h + 1)))
        busy = {l for l in busy if waiting[l]}
        for l, item in arrivals:
            heapq.heappush(waiting[l], item)
            busy.add(l)
        links = np.array([l for l, _ in sent], dtype=np.int64)
        rows = table[[i for _, i in sent]]
        steps.append(np.column_stack([links, rows]))
    return Phase("alltoall", steps)
