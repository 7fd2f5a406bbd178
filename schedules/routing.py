"""Forwarding tables for MultiWrite packets, their reach masks, and the deadlock check.

Seed 004, Section 4.1 ("Local forwarding table"): a MultiWrite relay reuses the
unicast forwarding table. For every destination in the packet's bitmap it looks
up one egress port; the distinct ports are the copies to send. So a router needs
only ``table[v][d]`` (the egress port of router ``v`` towards node ``d``) and,
derived from it, one constant per port, ``reach[v][port]`` = the bitmap of the
destinations that ``v`` sends through ``port``. The relay splits a bitmap with
``bitmap & reach[v][port]`` (seed 004, Section 4.3.3, rule 3).

Deadlock freedom (checked here, before any hardware is built) uses the channel
dependency graph (CDG): one vertex per directed link, an edge ``a -> b`` when a
packet holding ``a`` can wait for ``b``. An acyclic CDG means no deadlock.

* Unicast routing adds ``a -> b`` for consecutive links of every route.
* Multicast replication can add more, depending on the router's flow control.
  With ``flow="wormhole"`` a packet forked at router ``v`` into outputs ``o1`` and
  ``o2`` keeps every link of its ``o1`` sub-tree while its ``o2`` branch waits,
  so every link of the ``o1`` sub-tree depends on ``o2`` (the classic tree
  multicast deadlock of wormhole meshes). With ``flow="cut-through"`` (what
  ``rtl/packet_router.py`` implements) a header is granted all its outputs at
  once and only when every output's downstream buffer has room for the whole
  packet; after that the packet never waits on a network link, so replication
  adds no edge and the multicast CDG equals the unicast CDG: every fork
  ``c -> o`` lies on the unicast route of a destination in the mask carried on
  ``c``, because the relay rewrites the mask (seed 004, Section 4.1, metadata
  update).

Tables:

* ``xy``: dimension order on the mesh links only (columns first).
* ``shortcut`` (default): still dimension order (the row leg first, then the column
  leg), but each leg is a shortest path inside its row or column over *all* of that
  line's links: the EquiMesh ring of an edge row or column, a torus wrap, an
  overflow duplicate. Among equally short legs it takes the one over the links
  that XY loads least (the added links), then a fixed order, so every path is
  unique. Unique shortest paths are closed under prefixes and suffixes, so each
  source's MultiWrite tree is a tree: no node gets a packet twice. On the mesh,
  EquiMesh and overflow mesh the whole table's CDG is acyclic (every size up to
  10x10 and 16x16 checked). On a torus a wrap ring needs a dateline, so there
  the table starts from XY and takes the legs
  entry by entry, nearest routers first, keeping an entry only when the route
  does not get longer and the CDG stays acyclic (some torus trees then have
  duplicate branches). Deadlock-free by construction, checked again as a whole.

  Against XY, no route gets longer and no link carries more routes or more
  MultiWrite trees (:func:`link_loads`; ``tests/test_routing_load.py``).
  Shortcuts that leave a row or column for a ring and come back are not taken:
  they pile routes onto the ring links and lengthen the CDG's dependency chains,
  and with one queue per input and no virtual channels blocking spreads back
  along such chains (``docs/relay.md``, "Forwarding tables", has the measurements).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .jsonfile import JsonFileError, read_json
from .topology import Topology, TopologyError, build, parse_ring_dirs

__all__ = [
    "ALGORITHMS",
    "DeadlockError",
    "FORMAT",
    "ForwardingTable",
    "LOCAL",
    "RoutingError",
    "channel_dependencies",
    "check_deadlock_free",
    "describe_link",
    "find_cycle",
    "forwarding_table",
    "link_loads",
    "load",
    "shortcut_table",
    "validate",
    "xy_table",
]

LOCAL = "L"
ALGORITHMS = ("shortcut", "xy")
FORMAT = "equimesh-routing"


class RoutingError(ValueError):
    """A forwarding table that cannot be used: malformed, a routing loop, or a wrong port.

    The message is one line naming the entry or file at fault.
    """


class DeadlockError(RoutingError):
    """A forwarding table whose channel dependency graph has a cycle.

    The message names the routing, topology, flow control and one cycle of links ``src->dst(port)``.
    """


@dataclass
class ForwardingTable:
    """``ports[v][d]``: the egress port of router ``v`` towards node ``d`` (``"L"`` when ``d == v``).

    The unicast table a MultiWrite relay reuses (seed 004, Section 4.1).

    Attributes
    ----------
    topology : Topology
        The network the ports belong to.
    ports : list of list of str
        N x N port names; ``ports[v][v]`` is :data:`LOCAL`.
    algorithm : str
        ``"xy"``, ``"shortcut"``, or the name a loaded file gives (``"file"`` if none).
    out_link : list of dict of str to int
        Per router, the link id leaving it through each port.
    reach : list of dict of str to int
        Per router, the destination bitmap of each port (bit i = node i), ``"L"`` included.
    """

    topology: Topology
    ports: list[list[str]]
    algorithm: str

    @cached_property
    def out_link(self) -> list[dict[str, int]]:
        """``out_link[v][port]`` = id of the link leaving router ``v`` through ``port``; one dict per node."""
        res: list[dict[str, int]] = [{} for _ in range(self.topology.nodes)]
        for i, l in enumerate(self.topology.links):
            res[l.src][l.src_port] = i
        return res

    def next_link(self, v: int, d: int) -> int:
        """The id of the link router ``v`` sends a packet for node ``d`` on (``d != v``).

        Parameters
        ----------
        v, d : int
            Router and destination node ids, 0..N-1.

        Returns
        -------
        int
            A link id; :class:`KeyError` if ``v`` has no link on the table's port.
        """
        return self.out_link[v][self.ports[v][d]]

    def route(self, s: int, d: int) -> list[int]:
        """Link ids from ``s`` to ``d``; raises RoutingError on a loop.

        Parameters
        ----------
        s, d : int
            Source and destination node ids, 0..N-1.

        Returns
        -------
        list of int
            The links in order; empty when ``s == d``.

        Raises
        ------
        RoutingError
            If the route takes more than N links.
        """
        links, v = [], s
        while v != d:
            if len(links) > self.topology.nodes:
                raise RoutingError(f"routing loop from node {s} to node {d}")
            i = self.next_link(v, d)
            links.append(i)
            v = self.topology.links[i].dst
        return links

    @cached_property
    def reach(self) -> list[dict[str, int]]:
        """``reach[v][port]``: bitmap of the destinations router ``v`` sends through ``port`` (bit i = node i).

        Seed 004, Section 4.1: one constant per port, derived from the table; every network port
        of ``v`` and ``"L"`` (bit v only) has an entry, possibly 0.
        """
        res: list[dict[str, int]] = []
        for v in range(self.topology.nodes):
            masks = {p: 0 for p in self.topology.ports(v)}
            masks[LOCAL] = 0
            for d, p in enumerate(self.ports[v]):
                masks[p] |= 1 << d
            res.append(masks)
        return res

    def split(self, v: int, bitmap: int) -> dict[str, int]:
        """Seed 004, Section 4.3.3: the non-empty per-port masks ``bitmap & reach[v][port]``.

        Each copy leaving on ``port`` carries exactly that mask (the metadata update).
        ``"L"`` is the local delivery (the router's own bit).

        Parameters
        ----------
        v : int
            The router.
        bitmap : int
            The packet's destination bitmap, bit i = node i.

        Returns
        -------
        dict of str to int
            Port to mask, only the ports with a non-empty mask; the masks partition ``bitmap``.
        """
        return {p: bitmap & m for p, m in self.reach[v].items() if bitmap & m}

    def hops(self) -> list[list[int]]:
        """Route lengths: ``hops[s][d]`` links from ``s`` to ``d`` (0 on the diagonal), N x N.

        Raises
        ------
        RoutingError
            On a routing loop.
        """
        n = self.topology.nodes
        return [[len(self.route(s, d)) for d in range(n)] for s in range(n)]

    def to_json(self) -> dict:
        """The routing file ``equimesh routing --out`` writes and :func:`load` reads.

        Returns
        -------
        dict
            ``format`` (:data:`FORMAT`), ``version`` 1, ``algorithm``, ``topology``
            (:meth:`.Topology.to_json`) and ``ports`` (the N x N table).
        """
        return {
            "format": FORMAT,
            "version": 1,
            "algorithm": self.algorithm,
            "topology": self.topology.to_json(),
            "ports": self.ports,
        }


# ----- construction ---------------------------------------------------------


def _step_towards(topo: Topology, v: int, d: int) -> str:
    """Dimension-order (XY) port at ``v`` towards ``d`` over mesh links: columns first, then rows."""
    (r, c), (rd, cd) = divmod(v, topo.cols), divmod(d, topo.cols)
    if c != cd:
        return "E" if cd > c else "W"
    return "S" if rd > r else "N"


def xy_table(topo: Topology) -> ForwardingTable:
    """The ``xy`` table: dimension order on the mesh links only, columns first.

    Parameters
    ----------
    topo : Topology
        A network with mesh ports N, E, S, W.

    Returns
    -------
    ForwardingTable
        Not checked for deadlock here (:func:`forwarding_table` does that).

    Raises
    ------
    RoutingError
        If a router lacks the mesh port XY names (e.g. the supermesh), or the port's link does
        not reach the mesh neighbour.
    """
    n = topo.nodes
    ports = [[LOCAL if v == d else _step_towards(topo, v, d) for d in range(n)] for v in range(n)]
    t = ForwardingTable(topo, ports, "xy")
    # On EquiMesh/torus the port a mesh step names may carry a ring or wrap link:
    # XY is only valid if every step lands on the mesh neighbour.
    for v in range(n):
        for d in range(n):
            if v != d:
                if ports[v][d] not in t.out_link[v]:  # e.g. the supermesh: no N/E/S/W ports
                    raise RoutingError(f"packet routing needs mesh ports; the {topo.name} has none")
                (r, c) = divmod(v, topo.cols)
                dst = topo.links[t.next_link(v, d)].dst
                if abs(dst // topo.cols - r) + abs(dst % topo.cols - c) != 1:
                    raise RoutingError(f"XY step {v}->{d} on port {ports[v][d]} does not reach a mesh neighbour")
    return t


class _CDG:
    """A channel dependency graph with edge multiplicities, for incremental cycle checks."""

    def __init__(self, n_links: int):
        self.count: dict[tuple[int, int], int] = defaultdict(int)
        self.succ: list[set[int]] = [set() for _ in range(n_links)]

    def add(self, a: int, b: int) -> None:
        self.count[(a, b)] += 1
        self.succ[a].add(b)

    def remove(self, a: int, b: int) -> None:
        self.count[(a, b)] -= 1
        if self.count[(a, b)] == 0:
            del self.count[(a, b)]
            self.succ[a].discard(b)

    def reaches(self, src: int, dst: int) -> bool:
        seen, todo = {src}, [src]
        while todo:
            x = todo.pop()
            if x == dst:
                return True
            for y in self.succ[x]:
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return False


def link_loads(t: ForwardingTable) -> tuple[list[int], list[int]]:
    """Per link id: the number of (source, destination) routes through it (all-to-all unicast), and
    the number of sources whose MultiWrite tree (the union of the source's routes) uses it (AllGather).
    Times the flits per packet, each is a lower bound on the cycles that traffic needs.

    Parameters
    ----------
    t : ForwardingTable

    Returns
    -------
    tuple of (list of int, list of int)
        ``(pairs, trees)``, each of length L, indexed by link id.
    """
    topo = t.topology
    trees = [0] * len(topo.links)
    for s in range(topo.nodes):
        for i in {i for d in range(topo.nodes) if d != s for i in t.route(s, d)}:
            trees[i] += 1
    return _pair_loads(t), trees


def _pair_loads(t: ForwardingTable) -> list[int]:
    """:func:`link_loads`' first list without the N**2 routes: per destination ``d`` the next hops form
    a tree towards ``d``, and the routes through a node's link towards ``d`` are its subtree's nodes
    (every node is a source), summed from the leaves, the nodes farthest from ``d``, inwards."""
    topo, n = t.topology, t.topology.nodes
    pairs = [0] * len(topo.links)
    for d in range(n):
        hops = _hops_to(t, d)
        if min(hops) < 0:
            raise RoutingError(f"routing loop from node {hops.index(-1)} to node {d}")
        size = [1] * n  # the sources whose route to d passes through v, v included
        for v in sorted(range(n), key=hops.__getitem__, reverse=True):
            if v != d:
                a = t.next_link(v, d)
                pairs[a] += size[v]
                size[topo.links[a].dst] += size[v]
    return pairs


def _hops_to(t: ForwardingTable, d: int) -> list[int]:
    """Per node, the links of its route to ``d`` (0 at ``d``), or -1 where that route loops. The next
    hops towards ``d`` form a graph with one edge out of every other node: each node's walk is followed
    once, until it reaches ``d``, a node already judged, or itself."""
    topo, n = t.topology, t.topology.nodes
    hops: list[int | None] = [None] * n  # None: not judged yet; -2: on the current walk
    hops[d] = 0
    for s in range(n):
        walk, v = [], s
        while hops[v] is None:
            hops[v] = -2
            walk.append(v)
            v = topo.links[t.next_link(v, d)].dst
        k = hops[v]  # the walk's end: d or a judged node (>= 0), a looping node (-1), or itself (-2)
        for u in reversed(walk):
            k = k + 1 if k >= 0 else -1
            hops[u] = k
    return hops


def _in_line_paths(topo: Topology, load: list[int]) -> list[list[int]]:
    """``want[d][v]``: the link ``v`` takes towards ``d`` in dimension order (columns first, like XY),
    each leg on a shortest path inside its row or column over all of that line's links.

    Paths are unique: cost (hops, XY load of the links, bit set of the links), so among equally
    short paths the one over the least XY-loaded links (ring, wrap, duplicate) wins, and the rest
    is a fixed order. Unique shortest paths are closed under prefixes and suffixes, so every
    source's MultiWrite tree is a tree (no node gets two copies of one packet).
    """
    n, cols, links = topo.nodes, topo.cols, topo.links

    def tree_to(target: int, same_line) -> dict[int, int]:
        bit = {i: 1 << k for k, i in enumerate(i for i, l in enumerate(links) if same_line(l))}
        cost, nxt = {target: (0, 0, 0)}, {}
        heap = [((0, 0, 0), target)]
        while heap:
            c, x = heapq.heappop(heap)
            if cost[x] != c:
                continue
            for i in topo.in_links[x]:
                if i in bit:
                    u = links[i].src
                    nc = (c[0] + 1, c[1] + load[i], c[2] + bit[i])
                    if u not in cost or nc < cost[u]:
                        cost[u], nxt[u] = nc, i
                        heapq.heappush(heap, (nc, u))
        return nxt

    row = [tree_to(x, lambda l, r=x // cols: l.src // cols == l.dst // cols == r) for x in range(n)]
    col = [tree_to(x, lambda l, c=x % cols: l.src % cols == l.dst % cols == c) for x in range(n)]
    return [
        [-1 if v == d else row[v - v % cols + d % cols][v] if v % cols != d % cols else col[d][v] for v in range(n)]
        for d in range(n)
    ]


def _want_len(want: list[list[int]], links, d: int, v: int) -> int:
    k = 0
    while v != d:
        v, k = links[want[d][v]].dst, k + 1
    return k


def _guarded(topo: Topology, want: list[list[int]]) -> ForwardingTable:
    """Start from XY and take ``want[d][v]`` entry by entry, nearest routers first, keeping a change
    only if it does not lengthen ``v``'s route and the CDG stays acyclic (torus wraps need this)."""
    t = xy_table(topo)
    n, links = topo.nodes, topo.links
    nl = [[-1 if v == d else t.next_link(v, d) for v in range(n)] for d in range(n)]  # nl[d][v]
    g = _CDG(len(links))
    for d in range(n):
        for v in range(n):
            if v != d and links[nl[d][v]].dst != d:
                g.add(nl[d][v], nl[d][links[nl[d][v]].dst])

    def length(d: int, v: int) -> int:
        k = 0
        while v != d and k <= n:
            v, k = links[nl[d][v]].dst, k + 1
        return k

    for d in range(n):
        wlen = [_want_len(want, links, d, v) for v in range(n)]
        children: list[list[int]] = [[] for _ in range(n)]
        for x in range(n):
            if x != d:
                children[links[nl[d][x]].dst].append(x)
        for v in sorted((v for v in range(n) if v != d), key=lambda v: (wlen[v], v)):
            old, new = nl[d][v], want[d][v]
            if new == old or 1 + length(d, links[new].dst) > length(d, v):
                continue
            drop = [(old, nl[d][links[old].dst])] if links[old].dst != d else []
            drop += [(nl[d][x], old) for x in children[v]]
            for e in drop:
                g.remove(*e)
            add = [(new, nl[d][links[new].dst])] if links[new].dst != d else []
            add += [(nl[d][x], new) for x in children[v]]
            done = []
            for a, b in add:
                if (a, b) not in g.count and g.reaches(b, a):
                    break
                g.add(a, b)
                done.append((a, b))
            else:
                nl[d][v] = new
                children[links[old].dst].remove(v)
                children[links[new].dst].append(v)
                continue
            for e in done:
                g.remove(*e)
            for e in drop:
                g.add(*e)
    for d in range(n):
        for v in range(n):
            if v != d:
                t.ports[v][d] = links[nl[d][v]].src_port
    return t


def shortcut_table(topo: Topology) -> ForwardingTable:
    """Dimension order with in-line shortcuts (see module docstring).

    Each leg is the unique shortest path inside its row or column, ties going to the links XY
    loads least; if the whole table's CDG has a cycle (torus wraps), the table is instead built
    from XY entry by entry, keeping only changes that do not lengthen a route and keep the CDG
    acyclic.

    Parameters
    ----------
    topo : Topology
        A network with mesh ports N, E, S, W.

    Returns
    -------
    ForwardingTable
        Algorithm ``"shortcut"``.

    Raises
    ------
    RoutingError
        As :func:`xy_table`, which it starts from.
    """
    links = topo.links
    want = _in_line_paths(topo, _pair_loads(xy_table(topo)))
    ports = [[LOCAL if v == d else links[want[d][v]].src_port for d in range(topo.nodes)] for v in range(topo.nodes)]
    t = ForwardingTable(topo, ports, "shortcut")
    if find_cycle(len(links), channel_dependencies(t)) is not None:
        t = _guarded(topo, want)
        t.algorithm = "shortcut"
    return t


def forwarding_table(topo: Topology, algorithm: str = "shortcut") -> ForwardingTable:
    """Build a forwarding table and check it is deadlock-free (cut-through flow).

    Parameters
    ----------
    topo : Topology
    algorithm : str
        One of :data:`ALGORITHMS`: ``"shortcut"`` (the default) or ``"xy"``.

    Returns
    -------
    ForwardingTable

    Raises
    ------
    RoutingError
        On an unknown algorithm or a topology without mesh ports.
    DeadlockError
        If the table's channel dependency graph has a cycle.
    """
    if algorithm == "xy":
        t = xy_table(topo)
    elif algorithm == "shortcut":
        t = shortcut_table(topo)
    else:
        raise RoutingError(f"unknown routing algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
    check_deadlock_free(t)
    return t


# ----- checking -------------------------------------------------------------


def validate(t: ForwardingTable) -> None:
    """Shape, ports and loop-freedom of a table; raises RoutingError with the first problem.

    Parameters
    ----------
    t : ForwardingTable

    Raises
    ------
    RoutingError
        If the table is not N x N, ``"L"`` is not exactly on the diagonal, a port has no outgoing
        link at its router, or a route loops.
    """
    topo = t.topology
    n = topo.nodes
    if len(t.ports) != n or any(len(row) != n for row in t.ports):
        raise RoutingError(f"forwarding table must be {n} x {n} for the {topo.name}")
    for v in range(n):
        for d in range(n):
            p = t.ports[v][d]
            if (v == d) != (p == LOCAL):
                raise RoutingError(f"table[{v}][{d}] = {p!r}: only table[v][v] may be {LOCAL!r}")
            if p != LOCAL and p not in t.out_link[v]:
                raise RoutingError(f"table[{v}][{d}] = {p!r}: router {v} has no outgoing link on port {p!r}")
    _check_loops(t)


def _check_loops(t: ForwardingTable) -> None:
    """Raise RoutingError naming the first (source, destination) pair, in the order of
    :meth:`ForwardingTable.route` over all sources then destinations, whose route loops
    (:func:`_hops_to` per destination)."""
    n = t.topology.nodes
    loops = [(s, d) for d in range(n) for s, h in enumerate(_hops_to(t, d)) if h < 0]
    if loops:
        s, d = min(loops)
        raise RoutingError(f"routing loop from node {s} to node {d}")


def channel_dependencies(t: ForwardingTable, flow: str = "cut-through") -> set[tuple[int, int]]:
    """The CDG edges ``(link_a, link_b)`` of multicast traffic from every source to any destination set.

    Parameters
    ----------
    t : ForwardingTable
    flow : str
        ``"cut-through"`` (the default; the unicast CDG: consecutive links of every route) or
        ``"wormhole"`` (adds, at each fork, every link of one branch's sub-tree -> every other
        branch's first link).

    Returns
    -------
    set of tuple of (int, int)
        Link id pairs ``a -> b``: a packet holding ``a`` can wait for ``b``.

    Raises
    ------
    RoutingError
        On an unknown ``flow`` or a routing loop.
    """
    topo = t.topology
    n = topo.nodes
    if flow not in ("cut-through", "wormhole"):
        raise RoutingError(f"unknown flow control {flow!r}")
    _check_loops(t)
    # Consecutive links of every route: per destination d, the link v sends d's packets on, then the
    # one its next hop w sends them on (every v is a source, so every such pair is on a route).
    edges = set()
    for d in range(n):
        for v in range(n):
            if v != d:
                a = t.next_link(v, d)
                w = topo.links[a].dst
                if w != d:
                    edges.add((a, t.next_link(w, d)))
    if flow == "cut-through":
        return edges
    # Wormhole replication: at router v, a packet entering on channel c (or injected)
    # with destinations D splits over outputs; every link of one branch's sub-tree
    # depends on every other branch's first link.
    for v in range(n):
        arrivals: dict[int | None, set[int]] = {None: set(range(n)) - {v}}
        for i in topo.in_links[v]:
            x = topo.links[i].src
            arrivals[i] = {d for d in range(n) if d != v and d != x and t.next_link(x, d) == i}
        for dests in arrivals.values():
            branches: dict[str, set[int]] = defaultdict(set)
            for d in dests:
                branches[t.ports[v][d]].update(t.route(v, d))
            for p1, sub in branches.items():
                for p2 in branches:
                    if p2 != p1:
                        first = t.out_link[v][p2]
                        edges.update((a, first) for a in sub)
    return edges


def find_cycle(n_links: int, edges: set[tuple[int, int]]) -> list[int] | None:
    """One cycle of a directed graph on link ids (depth-first search), or None if it is acyclic.

    Parameters
    ----------
    n_links : int
        The vertices are 0..n_links-1.
    edges : set of tuple of (int, int)
        The directed edges, e.g. from :func:`channel_dependencies`.

    Returns
    -------
    list of int or None
        The cycle's vertices in edge order (the last leads back to the first).
    """
    succ: list[list[int]] = [[] for _ in range(n_links)]
    for a, b in edges:
        succ[a].append(b)
    color = [0] * n_links
    parent = [-1] * n_links
    for root in range(n_links):
        if color[root]:
            continue
        stack = [(root, iter(succ[root]))]
        color[root] = 1
        while stack:
            x, it = stack[-1]
            y = next(it, None)
            if y is None:
                color[x] = 2
                stack.pop()
            elif color[y] == 0:
                color[y], parent[y] = 1, x
                stack.append((y, iter(succ[y])))
            elif color[y] == 1:
                cyc, z = [y], x
                while z != y:
                    cyc.append(z)
                    z = parent[z]
                return cyc[::-1] if len(cyc) > 1 else cyc
    return None


def describe_link(topo: Topology, i: int) -> str:
    """Link ``i`` as ``"src->dst(src_port)"``, for messages.

    Parameters
    ----------
    topo : Topology
    i : int
        A link id.

    Returns
    -------
    str
    """
    l = topo.links[i]
    return f"{l.src}->{l.dst}({l.src_port})"


def check_deadlock_free(t: ForwardingTable, flow: str = "cut-through") -> None:
    """Raise DeadlockError naming one CDG cycle if the table can deadlock under ``flow``.

    Parameters
    ----------
    t : ForwardingTable
        Validated first (:func:`validate`).
    flow : str
        ``"cut-through"`` (the default, what ``rtl/packet_router.py`` implements) or ``"wormhole"``.

    Raises
    ------
    RoutingError
        If the table is invalid.
    DeadlockError
        If the channel dependency graph has a cycle.
    """
    # The ports as they were checked: a table that passed is not checked again until its ports change
    # (at 32x32 a check takes over a second, and a packet run's table is checked where it is built and
    # again by the network that takes it).
    seen = (flow, hash(tuple(map(tuple, t.ports))), len(t.topology.links))
    if seen in t.__dict__.get("_passed", ()):
        return
    validate(t)
    cyc = find_cycle(len(t.topology.links), channel_dependencies(t, flow))
    if cyc is not None:
        ring = " -> ".join(describe_link(t.topology, i) for i in cyc + cyc[:1])
        raise DeadlockError(
            f"{t.algorithm} routing on the {t.topology.name} can deadlock ({flow}): channel dependency cycle {ring}"
        )
    t.__dict__.setdefault("_passed", set()).add(seen)


def load(path: str | Path) -> ForwardingTable:
    """Read a table written by ``equimesh routing --out``; validated and deadlock-checked.

    Parameters
    ----------
    path : str or Path
        A JSON file of format :data:`FORMAT`, version 1; its topology is rebuilt from kind,
        rows, cols and ``ring_dirs``.

    Returns
    -------
    ForwardingTable

    Raises
    ------
    RoutingError
        If the file cannot be read, is not a version-1 routing file, is malformed or invalid.
    DeadlockError
        If the table can deadlock (cut-through flow).
    """
    try:
        d = read_json(path)
    except JsonFileError as e:
        raise RoutingError(str(e)) from None
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise RoutingError(f"{path}: not an {FORMAT} file")
    if d.get("version") != 1:
        raise RoutingError(f"{path}: unsupported version {d.get('version')!r} (this reader knows 1)")
    try:
        tj = d["topology"]
        if not all(isinstance(tj[k], int) and not isinstance(tj[k], bool) for k in ("rows", "cols")):
            raise TypeError(f"rows and cols must be integers (got {tj['rows']!r}, {tj['cols']!r})")
        topo = build(str(tj["kind"]), tj["rows"], tj["cols"], ring_dirs=parse_ring_dirs(tj.get("ring_dirs")))
        ports = [[str(p) for p in row] for row in d["ports"]]
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        if isinstance(e, TopologyError):
            raise RoutingError(f"{path}: {e}") from None
        raise RoutingError(f"{path}: malformed routing file ({e!r})") from None
    t = ForwardingTable(topo, ports, str(d.get("algorithm", "file")))
    check_deadlock_free(t)
    return t
