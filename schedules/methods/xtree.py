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
is matched again with a window of ``RETRY`` candidates. Each link's packed
useful chunks (source holds, destination lacks) and their popcounts are kept
word-major and updated only at the words of the links at nodes that received
something; a window's length comes from prefix sums of the popcounts, and its
bits are unpacked 16 at a time through a lookup table. The matching's sparse
matrix is laid out in the shuffled link order directly (no sort).

With ``lanes=True`` the schedule honours the node storage rule of
:mod:`.storage` (per step, each lane is read for at most one distinct chunk),
so the RTL can run it: every candidate is offered, lagging trees (fewest
holders) first; when two matched links read different chunks from one lane,
the link with fewer alternatives keeps it; the fill only takes
lane-compatible chunks. When the growth limit is one node per tree and step
(e.g. K >= d), no chunk leaves a node twice in the main matching, so the rule
means one link per lane: the step first matches links to lanes of their
source (a link may take a lane holding a chunk its destination lacks), then
matches each link to the trees in its lane. This keeps more links busy than
one matching followed by dropping lane conflicts (K = 4: 4x4 EquiMesh 16
steps instead of 17, 8x8 65 instead of 66) but is not always shorter (32x32
EquiMesh K=4: 1042 steps against 1040; 16x16 K=8: 521 against 519), so
networks up to ``LANES_FIRST_MAX`` nodes try both ways and keep the shortest;
larger ones keep the single matching (lane-aware synthesis there takes over a
minute per try).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..schedule import Phase
from ..storage import home_lanes, lane_table, link_lanes
from ..topology import Topology

__all__ = ["FILL_ROUNDS", "LANES_FIRST_MAX", "RETRY", "SEEDS", "SMALL", "WINDOW", "tie_break_orders", "xtree"]

WINDOW = 16  # candidate trees offered per link to the first matching of a step
RETRY = 256  # candidates per link when the first matching left a link idle
FILL_ROUNDS = 3
SMALL = 64  # networks up to this many nodes keep the best of SEEDS tie-break orders
SEEDS = 4
LANES_FIRST_MAX = 256  # lane-aware networks up to this many nodes also try matching lanes first
_BIT = np.uint64(1) << np.arange(64, dtype=np.uint64)
_LITTLE = np.little_endian


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct key (in the given order)."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)


class _State:
    """Bit-packed holdings ``P[node, word]`` and, with lanes, where every node keeps every chunk.

    Also kept up to date: ``UT[word, link]``, the chunks a link can carry (its source holds them,
    its destination does not), word-major, with its popcounts ``pcT``; a step only rewrites the
    words of the links at the nodes that received something. ``held[bit]`` counts the holders of
    every chunk.
    """

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
        self.Pf = self.P.reshape(-1)  # a view
        self.held = np.zeros(W * 64, dtype=np.int64)
        self.src, self.dst = src, dst = topo.link_src, topo.link_dst
        # the links at each node (in or out): a delivery to the node changes their U. Rows are
        # padded by repeating a link (rewriting a word twice does no harm).
        ends = np.concatenate([src, dst])
        lk = np.concatenate([np.arange(len(src))] * 2)
        o = np.argsort(ends, kind="stable")
        ends, lk = ends[o], lk[o]
        deg = np.bincount(ends, minlength=n)
        first = np.cumsum(deg) - deg
        col = np.arange(len(ends)) - first[ends]
        self.adj = np.repeat(lk[np.minimum(first, len(lk) - 1)][:, None], max(1, int(deg.max())), axis=1)
        self.adj[ends, col] = lk
        own = np.arange(X)
        self.give(own // K, own, update=False)
        self.UT = np.ascontiguousarray((self.P[src] & ~self.P[dst]).T)
        self.pcT = np.bitwise_count(self.UT)
        self.lane = None
        if lanes:
            self.lane = np.full((n, X), -1, dtype=np.int64)
            self.lane[own // K, own] = home_lanes(topo, K).reshape(-1)
            self.n_lanes = int(lane_table(topo)[1].sum())

    @property
    def count(self) -> np.ndarray:
        """Holders of the chunk at every bit position (padding bits count as complete)."""
        c = self.held.copy()
        c[self.chunk_at < 0] = np.iinfo(np.int64).max // 2
        return c

    def give(self, nodes: np.ndarray, chunks: np.ndarray, update: bool = True) -> None:
        """Node ``nodes[i]`` receives ``chunks[i]`` (no node receives a chunk it holds, or twice)."""
        p = self.pos[chunks]
        word = p // 64
        np.bitwise_or.at(self.Pf, nodes * self.W + word, _BIT[p % 64])
        self.held += np.bincount(p, minlength=len(self.held))
        if update:
            D = self.adj.shape[1]
            lk = self.adj[nodes].reshape(-1)
            wk = np.repeat(word, D)
            u = self.Pf[self.src[lk] * self.W + wk] & ~self.Pf[self.dst[lk] * self.W + wk]
            i = wk * len(self.src) + lk
            self.UT.reshape(-1)[i] = u
            self.pcT.reshape(-1)[i] = np.bitwise_count(u)


@functools.cache
def _bit_tables() -> tuple[np.ndarray, np.ndarray]:
    """For every 16-bit value ``v``: its popcount, and ``where[16 * v + i]`` = position of its
    ``i``-th set bit (ascending)."""
    v = np.arange(1 << 16, dtype=np.uint32)
    bits = ((v[:, None] >> np.arange(16, dtype=np.uint32)) & 1).astype(bool)
    count = bits.sum(axis=1).astype(np.int64)
    where = np.zeros((1 << 16, 16), dtype=np.uint8)
    r, b = np.nonzero(bits)
    where[r, np.arange(len(r)) - (np.cumsum(count) - count)[r]] = b
    return count, where.reshape(-1)


def _pieces(w: np.ndarray) -> np.ndarray:
    """The 16-bit pieces of 64-bit words, least significant first: shape (len(w) * 4,)."""
    if _LITTLE:
        return w.view(np.uint16)
    return (w[:, None] >> np.arange(0, 64, 16, dtype=np.uint64)).astype(np.uint16).reshape(-1)


def _window_words(pcT: np.ndarray, start: np.ndarray, limit: int) -> np.ndarray:
    """Per link (column of ``pcT``), how many words, from ``start`` on cyclically, its window
    takes: every word whose predecessors in that order hold fewer than ``limit`` set bits."""
    W, L = pcT.shape
    if limit >= 64 * W:
        return np.full(L, W, dtype=np.int64)
    dt = np.int16 if 128 * W < np.iinfo(np.int16).max else np.int32
    ce = pcT.astype(dt)
    for w in range(1, W):  # prefix sums down the words (np.cumsum on axis 0 is slow)
        np.add(ce[w], ce[w - 1], out=ce[w])
    total = ce[-1].copy()
    ce -= pcT  # exclusive: bits in the words before
    thr = ce[start, np.arange(L)] + dt(limit)
    # ce is non-decreasing down a column: words start.. (wrapping) are those with ce < thr, minus
    # the start words before, plus the words from 0 whose ce + total < thr
    n = (ce < thr).view(np.uint8).sum(axis=0, dtype=np.int64) - start
    n += np.minimum(start, (ce < thr - total).view(np.uint8).sum(axis=0, dtype=np.int64))
    return n


def _candidates(UT: np.ndarray, pcT: np.ndarray, start: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Per link (column of UT), candidate bit positions in preference order: whole words from a
    rotating start until ``limit`` candidates are covered. Returns (row, bitpos), row-sorted."""
    W, L = UT.shape
    n = _window_words(pcT, start, limit)
    # the windows' words, link by link, each from its start word on
    k = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n - start, n)
    k[k >= W] -= W
    r = np.repeat(np.arange(L), n)
    w = np.take(UT.reshape(-1), k * L + r)
    nzw = np.flatnonzero(w != 0)
    # their set bits, 16 at a time through a table, in word order and ascending within a word
    h = _pieces(w[nzw])
    nz = np.flatnonzero(h != 0)
    h = h[nz]
    count, where = _bit_tables()
    c = count[h]
    j = np.repeat(np.arange(len(h)), c)
    rank = np.arange(len(j)) - np.repeat(np.cumsum(c) - c, c)
    piece = nz[j]
    wi = nzw[piece >> 2]
    return r[wi], k[wi] * 64 + (piece & 3) * 16 + where[h[j].astype(np.int64) * 16 + rank]


def _match(rows: np.ndarray, cols: np.ndarray, L: int, ncols: int, cap: int, perm: np.ndarray) -> np.ndarray:
    """Maximum matching links -> columns, each column usable ``cap`` times. Returns column or -1.

    ``rows`` must be grouped in ascending order (each link's candidates in preference order).
    Links are presented to Hopcroft-Karp in the shuffled order ``perm``: in link-id order the
    grid structure makes its augmenting-path search take seconds on some steps. With ``cap > 1``
    a link's row lists its candidates ``cap`` times, copy ``i`` as columns ``col + i * ncols``.
    """
    cnt = np.bincount(rows, minlength=L)
    first = np.cumsum(cnt) - cnt
    c, f = cnt[perm], first[perm]  # row i of the matrix is link perm[i]
    indptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(c * cap, out=indptr[1:])
    if cap == 1:
        ind = cols[np.arange(indptr[-1]) + np.repeat(f - indptr[:-1], c)]
    else:
        i = np.repeat(np.arange(L), c * cap)
        t = np.arange(indptr[-1]) - indptr[i]
        ind = cols[f[i] + t % c[i]] + ncols * (t // c[i])
    itype = np.int32 if max(ncols * cap, indptr[-1]) < 2**31 else np.int64
    graph = csr_matrix(
        (np.ones(len(ind), dtype=np.int8), ind.astype(itype), indptr.astype(itype)), shape=(L, ncols * cap)
    )
    inv = np.empty(L, dtype=np.int64)
    inv[perm] = np.arange(L)
    match = maximum_bipartite_matching(graph, perm_type="column")[inv]
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


def _growth_cap(topo: Topology, chunks: int) -> int:
    """Nodes a tree may gain per step in the main matching: ceil(min in-degree / K)."""
    return max(1, -(-int(topo.in_degree.min()) // chunks))


def _xtree_once(topo: Topology, chunks: int, lanes: bool, seed: int, progress=None, lanes_first: bool = False) -> Phase:
    n, K = topo.nodes, chunks
    src, dst = topo.link_src, topo.link_dst
    L = len(src)
    rng = np.random.default_rng(seed)
    st = _State(topo, K, lanes, rng)
    X, W = st.X, st.W
    cap = _growth_cap(topo, K)
    if lanes:
        _, dst_lane = link_lanes(topo)
    link_ids = np.arange(L)
    # lane conflicts drop matches; a lane-aware step needs every candidate to recover them
    window = X if lanes else WINDOW
    steps: list[np.ndarray] = []
    total, done, step = n * (n - 1) * K, 0, 0
    while done < total:
        start = (step * 7 + link_ids * 13) % W
        rows, cols = _candidates(st.UT, st.pcT, start, window)
        if lanes:
            # offer the lagging trees (fewest holders) first: lane conflicts make the tail fragile
            rank = np.lexsort((rng.random(W * 64), st.count))
            prio = np.empty(W * 64, dtype=np.int64)
            prio[rank] = np.arange(W * 64)
            o = np.lexsort((prio[cols], rows))
            rows, cols = rows[o], cols[o]
        perm = rng.permutation(L)
        if lanes_first:
            # first give every link a lane of its source (one link per lane) holding a chunk its
            # destination lacks, best chunk first; then match each link with the chunks in its lane
            lam = st.lane[src[rows], st.chunk_at[cols]]
            first = _first_of_each(rows * st.n_lanes + lam)
            lane_of = _match(rows[first], lam[first], L, st.n_lanes, 1, perm)
            mine = lam == lane_of[rows]
            m = _match(rows[mine], cols[mine], L, W * 64, cap, perm)
        else:
            m = _match(rows, cols, L, W * 64, cap, perm)
        idle = m < 0
        offered = np.bincount(rows, minlength=L)
        if idle.any() and (idle & (st.pcT.sum(axis=0, dtype=np.int64) > offered)).any():
            rows, cols = _candidates(st.UT, st.pcT, start, RETRY)  # match again with a wider window
            m = _match(rows, cols, L, W * 64, cap, perm)
            offered = np.bincount(rows, minlength=L)
        links = np.nonzero(m >= 0)[0]
        # conflicts go to the link with the fewest alternatives
        links = links[np.argsort(offered[links], kind="stable")]
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
            m2 = _match(r, c, L, W * 64, 1, perm)  # the idle links, matched again
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


def _step_kinds(topo: Topology, chunks: int, lanes: bool) -> list[bool]:
    """``lanes_first`` values to try (module docstring): both where lanes are matched one link each."""
    if lanes and _growth_cap(topo, chunks) == 1 and topo.nodes <= LANES_FIRST_MAX:
        return [True, False]
    return [False]


def tie_break_orders(topo: Topology, chunks: int, lanes: bool, seeds: int):
    """Every XTree schedule of seeds ``0 .. seeds - 1``, with both lane-aware step kinds where
    :func:`xtree` tries both: the starting points of :func:`.cpsat.repair`.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    lanes : bool
        Honour the node storage rule (:mod:`.storage`).
    seeds : int
        Tie-break orders ``0 .. seeds - 1``.

    Yields
    ------
    Phase
        One AllGather phase per seed and step kind.
    """
    for seed in range(seeds):
        for lanes_first in _step_kinds(topo, chunks, lanes):
            yield _xtree_once(topo, chunks, lanes, seed, None, lanes_first)


def xtree(topo: Topology, chunks: int, lanes: bool = False, progress=None) -> Phase:
    """Algorithm 2: an AllGather schedule of ``chunks`` chunks per shard on ``topo``.

    Small networks (up to ``SMALL`` nodes) keep the shortest of ``SEEDS`` tie-break orders. With
    lanes, a growth limit of one node per tree and step and up to ``LANES_FIRST_MAX`` nodes, both
    step kinds (lanes matched first, one matching) are tried and the shortest schedule is kept.

    Parameters
    ----------
    topo : Topology
        The topology (any strongly connected one; seed 000 uses the mesh and EquiMesh).
    chunks : int
        K, chunks per shard.
    lanes : bool
        Honour the node storage rule (:mod:`.storage`) so the RTL can run the schedule.
    progress : callable, optional
        ``progress(done, total)`` in transfers, after each step.

    Returns
    -------
    Phase
        The AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.

    Raises
    ------
    RuntimeError
        If the topology is not strongly connected (the trees stall).
    """
    small = topo.nodes <= SMALL
    best = None
    for lanes_first in _step_kinds(topo, chunks, lanes):
        for seed in range(SEEDS if small else 1):
            ph = _xtree_once(topo, chunks, lanes, seed, progress, lanes_first)
            if best is None or ph.num_steps < best.num_steps:
                best = ph
    return best
