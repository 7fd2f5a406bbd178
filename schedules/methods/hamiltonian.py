"""Hamiltonian decompositions of the EquiMesh: its links split into 4 arc-disjoint directed Hamiltonian cycles.

Every EquiMesh node has in- and out-degree 4 (seed 000, Section III-B), so a
decomposition uses every link exactly once. It is what the ring-pipelined
AllGather of :mod:`.ringpipe` runs on (one cycle per chunk class).

Methods:

* **Exact search** (``solve``): one CP-SAT ``AddCircuit`` per colour over the
  link literals, every link in exactly one colour (parallel links of 2-node
  rings grouped), node 0's out-links fixed to colours 0..3 (symmetry). It
  decides small sizes, including "no decomposition exists" (docs/schedules.md,
  "Hamiltonian decompositions of the EquiMesh").
* **Tiles** (``make_tile``, ``from_tile``): the exact search with one more
  constraint, that the ``PERIOD`` rows (columns) of a band starting at row
  ``BAND`` are coloured like the ``PERIOD`` after them (a translation
  symmetry). Repeating the band then gives colourings of every longer side in
  steps of ``PERIOD``; a tile is kept only if all of them, up to 32 per side,
  are decompositions. Tiles for the default ring directions are solved once
  (``python -m equimesh.schedules.hamiltonian``) and stored in
  ``data/hamiltonian_tiles.json``; at run time a tile is extended and the
  result checked, with no solver (sides > ``EXACT_MAX`` use a band; a period
  of 2 admits no tile at all at 2x8, 4x8, 2x10 and 8x8).
* **Transposition** (``transpose``): with the default ring directions the C x R
  EquiMesh is the R x C one mirrored at the diagonal, so a missing R x C tile
  is taken from the C x R tile.

Every decomposition is checked by :func:`check` before it is returned. Where the sign argument of
:mod:`.parity` proves that none exists (every size whose sides have different parity), nothing is
searched.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass

import numpy as np

from ..topology import DATA, DEFAULT_RING_DIRS, TRANSPOSED_PORT, Topology, build
from .parity import no_decomposition

__all__ = [
    "BAND",
    "COLOURS",
    "Decomposition",
    "DecompositionError",
    "EXACT_MAX",
    "PERIOD",
    "SEARCH_MAX",
    "SearchResult",
    "TILES",
    "band_pairs",
    "cccc",
    "check",
    "colours_of",
    "decompose",
    "extend",
    "from_colours",
    "from_tile",
    "make_tile",
    "may_decompose",
    "order",
    "reversal",
    "reverse",
    "solve",
    "tile_side",
    "transpose",
]

COLOURS = 4
PERIOD = 4  # rows (columns) in a tile's band
BAND = 2  # the band's first row (column)
EXACT_MAX = 11  # sides up to this are tiles without a band; longer sides repeat a band


def cccc(rows: int, cols: int) -> Topology:
    """The R x C EquiMesh with every ring clockwise, the directions the tiles are solved for (not
    ``build``'s default at the sizes where another choice gives a shorter XTree schedule).

    Parameters
    ----------
    rows, cols : int
        The size R x C.

    Returns
    -------
    Topology
        ``build("equimesh", rows, cols)`` with ring directions ``cccc`` (seed 000, Algorithm 1).
    """
    return build("equimesh", rows, cols, ring_dirs=dict(DEFAULT_RING_DIRS))


class DecompositionError(ValueError):
    """A claimed decomposition that is not 4 arc-disjoint Hamiltonian cycles; the message is one line.

    Also raised when a tile does not extend to the asked size.
    """


@dataclass
class Decomposition:
    """``cycles[c]`` = link ids of cycle ``c`` in travel order (``dst`` of one = ``src`` of the next).

    Attributes
    ----------
    cycles : list of numpy.ndarray
        4 int64 arrays of N link ids each; together every link exactly once.
    method : str
        ``"cp-sat"`` (searched now) or ``"tile"`` (stored tile, extended).
    """

    cycles: list[np.ndarray]
    method: str  # "cp-sat" (searched now) or "tile" (stored tile, extended)


@dataclass
class SearchResult:
    """The outcome of one exact search (:func:`solve`).

    Attributes
    ----------
    decomposition : Decomposition or None
        The decomposition found, if any.
    status : str
        ``"found"``, ``"none"`` (proven: no decomposition) or ``"timeout"``.
    seconds : float
        Wall-clock time of the search.
    """

    decomposition: Decomposition | None
    status: str  # "found", "none" (proven: no decomposition) or "timeout"
    seconds: float


def check(topo: Topology, cycles: list[np.ndarray]) -> None:
    """Raise :class:`DecompositionError` unless ``cycles`` are 4 Hamiltonian cycles using every link once.

    Parameters
    ----------
    topo : Topology
    cycles : list of array_like of int
        Link ids per cycle, in travel order.

    Raises
    ------
    DecompositionError
        Naming the first failure: the cycle count, the link cover, a cycle's length, a walk
        that does not close, or a node visited twice.
    """
    n, L = topo.nodes, len(topo.links)
    if len(cycles) != COLOURS:
        raise DecompositionError(f"{len(cycles)} cycles, need {COLOURS}")
    used = np.concatenate([np.asarray(c, dtype=np.int64) for c in cycles])
    if len(used) != L or not np.array_equal(np.sort(used), np.arange(L)):
        raise DecompositionError(f"the cycles do not use each of the {L} links exactly once")
    src, dst = topo.link_src, topo.link_dst
    for i, c in enumerate(cycles):
        c = np.asarray(c, dtype=np.int64)
        if len(c) != n:
            raise DecompositionError(f"cycle {i} has {len(c)} links, a Hamiltonian cycle has {n}")
        if not np.array_equal(dst[c], src[np.roll(c, -1)]):
            raise DecompositionError(f"cycle {i} is not a closed walk")
        if len(np.unique(src[c])) != n:
            raise DecompositionError(f"cycle {i} visits some node twice")


def order(topo: Topology, links: np.ndarray) -> np.ndarray:
    """The links of one colour (a 1-in-1-out subgraph) in travel order from node 0's out-link.

    Parameters
    ----------
    topo : Topology
    links : numpy.ndarray
        Link ids with one out-link per node they touch; node 0 must have one.

    Returns
    -------
    numpy.ndarray
        int64, the same number of link ids, following ``dst`` to the next ``src``.
    """
    nxt = np.full(topo.nodes, -1, dtype=np.int64)
    nxt[topo.link_src[links]] = links
    out = np.empty(len(links), dtype=np.int64)
    l = nxt[0]
    for i in range(len(links)):
        out[i] = l
        l = nxt[topo.link_dst[l]]
    return out


def _circuit_model(topo: Topology, links: np.ndarray, colours: int):
    """CP-SAT model: each of ``links`` in exactly one of ``colours`` colours, every colour one
    Hamiltonian circuit. Parallel links (2-node rings beside a mesh link) share a circuit arc
    literal that is the sum of their colour literals. Returns (model, x[link_index][colour])."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    src, dst = topo.link_src[links], topo.link_dst[links]
    x = [[m.NewBoolVar("") for _ in range(colours)] for _ in links]
    for row in x:
        if colours == 2:
            m.Add(row[0] + row[1] == 1)
        else:
            m.AddExactlyOne(row)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (u, v) in enumerate(zip(src.tolist(), dst.tolist())):
        groups.setdefault((u, v), []).append(i)
    for c in range(colours):
        arcs = []
        for (u, v), ids in groups.items():
            if len(ids) == 1:
                arcs.append((u, v, x[ids[0]][c]))
            else:
                b = m.NewBoolVar("")
                m.Add(sum(x[i][c] for i in ids) == b)
                arcs.append((u, v, b))
        m.AddCircuit(arcs)
    return m, x


def _run(model, time_limit: float, seed: int = 0):
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1  # the machines are shared: one core
    solver.parameters.random_seed = seed
    status = solver.Solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "found", solver
    if status == cp_model.INFEASIBLE:
        return "none", solver
    return "timeout", solver


def _key(topo: Topology, l) -> tuple[int, int, int, int, str]:
    (a, b), (c, d) = divmod(l.src, topo.cols), divmod(l.dst, topo.cols)
    return a, b, c, d, l.src_port


def band_pairs(
    topo: Topology, row_band: int | None, col_band: int | None, period: int = PERIOD
) -> list[tuple[int, int]]:
    """Pairs of links whose colours a tile must share: a link whose nearer end lies in the ``period``
    band rows from ``row_band`` on (or columns) and the same link ``period`` rows (columns) further on.

    Parameters
    ----------
    topo : Topology
        The tile.
    row_band, col_band : int or None
        First band row and column; None: no band in that dimension.
    period : int
        Rows (columns) in the band.

    Returns
    -------
    list of tuple of (int, int)
        Link id pairs.
    """
    index = {_key(topo, l): i for i, l in enumerate(topo.links)}
    pairs = []
    for i, l in enumerate(topo.links):
        a, b, c, d, p = _key(topo, l)
        if row_band is not None and 0 <= min(a, c) - row_band < period:
            pairs.append((i, index[(a + period, b, c + period, d, p)]))
        if col_band is not None and 0 <= min(b, d) - col_band < period:
            pairs.append((i, index[(a, b + period, c, d + period, p)]))
    return pairs


def solve(
    topo: Topology, time_limit: float = 60.0, row_band: int | None = None, col_band: int | None = None, seed: int = 0
) -> SearchResult:
    """Exact search (CP-SAT): a decomposition, or a proof that none exists, or a timeout.

    With ``row_band`` / ``col_band`` the decomposition is also a *tile*: rows (columns)
    ``band, band + 1`` are coloured like the two after them, so :func:`extend` can repeat them.

    Parameters
    ----------
    topo : Topology
    time_limit : float
        Seconds for CP-SAT (one worker).
    row_band, col_band : int or None
        Band starts for a tile; None: no band.
    seed : int
        CP-SAT's random seed.

    Returns
    -------
    SearchResult
    """
    t0 = time.perf_counter()
    links = np.arange(len(topo.links))
    m, x = _circuit_model(topo, links, COLOURS)
    outs = topo.out_links[0]
    for c, l in enumerate(outs):  # symmetry: the colours of node 0's out-links are arbitrary
        m.Add(x[l][c] == 1)
    for i, j in band_pairs(topo, row_band, col_band):
        for c in range(COLOURS):
            m.Add(x[i][c] == x[j][c])
    status, solver = _run(m, time_limit, seed)
    dec = None
    if status == "found":
        colour = np.array([[solver.Value(v) for v in row] for row in x]).argmax(axis=1)
        dec = from_colours(topo, colour, "cp-sat")
    return SearchResult(dec, status, time.perf_counter() - t0)


def from_colours(topo: Topology, colour: np.ndarray, method: str) -> Decomposition:
    """The decomposition given each link's colour; checked (:class:`DecompositionError` if it is none).

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        Shape (L,): each link's colour, 0..3.
    method : str
        Recorded in the result (``"cp-sat"`` or ``"tile"``).

    Returns
    -------
    Decomposition

    Raises
    ------
    DecompositionError
        If a colour class is not a Hamiltonian cycle.
    """
    colour = np.asarray(colour)
    cycles = []
    for c in range(COLOURS):
        mine = np.nonzero(colour == c)[0]
        if len(mine) != topo.nodes or len(np.unique(topo.link_src[mine])) != topo.nodes:
            raise DecompositionError(f"colour {c} is not a Hamiltonian cycle")
        cycles.append(order(topo, mine))
    check(topo, cycles)
    return Decomposition(cycles, method)


def colours_of(dec: Decomposition, links: int) -> np.ndarray:
    """Each link's colour (the index of its cycle); the inverse of :func:`from_colours`.

    Parameters
    ----------
    dec : Decomposition
    links : int
        L, the topology's link count.

    Returns
    -------
    numpy.ndarray
        int64, shape (L,).
    """
    colour = np.empty(links, dtype=np.int64)
    for c, cyc in enumerate(dec.cycles):
        colour[cyc] = c
    return colour


def _shift(m: int, band: int | None, extra: int, period: int) -> int:
    """How far a link whose nearer end is at row (column) ``m`` of the other network moves onto the
    tile: ``extra`` rows (columns) more than the tile, or ``-period`` (one band period fewer)."""
    if extra < 0:
        return extra if m >= band else 0
    if extra == 0 or m < band + period:
        return 0
    if m >= band + period + extra:
        return extra
    return period * ((m - band) // period)


def extend(
    tile: Topology, colour: np.ndarray, row_band: int | None, col_band: int | None, topo: Topology, period: int = PERIOD
) -> np.ndarray:
    """Colours for another ``topo`` (same ring directions): the tile with its band rows / columns
    repeated (sides longer by multiples of ``period``), or with one band period cut out (a side
    shorter by exactly ``period``). Every link of ``topo`` takes the colour of the tile link it
    shifts onto; by the band's translation symmetry every node then sees the colours of some tile
    node, one in- and one out-link per colour, but the result still has to pass :func:`check`.

    Parameters
    ----------
    tile : Topology
    colour : numpy.ndarray
        Shape (tile links,): the tile's colours.
    row_band, col_band : int or None
        The tile's band starts.
    topo : Topology
        The network to colour.
    period : int
        Rows (columns) per band period.

    Returns
    -------
    numpy.ndarray
        int64, shape (L,) of ``topo``: the colours, not yet checked.

    Raises
    ------
    DecompositionError
        If a side differs from the tile's by other than a multiple of ``period`` (at least
        ``-period``), or differs in a dimension without a band.
    """
    er, ec = topo.rows - tile.rows, topo.cols - tile.cols
    if any(e < -period or e % period or (e and band is None) for e, band in ((er, row_band), (ec, col_band))):
        raise DecompositionError(f"a {tile.rows}x{tile.cols} tile does not extend to {topo.rows}x{topo.cols}")
    index = {_key(tile, l): i for i, l in enumerate(tile.links)}
    out = np.empty(len(topo.links), dtype=np.int64)
    for i, l in enumerate(topo.links):
        a, b, c, d, p = _key(topo, l)
        dr = _shift(min(a, c), row_band, er, period)
        dc = _shift(min(b, d), col_band, ec, period)
        out[i] = colour[index[(a - dr, b - dc, c - dr, d - dc, p)]]
    return out


# ----- tiles: solved once, extended and checked at run time ------------------------------------------

TILES = DATA / "hamiltonian_tiles.json"


def tile_side(n: int) -> tuple[int, int | None]:
    """The tile side that covers a network side ``n``, and its band start (None: no band).

    Parameters
    ----------
    n : int
        A network side.

    Returns
    -------
    tuple of (int, int or None)
        ``(n, None)`` up to :data:`EXACT_MAX`; above it a side 12..15 congruent to ``n`` modulo
        :data:`PERIOD`, with band start :data:`BAND`.
    """
    if n <= EXACT_MAX:
        return n, None
    base = EXACT_MAX + 1 + (n - EXACT_MAX - 1) % PERIOD  # 12..15: n - base is a multiple of PERIOD
    return base, BAND


def make_tile(rows: int, cols: int, time_limit: float, seeds: int, reach: int = 32) -> tuple[dict | None, str]:
    """Solve the tile for ``rows x cols`` (default ring directions) whose extensions up to ``reach``
    per side all pass :func:`check`; try ``seeds`` CP-SAT seeds. Returns (tile record, status).

    Parameters
    ----------
    rows, cols : int
        The network size; the tile is :func:`tile_side` of each.
    time_limit : float
        Seconds per CP-SAT run.
    seeds : int
        CP-SAT seeds to try.
    reach : int
        The longest banded side the extensions are checked up to.

    Returns
    -------
    tuple of (dict or None, str)
        The record (``rows``, ``cols``, ``ring_dirs``, ``row_band``, ``col_band``, ``colours``:
        one digit per link) and ``"found"``; or None and ``"none"``, ``"no tile"``,
        ``"timeout"`` or ``"does not extend"``.
    """
    R0, rb = tile_side(rows)
    C0, cb = tile_side(cols)
    tile = cccc(R0, C0)
    status = "timeout"
    for seed in range(seeds):
        res = solve(tile, time_limit, rb, cb, seed)
        status = res.status
        if res.decomposition is None:
            if status == "none":  # with a band: no tile of this form (a decomposition may still exist)
                return None, "none" if rb is None and cb is None else "no tile"
            continue
        colour = colours_of(res.decomposition, len(tile.links))
        try:
            for R in range(R0, (reach if rb is not None else R0) + 1, PERIOD):
                for C in range(C0, (cols if cb is None else reach) + 1, PERIOD):
                    big = cccc(R, C)
                    from_colours(big, extend(tile, colour, rb, cb, big), "tile")
        except DecompositionError:
            status = "does not extend"
            continue
        return {
            "rows": R0,
            "cols": C0,
            "ring_dirs": "cccc",
            "row_band": rb,
            "col_band": cb,
            "colours": "".join(map(str, colour.tolist())),
        }, "found"
    return None, status


@functools.cache
def _tiles() -> dict[tuple[int, int], dict]:
    if not TILES.exists():
        return {}
    data = json.loads(TILES.read_text())
    return {(t["rows"], t["cols"]): t for t in data["tiles"]}


def _tile_options(n: int) -> list[tuple[int, int | None]]:
    """Tile sides (and band starts) that give a network side ``n``: :func:`tile_side`, and for a side
    ``PERIOD`` short of a banded tile side (8-11), that banded tile with one period cut out."""
    options = [tile_side(n)]
    if n <= EXACT_MAX < n + PERIOD:
        options.append((n + PERIOD, BAND))
    return options


def from_tile(topo: Topology) -> Decomposition | None:
    """The decomposition of an EquiMesh with default ring directions from the stored tiles (checked).

    A side of 8-11 without a stored tile of its own is cut from the banded tile one period longer
    (this gives every odd size the exact search timed out on: 9x11, 11x11, 9x13, 11x13, 9x15, 11x15
    and transposes; each result is checked).

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    Decomposition or None
        Method ``"tile"``; None for other kinds or ring directions, or when no tile applies.
    """
    if topo.kind != "equimesh" or any(topo.ring_dirs.values()):
        return None
    for R0, rb in _tile_options(topo.rows):
        for C0, cb in _tile_options(topo.cols):
            tile = cccc(R0, C0)
            rec = _tiles().get((R0, C0))
            if rec is not None:
                colour = np.array([int(ch) for ch in rec["colours"]], dtype=np.int64)
            elif (rec := _tiles().get((C0, R0))) is not None:
                colour = transpose(cccc(C0, R0), np.array([int(ch) for ch in rec["colours"]]), tile)
            else:
                continue
            try:
                return from_colours(topo, extend(tile, colour, rb, cb, topo), "tile")
            except DecompositionError:
                continue
    return None


def transpose(other: Topology, colour: np.ndarray, topo: Topology) -> np.ndarray:
    """Link colours of ``topo`` (R x C) from those of ``other`` (C x R): mirroring the grid at its
    diagonal maps the top ring onto the left ring and the bottom onto the right, each indexed the
    same way (Algorithm 1), so with the default ring directions it is an isomorphism.

    Parameters
    ----------
    other : Topology
        The C x R network.
    colour : numpy.ndarray
        Shape (links of ``other``,).
    topo : Topology
        The R x C network.

    Returns
    -------
    numpy.ndarray
        int64, shape (L,) of ``topo``.
    """
    index = {_key(other, l): i for i, l in enumerate(other.links)}
    return np.array(
        [colour[index[(b, a, d, c, TRANSPOSED_PORT[p])]] for a, b, c, d, p in (_key(topo, l) for l in topo.links)],
        dtype=np.int64,
    )


def reversal(topo: Topology, mirror: Topology) -> np.ndarray:
    """For each link of ``topo``, the id of the same link reversed in its ``mirror`` (Section III-B).

    Parameters
    ----------
    topo, mirror : Topology

    Returns
    -------
    numpy.ndarray
        int64, shape (L,).
    """
    index = {(l.src, l.dst, l.src_port, l.dst_port): i for i, l in enumerate(mirror.links)}
    return np.array([index[(l.dst, l.src, l.dst_port, l.src_port)] for l in topo.links], dtype=np.int64)


def reverse(dec: Decomposition, topo: Topology, mirror: Topology) -> Decomposition:
    """The decomposition of the mirror topology (every link reversed; Section III-B) from ``topo``'s.

    Parameters
    ----------
    dec : Decomposition
        A decomposition of ``topo``.
    topo, mirror : Topology

    Returns
    -------
    Decomposition
        Each cycle reversed onto ``mirror``'s links; same method.

    Raises
    ------
    DecompositionError
        If the result is not a decomposition of ``mirror``.
    """
    remap = reversal(topo, mirror)
    cycles = [remap[c[::-1]] for c in dec.cycles]
    check(mirror, cycles)
    return Decomposition(cycles, dec.method)


SEARCH_MAX = 64  # networks up to this many nodes without a tile are searched at run time (if may_decompose)


def may_decompose(topo: Topology) -> bool:
    """Worth a run-time search: the sign argument of :mod:`.parity` does not rule a decomposition
    out. It does at every size whose sides have different parity (for every ring direction), so a
    search there would only spend its time limit (10 s at 6x7 and 5x8 before the argument).

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    bool
    """
    return no_decomposition(topo) is None


@functools.lru_cache(maxsize=64)
def _decompose_equimesh(rows: int, cols: int, dirs: str, time_limit: float) -> Decomposition | None:
    from ..topology import parse_ring_dirs

    topo = build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs))
    dec = from_tile(topo)
    if dec is None and topo.nodes <= SEARCH_MAX and may_decompose(topo):
        dec = solve(topo, time_limit).decomposition
    return dec


def decompose(topo: Topology, time_limit: float = 10.0) -> Decomposition | None:
    """A decomposition of an EquiMesh (or its mirror, by reversal): from the stored tiles, else (up
    to ``SEARCH_MAX`` nodes, where :func:`may_decompose`) by the exact search within ``time_limit``
    seconds; None otherwise.

    Parameters
    ----------
    topo : Topology
        An EquiMesh or mirror EquiMesh with the links :func:`.topology.build` gives (not degraded).
    time_limit : float
        Seconds for the exact search.

    Returns
    -------
    Decomposition or None
    """
    from ..topology import format_ring_dirs

    if topo.kind not in ("equimesh", "mirror-equimesh"):
        return None
    base = topo if topo.kind == "equimesh" else topo.mirror()
    if [l.as_list() for l in base.links] != [
        l.as_list() for l in build("equimesh", topo.rows, topo.cols, ring_dirs=topo.ring_dirs).links
    ]:
        return None  # links renumbered or removed (e.g. a failed link): no stored cycles apply
    dec = _decompose_equimesh(topo.rows, topo.cols, format_ring_dirs(topo.ring_dirs), time_limit)
    if dec is None or topo.kind == "equimesh":
        return dec
    return reverse(dec, base, topo)
