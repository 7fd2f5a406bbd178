"""One node of a schedule network as a module of its own: the node's router and its links' statistics.

:class:`RouterTile` is what the tiled compiled model (:mod:`equimesh.sim.tiled_network`) compiles once
per router module and instantiates per node. The network top (:class:`~equimesh.rtl.network.Network`)
keeps one :class:`~equimesh.rtl.stats.Stats` block for all links; a tile keeps one for the links it
sends on, fed the network's ``done`` as an input. Each busy counter depends only on ``start``,
``done`` and its own link's ``valid``, so the tiles count what the one block counts.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .design import Design
from .network import make_router
from .packet_endpoints import COUNTER_BITS
from .stats import Stats

__all__ = ["RouterTile"]


class RouterTile(wiring.Component):
    """A node's :class:`~equimesh.rtl.router.Router` and the :class:`~equimesh.rtl.stats.Stats` of its
    output links.

    Parameters
    ----------
    design : Design
        The network design.
    node : int
        The node (its ports and lanes; routers with equal ports are the same module).

    Ports
    -----
    every port of the node's router, and:
    net_done : In(1)  -- the network's ``done`` (every router's).
    cycles : Out(32)  -- the statistics block's cycle count.
    busy : Out(32).array(ports)  -- the busy cycles of the link leaving each port, in port order.
    """

    def __init__(self, design: Design, node: int):
        self.router = make_router(design, node)
        self.ports = design.ports(node)
        members = dict(self.router.signature.members)
        members.update(
            {"net_done": In(1), "cycles": Out(COUNTER_BITS), "busy": Out(COUNTER_BITS).array(len(self.ports))}
        )
        super().__init__(members)

    def elaborate(self, platform):
        """Build the hardware: the router with its ports brought out, and the statistics block.

        Parameters
        ----------
        platform : object or None
            Unused.

        Returns
        -------
        amaranth.hdl.Module
        """
        m = Module()
        m.submodules.router = r = self.router
        # The router's members come first, in its order, so its flattened ports pair with the tile's.
        for (_, member, mine), (_, _, theirs) in zip(self.signature.flatten(self), r.signature.flatten(r)):
            m.d.comb += theirs.eq(mine) if member.flow == In else mine.eq(theirs)
        m.submodules.stats = stats = Stats(len(self.ports))
        m.d.comb += [
            stats.start.eq(self.start),
            stats.done.eq(self.net_done),
            stats.link_valid.eq(Cat(getattr(r, f"o_{p}").valid for p in self.ports)),
            self.cycles.eq(stats.cycles),
        ]
        m.d.comb += [b.eq(s) for b, s in zip(self.busy, stats.busy)]
        return m
