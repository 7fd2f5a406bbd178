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

from amaranth.hdl import Cat, ClockSignal, Instance, Module, ResetSignal, Shape, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .design import Design
from .packet_endpoints import COUNTER_BITS
from .packet_network import PacketSetup
from .rom import same_topology
from .router import Router
from .stats import Stats


def router_key(design: Design, node: int, packets: PacketSetup | None = None) -> tuple:
    """Routers with equal keys are one design (one Verilog module)."""
    return (design.ports(node), design.lanes(node), None if packets is None else node)


def router_name(design: Design, node: int, packets: PacketSetup | None = None) -> str:
    """The Verilog module name of a node's router: its port count, and the ports that carry lanes."""
    ports, lanes = design.ports(node), design.lanes(node)
    name = f"router_{len(ports) + 1}port"
    if lanes != ports:
        name += "_" + "".join(lanes)
    return name if packets is None else f"{name}_pkt{node}"


def make_router(design: Design, node: int, packets: PacketSetup | None = None) -> Router:
    return Router(design.ports(node), design.lanes(node), design.slots, design.chunk_flits, design.depth,
                  design.reduce, design.flit_bits, None if packets is None else packets.router(node))


def top_ports(net) -> tuple[list[str], list[str], dict[str, int]]:
    """The plain ports of a network top: input names, output names, and every port's bit width."""
    ins, outs, widths = [], [], {}
    for name, member in net.signature.members.items():
        if member.is_port:
            (ins if member.flow == In else outs).append(name)
            widths[name] = Shape.cast(member.shape).width
    return ins, outs, widths


class Network(wiring.Component):
    """The routers of a :class:`~equimesh.rtl.design.Design`, wired along its links, and the host ports
    that load and read them (design.md, "Schedule tables in hardware").

    Every node's local DMA loads its router in parallel with the others: the address ports are
    shared, the data ports are plain vectors with a field per node or per lane, node 0 in the low
    bits: ``tab_data`` has ``entry_bits`` per node, ``load_we`` one bit per lane slot (``max_lanes``
    per node), ``load_data`` and ``host_data`` ``flit_bits`` per lane slot, ``busy`` 32 bits per link.

    Ports
    -----
    start : In(1), steps : In -- run the loaded schedule of ``steps`` timesteps (all routers together).
    done : Out(1) -- every router has written its last flit.
    tab_we, tab_addr, tab_data : In -- write table entry ``tab_addr`` of every router.
    load_addr, load_we, load_data : In -- write flit ``load_addr`` of the lanes whose bit is set.
    host_addr : In, host_data : Out -- flit ``host_addr`` of every lane, valid the next cycle.
    link_valid : Out(links) -- bit ``i`` is the valid signal of link ``i`` (waveforms).
    cycles, busy : Out -- the statistics block (:class:`~equimesh.rtl.stats.Stats`).

    with ``packets``:
    inject : In(stream).array(nodes), eject : Out(stream).array(lanes) -- lane ``k`` is
        ``lanes[k] = (node, port)``: local copies that reached ``node`` through ``port``.
    link_flits : Out(32).array(links) -- flits carried by each link (``valid & ready``; scheduled
        flits count too: a link is always ready for them).
    launch : Out(1) -- the cycle the routers take ``start`` (after the packets drained).

    ``instances``: the routers are Verilog instances of one module per distinct router
    (``self.designs``: module name -> :class:`Router`, for :mod:`~equimesh.rtl.verilog`); otherwise
    Amaranth submodules (``self.routers``, for the Amaranth simulator).
    """

    def __init__(self, design: Design, packets: PacketSetup | None = None, instances: bool = False):
        self.design, self.packets, self.instances = design, packets, instances
        t = design.topology
        if packets is not None and not same_topology(packets.table.topology, t):
            raise ValueError(f"the forwarding table is for the {packets.table.topology.name}, not the {t.name}")
        # One Router object per node (simulation), or one per Verilog module (instances).
        names = [router_name(design, v, packets) for v in range(t.nodes)]
        if instances:
            self.designs = {}
            for v, name in enumerate(names):
                if name not in self.designs:
                    self.designs[name] = make_router(design, v, packets)
            self.routers = [self.designs[name] for name in names]
        else:
            self.routers = [make_router(design, v, packets) for v in range(t.nodes)]
        self.lanes = [(v, p) for v in range(t.nodes) for p in design.lanes(v)]
        ml = design.max_lanes
        # One named valid signal per link, for waveforms (`link<i>_<src><port>_<dst><port>`).
        self.link_signals = [Signal(name=f"link{i}_{l.src}{l.src_port}_{l.dst}{l.dst_port}")
                             for i, l in enumerate(t.links)]
        self.flit_bits = design.flit_bits
        self.entry_bits = max(r.tab_data.shape().size for r in self.routers)
        nodes, fb = t.nodes, design.flit_bits
        # Top-level buses are plain vectors of per-node (or per-lane) fields, node 0 in the low bits.
        members = {
            "start": In(1), "steps": In(range(1, design.depth + 1)), "done": Out(1),
            "tab_we": In(1), "tab_addr": In(range(design.depth)), "tab_data": In(nodes * self.entry_bits),
            "load_addr": In(range(design.lane_flits)), "load_we": In(nodes * ml),
            "load_data": In(nodes * ml * fb),
            "host_addr": In(range(design.lane_flits)), "host_data": Out(nodes * ml * fb),
            "link_valid": Out(len(t.links)),
        }
        self.stats = Stats(len(t.links))
        members.update({"cycles": Out(COUNTER_BITS), "busy": Out(COUNTER_BITS * len(t.links))})
        if packets is not None:
            pkt = stream.Signature(packets.fmt.flit)
            self.fmt = packets.fmt
            members.update({"inject": In(pkt).array(t.nodes), "eject": Out(pkt).array(len(self.lanes)),
                            "link_flits": Out(COUNTER_BITS).array(len(t.links)), "launch": Out(1)})
        super().__init__(members)

    def _ports(self, m: Module, v: int) -> dict:
        """Router ``v``'s ports as plain values by Verilog name (``o_N__valid``, ``tab_data``, ...): its
        Amaranth submodule's, or the signals wired to an instance of its Verilog module."""
        r = self.routers[v]
        if not self.instances:
            m.submodules[f"r{v}"] = r
            return {"__".join(map(str, path)): Value.cast(value) for path, _, value in r.signature.flatten(r)}
        ports, conns = {}, {}
        for path, member, value in r.signature.flatten(r):
            name = "__".join(map(str, path))
            ports[name] = sig = Signal(len(Value.cast(value)), name=f"r{v}__{name}")
            conns[("o_" if member.flow == Out else "i_") + name] = sig
        m.submodules[f"r{v}"] = Instance(router_name(self.design, v, self.packets),
                                         i_clk=ClockSignal(), i_rst=ResetSignal(), **conns)
        return ports

    def elaborate(self, platform):
        m = Module()
        d, t = self.design, self.design.topology
        ml, fb, eb = d.max_lanes, d.flit_bits, self.entry_bits
        routers = [self._ports(m, v) for v in range(t.nodes)]
        for v, r in enumerate(routers):
            n = len(d.lanes(v))
            m.d.comb += [r["steps"].eq(self.steps), r["tab_we"].eq(self.tab_we), r["tab_addr"].eq(self.tab_addr),
                         r["tab_data"].eq(self.tab_data[v * eb:v * eb + len(r["tab_data"])]),
                         r["load_addr"].eq(self.load_addr), r["load_we"].eq(self.load_we[v * ml:v * ml + n]),
                         r["load_data"].eq(self.load_data[v * ml * fb:(v * ml + n) * fb]),
                         r["host_addr"].eq(self.host_addr),
                         self.host_data[v * ml * fb:(v * ml + n) * fb].eq(r["host_data"])]
        m.submodules.stats = stats = self.stats
        if self.packets is None:
            m.d.comb += [r["start"].eq(self.start) for r in routers]
            m.d.comb += stats.start.eq(self.start)
        else:
            self._packets(m, routers)
            m.d.comb += stats.start.eq(self.launch)
        for i, l in enumerate(t.links):
            src, dst = f"o_{l.src_port}", f"i_{l.dst_port}"
            tx, rx = routers[l.src], routers[l.dst]
            m.d.comb += [rx[f"{dst}__valid"].eq(tx[f"{src}__valid"]), rx[f"{dst}__flit"].eq(tx[f"{src}__flit"]),
                         self.link_signals[i].eq(tx[f"{src}__valid"])]
            if self.packets is not None:
                m.d.comb += tx[f"{src}__ready"].eq(rx[f"{dst}__ready"])
                with m.If(tx[f"{src}__valid"] & rx[f"{dst}__ready"]):
                    m.d.sync += self.link_flits[i].eq(self.link_flits[i] + 1)
        m.d.comb += self.link_valid.eq(Cat(self.link_signals))
        m.d.comb += self.done.eq(Cat(r["done"] for r in routers).all())
        m.d.comb += [stats.done.eq(self.done), stats.link_valid.eq(self.link_valid),
                     self.cycles.eq(stats.cycles), self.busy.eq(stats.busy)]
        return m

    def _launch(self, m: Module, routers) -> Signal:
        """``start`` as a request: drive ``launch`` once no router holds a packet; returns the request
        still pending (injections are held from ``start`` to ``launch``)."""
        pending = Signal()
        quiet = Cat(r["idle"] for r in routers).all()
        m.d.comb += self.launch.eq((self.start | pending) & quiet)
        with m.If(self.launch):
            m.d.sync += pending.eq(0)
        with m.Elif(self.start):
            m.d.sync += pending.eq(1)
        return pending

    def _packets(self, m: Module, routers) -> None:
        pending = self._launch(m, routers)
        for v, r in enumerate(routers):
            inj = self.inject[v]
            m.d.comb += [r["start"].eq(self.launch), r["hold"].eq(self.start | pending),
                         r["inject__valid"].eq(inj.valid), r["inject__payload"].eq(inj.payload), inj.ready.eq(r["inject__ready"])]
        for k, (v, p) in enumerate(self.lanes):
            r, ej = routers[v], self.eject[k]
            m.d.comb += [ej.valid.eq(r[f"eject_{p}__valid"]), ej.payload.eq(r[f"eject_{p}__payload"]),
                         r[f"eject_{p}__ready"].eq(ej.ready)]
