"""The network top: one :class:`Router` per node, wired along the topology's links.

Builds every topology kind of ``schedules/topology.py`` (mesh, equimesh,
mirror-equimesh, overflow, torus), ring links included: a link is a wire from
the source router's ``o_<src_port>`` to the destination's ``i_<dst_port>``.

With ``packets`` the routers also carry MultiWrite packets (``rtl/router.py``).
``start`` then becomes a request: new injections stop at once, packets already
in the network drain, and every router starts the schedule in the first cycle
in which no router holds a packet (``launch``). Without packets in flight that
is the cycle of ``start`` itself, so the schedule's timing is unchanged.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .flit import flit_layout
from .packet_endpoints import COUNTER_BITS
from .packet_network import PacketSetup
from .rom import NetworkImage, same_topology
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

    with ``packets``:
    inject : In(stream).array(nodes), eject : Out(stream).array(lanes) -- lane ``k`` is
        ``lanes[k] = (node, port)``: local copies that reached ``node`` through ``port``.
    link_flits : Out(32).array(links) -- flits carried by each link (``valid & ready``; scheduled
        flits count too: a link is always ready for them).
    launch : Out(1) -- the cycle the routers take ``start`` (after the packets drained).

    ``lane_init[v][i]`` is the initial contents of lane ``i`` of node ``v``.
    """

    def __init__(self, image: NetworkImage, lane_init, flit_bits: int = 64, packets: PacketSetup | None = None):
        self.image, self.flit_bits, self.packets = image, flit_bits, packets
        if packets is not None and not same_topology(packets.table.topology, image.topology):
            raise ValueError(f"the forwarding table is for the {packets.table.topology.name}, "
                             f"not the {image.topology.name}")
        self.routers = [
            Router(r.ports, r.lanes, image.slots, image.chunk_flits, image.rom_words(r.node), image.reduce,
                   flit_bits, lane_init[r.node], None if packets is None else packets.router(r.node))
            for r in image.routers]
        self.lanes = [(r.node, p) for r in image.routers for p in r.lanes]
        t = image.topology
        # One named valid signal per link, for waveforms (`link<i>_<src><port>_<dst><port>`).
        self.link_signals = [Signal(name=f"link{i}_{l.src}{l.src_port}_{l.dst}{l.dst_port}")
                             for i, l in enumerate(t.links)]
        members = {
            "start": In(1), "done": Out(1),
            "link_valid": Out(len(t.links)),
            "host_node": In(range(t.nodes)),
            "host_lane": In(range(max(len(r.lanes) for r in image.routers))),
            "host_addr": In(range(image.lane_flits)),
            "host_data": Out(flit_layout(flit_bits)),
        }
        if packets is not None:
            flit = stream.Signature(packets.fmt.flit)
            self.fmt = packets.fmt
            members.update({"inject": In(flit).array(t.nodes), "eject": Out(flit).array(len(self.lanes)),
                            "link_flits": Out(COUNTER_BITS).array(len(t.links)), "launch": Out(1)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        t = self.image.topology
        for v, r in enumerate(self.routers):
            m.submodules[f"r{v}"] = r
            m.d.comb += r.host_addr.eq(self.host_addr)
        if self.packets is None:
            m.d.comb += [r.start.eq(self.start) for r in self.routers]
        else:
            self._packets(m)
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
            if self.packets is not None:
                m.d.comb += src.ready.eq(dst.ready)
                with m.If(src.valid & dst.ready):
                    m.d.sync += self.link_flits[i].eq(self.link_flits[i] + 1)
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

    def _packets(self, m: Module) -> None:
        """``start`` as a request: hold injections, launch once no router holds a packet."""
        pending = Signal()
        quiet = Cat(r.idle for r in self.routers).all()
        m.d.comb += self.launch.eq((self.start | pending) & quiet)
        with m.If(self.launch):
            m.d.sync += pending.eq(0)
        with m.Elif(self.start):
            m.d.sync += pending.eq(1)
        for v, r in enumerate(self.routers):
            m.d.comb += [r.start.eq(self.launch), r.hold.eq(self.start | pending)]
            wiring.connect(m, wiring.flipped(self.inject[v]), r.inject)
        for k, (v, p) in enumerate(self.lanes):
            wiring.connect(m, getattr(self.routers[v], f"eject_{p}"), wiring.flipped(self.eject[k]))
