"""Seed 003's closed-form alpha-beta costs against the event-driven simulator (:mod:`.alphabeta`).

Seed 003's cost table (Section 5; Sections 2-4 and Appendix A derive it) gives, per topology and
collective, ``t = n_alpha * alpha + c_beta * M / BW`` with ``M`` the full vector (AllReduce,
ReduceScatter, AllGather output, Broadcast / Reduce payload). Each algorithm here is built as
simulator transfers (:class:`.alphabeta.Transfers`) and run by :func:`.alphabeta.run`:

* star: the ring (AllGather, ReduceScatter, AllReduce), Rabenseifner's recursive halving /
  doubling AllReduce, the binomial-tree Broadcast / Reduce, and the pipelined chain Broadcast.
  Every algorithm hop crosses the switch as one ``alpha`` (Section 2.1); a node's port is its link.
* torus and 2D mesh: the dimension-decomposed ring / bucket brigade (Sections 3.4, 3.5, 4.2) on
  the physical links of ``build("torus" | "mesh", ...)``; the pipelined dimension-decomposed
  Broadcast / Reduce (Sections 3.2, 3.3, 4.2), unidirectional and (torus) bidirectional; and
  Rabenseifner per dimension (Appendix A), whose partners, as in its ``alpha`` count, are one
  logical hop apart (one port per node and dimension).

``regime`` ``"alpha"`` runs a tiny ``M`` (the alpha term dominates), ``"beta"`` a large one;
pipelined algorithms then use ``PIPELINE`` segments per hop of depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .alphabeta import LinkModel, Transfers, dim_decomposed_allreduce, run

__all__ = ["CASES", "Case", "cases", "check", "formula"]

PIPELINE = 100  # Broadcast / Reduce segments per hop of tree depth in the beta regime
SMALL_M, LARGE_M = 8.0, 1e11


class _Program:
    """Transfers with named keys: ``send(step, link, waits, writes, units)``."""

    def __init__(self):
        self.keys: dict[tuple, int] = {}
        self.rows: list[tuple] = []

    def key(self, *name) -> int:
        return self.keys.setdefault(name, len(self.keys))

    def send(self, step: int, link: int, waits, writes, units: float = 1.0) -> None:
        self.rows.append((step, link, [self.key(*w) for w in waits], [self.key(*w) for w in writes], units))

    def transfers(self, n_links: int) -> Transfers:
        n = len(self.keys)
        self.rows.sort(key=lambda r: r[0])
        ws = max(1, max(len(r[2]) for r in self.rows))
        wd = max(1, max(len(r[3]) for r in self.rows))
        src = np.array([r[2] + [n] * (ws - len(r[2])) for r in self.rows], dtype=np.int64)
        dst = np.array([r[3] + [n + 1] * (wd - len(r[3])) for r in self.rows], dtype=np.int64)
        return Transfers(
            step=np.array([r[0] for r in self.rows], dtype=np.int64),
            link=np.array([r[1] for r in self.rows], dtype=np.int64),
            src_keys=src,
            dst_keys=dst,
            units=np.array([r[4] for r in self.rows]),
            n_keys=n,
            n_links=n_links,
        )


def _exchange(rounds, n_links: int) -> Transfers:
    """Synchronous exchanges: ``rounds[g]`` = (list of (src, dst, link), units). A send of round
    ``g`` waits for what its sender received in round ``g - 1``."""
    p = _Program()
    for g, (pairs, units) in enumerate(rounds):
        for u, v, link in pairs:
            p.send(g, link, [("r", u, g - 1)] if g else [], [("r", v, g)], units)
    return p.transfers(n_links)


def _star_ring(n: int, halves: int) -> Transfers:
    """Ring ReduceScatter / AllGather (1 half) or AllReduce (2) on a star: ``N - 1`` rounds of one block each."""
    return _exchange([([(i, (i + 1) % n, i) for i in range(n)], 1.0)] * ((n - 1) * halves), n)


def _halving_doubling(dims: list[int]) -> Transfers:
    """Rabenseifner's AllReduce, per dimension (star: one dimension of N): recursive halving
    ReduceScatter over the dimensions in turn, then recursive doubling AllGather in reverse.
    Units are blocks of M / N; node ``v``'s port for dimension ``i`` is link ``i * N + v``."""
    n = math.prod(dims)
    stride = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
    rs, held = [], float(n)
    for i, d in enumerate(dims):
        for j in range(int(math.log2(d))):
            bit = d >> (j + 1)
            pairs = [(v, v + ((x ^ bit) - x) * stride[i], i * n + v) for v in range(n) for x in [(v // stride[i]) % d]]
            held /= 2
            rs.append((pairs, held))
    ag = [(pairs, units) for pairs, units in reversed(rs)]
    return _exchange(rs + ag, len(dims) * n)


def _tree(n: int, parent: dict[int, int], segments: int, reduce: bool, link_of, binomial: bool = False) -> Transfers:
    """Pipelined Broadcast (or, reversed, Reduce) of ``segments`` segments down a tree.

    A tree edge ``u -> v`` carries segment ``s`` at step ``s + depth(u)`` (Reduce: ``v -> u`` at
    ``s + height - depth(v)``). The binomial tree (one segment) sends in rounds instead: ``u``
    reaches ``u + 2^r`` in round ``r``, so a star port sends once per round.
    """
    depth = {0: 0}
    for v in sorted(parent):
        depth[v] = depth[parent[v]] + 1 if parent[v] in depth else len(_path(parent, v))
    height = max(depth.values())
    rounds = max(1, (n - 1).bit_length())
    p = _Program()
    for s in range(segments):
        for v, u in parent.items():  # tree edge u -> v
            r = (v - u).bit_length() - 1
            if reduce:
                step = rounds - 1 - r if binomial else s + height - depth[v]
                p.send(step, link_of(v, u), [("h", v, s)], [("h", u, s)])
            else:
                step = r if binomial else s + depth[u]
                p.send(step, link_of(u, v), [("h", u, s)] if u else [], [("h", v, s)])
    return p.transfers(n * n)


def _grid_parent(rows: int, cols: int, wrap: bool, bidir: bool) -> dict[int, int]:
    """Dimension-ordered Broadcast tree from node 0: along row 0, then down every column.
    Unidirectional: each dimension a chain 0 -> 1 -> ... ; bidirectional (torus): both ways round."""

    def line(d):
        if not bidir:
            return {p: p - 1 for p in range(1, d)}
        return {p: (p - 1 if p <= d // 2 else (p + 1) % d) for p in range(1, d)}

    parent = {c: pc for c, pc in line(cols).items()}
    for r, pr in line(rows).items():
        for c in range(cols):
            parent[r * cols + c] = pr * cols + c
    return parent


def _binomial_parent(n: int) -> dict[int, int]:
    """Binomial tree from node 0: node v's parent clears v's highest set bit."""
    return {v: v - (1 << (v.bit_length() - 1)) for v in range(1, n)}


@dataclass(frozen=True)
class Case:
    """One closed form of seed 003 and the algorithm that realizes it.

    Attributes
    ----------
    topology : str
        ``"star"``, ``"torus"`` or ``"mesh"``.
    collective : str
        ``"allgather"``, ``"reducescatter"``, ``"allreduce"``, ``"broadcast"`` or ``"reduce"``.
    algorithm : str
        ``"ring"``, ``"rabenseifner"``, ``"binomial"``, ``"chain"`` or ``"bidir"``.
    where : str
        The seed 003 section that gives the closed form.
    """

    topology: str  # star, torus, mesh
    collective: str  # allgather, reducescatter, allreduce, broadcast, reduce
    algorithm: str
    where: str  # seed 003 section


CASES = (
    Case("star", "allgather", "ring", "Sec. 2 / table"),
    Case("star", "reducescatter", "ring", "Sec. 2 / table"),
    Case("star", "allreduce", "ring", "Sec. 2 / table"),
    Case("star", "allreduce", "rabenseifner", "Sec. 2.3"),
    Case("star", "broadcast", "binomial", "Sec. 2 / table"),
    Case("star", "reduce", "binomial", "Sec. 2 / table"),
    Case("star", "broadcast", "chain", "Sec. 2 / table"),
    Case("torus", "allgather", "ring", "Sec. 3.5"),
    Case("torus", "reducescatter", "ring", "Sec. 3.5"),
    Case("torus", "allreduce", "ring", "Sec. 3.4"),
    Case("torus", "allreduce", "rabenseifner", "App. A"),
    Case("torus", "broadcast", "ring", "Sec. 3.2"),
    Case("torus", "broadcast", "bidir", "Sec. 3.2"),
    Case("torus", "reduce", "ring", "Sec. 3.3"),
    Case("torus", "reduce", "bidir", "Sec. 3.3"),
    Case("mesh", "allgather", "ring", "Sec. 4.2"),
    Case("mesh", "reducescatter", "ring", "Sec. 4.2"),
    Case("mesh", "allreduce", "ring", "Sec. 4.2"),
    Case("mesh", "broadcast", "ring", "Sec. 4.2"),
    Case("mesh", "reduce", "ring", "Sec. 4.2"),
)


def sizes_for(case: Case) -> list[tuple[int, ...]]:
    """Three sizes per case: star node counts, or grid shapes (powers of two where halving needs them)."""
    if case.topology == "star":
        return [(8,), (16,), (64,)] if case.algorithm in ("rabenseifner", "binomial") else [(5,), (16,), (64,)]
    if case.algorithm == "rabenseifner":
        return [(4, 4), (4, 8), (8, 8)]
    return [(4, 4), (5, 11), (8, 8)]


def formula(case: Case, shape: tuple[int, ...], message: float, model: LinkModel) -> tuple[float, str]:
    """Seed 003's closed form for ``case`` on ``shape`` and its text: (seconds, formula).

    Parameters
    ----------
    case : Case
        The closed form's case.
    shape : tuple of int
        ``(N,)`` for the star, ``(rows, cols)`` for a grid.
    message : float
        M, the message in bytes.
    model : LinkModel
        The alpha-beta link model (alpha per hop, bandwidth B).

    Returns
    -------
    tuple of (float, str)
        The time in seconds and the formula as text.
    """
    n = math.prod(shape)
    a, m = model.alpha, message / model.bandwidth
    c, t = case.collective, case.topology
    if t == "star":
        lg = math.ceil(math.log2(n))
        table = {
            ("allgather", "ring"): ((n - 1) * a + (n - 1) / n * m, "(N-1)a + (N-1)/N M/B"),
            ("reducescatter", "ring"): ((n - 1) * a + (n - 1) / n * m, "(N-1)a + (N-1)/N M/B"),
            ("allreduce", "ring"): (2 * (n - 1) * a + 2 * (n - 1) / n * m, "2(N-1)a + 2(N-1)/N M/B"),
            ("allreduce", "rabenseifner"): (2 * lg * a + 2 * (n - 1) / n * m, "2 log2(N) a + 2(N-1)/N M/B"),
            ("broadcast", "binomial"): (lg * a + m, "ceil(log2 N) a + M/B"),
            ("reduce", "binomial"): (lg * a + m, "ceil(log2 N) a + M/B"),
            ("broadcast", "chain"): ((n - 1) * a + m, "(N-1)a + M/B"),
        }
        return table[(c, case.algorithm)]
    hops = sum(d - 1 for d in shape)
    if case.algorithm == "rabenseifner":
        lg = sum(math.ceil(math.log2(d)) for d in shape)
        return 2 * lg * a + 2 * (n - 1) / n * m, "2 sum ceil(log2 d_i) a + 2(N-1)/N M/B"
    if c in ("allgather", "reducescatter"):
        return hops * a + (n - 1) / n * m, "sum(d_i-1) a + (N-1)/N M/B"
    if c == "allreduce":
        return 2 * hops * a + 2 * (n - 1) / n * m, "2 sum(d_i-1) a + 2(N-1)/N M/B"
    if case.algorithm == "bidir":
        return sum(d // 2 for d in shape) * a + m, "sum floor(d_i/2) a + M/B"
    return hops * a + m, "sum(d_i-1) a + M/B"


def simulate_case(case: Case, shape: tuple[int, ...], message: float, model: LinkModel, regime: str) -> float:
    """The simulator's completion time for ``case`` on ``shape`` with an ``M``-byte message."""
    n = math.prod(shape)
    c, alg = case.collective, case.algorithm
    if case.topology != "star" and alg == "ring" and c in ("allgather", "reducescatter", "allreduce"):
        tr = dim_decomposed_allreduce(shape[0], shape[1], case.topology == "torus", c)
        return float(run(tr, np.array([message / n / model.bandwidth]), model.alpha)[0])
    if alg == "ring" and case.topology == "star":
        tr, unit = _star_ring(n, 2 if c == "allreduce" else 1), message / n
    elif alg == "rabenseifner":
        tr, unit = _halving_doubling(list(shape)), message / n
    else:
        if case.topology == "star":
            parent = _binomial_parent(n) if alg == "binomial" else {v: v - 1 for v in range(1, n)}
            link_of = lambda u, v: u  # noqa: E731  (a node's one switch port)
        else:
            parent = _grid_parent(shape[0], shape[1], case.topology == "torus", alg == "bidir")
            link_of = lambda u, v: u * n + v  # noqa: E731  (one link per ordered neighbour pair)
        depth = max(len(_path(parent, v)) for v in range(n))
        segs = 1 if regime == "alpha" or alg == "binomial" else PIPELINE * depth
        tr, unit = _tree(n, parent, segs, c == "reduce", link_of, alg == "binomial"), message / segs
    return float(run(tr, np.array([unit / model.bandwidth]), model.alpha)[0])


def _path(parent: dict[int, int], v: int) -> list[int]:
    out = []
    while v:
        out.append(v)
        v = parent[v]
    return out


@dataclass
class Check:
    case: Case
    shape: tuple[int, ...]
    regime: str
    message: float
    text: str
    formula: float
    simulated: float

    @property
    def ratio(self) -> float:
        return self.simulated / self.formula


def check(case: Case, shape: tuple[int, ...], regime: str, model: LinkModel = LinkModel()) -> Check:
    """Formula and simulator at ``regime``'s message size.

    Parameters
    ----------
    case : Case
        The case.
    shape : tuple of int
        ``(N,)`` for the star, ``(rows, cols)`` for a grid.
    regime : str
        ``"alpha"``: a tiny message (the latency term dominates); ``"beta"``: a large one.
    model : LinkModel
        The alpha-beta link model (alpha per hop, bandwidth B).

    Returns
    -------
    Check
        Both times and the formula's text.
    """
    m = SMALL_M if regime == "alpha" else LARGE_M
    f, text = formula(case, shape, m, model)
    return Check(case, shape, regime, m, text, f, simulate_case(case, shape, m, model, regime))


def cases(model: LinkModel = LinkModel()) -> list[Check]:
    """Every case at its three sizes, in both regimes.

    Parameters
    ----------
    model : LinkModel
        The alpha-beta link model (alpha per hop, bandwidth B).

    Returns
    -------
    list of Check
        One per case of :data:`CASES`, size and regime.
    """
    return [check(c, s, r, model) for c in CASES for s in sizes_for(c) for r in ("alpha", "beta")]
