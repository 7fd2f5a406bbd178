"""XTree AllGather (seed 000, Section IV-A, Algorithm 2).

Algorithm 2 grows ``N x K`` trees, one per ``(root, chunk)``, timestep by
timestep: in each step every tree may take free links ``(u, w)`` with ``u``
in the tree and ``w`` not yet in it. It leaves open which tree gets which free
link. The choices made here are what let XTree reach the bound:

* **Every free link is used if any tree can use it.** A step's assignment of
  trees to links is a *maximum bipartite matching* (Hopcroft-Karp, scipy)
  between links and trees; a link may take a tree whose chunk its source
  holds and its destination lacks. First-fit greedy leaves links idle that a
  re-assignment would fill (it needs 6 steps on the 2x3 EquiMesh with K=4,
  where the paper and this matching reach the bound of 5).
* **Balanced growth.** A tree grows by at most ``ceil(d / K)`` nodes per
  step (``d`` = min in-degree): with ``K >= d`` every chunk spreads like a
  pipelined ring, so none races ahead and none lags behind, and in the last
  steps every node still has useful chunks on all of its in-links.
* **Fill.** Links left idle take, in up to ``FILL_ROUNDS`` residual
  matchings, any tree they can still extend, without the growth limit
  (chunks fan out over spare links, e.g. the overflow mesh's duplicates).

Speed: holdings are bit-packed (one bit per chunk, 64 per word). Each link
offers the matching a window of about ``WINDOW`` candidate trees, taken from
whole words starting at a position that rotates with the step and the link
(a seeded random bit order spreads the roots over the words). When that
matching leaves a link idle that had candidates outside its window, the step
is matched again with a window of ``RETRY`` candidates.

With ``lanes=True`` the schedule honours the node storage rule of
:mod:`.storage` (per step, each lane is read for at most one distinct chunk),
so the RTL can run it: every candidate is offered, lagging trees (fewest
holders) first; when two matched links read different chunks from one lane,
the link with fewer alternatives keeps it; the fill only takes
lane-compatible chunks.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from .schedule import Phase
from .storage import home_lanes, lane_table, link_lanes
from .topology import Topology

WINDOW = 16          # candidate trees offered per link to the first matching of a step
RETRY = 256        # candidates per link when the first matching left a link idle
FILL_ROUNDS = 3
SMALL = 64           # networks up to this many nodes keep the best of SEEDS tie-break orders
SEEDS = 4
_BIT = np.uint64(1) << np.arange(64, dtype=np.uint64)


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct key (in the given order)."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)


class _State:
    """Bit-packed holdings ``P[node, word]`` and, with lanes, where every node keeps every chunk."""

    def __init__(self, topo: Topology, chunks: int, lanes: bool, rng):
        n, K = topo.nodes, chunks
        self.X = X = n * K
        self.W = W = -(-X // 64)
        order = rng.permutation(X)
        self.chunk_at = np.full(W * 64, -1, dtype=np.int64)
        self.chunk_at[:X] = order
        self.pos = np.empty(X, dtype=np.int64)
        self.pos[order] = np.arange(X)
        self.P = np.zeros((n, W), dtype=np.uint64)
        own = np.arange(X)
        self.give(own // K, own)
        self.lane = None
        if lanes:
            self.lane = np.full((n, X), -1, dtype=np.int64)
            self.lane[own // K, own] = home_lanes(topo, K).reshape(-1)
            self.n_lanes = int(lane_table(topo)[1].sum())

    @property
    def count(self) -> np.ndarray:
        """Holders of the chunk at every bit position (padding bits count as complete)."""
        c = np.unpackbits(self.P.view(np.uint8), axis=1, bitorder="little").sum(axis=0, dtype=np.int64)
        c[self.chunk_at < 0] = np.iinfo(np.int64).max // 2
        return c

    def give(self, nodes: np.ndarray, chunks: np.ndarray) -> None:
        p = self.pos[chunks]
        np.bitwise_or.at(self.P, (nodes, p // 64), _BIT[p % 64])


def _candidates(U: np.ndarray, start: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Per link (row of U), candidate bit positions in preference order: whole words from a
    rotating start until ``limit`` candidates are covered. Returns (row, bitpos), row-sorted."""
    L, W = U.shape
    rows_all = np.arange(L)
    first = U[rows_all, start]
    short = np.nonzero(np.bitwise_count(first) < limit)[0]        # rows needing more than one word
    r, w, k = rows_all, first, start
    if len(short):
        idx = (start[short, None] + np.arange(1, W)[None, :]) % W
        words = U[short[:, None], idx]
        pc = np.bitwise_count(words).astype(np.int64)
        need = limit - np.bitwise_count(first[short]).astype(np.int64)
        take = ((np.cumsum(pc, axis=1) - pc) < need[:, None]) & (pc > 0)
        rs, ks = np.nonzero(take)
        r = np.concatenate([r, short[rs]])
        w = np.concatenate([w, words[rs, ks]])
        k = np.concatenate([k, idx[rs, ks]])
        o = np.argsort(r, kind="stable")                          # rows sorted, words in window order
        r, w, k = r[o], w[o], k[o]
    # unpack only the nonzero bytes: early and late in the schedule the words are sparse
    wi, byte = np.nonzero(w.view(np.uint8).reshape(-1, 8))
    bits = np.unpackbits(w.view(np.uint8).reshape(-1, 8)[wi, byte][:, None], axis=1, bitorder="little")
    j, b = np.nonzero(bits)
    wi = wi[j]
    return r[wi], k[wi] * 64 + byte[j] * 8 + b


def _match(rows: np.ndarray, cols: np.ndarray, L: int, ncols: int, cap: int, perm: np.ndarray) -> np.ndarray:
    """Maximum matching links -> columns, each column usable ``cap`` times. Returns column or -1.

    Links are presented to Hopcroft-Karp in the shuffled order ``perm``: in link-id order the
    grid structure makes its augmenting-path search take seconds on some steps.
    """
    inv = np.empty(L, dtype=np.int64)
    inv[perm] = np.arange(L)
    rows = inv[rows]
    o = np.argsort(rows, kind="stable")
    rows, cols = rows[o], cols[o]
    if cap > 1:
        rows = np.concatenate([rows] * cap)
        cols = np.concatenate([cols + ncols * i for i in range(cap)])
        o = np.argsort(rows, kind="stable")
        rows, cols = rows[o], cols[o]
    indptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=L), out=indptr[1:])
    m = csr_matrix((np.ones(len(rows), dtype=np.int8), cols, indptr), shape=(L, ncols * cap))
    match = maximum_bipartite_matching(m, perm_type="column")[inv]
    return np.where(match >= 0, match % ncols, -1)


def _resolve(st: _State, src, dst, links, xs):
    """Keep a consistent subset: each node receives a chunk once; with lanes, one chunk per lane."""
    keep = _first_of_each(dst[links] * st.X + xs)
    links, xs = links[keep], xs[keep]
    if st.lane is not None and len(links):
        lk = st.lane[src[links], xs]
        winner = np.full(st.n_lanes, -1, dtype=np.int64)
        first = _first_of_each(lk)
        winner[lk[first]] = xs[first]
        ok = winner[lk] == xs
        links, xs = links[ok], xs[ok]
    return links, xs


def _xtree_once(topo: Topology, chunks: int, lanes: bool, seed: int, progress=None) -> Phase:
    n, K = topo.nodes, chunks
    src, dst = topo.link_src, topo.link_dst
    L = len(src)
    rng = np.random.default_rng(seed)
    st = _State(topo, K, lanes, rng)
    X, W = st.X, st.W
    cap = max(1, -(-int(topo.in_degree.min()) // K))
    if lanes:
        _, dst_lane = link_lanes(topo)
    link_ids = np.arange(L)
    # lane conflicts drop matches; a lane-aware step needs every candidate to recover them
    window = X if lanes else WINDOW
    steps: list[np.ndarray] = []
    total, done, step = n * (n - 1) * K, 0, 0
    while done < total:
        U = st.P[src] & ~st.P[dst]                                # useful chunks per link, packed
        start = (step * 7 + link_ids * 13) % W
        rows, cols = _candidates(U, start, window)
        if lanes:
            # offer the lagging trees (fewest holders) first: lane conflicts make the tail fragile
            rank = np.lexsort((rng.random(W * 64), st.count))
            prio = np.empty(W * 64, dtype=np.int64)
            prio[rank] = np.arange(W * 64)
            o = np.lexsort((prio[cols], rows))
            rows, cols = rows[o], cols[o]
        perm = rng.permutation(L)
        m = _match(rows, cols, L, W * 64, cap, perm)
        idle = m < 0
        if idle.any():
            offered = np.bincount(rows, minlength=L)
            if (idle & (np.bitwise_count(U).sum(axis=1) > offered)).any():
                rows, cols = _candidates(U, start, RETRY)          # match again with a wider window
                m = _match(rows, cols, L, W * 64, cap, perm)
        links = np.nonzero(m >= 0)[0]
        # conflicts go to the link with the fewest alternatives
        links = links[np.argsort(np.bincount(rows, minlength=L)[links], kind="stable")]
        links, xs = _resolve(st, src, dst, links, st.chunk_at[m[links]])
        got = np.full(L, -1, dtype=np.int64)
        got[links] = xs
        for _ in range(FILL_ROUNDS):
            free = got[rows] < 0
            if not free.any():
                break
            have = np.nonzero(got >= 0)[0]
            r, c = rows[free], cols[free]
            x = st.chunk_at[c]
            ok = ~np.isin(dst[r] * X + x, dst[have] * X + got[have])
            if lanes:
                committed = np.full(st.n_lanes, -1, dtype=np.int64)
                committed[st.lane[src[have], got[have]]] = got[have]
                holder = committed[st.lane[src[r], x]]
                ok &= (holder < 0) | (holder == x)
            r, c = r[ok], c[ok]
            if len(r) == 0:
                break
            m2 = _match(r, c, L, W * 64, 1, perm)                 # the idle links, matched again
            r = np.nonzero(m2 >= 0)[0]
            r, x = _resolve(st, src, dst, r, st.chunk_at[m2[r]])
            got[r] = x
        links = np.nonzero(got >= 0)[0]
        xs = got[links]
        if len(links) == 0:
            raise RuntimeError(f"XTree stalled on {topo.name}: the topology is not strongly connected")
        st.give(dst[links], xs)
        if lanes:
            st.lane[dst[links], xs] = dst_lane[links]
        steps.append(np.stack([links, xs // K, xs % K], axis=1).astype(np.int64))
        done += len(links)
        step += 1
        if progress is not None:
            progress(done, total)
    return Phase("allgather", steps)


def xtree(topo: Topology, chunks: int, lanes: bool = False, progress=None) -> Phase:
    """Algorithm 2: an AllGather schedule of ``chunks`` chunks per shard on ``topo``.

    Small networks (up to ``SMALL`` nodes) keep the shortest of ``SEEDS`` tie-break orders.
    """
    best = None
    for seed in range(SEEDS if topo.nodes <= SMALL else 1):
        ph = _xtree_once(topo, chunks, lanes, seed, progress)
        if best is None or ph.num_steps < best.num_steps:
            best = ph
    return best
