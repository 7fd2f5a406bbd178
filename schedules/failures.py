"""Link failures: the degraded topology a schedule is resynthesized on.

A failed link is removed from the topology; topology-agnostic synthesizers (XTree,
Algorithm 2 of seed 000, which only asks for free links out of each tree) then run on
what is left. MirrorXTree (Algorithm 3) builds the ReduceScatter on the mirror
topology and reverses it, so the degraded mirror must lack the reverse of every failed
link: :class:`DegradedTopology` overrides ``mirror`` to say so.
"""

from __future__ import annotations

import re

import numpy as np

from .topology import Topology, TopologyError

__all__ = ["DegradedTopology", "Disconnected", "degrade", "parse_fail_links", "random_failures"]


class Disconnected(ValueError):
    """The failures leave some node unable to reach another; the message is one line.

    The line names one node and a node it can no longer reach.
    """


class DegradedTopology(Topology):
    """A topology with some links removed; ``failed`` lists them as ``(src, dst, src_port, dst_port)``.

    The remaining links keep the base topology's order, so link ids are renumbered past a failed link.

    Parameters
    ----------
    base : Topology
        The intact topology.
    failed : list
        The links to remove, each a 4-sequence ``(src, dst, src_port, dst_port)``; entries that
        are not links of ``base`` remove nothing.

    Attributes
    ----------
    base : Topology
        The intact topology.
    failed : list of tuple
        The distinct failed links, sorted.
    name : str
        ``"<rows>x<cols> <kind> - <n> failed link(s)"``.
    """

    def __init__(self, base: Topology, failed: list):
        gone = {tuple(f) for f in failed}
        links = [l for l in base.links if (l.src, l.dst, l.src_port, l.dst_port) not in gone]
        super().__init__(base.kind, base.rows, base.cols, links, ring_dirs=base.ring_dirs)
        self.base = base
        self.failed = sorted(gone)

    @property
    def name(self) -> str:
        """``"<rows>x<cols> <kind> - <n> failed link(s)"``."""
        return f"{self.rows}x{self.cols} {self.kind} - {len(self.failed)} failed link(s)"

    def mirror(self) -> Topology:
        """Seed 000, Section III-B mirror, minus the reverse of every failed link.

        Returns
        -------
        DegradedTopology
            The base's mirror, degraded by ``(dst, src, dst_port, src_port)`` of each failed link.
        """
        reversed_failed = [(d, s, pd, ps) for s, d, ps, pd in self.failed]
        return DegradedTopology(self.base.mirror(), reversed_failed)

    def to_json(self) -> dict:
        """:meth:`.Topology.to_json` plus ``failed_links``: ``[src, dst, src_port, dst_port]`` lists."""
        d = super().to_json()
        d["failed_links"] = [list(f) for f in self.failed]
        return d


def parse_fail_links(text: str, topo: Topology) -> list[tuple]:
    """``--fail-links``: comma-separated ``U-V`` (every link between U and V, both ways) or ``U>V`` (U to V only).

    Parameters
    ----------
    text : str
        The option value; U and V are node ids.
    topo : Topology
        The intact topology.

    Returns
    -------
    list of tuple
        ``(src, dst, src_port, dst_port)`` of every matching link, entry by entry in link id order
        (parallel links included).

    Raises
    ------
    TopologyError
        On an entry that is not ``U-V`` or ``U>V``, a node outside 0..N-1, or no such link.
    """
    out = []
    for item in (t.strip() for t in text.split(",")):
        m = re.fullmatch(r"(\d+)\s*([->])\s*(\d+)", item)
        if not m:
            raise TopologyError(f"--fail-links: {item!r} is not U-V or U>V (node ids)")
        u, kind, v = int(m.group(1)), m.group(2), int(m.group(3))
        for w in (u, v):
            if not 0 <= w < topo.nodes:
                raise TopologyError(f"--fail-links: node {w} is not in the {topo.name} (0..{topo.nodes - 1})")
        hit = [l for l in topo.links if (l.src, l.dst) == (u, v) or (kind == "-" and (l.src, l.dst) == (v, u))]
        if not hit:
            raise TopologyError(f"--fail-links: the {topo.name} has no link {item}")
        out += [(l.src, l.dst, l.src_port, l.dst_port) for l in hit]
    return out


def random_failures(topo: Topology, count: int, seed: int) -> list[tuple]:
    """``count`` distinct directed links of ``topo`` chosen uniformly with ``seed``.

    Parameters
    ----------
    topo : Topology
    count : int
        0..L.
    seed : int
        Seed of ``numpy.random.default_rng``; equal seeds give equal choices.

    Returns
    -------
    list of list
        ``[src, dst, src_port, dst_port]`` per chosen link, in link id order.

    Raises
    ------
    TopologyError
        If ``count`` is outside 0..L.
    """
    if not 0 <= count <= len(topo.links):
        raise TopologyError(f"--fail-random must be between 0 and {len(topo.links)} (got {count})")
    pick = np.random.default_rng(seed).choice(len(topo.links), size=count, replace=False)
    return [topo.links[i].as_list() for i in sorted(pick)]


def degrade(topo: Topology, failed: list) -> DegradedTopology:
    """Remove ``failed`` from ``topo``; raise :class:`Disconnected` if a node can no longer reach another.

    The degraded mirror that MirrorXTree's ReduceScatter uses is the reverse graph of
    the degraded topology (the mesh links are symmetric, the rings reversed, the
    failures reversed), so it is strongly connected exactly when this one is.

    Parameters
    ----------
    topo : Topology
        The intact topology.
    failed : list
        The failed links, each ``(src, dst, src_port, dst_port)``.

    Returns
    -------
    DegradedTopology
        Strongly connected.

    Raises
    ------
    Disconnected
        Naming one node pair that is no longer connected.
    """
    deg = DegradedTopology(topo, [tuple(f) for f in failed])
    if not deg.strongly_connected:
        u, v = (int(x[0]) for x in np.nonzero(deg.distances < 0))
        raise Disconnected(
            f"failing {len(deg.failed)} link(s) disconnects the network: node {u} can no longer reach node {v}"
        )
    return deg
