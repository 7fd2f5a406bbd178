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
path, one link at a time); it does not model the RTL's lanes.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..schedule import Phase
from ..topology import Topology

__all__ = ["relay_alltoall", "routes"]


def routes(topo: Topology, chunks: int) -> tuple[np.ndarray, list[list[int]]]:
    """Stage 1: the chunk table ``[source, chunk field]`` (rows, longest route first) and each row's links."""
    n, k = topo.nodes, chunks
    dist = topo.distances
    out = topo.out_links
    ldst = topo.link_dst.tolist()
    src_of, dst_of = np.nonzero(~np.eye(n, dtype=bool))
    order = np.argsort(-dist[src_of, dst_of], kind="stable")
    src_of, dst_of = np.repeat(src_of[order], k), np.repeat(dst_of[order], k)
    table = np.stack([src_of, dst_of * k + np.tile(np.arange(k), len(order))], axis=1)
    load = [0] * len(topo.links)
    dist_l = dist.tolist()
    paths = []
    for s, d in zip(src_of.tolist(), dst_of.tolist()):
        path, u = [], s
        du = dist_l[u][d]
        while u != d:
            best = None
            for l in out[u]:
                v = ldst[l]
                if dist_l[v][d] == du - 1 and (best is None or load[l] < load[best]):
                    best = l
            load[best] += 1
            path.append(best)
            u, du = ldst[best], du - 1
        paths.append(path)
    return table, paths


def relay_alltoall(topo: Topology, chunks: int) -> Phase:
    """The relay AllToAll of the module docstring, as one ``alltoall`` phase."""
    table, paths = routes(topo, chunks)
    waiting: list[list] = [[] for _ in topo.links]   # per link: heap of (-hops left, chunk row, hop index)
    for i, p in enumerate(paths):
        heapq.heappush(waiting[p[0]], (-len(p), i, 0))
    busy = {l for l, w in enumerate(waiting) if w}
    steps = []
    while busy:
        sent, arrivals = [], []
        for l in sorted(busy):
            neg, i, h = heapq.heappop(waiting[l])
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
