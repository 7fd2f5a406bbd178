"""XTree AllGather (seed 000, Algorithm 2). PROVISIONAL greedy; being tuned to reach the bound."""

from __future__ import annotations

import numpy as np

from .schedule import Phase
from .storage import home_lanes, link_lanes
from .topology import Topology


def xtree(topo: Topology, chunks: int) -> Phase:
    n, K = topo.nodes, chunks
    X = n * K
    src, dst = topo.link_src, topo.link_dst
    _, dstl = link_lanes(topo)
    H = np.zeros((n, X), bool)
    lane = np.full((n, X), -1)
    for v in range(n):
        H[v, v * K:(v + 1) * K] = True
    lane[np.repeat(np.arange(n), K), np.arange(X)] = home_lanes(topo, K).reshape(-1)
    steps = []
    while not H.all():
        cnt = H.sum(0)
        useful = H[src] & ~H[dst]
        linkfree = np.ones(len(src), bool)
        recv, lanecommit, tr = set(), {}, []
        for x in np.argsort(cnt, kind="stable"):
            for l in np.nonzero(useful[:, x] & linkfree)[0]:
                u, w = src[l], dst[l]
                lk = lane[u, x]
                if (w, x) in recv or lanecommit.get(lk, x) != x:
                    continue
                lanecommit[lk] = x
                recv.add((w, x))
                linkfree[l] = False
                tr.append((l, x // K, x % K))
        for l, r, c in tr:
            H[dst[l], r * K + c] = True
            lane[dst[l], r * K + c] = dstl[l]
        steps.append(np.array(tr, dtype=np.int64).reshape(-1, 3))
    return Phase("allgather", steps)
