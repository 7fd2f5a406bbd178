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

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Shape, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .design import Design
from .instance import router_ports
from .packet_endpoints import COUNTER_BITS
from .packet_network import PacketSetup
from .rom import entry_layout, same_topology
from .router import Router
from .stats import Stats

__all__ = [
    "Bus",
    "LOAD_BITS",
    "Network",
    "PORT_BITS",
    "buses",
    "entry_bits",
    "load_group",
    "make_router",
    "router_name",
    "top_ports",
]


def router_name(design: Design, node: int, packets: PacketSetup | None = None) -> str:
    """The Verilog module name of a node's router: its port count (ports with a link, plus L), and the
    ports that carry lanes where some of N E S W ... are tied off.

    Parameters
    ----------
    design : Design
    node : int
    packets : PacketSetup or None
        With packets the name ends in ``_pkt``.

    Returns
    -------
    str
        E.g. ``"router_5port"``, ``"router_4port_ESW"`` or ``"router_5port_pkt"``.
    """
    ports, lanes = design.ports(node), design.lanes(node)
    name = f"router_{len(lanes) + 1}port"
    if lanes != ports:
        name += "_" + "".join(lanes)
    return name if packets is None else f"{name}_pkt"


def make_router(design: Design, node: int, packets: PacketSetup | None = None) -> Router:
    """The :class:`Router` of one node of ``design``.

    Parameters
    ----------
    design : Design
        Gives ports, lanes, slots, chunk flits, table depth, adders, flit width and pipeline depth.
    node : int
    packets : PacketSetup or None
        With packets, the router also carries MultiWrite packets (``packets.config``).

    Returns
    -------
    Router
    """
    return Router(
        design.ports(node),
        design.lanes(node),
        design.slots,
        design.chunk_flits,
        design.depth,
        design.reduce,
        design.flit_bits,
        None if packets is None else packets.config,
        design.pipeline,
    )


PORT_BITS = 16384  # the widest top-level port (Amaranth's netlist caps one value at 65536 bits)


@dataclass(frozen=True)
class Bus:
    """A top-level bus of equal fields (one per node, lane slot or link; field 0 in the low bits of the
    first port), split into ports of at most :data:`PORT_BITS` bits: ``name``, or ``name_0``, ``name_1``...

    Attributes
    ----------
    name : str
        The port name, or the stem of the numbered ports.
    field_bits : int
        Bits per field, a multiple of 32, so that every port starts on a 32-bit word.
    fields : int
        The number of fields.
    per_port : int
        Fields per port: max(1, PORT_BITS // field_bits).
    """

    name: str
    field_bits: int  # a multiple of 32, so that every port starts on a 32-bit word
    fields: int

    @property
    def per_port(self) -> int:
        """Fields per port: max(1, PORT_BITS // field_bits)."""
        return max(1, PORT_BITS // self.field_bits)

    def ports(self) -> list[tuple[str, int]]:
        """Port names and the number of fields each carries.

        Returns
        -------
        list of tuple of (str, int)
            ``[(name, fields)]`` if one port holds them all, else ``name_0``, ``name_1``, ... with
            :attr:`per_port` fields each (the last one the rest).
        """
        per = self.per_port
        if self.fields <= per:
            return [(self.name, self.fields)]
        # One underscore: Verilator mangles double underscores in C++ member names.
        return [(f"{self.name}_{k}", min(per, self.fields - k * per)) for k in range(-(-self.fields // per))]

    def field(self, net, i: int):
        """Field ``i`` of this bus on network top ``net``.

        Parameters
        ----------
        net : Network
        i : int
            The field index, 0..fields-1.

        Returns
        -------
        amaranth.hdl.Value
            The ``field_bits`` slice of the port holding the field.
        """
        name, _ = self.ports()[i // self.per_port]
        lo = (i % self.per_port) * self.field_bits
        return getattr(net, name)[lo : lo + self.field_bits]

    def drive(self, net, values: list) -> list:
        """Assignments of ``values`` (one per field, field 0 first; ``None``: zero) to this output bus on
        ``net``: one per port. (One per field would cost Amaranth's driver check the whole port's width
        each time: seconds at 16x16.)

        Parameters
        ----------
        net : Network
        values : list
            One Amaranth value or None per field.

        Returns
        -------
        list
            One ``Assign`` per port.
        """
        values = [Const(0, self.field_bits) if v is None else v for v in values]
        per = self.per_port
        return [
            getattr(net, name).eq(Cat(values[k * per : k * per + count]))
            for k, (name, count) in enumerate(self.ports())
        ]


def _words32(bits: int) -> int:
    return 32 * -(-bits // 32)


LOAD_BITS = 16384  # the widest load bus: Amaranth's netlist caps all top-level inputs at 65536 bits together


def entry_bits(design: Design) -> int:
    """The widest table entry of the design's routers, padded to 32-bit words.

    Parameters
    ----------
    design : Design

    Returns
    -------
    int
        Bits, a multiple of 32 (:func:`.rom.entry_layout`).
    """
    return _words32(max(entry_layout(len(design.lanes(v)), design.slots).size for v in range(design.nodes)))


def load_group(design: Design) -> int:
    """Nodes loaded in parallel: the load buses carry one group of nodes at a time (``group`` selects it).

    Parameters
    ----------
    design : Design

    Returns
    -------
    int
        1..N: as many nodes as fit :data:`LOAD_BITS` with a table entry or ``max_lanes`` flits each.
    """
    return max(1, min(design.nodes, LOAD_BITS // max(entry_bits(design), design.max_lanes * design.flit_bits)))


def buses(design: Design) -> dict[str, Bus]:
    """The load, read-back and statistics buses of a design's network top.

    Parameters
    ----------
    design : Design

    Returns
    -------
    dict of str to Bus
        ``tab_data`` (an entry per node of a group), ``load_we`` (a 32-bit-padded lane mask per
        node of a group), ``load_data`` (a flit per lane slot of a group), ``host_data`` (a flit
        per lane slot of every node) and ``busy`` (a counter per link).
    """
    t, ml, g = design.topology, design.max_lanes, load_group(design)
    return {
        b.name: b
        for b in (
            Bus("tab_data", entry_bits(design), g),
            Bus("load_we", _words32(ml), g),
            Bus("load_data", design.flit_bits, g * ml),
            Bus("host_data", design.flit_bits, t.nodes * ml),
            Bus("busy", COUNTER_BITS, len(t.links)),
        )
    }


def top_ports(net) -> tuple[list[str], list[str], dict[str, int]]:
    """The plain ports of a network top: input names, output names, and every port's bit width.

    Parameters
    ----------
    net : Network

    Returns
    -------
    tuple of (list of str, list of str, dict of str to int)
        Signature members that are ports, in signature order; stream arrays are not included.
    """
    ins, outs, widths = [], [], {}
    for name, member in net.signature.members.items():
        if member.is_port:
            (ins if member.flow == In else outs).append(name)
            widths[name] = Shape.cast(member.shape).width
    return ins, outs, widths


class Network(wiring.Component):
    """The routers of a :class:`~equimesh.rtl.design.Design`, wired along its links, and the host ports
    that load and read them (docs/architecture.md, "Schedule tables in hardware").

    The nodes' local DMA engines load their routers in parallel, one group of :func:`load_group`
    nodes at a time (``group``; node ``v`` is field ``v mod group size`` of its group): the address
    ports are shared, the data ports are buses (:class:`Bus`) with a field per node or per lane slot
    (``max_lanes`` per node): ``tab_data`` an entry per node, ``load_we`` a bit per lane slot (padded to
    32 bits per node), ``load_data`` a flit per lane slot. ``host_data`` (a flit per lane slot of every
    node) and ``busy`` (32 bits per link) cover the whole network. A bus wider than :data:`PORT_BITS`
    is split into numbered ports (``host_data_0``, ...).

    Parameters
    ----------
    design : Design
        The network design.
    packets : PacketSetup or None
        With a setup, the routers also carry MultiWrite packets over its forwarding table.
    instances : bool
        Routers as Verilog instances (for :mod:`~equimesh.rtl.verilog`) rather than submodules.

    Raises
    ------
    ValueError
        If the forwarding table is for another topology.

    Ports
    -----
    start : In(1), steps : In -- run the loaded schedule of ``steps`` timesteps (all routers together).
    done : Out(1) -- every router has written its last flit.
    group : In -- the group of nodes the load ports address.
    tab_we, tab_addr, tab_data : In -- write table entry ``tab_addr`` of every router of the group.
    load_addr, load_we, load_data : In -- write flit ``load_addr`` of the group's lanes whose bit is set.
    host_addr : In, host_data : Out -- flit ``host_addr`` of every lane, valid ``design.host_latency`` cycles later.
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
        # One named valid signal per link, for waveforms (`link<i>_<src><port>_<dst><port>`).
        self.link_signals = [
            Signal(name=f"link{i}_{l.src}{l.src_port}_{l.dst}{l.dst_port}") for i, l in enumerate(t.links)
        ]
        self.buses = buses(design)
        members = {
            "start": In(1),
            "steps": In(range(1, design.depth + 1)),
            "done": Out(1),
            "tab_we": In(1),
            "tab_addr": In(range(design.depth)),
            "group": In(max(1, (-(-t.nodes // load_group(design)) - 1).bit_length())),
            "load_addr": In(range(design.lane_flits)),
            "host_addr": In(range(design.lane_flits)),
            "link_valid": Out(len(t.links)),
            "cycles": Out(COUNTER_BITS),
        }
        for bus in self.buses.values():
            flow = Out if bus.name in ("host_data", "busy") else In
            members.update({name: flow(n * bus.field_bits) for name, n in bus.ports()})
        self.stats = Stats(len(t.links))
        if packets is not None:
            pkt = stream.Signature(packets.fmt.flit)
            self.fmt = packets.fmt
            members.update(
                {
                    "inject": In(pkt).array(t.nodes),
                    "eject": Out(pkt).array(len(self.lanes)),
                    "link_flits": Out(COUNTER_BITS).array(len(t.links)),
                    "launch": Out(1),
                }
            )
        super().__init__(members)

    def elaborate(self, platform):
        """Build the hardware: the routers, the links between them, the load and read-back buses, the statistics block.

        Parameters
        ----------
        platform : object or None
            Unused.

        Returns
        -------
        amaranth.hdl.Module
        """
        m = Module()
        d, t = self.design, self.design.topology
        ml, fb, bus, size = d.max_lanes, d.flit_bits, self.buses, load_group(d)
        routers = [
            router_ports(m, self.routers[v], f"r{v}", router_name(d, v, self.packets) if self.instances else None)
            for v in range(t.nodes)
        ]
        host_data = [None] * bus["host_data"].fields
        for v, r in enumerate(routers):
            n, (g, k) = len(d.lanes(v)), divmod(v, size)
            mine = Signal(name=f"load_r{v}")
            m.d.comb += [
                mine.eq(self.group == g),
                r["steps"].eq(self.steps),
                r["tab_we"].eq(self.tab_we & mine),
                r["tab_addr"].eq(self.tab_addr),
                r["tab_data"].eq(bus["tab_data"].field(self, k)[: len(r["tab_data"])]),
                r["load_addr"].eq(self.load_addr),
                r["load_we"].eq(bus["load_we"].field(self, k)[:n] & mine.replicate(n)),
                r["host_addr"].eq(self.host_addr),
            ]
            for i in range(n):
                m.d.comb += r["load_data"][i * fb : (i + 1) * fb].eq(bus["load_data"].field(self, k * ml + i))
                host_data[v * ml + i] = r["host_data"][i * fb : (i + 1) * fb]
        m.d.comb += bus["host_data"].drive(self, host_data)
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
            m.d.comb += [
                rx[f"{dst}__valid"].eq(tx[f"{src}__valid"]),
                rx[f"{dst}__flit"].eq(tx[f"{src}__flit"]),
                self.link_signals[i].eq(tx[f"{src}__valid"]),
            ]
            if self.packets is not None:
                m.d.comb += tx[f"{src}__ready"].eq(rx[f"{dst}__ready"])
                with m.If(tx[f"{src}__valid"] & rx[f"{dst}__ready"]):
                    m.d.sync += self.link_flits[i].eq(self.link_flits[i] + 1)
        m.d.comb += self.link_valid.eq(Cat(self.link_signals))
        m.d.comb += self.done.eq(Cat(r["done"] for r in routers).all())
        m.d.comb += [stats.done.eq(self.done), stats.link_valid.eq(self.link_valid), self.cycles.eq(stats.cycles)]
        m.d.comb += bus["busy"].drive(self, list(stats.busy))
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
            m.d.comb += [r[k].eq(value) for k, value in self.packets.forwarding(v, self.design.lanes(v)).items()]
            inj = self.inject[v]
            m.d.comb += [
                r["start"].eq(self.launch),
                r["hold"].eq(self.start | pending),
                r["inject__valid"].eq(inj.valid),
                r["inject__payload"].eq(inj.payload),
                inj.ready.eq(r["inject__ready"]),
            ]
        for k, (v, p) in enumerate(self.lanes):
            r, ej = routers[v], self.eject[k]
            m.d.comb += [
                ej.valid.eq(r[f"eject_{p}__valid"]),
                ej.payload.eq(r[f"eject_{p}__payload"]),
                r[f"eject_{p}__ready"].eq(ej.ready),
            ]
