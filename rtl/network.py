"""The network top: one :class:`Router` per node, wired along the topology's links.

Builds every topology kind of ``schedules/topology.py`` (mesh, equimesh,
mirror-equimesh, overflow, torus), ring links included: a link is a wire from
the source router's ``o_<src_port>`` to the destination's ``i_<dst_port>``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .flit import flit_layout
from .rom import NetworkImage
from .router import Router


class Network(wiring.Component):
    """A network executing one compiled schedule.

    Ports
    -----
    start : In(1)  -- begin (all routers start together).
    done : Out(1)  -- every router has written its last flit.
    link_valid : Out(links) -- bit ``i`` is the valid signal of link ``i`` (observation).
    host_node, host_lane, host_addr : In -- read flit ``host_addr`` of a lane of a node when
        idle; ``host_data`` is valid the next cycle.

    ``lane_init[v][i]`` is the initial contents of lane ``i`` of node ``v``.
    """

    def __init__(self, image: NetworkImage, lane_init, flit_bits: int = 64):
        self.image, self.flit_bits = image, flit_bits
        self.routers = [
            Router(r.ports, r.lanes, image.slots, image.chunk_flits, image.rom_words(r.node), image.reduce,
                   flit_bits, lane_init[r.node])
            for r in image.routers]
        t = image.topology
        # One named valid signal per link, for waveforms (`link<i>_<src><port>_<dst><port>`).
        self.link_signals = [Signal(name=f"link{i}_{l.src}{l.src_port}_{l.dst}{l.dst_port}")
                             for i, l in enumerate(t.links)]
        super().__init__({
            "start": In(1), "done": Out(1),
            "link_valid": Out(len(t.links)),
            "host_node": In(range(t.nodes)),
            "host_lane": In(range(max(len(r.lanes) for r in image.routers))),
            "host_addr": In(range(image.lane_flits)),
            "host_data": Out(flit_layout(flit_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        t = self.image.topology
        for v, r in enumerate(self.routers):
            m.submodules[f"r{v}"] = r
            m.d.comb += [r.start.eq(self.start), r.host_addr.eq(self.host_addr)]
        # Only the addressed router sees the lane number (the others may have fewer lanes).
        with m.Switch(self.host_node):
            for v, r in enumerate(self.routers):
                with m.Case(v):
                    m.d.comb += r.host_lane.eq(self.host_lane)
            with m.Default():
                m.d.comb += [r.host_lane.eq(0) for r in self.routers]
        for i, l in enumerate(t.links):
            src, dst = getattr(self.routers[l.src], f"o_{l.src_port}"), getattr(self.routers[l.dst], f"i_{l.dst_port}")
            m.d.comb += [dst.valid.eq(src.valid), dst.flit.eq(src.flit), self.link_signals[i].eq(src.valid)]
        m.d.comb += self.link_valid.eq(Cat(self.link_signals))
        m.d.comb += self.done.eq(Cat(r.done for r in self.routers).all())
        node = Signal.like(self.host_node)
        m.d.sync += node.eq(self.host_node)
        with m.Switch(node):
            for v, r in enumerate(self.routers):
                with m.Case(v):
                    m.d.comb += self.host_data.eq(r.host_data)
            with m.Default():
                m.d.comb += self.host_data.eq(0)
        return m
