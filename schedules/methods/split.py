"""Split schedules: a lane-rule K = 4 AllGather in N - 1 steps (the bound) or N where the EquiMesh
has no Hamiltonian decomposition.

A *split* divides the links into 4 cycle covers: three Hamiltonian cycles H0, H1, H2 and one cover
made of a 2-cycle ``u <-> w`` (a mesh link each way) and a cycle B through the other N - 2 nodes.
Where the sides differ in parity every split into cycle covers has an odd number of cycles
(:mod:`.parity`), so 3 Hamiltonian cycles plus 2 cycles is the closest one can get to a
decomposition. The schedule (docs/schedules.md "Split schedules") is the ring-pipelined AllGather
of :mod:`.ringpipe` on H0-H2 and on B, with three changes, run for N steps (one more than the bound):

* **u's and w's own class-3 chunks ride a ring**: u's on H_iu, w's on H_iw (iu != iw), as an extra
  chunk in front of the node's own one. A ring of N nodes carries N + 1 chunks in N steps (every
  link then carries N), so all nodes get them one step after the ring's usual end.
* **Swaps bring B's chunks to u and w.** Every step, w also sends u (over the 2-cycle link) the
  chunk it forwards on the cycle that reaches u soonest from w, if that chunk will reach u on that
  cycle; u keeps it in its lane, and when the cycle would have delivered it, u's predecessor on it
  sends u a class-3 chunk of B instead: the one it forwards on B in that step (a fan-out), or one it
  holds in a lane nobody reads in that step. The same with u and w exchanged.
* Where no swap applies, the 2-cycle link carries any chunk the receiver lacks.

**Two 2-cycles.** Where the sides have equal parity (sign +1) but there is no Hamiltonian
decomposition (3x9, 3x13), a split has an even number of cycles: colour 3 is then two 2-cycles and a
cycle B through the other N - 4 nodes (6 cycles). The same construction runs with swaps on each
2-cycle; the four pair nodes' class-3 chunks share the rings (all four on one ring serves at 3x9 and
3x13), so it takes N + 2 steps, keeps every link busy for its first N - 5 and leaves the rest (three
steps' worth of idle link-steps) to the tail, which then takes 4 steps: N - 1 in all, the bound.

Every node forwards first in, first out. Which rings carry u's and w's chunks, which chunk index
travels which class, and whether u (w) sends its extra chunk before or after its own are chosen by
simulating until every node holds every chunk with the lane rule kept; the result is verified and
storage-checked like every stored schedule. Splits are found offline by CP-SAT (``find``, one
``AddCircuit`` per colour, the 2-cycle's nodes left out of colour 3's circuit) and stored with the
choices that work in ``data/splits.json`` (``python -m equimesh.schedules.split --sizes ...``).

Larger sizes come from *split tiles* (ring directions ``cccc``): a split of E x 13 or E x 15 (E even)
whose band of 4 along the odd side repeats (:mod:`.hamiltonian`'s tile construction, 2-cycle before
the band), extended to every odd side from 9 up, or of E x 9 with a band of 2, extended to every odd
side from 7 up; both ways round, with the choices stored per size (``python -m
equimesh.schedules.split --tiles ... [--period 2]``).

**Tails.** With one 2-cycle the construction leaves all its idle link-steps (4N, one step's worth)
in its last three steps. CP-SAT (:func:`.cpsat.exact`, lane rule) re-solves the last 4 steps in 3
from the state the others leave (or 6 in 5, 8 in 7; with two 2-cycles the last 7 in 4), every link
then busy in every step: N - 1 steps, the bound. The
tails are solved offline and stored per network (``--tails``); at command time only the stored
tail is used, and the whole schedule is verified and storage-checked.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import time

import numpy as np

from ..schedule import Phase
from ..storage import home_lanes, link_lanes
from ..topology import (
    DATA,
    DEFAULT_RING_DIRS,
    Topology,
    TopologyError,
    build,
    format_ring_dirs,
    grid_maps,
    parse_ring_dirs,
    parse_sizes,
)
from . import hamiltonian
from .library import BASE, applies, check, image, key, rounds

__all__ = [
    "EARLIER",
    "K",
    "SPLITS",
    "SplitFailed",
    "TAIL_SIDE",
    "TILE_SIDES",
    "arcs",
    "choices",
    "choose",
    "construct",
    "construct_record",
    "default",
    "find",
    "finish",
    "format_step",
    "is_split",
    "length",
    "make_tile",
    "parse_colours",
    "parse_transfers",
    "solve",
    "solve_tail",
    "split_allgather",
    "stored_split",
    "tail_keys",
    "tail_start",
    "tile_colours",
    "tile_key",
    "tile_pair",
    "tile_sizes",
    "two_cycles",
]

SPLITS = DATA / "splits.json"
K = BASE  # chunks per shard of a split schedule (one per class)
EARLIER = (0, 2, 4)  # a tail may start this many steps before the split's tail start
TAIL_SIDE = 16  # tails are stored for networks up to this many rows and columns


class SplitFailed(ValueError):
    """The simulation of a split with one set of choices left a chunk undelivered or a lane read twice.

    The message names the lane (B or ring) and node and step, or the count of undelivered chunks.
    """


def find(
    topo: Topology, pairs: list[tuple[int, int]], time_limit: float, seed: int = 0, same: list[tuple[int, int]] = ()
) -> tuple[np.ndarray | None, str]:
    """CP-SAT: colours 0-2 Hamiltonian circuits, colour 3 the 2-cycles ``u <-> w`` of ``pairs`` plus
    a circuit through every other node. Returns each link's colour (or None) and "found", "none"
    (proven: no such split with the 2-cycles there) or "timeout".

    Parameters
    ----------
    topo : Topology
    pairs : list of tuple of (int, int)
        The 2-cycles: mesh-neighbour node pairs with a link each way, pairwise disjoint.
    time_limit : float
        Seconds for CP-SAT (one worker).
    seed : int
        CP-SAT's random seed.
    same : list of tuple of (int, int)
        Link pairs that must share a colour (a tile's band).

    Returns
    -------
    tuple of (numpy.ndarray or None, str)
        int64 colours 0..3 of shape (L,), and the status.
    """
    src, dst = topo.link_src.tolist(), topo.link_dst.tolist()
    ends = {v for p in pairs for v in p}
    two = {(u, w) for u, w in pairs} | {(w, u) for u, w in pairs}
    pair = [l for l in range(len(src)) if (src[l], dst[l]) in two]
    if len(pair) != 2 * len(pairs) or len(ends) != 2 * len(pairs):
        return None, "none"
    m, x = _colouring(topo)
    for l in pair:
        m.Add(x[l][3] == 1)
    for i, j in same:  # a tile's band: link pairs of one colour
        for c in range(4):
            m.Add(x[i][c] == x[j][c])
    for c in range(3):
        m.AddCircuit(arcs(m, topo, [row[c] for row in x], range(len(src))))
    for l in range(len(src)):
        if (src[l] in ends or dst[l] in ends) and l not in pair:
            m.Add(x[l][3] == 0)
    rest = [l for l in range(len(src)) if src[l] not in ends and dst[l] not in ends]
    m.AddCircuit(arcs(m, topo, [row[3] for row in x], rest) + [(v, v, True) for p in pairs for v in p])
    return _solve(m, x, time_limit, seed)


def two_cycles(topo: Topology, time_limit: float) -> str:
    """CP-SAT: is there any split into 4 cycle covers with 5 cycles, three Hamiltonian cycles and a
    cover of two cycles of any lengths (the shape of every split with one 2-cycle)? "found", "none"
    (proven) or "timeout". None exists at 2 x C for odd C from 5 on, for any ring directions.

    Parameters
    ----------
    topo : Topology
    time_limit : float
        Seconds for CP-SAT.

    Returns
    -------
    str
        ``"found"``, ``"none"`` or ``"timeout"``.
    """
    m, x = _colouring(topo)
    for c in range(3):
        m.AddCircuit(arcs(m, topo, [row[c] for row in x], range(len(topo.links))))
    side = [m.NewBoolVar("") for _ in range(topo.nodes)]  # the cycle through node 0, or the other
    m.Add(side[0] == 1)
    m.Add(sum(side) <= topo.nodes - 2)
    circuits: list[list] = [[], []]
    for a, b, lit in arcs(m, topo, [row[3] for row in x], range(len(topo.links))):
        on = [m.NewBoolVar(""), m.NewBoolVar("")]
        m.Add(on[0] + on[1] == lit)
        for k, need in ((0, side), (1, [v.Not() for v in side])):
            m.AddImplication(on[k], need[a])
            m.AddImplication(on[k], need[b])
            circuits[k].append((a, b, on[k]))
    m.AddCircuit(circuits[0] + [(v, v, side[v].Not()) for v in range(topo.nodes)])
    m.AddCircuit(circuits[1] + [(v, v, side[v]) for v in range(topo.nodes)])
    return _solve(m, x, time_limit, 0)[1]


def _colouring(topo: Topology):
    """A CP-SAT model with one colour of 4 per link (``x[link][colour]``)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = [[m.NewBoolVar("") for _ in range(4)] for _ in topo.links]
    for row in x:
        m.AddExactlyOne(row)
    return m, x


def arcs(m, topo: Topology, lits: list, links) -> list[tuple[int, int, object]]:
    """The arcs of ``AddCircuit`` for the links given (each link's literal in ``lits``); parallel
    links share one arc literal.

    Parameters
    ----------
    m : ortools.sat.python.cp_model.CpModel
        Gets one new literal per arc, equal to the sum of its links' literals.
    topo : Topology
    lits : list
        A literal per link id.
    links : iterable of int
        The link ids to use.

    Returns
    -------
    list of tuple of (int, int, object)
        ``(src node, dst node, literal)`` per distinct node pair.
    """
    groups: dict[tuple[int, int], list[int]] = {}
    for l in links:
        groups.setdefault((int(topo.link_src[l]), int(topo.link_dst[l])), []).append(l)
    arcs = []
    for (a, b), ids in groups.items():
        lit = m.NewBoolVar("")
        m.Add(sum(lits[i] for i in ids) == lit)
        arcs.append((a, b, lit))
    return arcs


def _solve(m, x, time_limit: float, seed: int) -> tuple[np.ndarray | None, str]:
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, "none" if status == cp_model.INFEASIBLE else "timeout"
    return np.array([[solver.Value(v) for v in row] for row in x]).argmax(axis=1), "found"


def _successors(topo: Topology, links) -> tuple[dict[int, int], dict[int, int]]:
    """Successor node and out-link per node of a 1-in-1-out set of links."""
    return (
        {int(topo.link_src[l]): int(topo.link_dst[l]) for l in links},
        {int(topo.link_src[l]): int(l) for l in links},
    )


def _rings(topo: Topology, colour: np.ndarray, pairs: list[tuple[int, int]]) -> tuple:
    """The three Hamiltonian cycles' successors and out-links, the 2-cycles' nodes and partners, cycle B's
    successors and out-links, and each pair node's class-3 out-link (:func:`construct`)."""
    src = topo.link_src
    ring = [_successors(topo, np.nonzero(colour == c)[0]) for c in range(3)]
    succ = [r[0] for r in ring]
    out = [r[1] for r in ring]
    ends = [v for p in pairs for v in p]
    partner = {**dict(pairs), **{w: u for u, w in pairs}}
    b_succ, b_out = _successors(topo, [l for l in np.nonzero(colour == 3)[0] if src[l] not in ends])
    pair_out = {int(src[l]): int(l) for l in np.nonzero(colour == 3)[0] if src[l] in ends}
    return succ, out, ends, partner, b_succ, b_out, pair_out


def _holdings(home: np.ndarray) -> tuple[bytearray, np.ndarray, list[int]]:
    """The start of :func:`construct`: every node holds its own K chunks, each in its home lane.

    ``has[v, x]`` (node v holds chunk x) is a numpy view of the flat bytes ``held`` (index
    ``v * N * K + x``), and ``lane`` the flat list of the lanes that hold them (-1: none): the
    simulation reads single elements through the bytes and the list, which Python does far faster
    than through numpy scalars, and whole rows through ``has``.
    """
    n, k = home.shape
    width = n * k
    held = bytearray(n * width)
    has = np.frombuffer(held, dtype=bool).reshape(n, width)
    lane = [-1] * (n * width)
    for v in range(n):
        has[v, v * k : (v + 1) * k] = True
        lane[v * width + v * k : v * width + (v + 1) * k] = home[v].tolist()
    return held, has, lane


def construct(
    topo: Topology,
    colour: np.ndarray,
    pairs: list[tuple[int, int]],
    inject: tuple[int, ...],
    chunk_of: tuple[int, ...],
    first: tuple[int, ...],
    until: int | None = None,
) -> Phase:
    """Simulate the split schedule (module docstring) for its :func:`length` (or its first ``until``
    steps, the part a tail completes): ``pairs`` = the 2-cycles ``(u, w)``, ``inject`` = the ring
    that carries each pair node's class-3 chunk (u, w of the first pair, then of the next),
    ``chunk_of[c]`` = the chunk index of class c, ``first`` = the queue position (0 or 1) of each
    pair node's extra chunk. :class:`SplitFailed` if it would read a lane for two chunks in one
    step, or (run to the end) does not deliver every chunk.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        Shape (L,): a split's link colours, 0..3 (3: the 2-cycles and B).
    pairs : list of tuple of (int, int)
        The 2-cycles ``(u, w)``.
    inject : tuple of int
        Ring 0..2 per pair node.
    chunk_of : tuple of int
        A permutation of 0..3: class -> chunk index.
    first : tuple of int
        0 or 1 per pair node.
    until : int or None
        Stop after this many steps; None: run to :func:`length` (or until all is delivered).

    Returns
    -------
    Phase
        An AllGather of K = 4 (not checked here).

    Raises
    ------
    SplitFailed
        As above.
    """
    n = topo.nodes
    home = home_lanes(topo, K)
    _, dst_lane = link_lanes(topo)
    succ, out, ends, partner, b_succ, b_out, pair_out = _rings(topo, colour, pairs)

    def dist(c: int, a: int, b: int) -> int:
        k, v = 0, a
        while v != b:
            v, k = succ[c][v], k + 1
        return k

    def reaches(c: int, a: int, b: int, root: int) -> bool:
        """Does the chunk of ``root`` that ``a`` forwards on ring c still reach ``b`` on it?"""
        v = succ[c][a]
        while v != b:
            if v == root or succ[c][v] == root:
                return False
            v = succ[c][v]
        return succ[c][b] != root

    swap = {b: min(range(3), key=lambda c: dist(c, partner[b], b)) for b in ends}
    width, (held, has, lane) = n * K, _holdings(home)
    delivered = n * K  # chunks held, over all nodes
    link_dst, link_lane = topo.link_dst.tolist(), dst_lane.tolist()
    queue = [{v: collections.deque([v * K + chunk_of[c]]) for v in range(n)} for c in range(3)]
    for node, c, pos in zip(ends, inject, first):
        queue[c][node].insert(pos, node * K + chunk_of[3])
    b_queue = {v: collections.deque([] if v in ends else [v * K + chunk_of[3]]) for v in range(n)}
    early: dict[int, set[int]] = {v: set() for v in ends}  # chunks v got over its 2-cycle ahead of its ring
    steps = []
    for t in range(length(topo, pairs) if until is None else until):
        sends: list[tuple[int, int]] = []
        reads: dict[tuple[int, int], int] = {}
        arrive: list[tuple[int, int, int, object]] = []  # (node, chunk, lane, queue to join)
        incoming: set[tuple[int, int]] = set()

        def read(v: int, x: int) -> bool:  # the lane of v holding x is free this step, or already reads x
            return reads.setdefault((v, lane[v * width + x]), x) == x

        def send(link: int, x: int, join) -> None:
            v = link_dst[link]
            sends.append((link, x))
            arrive.append((v, x, link_lane[link], join))
            incoming.add((v, x))

        b_heads = {v: q.popleft() for v, q in b_queue.items() if q}
        for v, x in b_heads.items():
            if not read(v, x):
                raise SplitFailed(f"B lane of node {v} in step {t}")
            send(b_out[v], x, "B")
        heads = {(c, v): queue[c][v][0] for c in range(3) for v in range(n) if queue[c][v]}
        for (c, v), x in heads.items():
            nxt = succ[c][v]
            queue[c][v].popleft()
            if held[nxt * width + x]:  # nxt has x already (over the 2-cycle, ahead of the ring): a swap
                if x in early.get(nxt, ()) and x // K != succ[c][nxt]:
                    queue[c][nxt].append(x)  # nxt forwards it when the ring would have
                early.get(nxt, set()).discard(x)
                offer = ([b_heads[v]] if v in b_heads else []) + [  # B's class-3 chunks only
                    y for y in np.nonzero(has[v] & ~has[nxt])[0].tolist() if y % K == chunk_of[3]
                ]
                for y in offer:
                    if not held[nxt * width + y] and (nxt, y) not in incoming and read(v, y):
                        send(out[c][v], y, None)
                        break
                continue
            if not read(v, x):
                raise SplitFailed(f"ring {c} lane of node {v} in step {t}")
            send(out[c][v], x, c if x // K != succ[c][nxt] else None)
        for a, b in [(w, u) for u, w in pairs] + list(pairs):
            c = swap[b]
            x = heads.get((c, a))
            if (
                x is not None
                and not held[b * width + x]
                and x not in early[b]
                and reads.get((a, lane[a * width + x])) == x
                and reaches(c, a, b, x // K)
            ):
                early[b].add(x)
                send(pair_out[a], x, None)
                continue
            for y in np.nonzero(has[a] & ~has[b])[0].tolist():
                if y not in early[b] and (b, y) not in incoming and read(a, y):
                    if y % K != chunk_of[3]:
                        early[b].add(y)
                    send(pair_out[a], y, None)
                    break
        for v, x, ln, join in arrive:
            delivered += not held[v * width + x]
            held[v * width + x], lane[v * width + x] = True, ln
            if join == "B":
                if x // K != b_succ[v]:
                    b_queue[v].append(x)
            elif join is not None:
                queue[join][v].append(x)
        steps.append(np.array([(l, x // K, x % K) for l, x in sends], dtype=np.int64).reshape(-1, 3))
        if delivered == n * width:
            break
    if until is None and delivered < n * width:
        raise SplitFailed(f"{int((~has).sum())} chunks undelivered after {len(steps)} steps")
    return Phase("allgather", steps)


def length(topo: Topology, pairs: list) -> int:
    """Steps of the split schedule without a tail: N with one 2-cycle (its two extra chunks ride two
    rings, one each), N + 2 with two (their four extra chunks share rings).

    Parameters
    ----------
    topo : Topology
    pairs : list
        The 2-cycles (one or two).

    Returns
    -------
    int
        N + 2 (len(pairs) - 1) steps.
    """
    return topo.nodes + 2 * (len(pairs) - 1)


def tail_start(topo: Topology, pairs: list) -> int:
    """The step from which a tail of N - 1 - that many steps completes the split schedule (the
    construction has kept every link busy until then): N - 4 with one 2-cycle, N - 5 with two.

    Parameters
    ----------
    topo : Topology
    pairs : list
        The 2-cycles.

    Returns
    -------
    int
        N - 3 - len(pairs).
    """
    return topo.nodes - 3 - len(pairs)


def choices(pairs: int = 1) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """Every (inject, chunk_of, first) that :func:`construct` can be run with on a split with that many
    2-cycles: with one, the two extra chunks ride different rings; with two, the four share them
    (fewest rings first).

    Parameters
    ----------
    pairs : int
        The number of 2-cycles, 1 or 2.

    Returns
    -------
    list of tuple
        ``(inject, chunk_of, first)``: ring per pair node, a permutation of the 4 chunk indices,
        and 0/1 per pair node.
    """
    if pairs == 1:
        inject = list(itertools.permutations(range(3), 2))
    else:
        inject = sorted(itertools.product(range(3), repeat=2 * pairs), key=lambda i: (len(set(i)), i))
    return list(
        itertools.product(inject, itertools.permutations(range(K)), itertools.product((0, 1), repeat=2 * pairs))
    )


def solve(topo: Topology, time_limit: float) -> dict | None:
    """Search 2-cycles on mesh-neighbour pairs, nearest the corner node 0 first (where the splits
    found so far lie), for a split whose schedule works with some choices (either node of a pair as
    ``u``), within ``time_limit``; the record for ``data/splits.json``, or None. One 2-cycle where
    every cover split has an odd number of cycles (sign -1, :mod:`.parity`), else two.

    Parameters
    ----------
    topo : Topology
    time_limit : float
        Seconds in all; each choice of 2-cycles gets at most max(5, N / 4) s of CP-SAT.

    Returns
    -------
    dict or None
        ``key``, ``colours`` (one digit per link), ``pairs``, ``inject``, ``chunk_of``, ``first``
        and, with two 2-cycles, ``tail`` (steps as text).
    """
    from .parity import factorization_sign

    t0 = time.perf_counter()
    per_pair = max(5.0, topo.nodes / 4)  # seconds of CP-SAT per choice of 2-cycles
    if factorization_sign(topo) < 0:
        candidates = [[p] for p in _pairs(topo)]
    else:
        candidates = [[p, q] for p, q in itertools.combinations(_pairs(topo), 2) if not set(p) & set(q)]
    for pairs in candidates:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return None
        colour, _ = find(topo, pairs, min(per_pair, left))
        choice = None if colour is None else choose(topo, colour, pairs, tail_seconds=0.0 if len(pairs) == 1 else left)
        if choice is not None:
            return {"key": key(topo), "colours": _text(colour), **choice}
    return None


def _pairs(topo: Topology, side: int | None = None) -> list[tuple[int, int]]:
    """Mesh-neighbour pairs (a link each way), nearest the corner node 0 first; with ``side`` (0: row,
    1: column) only those with both nodes before a tile's band in that coordinate."""
    rc = [divmod(v, topo.cols) for v in range(topo.nodes)]
    return sorted(
        (
            (u, w)
            for u, w in itertools.combinations(range(topo.nodes), 2)
            if topo.distances[u, w] == 1 == topo.distances[w, u]
            and (side is None or max(rc[u][side], rc[w][side]) < hamiltonian.BAND)
        ),
        key=lambda p: sum(rc[p[0]]) + sum(rc[p[1]]),
    )


def choose(topo: Topology, colour: np.ndarray, pairs: list[tuple[int, int]], tail_seconds: float = 0.0) -> dict | None:
    """The first choices (either node of each pair as ``u``) with which :func:`construct` works on the
    split ``colour`` with the 2-cycles ``pairs``, checked; None if there are none (or it is no
    split). With ``tail_seconds`` instead the first whose steps up to :func:`tail_start` run and
    whose last steps :func:`finish` completes (the record then has the ``tail``: N - 1 steps, the
    bound), so a construction that fails near its end serves too.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        Shape (L,): link colours.
    pairs : list of tuple of (int, int)
        The 2-cycles.
    tail_seconds : float
        Seconds for the tail search; 0: whole constructions only.

    Returns
    -------
    dict or None
        ``pairs`` (as turned), ``inject``, ``chunk_of``, ``first`` and maybe ``tail``.

    Raises
    ------
    ScheduleInvalid, StorageConflict
        If a schedule the construction produced fails its check.
    """
    if not is_split(topo, colour, pairs):
        return None
    turns = itertools.product(*[((u, w), (w, u)) for u, w in pairs])
    options = list(itertools.product([list(t) for t in turns], choices(len(pairs))))
    if not tail_seconds:
        for turned, (inject, chunk_of, first) in options:
            try:
                phase = construct(topo, colour, turned, inject, chunk_of, first)
            except SplitFailed:
                continue
            check(topo, phase)
            return _choice(turned, inject, chunk_of, first)
        return None
    t0 = time.perf_counter()
    for turned, (inject, chunk_of, first) in options:
        left = tail_seconds - (time.perf_counter() - t0)
        if left <= 0:
            break
        try:
            prefix = construct(topo, colour, turned, inject, chunk_of, first, until=tail_start(topo, pairs))
        except SplitFailed:
            continue
        tail = finish(topo, prefix.steps, left)
        if tail is not None:
            check(topo, Phase("allgather", prefix.steps + tail))
            return {**_choice(turned, inject, chunk_of, first), "tail": [format_step(t) for t in tail]}
    return None


def _choice(pairs: list[tuple[int, int]], inject, chunk_of, first) -> dict:
    """The record of one set of :func:`construct` choices (``data/splits.json``)."""
    return {"pairs": [list(p) for p in pairs], "inject": list(inject), "chunk_of": list(chunk_of), "first": list(first)}


def is_split(topo: Topology, colour: np.ndarray, pairs: list[tuple[int, int]]) -> bool:
    """Whether ``colour`` is a split (module docstring) with the 2-cycles ``pairs``: colours 0-2
    Hamiltonian cycles, colour 3 those 2-cycles and one cycle through the other nodes.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        Shape (L,): link colours 0..3.
    pairs : list of tuple of (int, int)

    Returns
    -------
    bool
    """
    for c in range(4):
        mine = np.nonzero(colour == c)[0]
        nxt = dict(zip(topo.link_src[mine].tolist(), topo.link_dst[mine].tolist()))
        if len(nxt) != topo.nodes or len(mine) != topo.nodes or len(set(nxt.values())) != topo.nodes:
            return False
        lengths, seen = [], set()
        for v in range(topo.nodes):
            k = 0
            while v not in seen:
                seen.add(v)
                v, k = nxt[v], k + 1
            lengths += [k] if k else []
        if sorted(lengths) != ([topo.nodes] if c < 3 else [2] * len(pairs) + [topo.nodes - 2 * len(pairs)]):
            return False
    return all(nxt[u] == w and nxt[w] == u for u, w in pairs)


def _text(colour: np.ndarray) -> str:
    return "".join(map(str, colour.tolist()))


def parse_colours(text: str) -> np.ndarray:
    """Link colours from their stored text, one digit per link.

    Parameters
    ----------
    text : str

    Returns
    -------
    numpy.ndarray
        int64, shape (len(text),).
    """
    return np.array([int(ch) for ch in text], dtype=np.int64)


# ----- split tiles: a split whose band repeats along the odd side -------------------------------------
#
# Like the Hamiltonian tiles (:mod:`.hamiltonian`): the ``period`` rows (columns) of the odd side from
# BAND on are coloured like the ``period`` after them, so repeating (or cutting) them keeps every
# node's colours. The 2-cycle lies before the band and keeps its place. A band along the even side
# admits no split (CP-SAT proves it for every 2-cycle outside the band at 3x12 and 5x12 in seconds).
# The period is 4 (tiles E x 13 and E x 15, like the Hamiltonian tiles) or 2 (tiles E x 9, which
# cover every odd side from 7 up; splits, unlike decompositions, admit a band of period 2).

TILE_SIDES = {4: (13, 15), 2: (9,)}  # band period -> the odd sides a tile may have


def default(kind: str, rows: int, cols: int) -> Topology:
    """``kind`` at rows x cols with every ring clockwise (``cccc``), the directions tiles are made for.

    Parameters
    ----------
    kind : str
        ``"equimesh"`` or ``"mirror-equimesh"``.
    rows, cols : int

    Returns
    -------
    Topology
    """
    return build(kind, rows, cols, ring_dirs=dict(DEFAULT_RING_DIRS))


def _bands(rows: int, cols: int) -> tuple[int | None, int | None]:
    """(row band, column band) of a tile: the band lies along the odd side."""
    return (hamiltonian.BAND, None) if rows % 2 else (None, hamiltonian.BAND)


def tile_colours(tile: Topology, colour: np.ndarray, topo: Topology, period: int) -> np.ndarray:
    """``topo``'s link colours from a tile's (band of ``period``): the band repeated or cut to the
    length of ``topo``'s odd side, then transposed if ``topo`` lies the other way round
    (:func:`.hamiltonian.transpose`).

    Parameters
    ----------
    tile : Topology
    colour : numpy.ndarray
        The tile's link colours.
    topo : Topology
        A size the tile covers (ring directions ``cccc``).
    period : int
        The band's period, 2 or 4.

    Returns
    -------
    numpy.ndarray
        int64, shape (L,) of ``topo``.

    Raises
    ------
    DecompositionError
        If the tile does not extend to that size.
    """
    flip = tile.rows % 2 != topo.rows % 2
    rows, cols = (topo.cols, topo.rows) if flip else (topo.rows, topo.cols)
    same = default(tile.kind, rows, cols)
    out = hamiltonian.extend(tile, colour, *_bands(tile.rows, tile.cols), same, period)
    return hamiltonian.transpose(same, out, topo) if flip else out


def tile_sizes(rows: int, cols: int, period: int, reach: int = 32) -> list[str]:
    """The sizes a tile may cover: its odd side from one ``period`` shorter up to ``reach`` in steps
    of ``period``, both ways round.

    Parameters
    ----------
    rows, cols : int
        The tile's size; one side odd.
    period : int
        The band's period.
    reach : int
        The longest odd side.

    Returns
    -------
    list of str
        ``"RxC"`` sizes, the tile's own orientation first for each length.
    """
    odd, even = (rows, cols) if rows % 2 else (cols, rows)
    row_band = rows % 2 == 1
    return [
        size
        for n in range(odd - period, reach + 1, period)
        for size in ((f"{n}x{even}", f"{even}x{n}") if row_band else (f"{even}x{n}", f"{n}x{even}"))
    ]


def make_tile(
    kind: str,
    rows: int,
    cols: int,
    time_limit: float,
    reach: int = 32,
    known: dict | None = None,
    tail_seconds: float = 0.0,
    period: int = hamiltonian.PERIOD,
    skip: frozenset[str] = frozenset(),
) -> dict | None:
    """Search a split tile of ``kind`` (one side even, the other in ``TILE_SIDES[period]``: the band
    side) whose extensions (:func:`tile_sizes`, but for those in ``skip``, served otherwise) are all
    splits that :func:`choose` finds choices for; the record (with those choices per size), else the
    one that covers the most sizes within ``time_limit``, or None. A mirror
    tile is first tried as ``known``, the EquiMesh tile with every link reversed (a split of the
    mirror with the same 2-cycle; only the choices can fail) and kept if it covers as much. With
    ``tail_seconds``, sizes up to :data:`TAIL_SIDE` per side whose construction fails near its end
    count too, with a tail (:func:`choose`).

    Parameters
    ----------
    kind : str
    rows, cols : int
        The tile's size.
    time_limit : float
        Seconds for the search over 2-cycles.
    reach : int
        The longest odd side to cover.
    known : dict or None
        The EquiMesh tile's record, for a mirror tile.
    tail_seconds : float
    period : int
        The band's period, 2 or 4.
    skip : frozenset of str
        Sizes served otherwise.

    Returns
    -------
    dict or None
        ``kind``, ``rows``, ``cols``, ``period``, ``colours`` and ``sizes`` (size -> choices).
    """
    t0 = time.perf_counter()
    tile = default(kind, rows, cols)
    want = [size for size in tile_sizes(rows, cols, period, reach) if size not in skip]
    best = None  # the tile covering the most sizes so far, if none covers all
    if known is not None:
        colour = np.empty(len(tile.links), dtype=np.int64)
        colour[hamiltonian.reversal(default("equimesh", rows, cols), tile)] = parse_colours(known["colours"])
        sizes = _extensions(tile, colour, tile_pair(known), want, period, tail_seconds)
        if set(sizes) >= set(known["sizes"]):
            return _tile_record(tile, colour, period, sizes)
        if sizes:
            best = _tile_record(tile, colour, period, sizes)
    rb, cb = _bands(rows, cols)
    same = hamiltonian.band_pairs(tile, rb, cb, period)
    side = 0 if rb is not None else 1
    for u, w in _pairs(tile, side):
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        colour, _ = find(tile, [(u, w)], min(left, time_limit / 3), same=same)  # a pair may be hard; try 3+
        sizes = None if colour is None else _extensions(tile, colour, (u, w), want, period, tail_seconds)
        if sizes and (best is None or len(sizes) > len(best["sizes"])):
            best = _tile_record(tile, colour, period, sizes)
            if len(sizes) == len(want):
                break
    return best


def tile_pair(rec: dict) -> tuple[int, int]:
    """The 2-cycle of a stored tile, read from a size it covers: its nodes lie before the band, so
    they keep their row and column (swapped where the size lies the other way round).

    Parameters
    ----------
    rec : dict
        A tile record.

    Returns
    -------
    tuple of (int, int)
        Node ids in the tile.
    """
    size, choice = next(iter(rec["sizes"].items()))
    rows, cols = (int(v) for v in size.split("x"))
    u, w = (_carry(v, rows, cols, rec["rows"], rec["cols"]) for v in choice["pairs"][0])
    return u, w


def _carry(v: int, rows: int, cols: int, to_rows: int, to_cols: int) -> int:
    """Node ``v`` of a rows x cols network, before a tile's band, in a to_rows x to_cols one that
    the same tile serves: the same row and column, swapped where one lies the other way round."""
    r, c = divmod(v, cols)
    if rows % 2 != to_rows % 2:
        r, c = c, r
    return r * to_cols + c


def _tile_record(tile: Topology, colour: np.ndarray, period: int, sizes: dict) -> dict:
    return {
        "kind": tile.kind,
        "rows": tile.rows,
        "cols": tile.cols,
        "period": period,
        "colours": _text(colour),
        "sizes": sizes,
    }


def _extensions(
    tile: Topology, colour: np.ndarray, pair: tuple[int, int], sizes: list[str], period: int, tail_seconds: float = 0.0
) -> dict:
    """The choices for each of ``sizes`` (extensions of a tile with a band of ``period``, 2-cycle
    ``pair`` before the band) that is a split that runs (with ``tail_seconds``, up to
    :data:`TAIL_SIDE` per side: that runs to N - 4 steps and has a tail)."""
    out = {}
    for size in sizes:
        r, c = (int(v) for v in size.split("x"))
        topo = default(tile.kind, r, c)
        choice = choose(
            topo,
            tile_colours(tile, colour, topo, period),
            [tuple(_carry(v, tile.rows, tile.cols, r, c) for v in pair)],
            tail_seconds if max(r, c) <= TAIL_SIDE else 0.0,
        )
        if choice is not None:
            out[size] = choice
    return out


@functools.cache
def _data() -> dict:
    return json.loads(SPLITS.read_text()) if SPLITS.exists() else {}


def stored_split(topo: Topology) -> tuple[np.ndarray, dict] | None:
    """``topo``'s split colours and choices: stored for its key, else from a tile (ring directions
    ``cccc``) whose record lists its size; None if neither.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    tuple of (numpy.ndarray, dict) or None
        Colours (shape (L,)) and the record of choices.
    """
    for rec in _data().get("splits", []):
        if rec["key"] == key(topo):
            return parse_colours(rec["colours"]), rec
    if any(topo.ring_dirs.values()):
        return None
    for tile in _data().get("tiles", []):
        choice = tile["sizes"].get(f"{topo.rows}x{topo.cols}")
        if tile["kind"] == topo.kind and choice is not None:
            return (
                tile_colours(
                    default(topo.kind, tile["rows"], tile["cols"]), parse_colours(tile["colours"]), topo, tile["period"]
                ),
                choice,
            )
    return None


def _own(topo: Topology) -> Phase | None:
    """The split schedule of ``topo`` itself (stored or from a tile), with its stored tail if there
    is one, unchecked; None if none."""
    found = stored_split(topo)
    if found is None:
        return None
    colour, rec = found
    tail = _data().get("tails", {}).get(key(topo))
    if tail is None:
        return construct_record(topo, colour, rec)
    prefix = construct_record(topo, colour, rec, until=topo.nodes - len(tail) - 1)
    return Phase("allgather", prefix.steps + [parse_transfers(t) for t in tail])


def solve_tail(topo: Topology, colour: np.ndarray, rec: dict, time_limit: float) -> list[np.ndarray] | None:
    """The split schedule (``rec``'s choices) completed by :func:`finish` from the first start in
    :data:`EARLIER` steps before :func:`tail_start` where it works within what is left of
    ``time_limit``; None if none. The split keeps every link busy until its tail start and leaves
    its idle link-steps (one step's worth per 2-cycle) after it; the solver moves chunks onto them,
    so the schedule meets the bound.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
    rec : dict
        The split's choices.
    time_limit : float
        Seconds in all.

    Returns
    -------
    list of numpy.ndarray or None
        The tail steps, ``[link, root, chunk]`` rows.
    """
    t0 = time.perf_counter()
    for back in EARLIER:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        start = tail_start(topo, rec["pairs"]) - back
        tail = finish(topo, construct_record(topo, colour, rec, until=start).steps, left)
        if tail is not None:
            return tail
    return None


def finish(topo: Topology, prefix: list[np.ndarray], time_limit: float) -> list[np.ndarray] | None:
    """CP-SAT (:func:`.cpsat.exact`, lane rule): the steps that complete the AllGather from the state
    ``prefix`` leaves so that it takes N - 1 steps in all, the bound; None if not found in time.

    Parameters
    ----------
    topo : Topology
    prefix : list of numpy.ndarray
        The steps taken.
    time_limit : float
        Seconds for CP-SAT.

    Returns
    -------
    list of numpy.ndarray or None
        N - 1 - len(prefix) steps at most.
    """
    from .cpsat import exact, start_lanes

    res = exact(
        topo, K, topo.nodes - 1 - len(prefix), lanes=True, time_limit=time_limit, start=start_lanes(topo, K, prefix)
    )
    return None if res.phase is None else res.phase.steps


def construct_record(topo: Topology, colour: np.ndarray, rec: dict, until: int | None = None) -> Phase:
    """:func:`construct` with the choices of a stored record.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        Shape (L,).
    rec : dict
        ``pairs``, ``inject``, ``chunk_of`` and ``first``.
    until : int or None
        As :func:`construct`.

    Returns
    -------
    Phase

    Raises
    ------
    SplitFailed
        If the choices do not work.
    """
    return construct(
        topo,
        colour,
        [tuple(p) for p in rec["pairs"]],
        tuple(rec["inject"]),
        tuple(rec["chunk_of"]),
        tuple(rec["first"]),
        until=until,
    )


def tail_keys(text: str) -> list[str]:
    """The keys whose tails ``--tails`` asks for: those sizes (EquiMesh and mirror, default ring
    directions) that have a split of their own, or with ``all`` every stored split and every size up
    to 16x16 that a tile covers.

    Parameters
    ----------
    text : str
        ``"all"`` or comma-separated ``RxC`` sizes.

    Returns
    -------
    list of str
        Library keys (:func:`.library.key`).

    Raises
    ------
    TopologyError
        On a malformed size, or a size without a split of its own.
    """
    if text == "all":
        keys = [rec["key"] for rec in _data().get("splits", [])]
        keys += [
            tile_key(t["kind"], size)
            for t in _data().get("tiles", [])
            for size in t["sizes"]
            if max(int(v) for v in size.split("x")) <= TAIL_SIDE
        ]
        return sorted(set(keys), key=lambda k: (int(k.split()[1].split("x")[0]) * int(k.split()[1].split("x")[1]), k))
    keys = []
    for r, c in parse_sizes(text, "--tails"):
        for kind in ("equimesh", "mirror-equimesh"):
            topo = build(kind, r, c)
            if stored_split(topo) is None:
                raise TopologyError(f"--tails {r}x{c}: the {topo.name} has no split of its own")
            keys.append(key(topo))
    return keys


def tile_key(kind: str, size: str) -> str:
    """The key (as :func:`.library.key` writes it) of a network of ``size`` that a tile serves: tiles
    are made for ring directions ``cccc``.

    Parameters
    ----------
    kind : str
    size : str
        ``"RxC"``.

    Returns
    -------
    str
        E.g. ``"equimesh 9x4 cccc"``.
    """
    return f"{kind} {size} {format_ring_dirs(DEFAULT_RING_DIRS)}"


def format_step(step: np.ndarray) -> str:
    """A step's transfers as stored text: link, root, chunk of each, space-separated.

    Parameters
    ----------
    step : numpy.ndarray
        Shape (n, 3).

    Returns
    -------
    str
    """
    return " ".join(map(str, np.asarray(step, dtype=np.int64).reshape(-1).tolist()))


def parse_transfers(text: str) -> np.ndarray:
    """The inverse of :func:`format_step`.

    Parameters
    ----------
    text : str

    Returns
    -------
    numpy.ndarray
        int64, shape (n, 3).
    """
    return np.array(text.split(), dtype=np.int64).reshape(-1, 3)


def _symmetric(topo: Topology) -> Phase | None:
    """The split schedule of a network that a symmetry of the grid (transpose, flips) maps onto
    ``topo``, carried over (as :mod:`.library` does with stored schedules): a split stored for
    C x R with some ring directions serves R x C with the directions they turn into."""
    sizes = {(topo.rows, topo.cols), (topo.cols, topo.rows)}
    keys = {rec["key"] for rec in _data().get("splits", [])}
    keys |= {tile_key(topo.kind, f"{r}x{c}") for r, c in sizes}  # tiles
    for name in sorted(keys - {key(topo)}):
        kind, size, dirs = name.split()
        rows, cols = (int(v) for v in size.split("x"))
        if kind != topo.kind or (rows, cols) not in sizes:
            continue
        src = build(kind, rows, cols, ring_dirs=parse_ring_dirs(dirs))
        if next(grid_maps(src, topo), None) is None:
            continue
        phase = _own(src)
        if phase is not None:
            return image(src, phase, topo)
    return None


def split_allgather(topo: Topology, chunks: int) -> Phase | None:
    """The split schedule for ``topo`` (stored, or from a tile, or the image of one under a symmetry
    of the grid) in ``chunks // 4`` rounds (each N - 1 steps with a stored tail, else :func:`length`),
    checked; None if there is none for it (its kind, size and ring directions) or K is not a multiple
    of 4.

    Parameters
    ----------
    topo : Topology
        An EquiMesh or mirror EquiMesh with its links as ``build`` numbers them.
    chunks : int
        K, the chunks per shard.

    Returns
    -------
    Phase or None
        A lane-rule AllGather.

    Raises
    ------
    ScheduleInvalid, StorageConflict, SplitFailed
        If stored data do not give a valid schedule.
    """
    if not applies(topo, chunks):
        return None
    phase = _own(topo) or _symmetric(topo)
    if phase is None:
        return None
    check(topo, phase)
    return rounds(phase, chunks)
