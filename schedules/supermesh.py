"""Supermesh analytics (seed 001, the "Supermeshes" slides).

* SM(m, n): m rows, n columns; every column (m nodes) and every row (n nodes)
  fully connected. SM(m) = SM(m, 1) is one fully connected group.
* :func:`short_reach_links`, :func:`bisection_width`: the slides' "Number of
  short-reach links" n C(m,2) + m C(n,2) and "Bisection width ~ min{n m^2/4, m n^2/4}".
* :func:`gbw`: "Global Bandwidth", GBW(SM(m,n,p,x,y)) = min{w(m)np, w(n)mp, w(p)(xn+ym)}
  with w(x) = x^2/4, and its 1D/2D special cases.
* :func:`supermesh3d`: the SM(m,n,p,x,y) generator: p planes SM(m,n); the first
  x rows ("row planes") and the first y columns ("column planes") of every plane
  link each node to its copies in the other planes, fully connected; at most 4 hops.
* :func:`exchange_cost`: the communication cost model: a round costs the most data
  any link carries (at least a sync cost), an exchange the sum of its rounds.
* :func:`all_to_all`: direct vs indirect all-to-all on SM(m) (DA2A / IA2A),
  chosen by M <= R + C from a message matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

__all__ = [
    "AllToAll",
    "Supermesh3D",
    "SupermeshError",
    "all_to_all",
    "bisection_width",
    "check_sizes",
    "exchange_cost",
    "gbw",
    "links_3d",
    "short_reach_links",
    "slide_examples",
    "supermesh3d",
]


class SupermeshError(ValueError):
    """Sizes or a message matrix the formulas do not accept; one line."""


def _w(x: int) -> float:
    """The slides' w(x) = x/2 * x/2 = x^2/4: links across the middle of one fully connected group of x."""
    return x * x / 4


def check_sizes(m: int, n: int = 1, p: int = 1, x: int = 0, y: int = 0) -> None:
    """SM(m,n,p,x,y) needs m, n, p >= 1 with m n >= 2 (SM(m) needs m >= 2), x <= m, y <= n, x + y >= 1 if p > 1.

    Parameters
    ----------
    m, n, p : int
        Rows, columns, planes.
    x, y : int
        Row planes (0..m) and column planes (0..n).

    Raises
    ------
    SupermeshError
        Naming the first size that breaks a rule.
    """
    if min(m, n, p) < 1:
        raise SupermeshError(f"m, n and p must be >= 1 (got m = {m}, n = {n}, p = {p})")
    if m * n < 2:
        raise SupermeshError(f"SM({m},{n}) has one node per plane: m must be >= 2 (got m = {m})")
    if not (0 <= x <= m and 0 <= y <= n):
        raise SupermeshError(f"row planes x must be in 0..m and column planes y in 0..n (got x = {x}, y = {y})")
    if p > 1 and x + y == 0:
        raise SupermeshError(f"with p = {p} planes at least one row or column plane (x + y >= 1) must join them")


def short_reach_links(m: int, n: int = 1) -> int:
    """Slides "1D/2D Supermesh": C(m,2) for SM(m); n C(m,2) + m C(n,2) for SM(m,n) (undirected links).

    Parameters
    ----------
    m, n : int
        Rows and columns (seed 001).

    Returns
    -------
    int

    Raises
    ------
    SupermeshError
        On bad sizes.
    """
    check_sizes(m, n)
    return n * math.comb(m, 2) + m * math.comb(n, 2)


def links_3d(m: int, n: int = 1, p: int = 1, x: int = 0, y: int = 0) -> int:
    """Undirected links of SM(m,n,p,x,y): p planes of SM(m,n) plus C(p,2) for each of the x n + y m plane groups.

    (Not on the slides; it follows from the construction and is checked against :func:`supermesh3d`.)

    Parameters
    ----------
    m, n, p, x, y : int
        As :func:`check_sizes`.

    Returns
    -------
    int

    Raises
    ------
    SupermeshError
        On bad sizes.
    """
    check_sizes(m, n, p, x, y)
    return p * short_reach_links(m, n) + (x * n + y * m) * math.comb(p, 2)


def bisection_width(m: int, n: int = 1) -> float:
    """Slides: ~m^2/4 for SM(m); ~min{n m^2/4, m n^2/4} for SM(m,n) (a size-1 side has no cut).

    Parameters
    ----------
    m, n : int

    Returns
    -------
    float
        Links, :func:`gbw` of SM(m, n).

    Raises
    ------
    SupermeshError
        On bad sizes.
    """
    return gbw(m, n)


def gbw(m: int, n: int = 1, p: int = 1, x: int = 0, y: int = 0) -> float:
    """Slide "Global Bandwidth": the smallest of the halving cuts across each dimension of size > 1.

    Cutting the m rows in half crosses w(m) links of each of the n p columns; the
    n columns, w(n) of each of the m p rows; the p planes, w(p) of each of the
    x n + y m inter-plane groups. Dropping the terms of size-1 dimensions gives the
    slides' special cases: SM(1,n,p,x,y) = min{w(n)p, w(p)(xn+y)}, SM(m,1,p,x,y)
    = min{w(m)p, w(p)(x+ym)}, SM(m) = w(m), SM(m,n) = min{w(m)n, w(n)m}.

    Parameters
    ----------
    m, n, p, x, y : int
        As :func:`check_sizes`.

    Returns
    -------
    float
        Links across the smallest halving cut (w(x) = x^2/4, so possibly fractional).

    Raises
    ------
    SupermeshError
        On bad sizes.
    """
    check_sizes(m, n, p, x, y)
    terms = [t for size, t in ((m, _w(m) * n * p), (n, _w(n) * m * p), (p, _w(p) * (x * n + y * m))) if size > 1]
    return min(terms)


@dataclass
class Supermesh3D:
    """SM(m,n,p,x,y): node ``(plane, row, col)`` has id ``(plane * m + row) * n + col``; undirected links.

    Attributes
    ----------
    m, n, p, x, y : int
        Rows, columns, planes, row planes, column planes.
    a, b : numpy.ndarray
        int, shape (links,): the two end nodes of each link.
    kind : numpy.ndarray
        str, shape (links,): ``"C"`` column, ``"R"`` row, ``"X"`` row-plane, ``"Y"`` column-plane link.
    nodes : int
        m n p.
    """

    m: int
    n: int
    p: int
    x: int
    y: int
    a: np.ndarray  # link end points
    b: np.ndarray
    kind: np.ndarray  # "C" column, "R" row, "X" row-plane, "Y" column-plane link

    @property
    def nodes(self) -> int:
        """Node count m n p."""
        return self.m * self.n * self.p

    def coords(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(plane, row, col)`` of node ids.

        Parameters
        ----------
        v : numpy.ndarray
            Node ids.

        Returns
        -------
        tuple of numpy.ndarray
            Three arrays of the shape of ``v``.
        """
        return v // (self.m * self.n), (v // self.n) % self.m, v % self.n

    def cut(self, dim: int) -> int:
        """Links between the lower and upper half of one dimension (0 rows, 1 columns, 2 planes); even sizes.

        Parameters
        ----------
        dim : int
            0, 1 or 2.

        Returns
        -------
        int
        """
        size = (self.m, self.n, self.p)[dim]
        axis = (1, 2, 0)[dim]
        ca, cb = self.coords(self.a)[axis], self.coords(self.b)[axis]
        return int(((ca < size // 2) != (cb < size // 2)).sum())

    def hops(self) -> int:
        """The largest hop distance between two nodes (BFS over all pairs).

        Returns
        -------
        int
            Hops (at most 4 for the slides' construction).

        Raises
        ------
        SupermeshError
            If the supermesh is not connected.
        """
        n = self.nodes
        adj = csr_matrix((np.ones(2 * len(self.a)), (np.r_[self.a, self.b], np.r_[self.b, self.a])), shape=(n, n))
        d = shortest_path(adj, unweighted=True, directed=False)
        if np.isinf(d).any():
            raise SupermeshError("the supermesh is not connected")
        return int(d.max())


def supermesh3d(m: int, n: int = 1, p: int = 1, x: int = 0, y: int = 0) -> Supermesh3D:
    """The slide "3D Supermesh SM(m,n,p,x,y)" as a link list; SM(6,6,3,1,0) and SM(10,10,6,1,1) are its examples.

    Row plane i < x links node (k, i, c) to (k', i, c) for every other plane k';
    column plane j < y links (k, r, j) to (k', r, j). A node on both (i < x and
    j < y) gets both link sets, as the GBW term x n + y m counts it twice.

    Parameters
    ----------
    m, n, p, x, y : int
        As :func:`check_sizes`.

    Returns
    -------
    Supermesh3D
        Links grouped by kind C, R, X, Y.

    Raises
    ------
    SupermeshError
        On bad sizes.
    """
    check_sizes(m, n, p, x, y)
    ids = np.arange(m * n * p).reshape(p, m, n)
    parts = {
        "C": lambda s, t: (ids[:, s, :], ids[:, t, :]),  # same plane and column
        "R": lambda s, t: (ids[:, :, s], ids[:, :, t]),  # same plane and row
        "X": lambda s, t: (ids[s, :x, :], ids[t, :x, :]),  # row planes: rows < x
        "Y": lambda s, t: (ids[s, :, :y], ids[t, :, :y]),
    }  # column planes: columns < y
    size = {"C": m, "R": n, "X": p, "Y": p}
    a, b, kind = [], [], []
    for label, pair in parts.items():
        for s_ in range(size[label]):
            for t in range(s_ + 1, size[label]):
                u, v = pair(s_, t)
                a.append(u.ravel())
                b.append(v.ravel())
                kind.append(np.full(u.size, label))
    return Supermesh3D(m, n, p, x, y, np.concatenate(a), np.concatenate(b), np.concatenate(kind))


# ----- cost model and all-to-all ---------------------------------------------------------


def exchange_cost(rounds: list[np.ndarray], sync: float = 0.0) -> float:
    """Slide "Supermesh Communication Cost Model": sum over rounds of max(data on the busiest link, sync).

    Each round is an array of per-link data volumes (any shape; zeros are idle links).

    Parameters
    ----------
    rounds : list of numpy.ndarray
    sync : float
        The least cost of a round.

    Returns
    -------
    float
        In the data volumes' unit.
    """
    return float(sum(max(float(np.max(r, initial=0.0)), sync) for r in rounds))


@dataclass
class AllToAll:
    """M, MaxR, MaxC, R, C of a message matrix on SM(m) and the slides' choice between DA2A and IA2A.

    Attributes
    ----------
    m : int
        Nodes of SM(m).
    M : float
        The largest message.
    max_r, max_c : float
        The most data one node sends / receives.
    R, C : int
        ceil(MaxR / m), ceil(MaxC / m).
    da2a_cost : float
        The cost model on DA2A's one round.
    ia2a_cost : float
        The cost model on IA2A's two rounds (exact fractions, not R + C).
    choice : str
        ``"DA2A"`` if M <= R + C, else ``"IA2A"``.
    """

    m: int
    M: float
    max_r: float
    max_c: float
    R: int
    C: int
    da2a_cost: float  # the cost model on DA2A's one round
    ia2a_cost: float  # the cost model on IA2A's two rounds (exact fractions, not R + C)

    @property
    def choice(self) -> str:
        """Slide "Direct and Indirect All-to-All": if M <= R + C use DA2A, else IA2A."""
        return "DA2A" if self.M <= self.R + self.C else "IA2A"


def all_to_all(msg, sync: float = 0.0) -> AllToAll:
    """DA2A vs IA2A on SM(m) from an m x m matrix of message sizes (the diagonal, data kept at home, is ignored).

    M is the largest message, MaxR / MaxC the most data one node sends / receives,
    R = ceil(MaxR / m), C = ceil(MaxC / m). DA2A sends every message on its own
    link: one round. IA2A's round 1 scatters 1/m of each message over the m
    nodes (link i->k carries row i's total / m), round 2 forwards the pieces
    (link k->j carries column j's total / m). ``sync`` is the least cost of a round.

    Parameters
    ----------
    msg : array_like
        m x m message sizes, m >= 2, finite and >= 0.
    sync : float

    Returns
    -------
    AllToAll

    Raises
    ------
    SupermeshError
        If the matrix is not square of side >= 2, or has negative or non-finite entries.
    """
    v = np.array(msg, dtype=float)
    if v.ndim != 2 or v.shape[0] != v.shape[1] or v.shape[0] < 2:
        raise SupermeshError(f"the message matrix must be m x m with m >= 2 (got shape {v.shape})")
    if (v < 0).any() or not np.isfinite(v).all():
        raise SupermeshError("message sizes must be finite and >= 0")
    m = v.shape[0]
    np.fill_diagonal(v, 0)
    row, col = v.sum(axis=1), v.sum(axis=0)
    off = ~np.eye(m, dtype=bool)
    round1 = np.where(off, row[:, None] / m, 0)
    round2 = np.where(off, col[None, :] / m, 0)
    return AllToAll(
        m,
        float(v.max()),
        float(row.max()),
        float(col.max()),
        math.ceil(row.max() / m),
        math.ceil(col.max() / m),
        exchange_cost([v], sync),
        exchange_cost([round1, round2], sync),
    )


def slide_examples(m: int = 8) -> dict[str, np.ndarray]:
    """Message matrices on S(8) that give the slides' printed M, R, C (the slides give only those values).

    Parameters
    ----------
    m : int
        The side (8 in the slides); below 8 only the examples that fit S(m) (``irregular`` needs
        8 nodes, an h-relation h + 1).

    Returns
    -------
    dict of str to numpy.ndarray
        ``irregular``, ``1-relation``, ``2-relation``, ``4-relation``, ``all-to-all``, ``copy``,
        ``scatter`` and ``gather``, each float m x m.
    """
    z = lambda: np.zeros((m, m))
    ex = {}
    if m >= 8:
        a = z()  # M = 9, MaxR = 35, MaxC = 38
        a[0, 1:5] = [9, 9, 9, 8]
        a[1:6, 7] = [9, 9, 9, 9, 2]
        ex["irregular"] = a
    for name, h, size in (("1-relation", 1, 5), ("2-relation", 2, 5), ("4-relation", 4, 8), ("all-to-all", m - 1, 8)):
        if h >= m:  # an h-relation needs h other nodes
            continue
        r = z()
        for i in range(m):
            r[i, [(i + t) % m for t in range(1, h + 1)]] = size
        ex[name] = r
    c = z()
    c[0, 1] = 8
    ex["copy"] = c
    s = z()
    s[0, 1:] = 8
    ex["scatter"] = s
    ex["gather"] = s.T.copy()
    return ex
