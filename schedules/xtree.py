"""XTree AllGather (seed 000, Section IV-A, Algorithm 2).

Algorithm 2 grows ``N x K`` trees, one per ``(root, chunk)``, timestep by
timestep: in each step every tree may take free links ``(u, w)`` with ``u``
in the tree and ``w`` not yet in it. It leaves open which tree gets which free
link. The choice made here is what lets XTree reach the bound:

* **Every free link is used if any tree can use it.** The step's assignment
  of trees to links is a *maximum bipartite matching* (Hopcroft-Karp, scipy)
  between links and trees, where a link may take a tree whose chunk its
  source holds and its destination lacks. Greedy first-fit leaves links idle
  that a re-assignment would fill; a maximum matching never does.
* **Balanced growth.** Each tree grows by at most ``ceil(d / K)`` nodes per
  step (``d`` = min in-degree), so with ``K >= d`` every chunk spreads like a
  pipelined ring: no chunk races ahead and no chunk lags behind, and in the
  last step every node still has ``d`` useful in-links.
* **Priority to the lagging trees.** Trees with the fewest nodes (the farthest
  from complete, the paper's "descending order of the farthest distance to the
  remaining targets") come first in the matching; ties are broken by a seeded
  random order, and small networks keep the best of a few seeds.
* **Fill.** Links left idle after the matching take, greedily, any tree they
  can still extend (this lets a chunk fan out when links are spare, as on the
  overflow mesh's extra perimeter links).

With ``lanes=True`` the schedule also honours the node storage rule of
:mod:`.storage` (per step, each lane is read for at most one distinct chunk),
so the RTL can execute it: conflicting matches are dropped, lowest priority
first, and the fill only takes lane-compatible chunks.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from .schedule import Phase
from .storage import home_lanes, link_lanes
from .topology import Topology

# Networks up to this many nodes keep the best of SEEDS tie-break orders.
SMALL = 64
SEEDS = 4


def _first_per_group(keys: np.ndarray) -> np.ndarray:
    """Boolean mask selecting the first occurrence of each key (keys already in priority order)."""
    _, first = np.unique(keys, return_index=True)
    mask = np.zeros(len(keys), dtype=bool)
    mask[first] = True
    return mask


def _xtree_once(topo: Topology, chunks: int, lanes: bool, seed: int, progress=None) -> Phase:
    n, K = topo.nodes, chunks
    X = n * K
    src, dst = topo.link_src, topo.link_dst
    L = len(src)
    cap = max(1, -(-int(topo.in_degree.min()) // K))
    holds = np.zeros((n, X), dtype=bool)
    holds[np.repeat(np.arange(n), K), np.arange(X)] = True
    lane = np.full((n, X), -1, dtype=np.int64)
    lane[np.repeat(np.arange(n), K), np.arange(X)] = home_lanes(topo, K).reshape(-1)
    _, dst_lane = link_lanes(topo)
    rng = np.random.default_rng(seed)
    steps: list[np.ndarray] = []
    total = n * (n - 1) * K
    done = 0
    while done < total:
        useful = holds[src] & ~holds[dst]                      # links x chunks
        count = holds.sum(axis=0)
        order = np.lexsort((rng.random(X), count))              # lagging trees first
        cols = useful[:, order]
        if cap > 1:
            cols = np.tile(cols, (1, cap))
        match = maximum_bipartite_matching(csr_matrix(cols), perm_type="column")
        x = np.where(match >= 0, order[np.maximum(match, 0) % X], -1)
        rank = np.empty(X, dtype=np.int64)
        rank[order] = np.arange(X)
        links = np.nonzero(x >= 0)[0]
        links = links[np.argsort(rank[x[links]], kind="stable")]
        xs = x[links]
        keep = _first_per_group(dst[links] * X + xs)            # a node receives a chunk once
        links, xs = links[keep], xs[keep]
        if lanes:
            lk = lane[src[links], xs]
            # per lane, the highest-priority chunk wins; other links reading that lane drop out
            winner = np.full(lane.max() + 1, -1, dtype=np.int64)
            first = _first_per_group(lk)
            winner[lk[first]] = xs[first]
            keep = winner[lk] == xs
            links, xs = links[keep], xs[keep]
        chosen = np.full(L, -1, dtype=np.int64)
        chosen[links] = xs
        # fill links left idle with any chunk they can still carry
        received = set((dst[links] * X + xs).tolist())
        committed = {} if not lanes else dict(zip(lane[src[links], xs].tolist(), xs.tolist()))
        for l in np.nonzero(chosen < 0)[0]:
            cand = np.nonzero(useful[l])[0]
            if len(cand) == 0:
                continue
            for c in cand[np.argsort(rank[cand], kind="stable")]:
                key = int(dst[l]) * X + int(c)
                if key in received:
                    continue
                if lanes:
                    lk1 = int(lane[src[l], c])
                    if committed.get(lk1, c) != c:
                        continue
                    committed[lk1] = int(c)
                received.add(key)
                chosen[l] = c
                break
        links = np.nonzero(chosen >= 0)[0]
        xs = chosen[links]
        holds[dst[links], xs] = True
        lane[dst[links], xs] = dst_lane[links]
        steps.append(np.stack([links, xs // K, xs % K], axis=1).astype(np.int64))
        done += len(links)
        if progress is not None:
            progress(done, total)
        if len(links) == 0:
            raise RuntimeError(f"XTree stalled on {topo.name}: the topology is not strongly connected")
    return Phase("allgather", steps)


def xtree(topo: Topology, chunks: int, lanes: bool = False, progress=None) -> Phase:
    """Algorithm 2: an AllGather schedule of ``chunks`` chunks per shard on ``topo``."""
    seeds = range(SEEDS) if topo.nodes <= SMALL else range(1)
    best = None
    for seed in seeds:
        ph = _xtree_once(topo, chunks, lanes, seed, progress)
        if best is None or ph.num_steps < best.num_steps:
            best = ph
    return best
