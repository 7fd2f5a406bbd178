"""OpTree: k-stage m-ary-tree AllGather on a WDM optical ring (seed 002).

The ring has ``N`` nodes and two fibers, one per direction (seed 002, Fig. 1b);
each fiber segment carries ``w`` wavelengths. A *lightpath* sends one data
item of size ``d`` from its source to its destination along one fiber,
occupying one wavelength on every segment it passes (the one-stage model,
Section III-B). In one step no two lightpaths share a wavelength on a segment.

Closed forms (Section IV-A, Table 1) and a constructive schedule:

* :func:`theorem1_steps` (Theorem 1), :func:`k_star` (Lemma 3),
  :func:`proof_stage_steps` (the per-stage counts of Theorem 1's proof, integer m),
  :func:`ring_steps`, :func:`ne_steps`, :func:`wrht_steps`, :func:`osm_steps` (Table 1);
* :func:`build` the lightpaths of an m-ary-tree AllGather with an explicit
  wavelength assignment, and :func:`verify` an independent check of it.

The tree of :func:`build` splits the ring into ``radices[0]`` contiguous
children, each child into ``radices[1]``, and so on (Section IV-A-1, Fig. 3);
the radices multiply to ``N`` exactly, so every tree level is full. Stage 1
exchanges among the nodes at the same position of the ``m`` children over the
whole ring; later stages stay inside their parent's segment (a line).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "OpTreeError",
    "OpTreeInvalid",
    "OpTreeSchedule",
    "best_radices",
    "build",
    "factorizations",
    "k_star",
    "ne_steps",
    "osm_steps",
    "proof_stage_steps",
    "ring_steps",
    "stage_loads",
    "theorem1_steps",
    "verify",
    "wrht_steps",
]

CW, CCW = 0, 1  # fiber index: clockwise (node x -> x+1), counter-clockwise


class OpTreeError(ValueError):
    """A ring size, wavelength count or tree that cannot be used; one line."""


def _check(nodes: int, wavelengths: int) -> None:
    if nodes < 2:
        raise OpTreeError(f"the ring needs N >= 2 nodes (got {nodes})")
    if wavelengths < 1:
        raise OpTreeError(f"the ring needs w >= 1 wavelengths (got {wavelengths})")


# ----- closed forms ----------------------------------------------------------


def theorem1_steps(nodes: int, wavelengths: int, stages: int) -> int:
    """Theorem 1: ceil((2k-1) N^(1+1/k) / (8w)), with the real-valued radix m = N^(1/k).

    k = 1 gives the one-stage model ceil(N^2 / (8w)) (Table 1, OSM).

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.
    stages : int
        k >= 1.

    Returns
    -------
    int
        Steps (seed 002, Theorem 1).

    Raises
    ------
    OpTreeError
        On N < 2, w < 1 or k < 1.
    """
    _check(nodes, wavelengths)
    if stages < 1:
        raise OpTreeError(f"the tree needs k >= 1 stages (got {stages})")
    return math.ceil((2 * stages - 1) * nodes ** (1 + 1 / stages) / (8 * wavelengths) - 1e-9)


def k_star(nodes: int, rounding=math.ceil) -> int:
    """Lemma 3: k* = [(ln N + sqrt(ln N (ln N - 2))) / 2].

    The paper writes [*] as "integer rounding" but prints k* = 7 for N = 1024
    (6.39 before rounding), i.e. the ceiling; ``rounding=round`` gives the other
    reading. For ln N < 2 (N <= 7) S(k) has no stationary point and grows with
    k, so k* = 1.

    Parameters
    ----------
    nodes : int
        N.
    rounding : callable
        ``math.ceil`` (the default, as Table 1 prints) or ``round``.

    Returns
    -------
    int
        k* >= 1 (seed 002, Lemma 3).
    """
    ln = math.log(nodes)
    if ln < 2:
        return 1
    return max(1, int(rounding((ln + math.sqrt(ln * (ln - 2))) / 2)))


def ring_steps(nodes: int) -> int:
    """Table 1, Ring: N - 1 steps of d.

    Parameters
    ----------
    nodes : int
        N.

    Returns
    -------
    int
    """
    return nodes - 1


def ne_steps(nodes: int) -> int:
    """Table 1, Neighbor Exchange: N/2 steps (ceil for odd N, where NE is not defined).

    Parameters
    ----------
    nodes : int
        N.

    Returns
    -------
    int
    """
    return math.ceil(nodes / 2)


def osm_steps(nodes: int, wavelengths: int) -> int:
    """Table 1, one-stage model: ceil(N^2 / (8w)) (Lemma 1's ceil(N^2/8) wavelengths, w at a time).

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.

    Returns
    -------
    int

    Raises
    ------
    OpTreeError
        On N < 2 or w < 1.
    """
    _check(nodes, wavelengths)
    return -(-nodes * nodes // (8 * wavelengths))


def wrht_steps(nodes: int, wavelengths: int) -> tuple[int, int]:
    """Table 1 / Section IV-A-2, WRHT extended to AllGather: both printed variants.

    With m = 2w + 1 and theta = ceil(log_m N): 1 + ceil((m^theta - m) / (m - 1))
    gather steps plus (theta - 1) m^(theta-1) or theta m^(theta-1) broadcast steps.
    Returns ``(with theta - 1, with theta)``.

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.

    Returns
    -------
    tuple of (int, int)

    Raises
    ------
    OpTreeError
        On N < 2 or w < 1.
    """
    _check(nodes, wavelengths)
    m = 2 * wavelengths + 1
    theta = 1
    while m**theta < nodes:
        theta += 1
    gather = 1 + -(-(m**theta - m) // (m - 1))
    return gather + (theta - 1) * m ** (theta - 1), gather + theta * m ** (theta - 1)


def proof_stage_steps(nodes: int, wavelengths: int, m: int, stages: int) -> list[int]:
    """The per-stage step counts of Theorem 1's proof for an integer radix m.

    Stage 1: ceil(m^2 / 8w) * ceil(N/m); stage j >= 2: m^(j-1) * ceil(N/m^j) * ceil(m^2 / 4w).
    (Algorithm 1's pseudo-code multiplies by ceil(N/m) twice; the proof does not.)

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.
    m : int
        The radix, >= 2.
    stages : int
        k >= 1.

    Returns
    -------
    list of int
        k step counts, stage 1 first.

    Raises
    ------
    OpTreeError
        On N < 2, w < 1, m < 2 or k < 1.
    """
    _check(nodes, wavelengths)
    if m < 2:
        raise OpTreeError(f"the tree radix must be m >= 2 (got {m})")
    if stages < 1:
        raise OpTreeError(f"the tree needs k >= 1 stages (got {stages})")
    out = [-(-m * m // (8 * wavelengths)) * -(-nodes // m)]
    for j in range(2, stages + 1):
        out.append(m ** (j - 1) * -(-nodes // m**j) * -(-m * m // (4 * wavelengths)))
    return out


# ----- the m-ary tree --------------------------------------------------------


def factorizations(nodes: int, stages: int) -> list[tuple[int, ...]]:
    """Every multiset of ``stages`` radices >= 2 whose product is ``nodes``, largest first.

    Parameters
    ----------
    nodes : int
        N.
    stages : int
        k >= 1.

    Returns
    -------
    list of tuple of int
        Each tuple non-increasing; the list in descending lexicographic order; empty if none.
    """

    def rec(n, k, cap):
        if k == 1:
            return [(n,)] if 2 <= n <= cap else []
        out = []
        for f in range(min(n, cap), 1, -1):
            if n % f == 0:
                out += [(f,) + rest for rest in rec(n // f, k - 1, f)]
        return out

    return rec(nodes, stages, nodes)


def _pairs(nodes: int, radices: tuple[int, ...], stage: int) -> tuple[np.ndarray, ...]:
    """Sender, receiver and fiber of every node pair that talks in ``stage`` (0-based).

    The parent tree node has ``g`` nodes, its children ``c = g / m`` each; node x
    talks to the nodes at its own position in the other m - 1 children.
    """
    m = radices[stage]
    g = nodes // math.prod(radices[:stage])
    c = g // m
    x = np.repeat(np.arange(nodes, dtype=np.int64), m - 1)
    digit = (x % g) // c
    t = np.tile(np.arange(1, m, dtype=np.int64), nodes)  # child offset, 1..m-1
    z = x - (x % g) + ((digit + t) % m) * c + x % c
    if stage == 0:
        # whole ring, shortest way; the antipodal pairs {x, x + N/2} (t = m/2) take the two fibers in turn
        fiber = np.where(2 * t < m, CW, CCW)
        fiber = np.where(2 * t == m, (x % (nodes // 2)) % 2, fiber)
    else:
        fiber = np.where(z > x, CW, CCW)  # inside the parent's segment: a line
    return x, z, fiber


def _segments(nodes: int, src: np.ndarray, dst: np.ndarray, fiber: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First fiber segment and length of each lightpath; segment s joins node s and s+1 (mod N)."""
    lo = np.where(fiber == CW, src, dst)
    length = np.where(fiber == CW, dst - src, src - dst) % nodes
    return lo, length


def _load(nodes: int, lo: np.ndarray, length: np.ndarray, fiber: np.ndarray, weight: int = 1) -> int:
    """The most lightpaths on one (fiber, segment): a difference array over the unrolled ring."""
    diff = np.zeros((2, 2 * nodes + 1), dtype=np.int64)
    np.add.at(diff, (fiber, lo), weight)
    np.add.at(diff, (fiber, lo + length), -weight)
    run = np.cumsum(diff, axis=1)
    return int((run[:, :nodes] + run[:, nodes : 2 * nodes]).max())


def stage_loads(nodes: int, radices: tuple[int, ...]) -> list[int]:
    """Per stage, the most lightpaths on any fiber segment: ceil(load / w) steps is that stage's floor.

    Parameters
    ----------
    nodes : int
        N.
    radices : tuple of int
        The tree's radices per level; their product is N.

    Returns
    -------
    list of int
        One load per stage (lightpaths, each carrying one item).
    """
    out = []
    for s in range(len(radices)):
        x, z, fiber = _pairs(nodes, radices, s)
        lo, length = _segments(nodes, x, z, fiber)
        out.append(_load(nodes, lo, length, fiber, math.prod(radices[:s])))
    return out


def best_radices(nodes: int, wavelengths: int, stages: int) -> tuple[int, ...]:
    """The tree, over every factorization of N into ``stages`` radices, with the fewest floor steps.

    A later stage's load, (N/m) floor(m^2/4), does not depend on its place in
    the order, so only the first (ring) radix is chosen; the rest follow largest first.

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.
    stages : int
        k.

    Returns
    -------
    tuple of int
        The radices, ring radix first.

    Raises
    ------
    OpTreeError
        If N does not split into k radices >= 2, or N < 2 or w < 1.
    """
    _check(nodes, wavelengths)
    cands = {(f[i],) + f[:i] + f[i + 1 :] for f in factorizations(nodes, stages) for i in range(len(f))}
    if not cands:
        raise OpTreeError(
            f"N = {nodes} does not split into {stages} radices >= 2 (it has {_prime_factor_count(nodes)} prime factors)"
        )

    def cost(r):
        return sum(-(-l // wavelengths) for l in stage_loads(nodes, r)), r

    return min(sorted(cands, reverse=True), key=cost)


def _prime_factor_count(n: int) -> int:
    """Prime factors of n with multiplicity: the most stages a full tree on n nodes can have."""
    count, p = 0, 2
    while p * p <= n:
        while n % p == 0:
            count, n = count + 1, n // p
        p += 1
    return count + (n > 1)


# ----- wavelength assignment -------------------------------------------------


def _colour_line(lo: np.ndarray, hi: np.ndarray, copies: int) -> tuple[np.ndarray, int]:
    """Interval colouring, ``copies`` colours per interval: sweep by left end, reuse freed colours.

    Interval graphs are perfect, so the colour count equals the largest load.
    Returns an (intervals, copies) colour array and the colour count.
    """
    colours = np.empty((len(lo), copies), dtype=np.int64)
    busy: list[tuple[int, int]] = []  # (right end, interval index)
    free: list[int] = []
    used = 0
    for i in np.lexsort((hi, lo)):
        a = lo[i]
        while busy and busy[0][0] <= a:
            free.extend(colours[heapq.heappop(busy)[1]])
        take = min(copies, len(free))
        got = free[len(free) - take :]
        del free[len(free) - take :]
        got += range(used, used + copies - take)
        used += copies - take
        colours[i] = got
        heapq.heappush(busy, (hi[i], int(i)))
    return colours, used


def _tile_ring(nodes: int, m: int, lo: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, int]:
    """Ring-stage colouring for an even radix m: arcs that tile the fiber share a colour.

    An arc spans t = length / c children (c = N/m). Lengths t and u = m/2 - t, one
    after the other and again half a ring on, tile the ring: colour ``(t, x)`` holds the
    arcs from x and x + N/2 of length t and those from x + t c and x + N/2 + t c of
    length u, x in 0..N/2-1. Length m/4 (u = t) tiles with four arcs a quarter ring
    apart; the antipodal pair {p, p + N/2} (t = m/2) is one colour. Every segment of a
    fiber is covered once per colour, so the count equals the load.
    """
    c, half = nodes // m, nodes // 2
    t = length // c
    colour = np.empty(len(lo), dtype=np.int64)
    base = 0
    for a in range(1, m // 4 + 1):
        b = m // 2 - a
        if a < b:
            colour[t == a] = base + lo[t == a] % half
            colour[t == b] = base + (lo[t == b] - a * c) % half
            base += half
        else:
            colour[t == a] = base + lo[t == a] % (nodes // 4)
            base += nodes // 4
    anti = t == m // 2
    colour[anti] = base + (lo[anti] % half) // 2
    _, dense = np.unique(colour, return_inverse=True)  # the other fiber's half of the antipodal colours is unused
    return dense, int(dense.max()) + 1 if len(dense) else 0


def _colour_ring(nodes: int, lo: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, int]:
    """Circular-arc colouring: cut the ring at node 0, then sweep as for intervals.

    The arcs across the cut take colours first; a colour of a cut arc [s, N + e)
    is free for an interval [a, b) with e <= a and b <= s, and a freed colour is
    given to the interval that leaves least of it unused (best fit on s).
    Not always optimal: compare the count with :func:`stage_loads`.
    """
    hi = lo + length
    colour = np.empty(len(lo), dtype=np.int64)
    cut = np.nonzero(hi > nodes)[0]
    colour[cut] = np.arange(len(cut))
    used = len(cut)
    busy = [(int(hi[i] - nodes), int(colour[i]), int(lo[i])) for i in cut]  # (free from, colour, free until)
    heapq.heapify(busy)
    plain: list[int] = []
    bounded: list[tuple[int, int]] = []  # (free until, colour), sorted
    rest = np.setdiff1d(np.arange(len(lo)), cut)
    for i in rest[np.lexsort((hi[rest], lo[rest]))]:
        a, b = int(lo[i]), int(hi[i])
        while busy and busy[0][0] <= a:
            _, c, until = heapq.heappop(busy)
            if until >= nodes:
                plain.append(c)
            else:
                insort(bounded, (until, c))
        j = bisect_left(bounded, (b, -1))
        if j < len(bounded):
            until, c = bounded.pop(j)
        elif plain:
            c, until = plain.pop(), nodes
        else:
            c, until = used, nodes
            used += 1
        colour[i] = c
        heapq.heappush(busy, (b, c, until))
    return colour, used


# ----- the constructive schedule ---------------------------------------------


@dataclass
class OpTreeSchedule:
    """Lightpaths of an m-ary-tree AllGather: one row per lightpath, each carrying one item of size d.

    Attributes
    ----------
    nodes : int
        N, ring nodes.
    wavelengths : int
        w, per fiber segment.
    radices : tuple of int
        The tree's radix per level, ring stage first; product N.
    step, wavelength, src, dst, fiber, item : numpy.ndarray
        int64, one entry per lightpath: its step, wavelength (0..w-1), sender and receiver
        (0..N-1), fiber (:data:`CW` or :data:`CCW`) and the item (origin node) it carries.
    stage_steps : list of int
        Steps per stage.
    stage_loads : list of int
        Per stage, the most lightpaths on one fiber segment.
    num_steps : int
        The sum of ``stage_steps``.
    floor_steps : int
        Sum over stages of ceil(load / w).
    """

    nodes: int
    wavelengths: int
    radices: tuple[int, ...]
    step: np.ndarray
    wavelength: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    fiber: np.ndarray
    item: np.ndarray
    stage_steps: list[int]
    stage_loads: list[int]

    @property
    def num_steps(self) -> int:
        """Steps of the schedule: the sum over stages."""
        return sum(self.stage_steps)

    @cached_property
    def floor_steps(self) -> int:
        """Sum over stages of ceil(load / w): no wavelength assignment of this tree does better."""
        return sum(-(-l // self.wavelengths) for l in self.stage_loads)


def build(nodes: int, wavelengths: int, radices: tuple[int, ...]) -> OpTreeSchedule:
    """Section IV-A-1 with an explicit wavelength assignment (Fig. 3's m-ary tree, radices per level).

    In stage s a node holds the P = m_1...m_(s-1) items of the nodes at its
    position in every earlier child, and sends each of them to each peer, one
    lightpath per item (each wavelength carries d, the paper's load balance).
    Colour c of a stage becomes step ``c // w``, wavelength ``c % w``.

    Parameters
    ----------
    nodes : int
        N >= 2.
    wavelengths : int
        w >= 1.
    radices : tuple of int
        Each >= 2, product N; ring stage first.

    Returns
    -------
    OpTreeSchedule

    Raises
    ------
    OpTreeError
        On N < 2, w < 1, a radix < 2, or radices whose product is not N.
    """
    _check(nodes, wavelengths)
    if any(m < 2 for m in radices):
        raise OpTreeError(f"every tree radix must be m >= 2 (got {list(radices)})")
    if math.prod(radices) != nodes:
        raise OpTreeError(f"the radices {list(radices)} multiply to {math.prod(radices)}, not N = {nodes}")
    cols = {k: [] for k in ("step", "wavelength", "src", "dst", "fiber", "item")}
    stage_steps, loads, offset = [], [], 0
    for s in range(len(radices)):
        held = math.prod(radices[:s])  # items each node holds entering this stage
        x, z, fiber = _pairs(nodes, radices, s)
        lo, length = _segments(nodes, x, z, fiber)
        loads.append(_load(nodes, lo, length, fiber, held))
        if s == 0:
            colour = np.zeros(len(x), dtype=np.int64)
            used = 0
            for f in (CW, CCW):
                sel = fiber == f
                if radices[0] % 2 == 0:
                    colour[sel], n = _tile_ring(nodes, radices[0], lo[sel], length[sel])
                else:
                    colour[sel], n = _colour_ring(nodes, lo[sel], length[sel])
                used = max(used, n)
            colour = colour[:, None]
        else:
            # every parent segment is a translate of the first; colour its pairs, copy to the rest
            g = nodes // held
            first = x < g
            colour = np.zeros((len(x), held), dtype=np.int64)
            used = 0
            for f in (CW, CCW):
                sel = first & (fiber == f)
                cf, n = _colour_line(lo[sel], lo[sel] + length[sel], held)
                colour[sel] = cf
                used = max(used, n)
            rel = (x % g) * g + z % g  # the pair's place inside its segment
            key = np.full(g * g, -1, dtype=np.int64)
            key[rel[first]] = np.nonzero(first)[0]
            colour = colour[key[rel]]
        # the items x holds: y with y = x (mod c), c = N / held
        c = nodes // held
        item = (x % c)[:, None] + c * np.arange(held, dtype=np.int64)[None, :]
        n_steps = -(-used // wavelengths)
        cols["step"].append((offset + colour // wavelengths).ravel())
        cols["wavelength"].append((colour % wavelengths).ravel())
        cols["src"].append(np.repeat(x, held))
        cols["dst"].append(np.repeat(z, held))
        cols["fiber"].append(np.repeat(fiber, held))
        cols["item"].append(item.ravel())
        stage_steps.append(n_steps)
        offset += n_steps
    arrays = {k: np.concatenate(v) for k, v in cols.items()}
    return OpTreeSchedule(nodes, wavelengths, tuple(radices), stage_steps=stage_steps, stage_loads=loads, **arrays)


class OpTreeInvalid(ValueError):
    """The lightpath schedule breaks a rule; the message is one line."""


def verify(sched: OpTreeSchedule) -> None:
    """Check a lightpath schedule from its rows alone (independent of how :func:`build` made them).

    * wavelengths in 0..w-1, nodes in 0..N-1, no lightpath to itself;
    * no two lightpaths share a wavelength on a fiber segment in one step
      (arcs sorted by step, fiber, wavelength and first segment must not overlap);
    * a sender holds the item before the step, and every node ends with every item.

    Parameters
    ----------
    sched : OpTreeSchedule

    Raises
    ------
    OpTreeInvalid
        At the first broken rule, one line.
    """
    n, w = sched.nodes, sched.wavelengths
    step, wl, src, dst, fib, item = (
        np.asarray(a, dtype=np.int64)
        for a in (sched.step, sched.wavelength, sched.src, sched.dst, sched.fiber, sched.item)
    )
    bad = np.nonzero(
        (wl < 0)
        | (wl >= w)
        | (src < 0)
        | (src >= n)
        | (dst < 0)
        | (dst >= n)
        | (src == dst)
        | (item < 0)
        | (item >= n)
        | ((fib != CW) & (fib != CCW))
    )[0]
    if len(bad):
        i = bad[0]
        raise OpTreeInvalid(f"lightpath {i}: {src[i]}->{dst[i]} wavelength {wl[i]} item {item[i]} out of range")
    lo, length = _segments(n, src, dst, fib)
    # unroll each arc onto [0, 2N); an arc and one shifted by N cover every overlap on the ring
    lo2 = np.concatenate([lo, lo + n])
    hi2 = lo2 + np.concatenate([length, length])
    key = np.concatenate([(step * 2 + fib) * w + wl] * 2)
    idx = np.concatenate([np.arange(len(lo))] * 2)
    order = np.lexsort((lo2, key))
    k, a, b, j = key[order], lo2[order], hi2[order], idx[order]
    # a running max of right ends within each key: restart it where the key changes
    clash = None
    if len(k) > 1:
        starts = np.r_[True, k[1:] != k[:-1]]
        seg_id = np.cumsum(starts) - 1
        shift = seg_id * (4 * n)  # keys apart by more than any right end
        run_hi = np.maximum.accumulate(b + shift) - shift
        over = np.nonzero(~starts[1:] & (a[1:] < run_hi[:-1]))[0]
        if len(over):
            clash = over[0] + 1
    if clash is not None:
        i = j[clash]
        raise OpTreeInvalid(
            f"step {step[i]}, {'cw' if fib[i] == CW else 'ccw'} fiber, wavelength {wl[i]}: "
            f"lightpath {src[i]}->{dst[i]} shares a segment with another lightpath"
        )
    holds = np.eye(n, dtype=bool)
    order = np.argsort(step, kind="stable")
    bounds = np.r_[0, np.nonzero(np.diff(step[order]))[0] + 1, len(order)]
    for a0, b0 in zip(bounds[:-1], bounds[1:]):
        sl = order[a0:b0]
        missing = np.nonzero(~holds[src[sl], item[sl]])[0]
        if len(missing):
            i = sl[missing[0]]
            raise OpTreeInvalid(f"step {step[i]}: node {src[i]} sends item {item[i]} before it holds it")
        holds[dst[sl], item[sl]] = True
    lack = np.argwhere(~holds)
    if len(lack):
        raise OpTreeInvalid(f"node {lack[0][0]} ends without item {lack[0][1]} ({len(lack)} node-items missing)")
