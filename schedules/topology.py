"""Topologies as data: directed multigraphs whose links record their router ports.

Kinds (seed 000, Section II-A and III-B; seed 003 for the torus):

* ``mesh``: the R x C 2D mesh, one link each way between neighbours.
* ``equimesh``: the mesh plus one unidirectional ring per edge (Algorithm 1).
  A ring leaves and enters each of its nodes through the port that faces off
  the mesh on that edge (top ``N``, bottom ``S``, left ``W``, right ``E``), so
  every router keeps five ports and every node has in- and out-degree 4.
* ``mirror-equimesh``: the same rings, each reversed (Section III-B, used by
  MirrorXTree, Algorithm 3).
* ``overflow``: every perimeter link duplicated (Fig. 2b); the duplicates use
  extra router ports ``X0``, ``X1``, ... so edge routers need 6-port crossbars.
* ``torus``: wrap-around links; a dimension of size 2 has one neighbour, not
  two parallel links (seed 003).
* ``supermesh``: SM(rows, cols) of seed 001 (slides "2D Supermesh"): every row
  and every column fully connected, one link each way per pair. A node's link
  to column ``j`` of its row uses port ``R<j>``, to row ``i`` of its column
  ``C<i>``, so a router has (cols-1)+(rows-1) network ports.

Node id = ``row * cols + col``; row 0 is the top row, col 0 the left column.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

__all__ = [
    "DATA",
    "DEFAULT_RING_DIRS",
    "EDGES",
    "KINDS",
    "Link",
    "MAX_SIDE",
    "PORT_ORDER",
    "RING_DIRS_CHOICES",
    "RING_DIRS_TABLE",
    "RING_PORT",
    "TRANSPOSED_PORT",
    "Topology",
    "TopologyError",
    "build",
    "default_ring_dirs",
    "edge_nodes",
    "edge_ring",
    "format_ring_dirs",
    "from_json",
    "grid_maps",
    "parse_ring_dirs",
    "parse_sizes",
    "ring_links",
]

KINDS = ("mesh", "equimesh", "mirror-equimesh", "overflow", "torus", "supermesh")
DATA = Path(__file__).parent / "data"  # the stored schedules, splits, tiles and ring directions
EDGES = ("top", "bottom", "left", "right")
# Algorithm 1's anticlockwise flag per edge, as four letters c/a in EDGES order; cccc first.
RING_DIRS_CHOICES = ["".join(p) for p in itertools.product("ca", repeat=len(EDGES))]
# The port through which an edge's ring leaves and enters its nodes.
RING_PORT = {"top": "N", "bottom": "S", "left": "W", "right": "E"}
# Canonical port order of a router; extra ports X0, X1, ... follow.
PORT_ORDER = ("N", "E", "S", "W")
TRANSPOSED_PORT = {"N": "W", "W": "N", "S": "E", "E": "S"}  # mirroring the grid at its diagonal


MAX_SIDE = 64  # rows and cols of any topology: 4096 nodes (32x32 is the largest size the docs measure)


class TopologyError(ValueError):
    """A topology that cannot be built (bad size, unknown kind or option).

    The message is one line naming the bad value and what is accepted.
    """


def edge_ring(n: int, anticlockwise: bool) -> list[int]:
    """Algorithm 1 of seed 000: the ring index list ``L`` of one edge of length ``n``.

    ``odds`` and ``evens`` are *all* odd and even indices of the edge (the
    paper's ``range[1, n-2, 2]`` means this: for n = 5 the top ring of Fig. 5a
    is 0->1->3->4->2->0). The ring visits ``L`` in order and wraps around.

    Parameters
    ----------
    n : int
        The edge length in nodes (>= 2).
    anticlockwise : bool
        Algorithm 1's flag: ``evens`` ascending then ``odds`` descending; otherwise
        ``odds`` ascending then ``evens`` descending.

    Returns
    -------
    list of int
        The n indices 0..n-1 along the edge, in ring order.

    Raises
    ------
    TopologyError
        If ``n < 2``.
    """
    if n < 2:
        raise TopologyError(f"edge length must be >= 2, got {n}")
    odds = list(range(1, n, 2))
    evens = list(range(0, n, 2))
    if anticlockwise:
        return evens + odds[::-1]
    return odds + evens[::-1]


def edge_nodes(edge: str, rows: int, cols: int) -> list[int]:
    """Node ids along an edge, indexed left to right (top, bottom) or top to bottom (left, right).

    Parameters
    ----------
    edge : str
        ``"top"``, ``"bottom"``, ``"left"`` or ``"right"``.
    rows, cols : int
        The grid size R x C.

    Returns
    -------
    list of int
        ``cols`` node ids for top and bottom, ``rows`` for left and right (id = ``row * cols + col``).

    Raises
    ------
    TopologyError
        If ``edge`` is not one of :data:`EDGES`.
    """
    if edge == "top":
        return [c for c in range(cols)]
    if edge == "bottom":
        return [(rows - 1) * cols + c for c in range(cols)]
    if edge == "left":
        return [r * cols for r in range(rows)]
    if edge == "right":
        return [r * cols + cols - 1 for r in range(rows)]
    raise TopologyError(f"unknown edge {edge!r}; expected one of {', '.join(EDGES)}")


def ring_links(edge: str, rows: int, cols: int, anticlockwise: bool) -> list[tuple[int, int]]:
    """The directed links ``(src, dst)`` of one edge's ring (seed 000, Algorithm 1 mapped onto node ids).

    Parameters
    ----------
    edge : str
        One of :data:`EDGES`.
    rows, cols : int
        The grid size R x C.
    anticlockwise : bool
        Algorithm 1's flag for this edge (:func:`edge_ring`).

    Returns
    -------
    list of tuple of (int, int)
        One link per node of the edge, in ring order; the last wraps around to the first node.
    """
    nodes = edge_nodes(edge, rows, cols)
    order = [nodes[i] for i in edge_ring(len(nodes), anticlockwise)]
    return [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]


# Defaults: anticlockwise=False on every edge (cccc), edges indexed left to right
# and top to bottom. For the 4x4 EquiMesh with K=1 this is the only one of the 16
# direction choices that admits a 4-step schedule (the bound), found by the
# exact solver (`equimesh schedule --algorithm optimal`); with K = 4 it has a
# Hamiltonian decomposition wherever one is known. Sizes where another choice
# gives a shorter lane-rule AllGather have their own default (RING_DIRS_TABLE).
DEFAULT_RING_DIRS = {"top": False, "bottom": False, "left": False, "right": False}
RING_DIRS_TABLE = DATA / "ring_dirs.json"


@functools.cache
def _size_ring_dirs() -> dict[str, str]:
    if not RING_DIRS_TABLE.exists():
        return {}
    return json.loads(RING_DIRS_TABLE.read_text())["best"]


def default_ring_dirs(rows: int, cols: int) -> dict[str, bool]:
    """The ring directions an R x C EquiMesh gets when none are given.

    That is ``cccc``, except at the sizes where another of the 16 choices gives a shorter
    lane-rule K = 4 AllGather (measured offline by ``equimesh search ringdirs`` and stored in
    ``data/ring_dirs.json``).

    Parameters
    ----------
    rows, cols : int
        The grid size R x C.

    Returns
    -------
    dict of str to bool
        Algorithm 1's ``anticlockwise`` flag (seed 000) for each of :data:`EDGES`; a new dict.
    """
    text = _size_ring_dirs().get(f"{rows}x{cols}")
    return dict(DEFAULT_RING_DIRS) if text is None else parse_ring_dirs(text)


def parse_ring_dirs(text: str | None) -> dict[str, bool] | None:
    """Parse ``--ring-dirs``: four letters for top, bottom, left, right; ``a`` = anticlockwise, ``c`` = clockwise.

    ``None`` or ``"default"`` gives None: the size's default (:func:`default_ring_dirs`, applied by
    :func:`build`). (``auto`` is handled by the scheduler.)

    Parameters
    ----------
    text : str or None
        Four letters ``a``/``c`` in :data:`EDGES` order, ``"default"`` or None.

    Returns
    -------
    dict of str to bool or None
        Each edge's ``anticlockwise`` flag (seed 000, Algorithm 1), or None for the default.

    Raises
    ------
    TopologyError
        If ``text`` is anything else (``"auto"`` included).
    """
    if text is None or text == "default":
        return None
    if len(text) != 4 or any(ch not in "ac" for ch in text):
        raise TopologyError(
            f"--ring-dirs must be 'default', 'auto' or four letters a/c for top,bottom,left,right (got {text!r})"
        )
    return {edge: ch == "a" for edge, ch in zip(EDGES, text)}


def parse_sizes(text: str, option: str = "--sizes") -> list[tuple[int, int]]:
    """Parse an offline tool's comma-separated ``RxC`` sizes (``3x9,13x3``; empty: none).

    Parameters
    ----------
    text : str
        The option value; an empty string gives no sizes.
    option : str
        The option's name, for the error message.

    Returns
    -------
    list of tuple of (int, int)
        ``(rows, cols)`` per entry, in order; each side is 2..:data:`MAX_SIDE`.

    Raises
    ------
    TopologyError
        Naming the first entry that is not ``RxC`` with sides 2..MAX_SIDE.
    """
    out = []
    for item in filter(None, text.split(",")):
        try:
            r, c = (int(v) for v in item.strip().lower().split("x"))
        except ValueError:
            r = c = 0
        if not (2 <= r <= MAX_SIDE and 2 <= c <= MAX_SIDE):
            raise TopologyError(f"{option} entries look like RxC with sides 2..{MAX_SIDE}, e.g. 8x8 (got {item!r})")
        out.append((r, c))
    return out


def format_ring_dirs(dirs: dict[str, bool]) -> str:
    """The ``--ring-dirs`` text of ring directions; the inverse of :func:`parse_ring_dirs`.

    Parameters
    ----------
    dirs : dict of str to bool
        Each of :data:`EDGES` to Algorithm 1's ``anticlockwise`` flag (seed 000).

    Returns
    -------
    str
        Four letters in :data:`EDGES` order: ``a`` anticlockwise, ``c`` clockwise.
    """
    return "".join("a" if dirs[e] else "c" for e in EDGES)


@dataclass(frozen=True)
class Link:
    """One directed link; ``src_port`` / ``dst_port`` name the router ports at each end.

    Attributes
    ----------
    src, dst : int
        The node ids the link leaves and enters.
    src_port, dst_port : str
        The router ports at each end: ``N``, ``E``, ``S``, ``W``; ``X0``, ``X1``, ... (overflow);
        ``R<j>`` and ``C<i>`` (supermesh).
    """

    src: int
    dst: int
    src_port: str
    dst_port: str

    def as_list(self) -> list:
        """The link as a schedule file writes it: ``[src, dst, src_port, dst_port]``."""
        return [self.src, self.dst, self.src_port, self.dst_port]


def _port_key(port: str) -> tuple[int, int]:
    if port in PORT_ORDER:
        return (0, PORT_ORDER.index(port))
    return (1, "XRC".index(port[0]), int(port[1:]))


@dataclass
class Topology:
    """A directed multigraph of routers. ``links[i]`` has link id ``i``.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    rows, cols : int
        The grid size R x C; node id = ``row * cols + col``.
    links : list of Link
        The directed links; the index is the link id.
    ring_dirs : dict of str to bool or None
        Algorithm 1's ``anticlockwise`` flag per edge (seed 000) for the EquiMesh kinds, else None.
    extra : dict
        Further settings a kind may carry.
    nodes : int
        R x C.
    link_src, link_dst : numpy.ndarray
        int64, shape (L,): each link's source and destination node.
    in_degree, out_degree : numpy.ndarray
        int64, shape (N,): links entering and leaving each node.
    in_links, out_links : list of list of int
        Per node, the ids of the links entering or leaving it, in link id order.
    strongly_connected : bool
        Every node reaches every other.
    diameter : int
        The largest hop distance (:class:`TopologyError` if not strongly connected).
    name : str
        ``"<rows>x<cols> <kind>"``.
    """

    kind: str
    rows: int
    cols: int
    links: list[Link]
    ring_dirs: dict[str, bool] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        """Node count N = rows x cols."""
        return self.rows * self.cols

    # ----- structure --------------------------------------------------------
    @cached_property
    def link_src(self) -> np.ndarray:
        """Source node of each link: int64, shape (L,)."""
        return np.array([l.src for l in self.links], dtype=np.int64)

    @cached_property
    def link_dst(self) -> np.ndarray:
        """Destination node of each link: int64, shape (L,)."""
        return np.array([l.dst for l in self.links], dtype=np.int64)

    @cached_property
    def in_degree(self) -> np.ndarray:
        """Links entering each node: int64, shape (N,)."""
        return np.bincount(self.link_dst, minlength=self.nodes)

    @cached_property
    def out_degree(self) -> np.ndarray:
        """Links leaving each node: int64, shape (N,)."""
        return np.bincount(self.link_src, minlength=self.nodes)

    @cached_property
    def in_links(self) -> list[list[int]]:
        """Per node, the ids of the links entering it, in link id order."""
        res: list[list[int]] = [[] for _ in range(self.nodes)]
        for i, l in enumerate(self.links):
            res[l.dst].append(i)
        return res

    @cached_property
    def out_links(self) -> list[list[int]]:
        """Per node, the ids of the links leaving it, in link id order."""
        res: list[list[int]] = [[] for _ in range(self.nodes)]
        for i, l in enumerate(self.links):
            res[l.src].append(i)
        return res

    @cached_property
    def _ports(self) -> list[list[str]]:
        used: list[set[str]] = [set() for _ in range(self.nodes)]
        for l in self.links:
            used[l.src].add(l.src_port)
            used[l.dst].add(l.dst_port)
        return [sorted(u, key=_port_key) for u in used]

    def ports(self, node: int) -> list[str]:
        """Network ports of a router that carry at least one link, in canonical order.

        Parameters
        ----------
        node : int
            The node id, 0..N-1.

        Returns
        -------
        list of str
            ``N``, ``E``, ``S``, ``W`` in that order, then ``X``, ``R`` and ``C`` ports by number;
            the local port ``L`` is not listed. A new list.
        """
        return list(self._ports[node])

    @cached_property
    def router_ports(self) -> np.ndarray:
        """Port count P of every router, counting the local port ``L``: int64, shape (N,)."""
        return np.array([len(p) + 1 for p in self._ports], dtype=np.int64)

    @property
    def crosspoints(self) -> int:
        """Crossbar crosspoints: the sum over routers of P^2 (seed 000, Section II-A, Fig. 2c/2d)."""
        return int((self.router_ports**2).sum())

    @cached_property
    def distances(self) -> np.ndarray:
        """All-pairs hop distances ``d[u, v]`` (BFS; -1 when unreachable): int64, shape (N, N)."""
        n = self.nodes
        adj = csr_matrix((np.ones(len(self.links)), (self.link_src, self.link_dst)), shape=(n, n))
        d = shortest_path(adj, method="D", unweighted=True)
        d[np.isinf(d)] = -1
        return d.astype(np.int64)

    @property
    def strongly_connected(self) -> bool:
        """Whether every node reaches every other."""
        return bool((self.distances >= 0).all())

    @property
    def diameter(self) -> int:
        """The largest hop distance D (seed 000, Section III-A); :class:`TopologyError` if not strongly connected."""
        d = self.distances
        if (d < 0).any():
            raise TopologyError(f"{self.name} is not strongly connected")
        return int(d.max())

    @property
    def name(self) -> str:
        """``"<rows>x<cols> <kind>"``, e.g. ``"4x4 equimesh"``."""
        return f"{self.rows}x{self.cols} {self.kind}"

    def mirror(self) -> "Topology":
        """The mirror topology of Section III-B: every EquiMesh ring reversed.

        For kinds without rings (bidirectional links everywhere) the mirror is
        the topology itself.

        Returns
        -------
        Topology
            A ``mirror-equimesh`` for an ``equimesh`` and the other way round, with the same
            ``ring_dirs``; ``self`` for the other kinds.
        """
        if self.kind not in ("equimesh", "mirror-equimesh"):
            return self
        other = "mirror-equimesh" if self.kind == "equimesh" else "equimesh"
        return build(other, self.rows, self.cols, ring_dirs=self.ring_dirs)

    # ----- interchange ------------------------------------------------------
    def to_json(self) -> dict:
        """The schedule file's ``topology`` object.

        Returns
        -------
        dict
            ``kind``, ``rows``, ``cols``, ``nodes``, ``links`` (``[src, dst, src_port, dst_port]``
            per link, in link id order) and, for the EquiMesh kinds, ``ring_dirs`` (four letters).
        """
        d = {
            "kind": self.kind,
            "rows": self.rows,
            "cols": self.cols,
            "nodes": self.nodes,
            "links": [l.as_list() for l in self.links],
        }
        if self.ring_dirs is not None:
            d["ring_dirs"] = format_ring_dirs(self.ring_dirs)
        return d

    def summary(self) -> dict:
        """The figures `equimesh topology` reports.

        Returns
        -------
        dict
            ``kind``, ``rows``, ``cols``, ``nodes``, ``links`` (count), ``in_degree`` and
            ``out_degree`` (``{"min", "max"}``), ``routers_by_ports`` (port count P to router
            count), ``crosspoints``, ``diameter`` (hops) and, with rings, ``ring_dirs``.
        """
        ports = self.router_ports
        by_ports = {int(p): int((ports == p).sum()) for p in np.unique(ports)}
        out = {
            "kind": self.kind,
            "rows": self.rows,
            "cols": self.cols,
            "nodes": self.nodes,
            "links": len(self.links),
            "in_degree": {"min": int(self.in_degree.min()), "max": int(self.in_degree.max())},
            "out_degree": {"min": int(self.out_degree.min()), "max": int(self.out_degree.max())},
            "routers_by_ports": by_ports,
            "crosspoints": self.crosspoints,
            "diameter": self.diameter,
        }
        if self.ring_dirs is not None:
            out["ring_dirs"] = format_ring_dirs(self.ring_dirs)
        return out


def _mesh_links(rows: int, cols: int) -> list[Link]:
    links = []
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            if c + 1 < cols:
                links.append(Link(v, v + 1, "E", "W"))
                links.append(Link(v + 1, v, "W", "E"))
            if r + 1 < rows:
                links.append(Link(v, v + cols, "S", "N"))
                links.append(Link(v + cols, v, "N", "S"))
    return links


def _is_perimeter(link: Link, rows: int, cols: int) -> bool:
    (r1, c1), (r2, c2) = divmod(link.src, cols), divmod(link.dst, cols)
    if r1 == r2:
        return r1 in (0, rows - 1)
    return c1 in (0, cols - 1) and c1 == c2


def _supermesh_links(rows: int, cols: int) -> list[Link]:
    """SM(rows, cols), seed 001: full connection inside every row and every column, both directions."""
    links = []
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            links += [Link(v, r * cols + j, f"R{j}", f"R{c}") for j in range(cols) if j != c]
            links += [Link(v, i * cols + c, f"C{i}", f"C{r}") for i in range(rows) if i != r]
    return links


def build(kind: str, rows: int, cols: int, ring_dirs: dict[str, bool] | None = None) -> Topology:
    """Build a topology of the given kind and size.

    ``ring_dirs`` maps each EquiMesh edge (top, bottom, left, right) to
    Algorithm 1's ``anticlockwise`` flag (None: :func:`default_ring_dirs`);
    ``mirror-equimesh`` reverses every ring of the EquiMesh with those flags.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS` (module docstring).
    rows, cols : int
        The grid size R x C, each 2..:data:`MAX_SIDE`.
    ring_dirs : dict of str to bool or None
        For the EquiMesh kinds only: exactly the four :data:`EDGES`.

    Returns
    -------
    Topology
        Mesh links first (per node in id order: east pair, then south pair), then the ring,
        duplicate or wrap-around links of the kind; supermesh links per node, row then column.

    Raises
    ------
    TopologyError
        On an unknown kind, a side outside 2..MAX_SIDE, or ``ring_dirs`` not naming the four edges.
    """
    if kind not in KINDS:
        raise TopologyError(f"unknown topology kind {kind!r}; expected one of {', '.join(KINDS)}")
    if rows < 2 or cols < 2:
        raise TopologyError(f"rows and cols must be >= 2 (got {rows}x{cols})")
    if rows > MAX_SIDE or cols > MAX_SIDE:
        raise TopologyError(f"rows and cols must be <= {MAX_SIDE} (got {rows}x{cols})")
    if kind == "supermesh":
        return Topology(kind, rows, cols, _supermesh_links(rows, cols))
    links = _mesh_links(rows, cols)
    dirs = None
    if kind in ("equimesh", "mirror-equimesh"):
        dirs = dict(default_ring_dirs(rows, cols) if ring_dirs is None else ring_dirs)
        if set(dirs) != set(EDGES):
            raise TopologyError(f"ring_dirs must name exactly the edges {', '.join(EDGES)}")
        flip = kind == "mirror-equimesh"
        for edge in EDGES:
            port = RING_PORT[edge]
            for s, d in ring_links(edge, rows, cols, dirs[edge] != flip):
                links.append(Link(s, d, port, port))
    elif kind == "overflow":
        extra_count = [0] * (rows * cols)
        dup = []
        for l in links:
            if _is_perimeter(l, rows, cols):
                # A duplicated bidirectional link takes one extra port at each end;
                # both directions of the pair share it, so number on the src->dst direction
                # with src < dst and mirror the names for the reverse direction.
                if l.src < l.dst:
                    ps, pd = f"X{extra_count[l.src]}", f"X{extra_count[l.dst]}"
                    extra_count[l.src] += 1
                    extra_count[l.dst] += 1
                    dup.append(Link(l.src, l.dst, ps, pd))
                    dup.append(Link(l.dst, l.src, pd, ps))
        links += dup
    elif kind == "torus":
        for r in range(rows):
            if cols > 2:
                a, b = r * cols + cols - 1, r * cols
                links.append(Link(a, b, "E", "W"))
                links.append(Link(b, a, "W", "E"))
        for c in range(cols):
            if rows > 2:
                a, b = (rows - 1) * cols + c, c
                links.append(Link(a, b, "S", "N"))
                links.append(Link(b, a, "N", "S"))
    return Topology(kind, rows, cols, links, ring_dirs=dirs)


def from_json(d: dict) -> Topology:
    """Rebuild a topology from a schedule file's ``topology`` object, exactly as written there.

    Parameters
    ----------
    d : dict
        ``kind``, ``rows``, ``cols``, ``links`` (``[src, dst, src_port, dst_port]`` each) and
        optionally ``ring_dirs``; no check against the named kind is made here.

    Returns
    -------
    Topology

    Raises
    ------
    KeyError, TypeError, ValueError
        On missing keys or links that are not four values.
    TopologyError
        On bad ``ring_dirs``.
    """
    links = [Link(int(a), int(b), str(p), str(q)) for a, b, p, q in d["links"]]
    dirs = None
    if "ring_dirs" in d:
        dirs = parse_ring_dirs(d["ring_dirs"])
    return Topology(str(d["kind"]), int(d["rows"]), int(d["cols"]), links, ring_dirs=dirs)


def grid_maps(src: Topology, dst: Topology):
    """Each symmetry of the grid (transpose, then flip rows and/or columns; the identity first) that
    maps ``src``'s links exactly onto ``dst``'s, as ``(node, link, chunk)``: the image in ``dst`` of
    each node and link of ``src``, and of each chunk index below 4 (docs/schedules.md "Symmetry").

    Ports turn with the grid, so each chunk moves to the chunk index whose home lane is the turned
    home lane (the same relabelling at every node: every EquiMesh router has the 4 ports N E S W).

    Parameters
    ----------
    src, dst : Topology
        Both must have the ports N E S W at every router, else nothing is yielded.

    Yields
    ------
    tuple of (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        ``node`` (shape (N,), the ``dst`` node of each ``src`` node), ``link`` (int64, shape (L,),
        the ``dst`` link id of each ``src`` link) and ``chunk`` (int64, shape (4,), the image of
        each chunk index 0..3).
    """
    if any(t.ports(v) != list(PORT_ORDER) for t in (src, dst) for v in range(t.nodes)):
        return
    index = {(l.src, l.dst, l.src_port, l.dst_port): i for i, l in enumerate(dst.links)}
    r, c = np.divmod(np.arange(src.nodes), src.cols)
    for tr, flip_r, flip_c in itertools.product((False, True), repeat=3):
        rr, cc = (c, r) if tr else (r, c)
        if ((src.cols, src.rows) if tr else (src.rows, src.cols)) != (dst.rows, dst.cols):
            continue
        port = dict(TRANSPOSED_PORT) if tr else {p: p for p in PORT_ORDER}
        if flip_r:
            rr = dst.rows - 1 - rr
            port = {k: {"N": "S", "S": "N"}.get(v, v) for k, v in port.items()}
        if flip_c:
            cc = dst.cols - 1 - cc
            port = {k: {"E": "W", "W": "E"}.get(v, v) for k, v in port.items()}
        node = rr * dst.cols + cc
        remap = [index.get((int(node[l.src]), int(node[l.dst]), port[l.src_port], port[l.dst_port])) for l in src.links]
        if None in remap or len(src.links) != len(dst.links):
            continue
        yield (
            node,
            np.array(remap, dtype=np.int64),
            np.array([PORT_ORDER.index(port[p]) for p in PORT_ORDER], dtype=np.int64),
        )
