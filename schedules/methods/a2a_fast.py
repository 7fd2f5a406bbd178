"""Relay AllToAll at scale: the two stages of :mod:`.a2a` in numpy, for networks where stage 1b is off.

Seed 003, Section 3.6 (ring relay), as in :mod:`.a2a`: every chunk goes row then column (XY) or column
then row (YX) along shortest paths inside its row and column, taking at each node option
``i mod (options)`` among the links that shorten its distance (chunk ``i``); then a list schedule in
which every link sends, of the chunks waiting at its source for it, the one with most hops to go
(lowest chunk number on ties). What differs from :mod:`.a2a`:

* routes are walked hop by hop for all chunks at once from per-(node, target) option tables, never
  stored: a chunk's next link follows from its node, its destination, XY or YX, and ``i``;
* the two re-routing passes go in :data:`BATCHES` strided batches (chunks ``j, j + B, j + 2B, ...``;
  each chunk's choice sees the loads of the batches before it, not of the chunks before it in its
  own batch);
* the list schedule keeps, per link, the waiting own chunks in one sorted array with a pointer and
  the relayed ones in one sorted array of keys; each step picks per link the larger of the two
  keys (hops to go, then the lower chunk number), exactly the priority of :mod:`.a2a`'s heaps.
"""

from __future__ import annotations

import numpy as np

from ..alltoall import demand
from ..schedule import Phase
from ..topology import Topology
from .a2a import _segments

__all__ = ["BATCHES", "fast_relay_alltoall"]

BATCHES = 1024  # re-routing batches per pass
_PASSES = 2
_MAXOPT = 4


class _Tables:
    """Per node and target column (row moves) or target row (column moves): the links that shorten
    the distance inside the row (column), their count, and the distance."""

    def __init__(self, topo: Topology):
        n, rows, cols = topo.nodes, topo.rows, topo.cols
        self.cols = cols
        self.ldst = topo.link_dst.astype(np.int64)
        out, ldst = topo.out_links, topo.link_dst.tolist()
        self.opt = [np.zeros((n, side, _MAXOPT), dtype=np.int64) for side in (cols, rows)]
        self.nopt = [np.ones((n, side), dtype=np.int64) for side in (cols, rows)]
        self.dist = [np.zeros((n, side), dtype=np.int64) for side in (cols, rows)]
        for axis, groups in (
            (0, [list(range(r * cols, (r + 1) * cols)) for r in range(rows)]),
            (1, [list(range(c, n, cols)) for c in range(cols)]),
        ):
            for members in groups:
                for b, dist in _segments(topo, members).items():
                    tgt = b % cols if axis == 0 else b // cols
                    for a in members:
                        if a == b:
                            continue
                        opts = [l for l in out[a] if dist.get(ldst[l], -1) == dist[a] - 1]
                        self.opt[axis][a, tgt, : len(opts)] = opts
                        self.nopt[axis][a, tgt] = len(opts)
                        self.dist[axis][a, tgt] = dist[a]
        self.build_next()

    def length(self, s, d, yx):
        """Hops of the XY (``yx`` False) or YX route of each chunk."""
        c = self.cols
        r = d // c
        mid = np.where(yx, r * c + s % c, (s // c) * c + d % c)
        first = np.where(yx, self.dist[1][s, r], self.dist[0][s, d % c])
        second = np.where(yx, self.dist[0][mid, d % c], self.dist[1][mid, r])
        return first + second

    def build_next(self) -> None:
        """Flatten the options per (XY or YX, node, destination): ``next_link`` is then two gathers."""
        n, c = self.opt[0].shape[0], self.cols
        cur, d = np.divmod(np.arange(n * n), n)
        self.n = n
        self.flat_opt = np.zeros((2, n * n, _MAXOPT), dtype=np.int32)
        self.flat_nopt = np.ones((2, n * n), dtype=np.int64)
        for yx in (0, 1):
            row_move = (cur // c == d // c) if yx else (cur % c != d % c)
            for axis, tgt, sel in ((0, d % c, row_move), (1, d // c, ~row_move)):
                self.flat_opt[yx, sel] = self.opt[axis][cur[sel], tgt[sel]]
                self.flat_nopt[yx, sel] = self.nopt[axis][cur[sel], tgt[sel]]
        self.flat_opt = self.flat_opt.reshape(-1)
        self.flat_nopt = self.flat_nopt.reshape(-1)

    def next_link(self, cur, d, yx, i):
        """The next link of each chunk at node ``cur`` (not yet at ``d``)."""
        base = (yx * self.n + cur) * self.n + d
        return self.flat_opt[base * _MAXOPT + i % self.flat_nopt[base]].astype(np.int64)


def _walk(tab: _Tables, s, d, yx, i, load, sign: int = 0):
    """Walk every route: add ``sign`` to ``load`` on its links (if ``sign``), return its busiest load."""
    cur, worst = s.copy(), np.zeros(len(s), dtype=np.int64)
    live = np.nonzero(cur != d)[0]
    while len(live):
        link = tab.next_link(cur[live], d[live], yx[live], i[live])
        if sign:
            np.add.at(load, link, sign)
        else:
            worst[live] = np.maximum(worst[live], load[link])
        cur[live] = tab.ldst[link]
        live = live[cur[live] != d[live]]
    return worst


def _balance(tab: _Tables, s, d, i, nlinks: int, batches: int = BATCHES):
    """Stage 1: XY or YX per chunk, alternately, then :data:`_PASSES` re-routing passes in ``batches``."""
    yx = (i % 2).astype(bool)
    load = np.zeros(nlinks, dtype=np.int64)
    _walk(tab, s, d, yx, i, load, +1)
    for _ in range(_PASSES):
        nb = min(batches, len(s))
        for b in (np.arange(j, len(s), nb) for j in range(nb)):  # strided: each batch a sample of all pairs
            _walk(tab, s[b], d[b], yx[b], i[b], load, -1)
            cost = [_walk(tab, s[b], d[b], np.full(len(b), v), i[b], load) for v in (False, True)]
            yx[b] = (cost[1] < cost[0]) | ((cost[1] == cost[0]) & (i[b] % 2 == 1))
            _walk(tab, s[b], d[b], yx[b], i[b], load, +1)
    return yx


def fast_relay_alltoall(topo: Topology, chunks: int, counts=None, batches: int = BATCHES) -> Phase:
    """The relay AllToAll of the module docstring as one ``alltoall`` phase (links only).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, chunks per (source, destination) pair (the largest count when skewed).
    counts : list of list of int or None
        A skewed AllToAll's chunks per pair (:func:`..alltoall.demand`).
    batches : int
        Re-routing batches per pass; one per chunk re-routes chunk by chunk, as :mod:`.a2a` does.

    Returns
    -------
    Phase
    """
    n, k = topo.nodes, chunks
    tab = _Tables(topo)
    w = demand(n, k, counts).reshape(-1)
    pair = np.repeat(np.arange(n * n), w)
    part = np.arange(len(pair)) - np.repeat(np.cumsum(w) - w, w)
    s, d = pair // n, pair % n
    table = np.stack([s, d * k + part], axis=1)
    i = np.arange(len(s))
    yx = _balance(tab, s, d, i, len(topo.links), batches)
    hops = tab.length(s, d, yx)
    return Phase("alltoall", _list_schedule(tab, s, d, yx, i, hops, table, len(topo.links)))


def _list_schedule(tab: _Tables, s, d, yx, i, hops, table, nlinks: int) -> list[np.ndarray]:
    """Stage 2: per step, every link sends its waiting chunk of most hops to go (lowest ``i`` on ties).

    The relayed chunks waiting are one sorted int64 array of ``link << 47 | hops to go << 40 |
    (2^40 - 1 - i)``: each link's best is the last entry below the next link's range (a binary
    search per link), and a step deletes and inserts at most one entry per link."""
    big, shift = 1 << 40, 47
    assert hops.max(initial=0) < 1 << (shift - 40) and len(i) < big
    first = tab.next_link(s, d, yx, i)
    order = np.lexsort((i, -hops, first))  # own chunks per first link, best first
    ptr = np.searchsorted(first[order], np.arange(nlinks))
    end = np.searchsorted(first[order], np.arange(nlinks), side="right")
    links = np.arange(nlinks, dtype=np.int64)
    bounds = (links + 1) << shift
    waiting = np.zeros(0, dtype=np.int64)
    steps = []
    while (ptr < end).any() or len(waiting):
        has = ptr < end
        own = order[np.minimum(ptr, len(order) - 1)]
        own_key = np.where(has, hops[own] * big + (big - 1 - own), -1)
        last = np.searchsorted(waiting, bounds) - 1
        entry = waiting[np.maximum(last, 0)] if len(waiting) else np.zeros(nlinks, dtype=np.int64)
        mine = (last >= 0) & ((entry >> shift) == links)
        relay_key = np.where(mine, entry & ((1 << shift) - 1), -1)
        from_own = has & (own_key > relay_key)
        from_relay = mine & ~from_own
        rk = relay_key[from_relay]
        sent_link = np.concatenate([links[from_own], links[from_relay]])
        sent_i = np.concatenate([own[from_own], big - 1 - rk % big])
        left = np.concatenate([hops[own[from_own]], rk // big]) - 1
        ptr[from_own] += 1
        waiting = np.delete(waiting, last[from_relay])
        go = left > 0
        ni = sent_i[go]
        nxt = tab.next_link(tab.ldst[sent_link[go]], d[ni], yx[ni], ni)
        new = np.sort((nxt << shift) | (left[go] * big + (big - 1 - ni)))
        waiting = np.insert(waiting, np.searchsorted(waiting, new), new)
        steps.append(np.column_stack([sent_link, table[sent_i]]))
    return steps
