"""Direct and indirect all-to-all on a Supermesh (seed 001, slide "Direct and Indirect All-to-All").

SM(m, n) connects every row fully; each row is an SM(n) group. A message matrix applies inside every
row at once (row ``r``'s node ``r n + i`` sends ``counts[i][j]`` chunks to ``r n + j``).

* **DA2A** (direct): every message goes on its own link, the link ``i -> j`` sending the message's
  chunks one per step: one round of ``M`` steps (M the largest message).
* **IA2A** (indirect): part ``p`` of message ``i -> j`` goes through the row's node
  ``k = p mod n`` (the seed's "1/m of each message to each node"). Round 1: every link ``i -> k``
  sends the parts ``k`` forwards (and, for ``k = j``, delivers); round 2, after round 1 (the seed's
  rounds are synchronous): every link ``k -> j`` sends the parts for ``j`` that ``k`` holds, its own
  (``k = i``) included. Round 2's steps come from a bipartite edge colouring at each node (in-ports
  and own parts against out-links, Konig's theorem: as many steps as the busiest of either), which
  is what the RTL's lane rule asks (``schedules/storage.alltoall_lanes``: the relayed parts a node
  sends in one step come in on distinct in-ports).

Both obey the lane rule. A row's link carries, in round 1, the sender's total over n and, in round
2, the receiver's total over n: the seed's round-cost model (``schedules/supermesh.all_to_all``)
when every message is a multiple of n chunks.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase, Schedule
from ..topology import Topology

__all__ = ["direct_alltoall", "edge_colouring", "indirect_alltoall", "row_counts"]


def row_counts(topo: Topology, msg) -> list[list[int]]:
    """The N x N chunk counts of ``msg`` (an n x n integer matrix, diagonal ignored) in every row of ``topo``.

    Parameters
    ----------
    topo : Topology
        A Supermesh SM(m, n) (n columns).
    msg : array_like
        n x n chunk counts.

    Returns
    -------
    list of list of int
        ``counts[s][d]``: chunks node ``s`` sends node ``d`` (0 outside a row).
    """
    msg = np.array(msg, dtype=np.int64)
    n, cols = topo.nodes, topo.cols
    np.fill_diagonal(msg, 0)
    out = np.zeros((n, n), dtype=np.int64)
    for r in range(topo.rows):
        out[r * cols : (r + 1) * cols, r * cols : (r + 1) * cols] = msg
    return out.tolist()


def _link_of(topo: Topology) -> dict[tuple[int, int], int]:
    return {(l.src, l.dst): i for i, l in enumerate(topo.links)}


def _schedule(topo: Topology, counts, steps: list[list], name: str) -> Schedule:
    k = max(max(row) for row in counts)
    arrays = [np.array(s, dtype=np.int64).reshape(-1, 3) for s in steps if s]
    return Schedule("alltoall", name, k, topo, [Phase("alltoall", arrays)], {"method": name, "counts": counts})


def direct_alltoall(topo: Topology, counts) -> Schedule:
    """DA2A: part ``p`` of message ``s -> d`` on link ``s -> d`` at step ``p``.

    Parameters
    ----------
    topo : Topology
        Every pair with a message must be joined by a link (a row of a Supermesh).
    counts : list of list of int
        N x N chunk counts (:func:`row_counts`).

    Returns
    -------
    Schedule
        One ``alltoall`` phase of max(counts) steps; ``meta["counts"]`` = ``counts``.
    """
    link, w = _link_of(topo), np.asarray(counts)
    k = int(w.max())
    steps = [[] for _ in range(k)]
    for s, d in zip(*np.nonzero(w)):
        for p in range(w[s, d]):
            steps[p].append((link[(int(s), int(d))], int(s), int(d) * k + p))
    return _schedule(topo, counts, steps, "da2a")


def edge_colouring(edges: list[tuple]) -> list[int]:
    """A proper edge colouring of a bipartite multigraph with as many colours as its largest degree.

    Konig's edge-colouring theorem, by alternating paths: for edge (u, v), take the lowest colour a
    free at u and b free at v; if a is taken at v, swap a and b along the a/b path from v (it cannot
    reach u), which frees a at v.

    Parameters
    ----------
    edges : list of tuple
        ``(left, right)`` vertex pairs (any hashable names; left and right are separate sides).

    Returns
    -------
    list of int
        The colour of each edge, 0 .. degree - 1.
    """
    at = {}  # (side, vertex) -> {colour: edge}
    colour = [-1] * len(edges)

    def free(x):
        used = at.setdefault(x, {})
        return next(c for c in range(len(used) + 1) if c not in used)

    for e, (u, v) in enumerate(edges):
        lu, rv = ("L", u), ("R", v)
        a, b = free(lu), free(rv)
        if a in at[rv]:
            path, x, c = [], rv, a
            while c in at.setdefault(x, {}):
                f = at[x][c]
                path.append(f)
                x = ("L", edges[f][0]) if x[0] == "R" else ("R", edges[f][1])
                c = b if c == a else a
            for f in path:  # swap a <-> b along the path
                for y in (("L", edges[f][0]), ("R", edges[f][1])):
                    del at[y][colour[f]]
            for f in path:
                colour[f] = b if colour[f] == a else a
                for y in (("L", edges[f][0]), ("R", edges[f][1])):
                    at[y][colour[f]] = f
        colour[e] = a
        at[lu][a] = e
        at[rv][a] = e
    return colour


def indirect_alltoall(topo: Topology, counts) -> Schedule:
    """IA2A: two rounds through the row's nodes (module docstring).

    Parameters
    ----------
    topo : Topology
        A Supermesh SM(m, n) whose rows carry every message (:func:`row_counts`).
    counts : list of list of int
        N x N chunk counts.

    Returns
    -------
    Schedule
        One ``alltoall`` phase: round 1's steps, then round 2's; ``meta["counts"]`` = ``counts``.
    """
    link, w, cols = _link_of(topo), np.asarray(counts), topo.cols
    k = int(w.max())
    queue: dict[int, list] = {}  # round 1, per link
    hold: dict[int, list] = {}  # round 2, per relay node: (in-port or own part, out-link, row)
    for s, d in zip(*np.nonzero(w)):
        s, d = int(s), int(d)
        for p in range(w[s, d]):
            via = (s // cols) * cols + p % cols
            row = (s, d * k + p)
            if via != s:
                queue.setdefault(link[(s, via)], []).append(row)
            if via != d:
                into = "own" if via == s else topo.links[link[(s, via)]].dst_port
                hold.setdefault(via, []).append((into, link[(via, d)], row))
    steps = [[] for _ in range(max((len(q) for q in queue.values()), default=0))]
    for l, rows in queue.items():
        for t, (s, c) in enumerate(rows):
            steps[t].append((l, s, c))
    round2: list[list] = []
    for relay, parts in hold.items():
        edges = [(src if src != "own" else ("own", i), out) for i, (src, out, _) in enumerate(parts)]
        for (_, out, (s, c)), t in zip(parts, edge_colouring(edges)):
            round2.extend([] for _ in range(t + 1 - len(round2)))
            round2[t].append((out, s, c))
    return _schedule(topo, counts, steps + round2, "ia2a")
