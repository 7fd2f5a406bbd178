"""The packet network: one :class:`~equimesh.rtl.packet_router.PacketRouter` per node, wired along
the topology's links, and :class:`TrafficTop`, the network with its endpoints.

The forwarding table is checked for deadlock freedom before elaboration
(:func:`~equimesh.schedules.routing.check_deadlock_free`); each router's
forwarding inputs are tied to its node's entries (its bit and its ``reach``
masks, :meth:`PacketSetup.forwarding`), so routers with the same ports are one
Verilog module. Every link has a flit counter (Constellation: a utilization
counter per channel); flit-hops = the sum of the counters.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..schedules.routing import ForwardingTable, check_deadlock_free
from .instance import router_ports
from .packet import FLIT_BITS, PacketFormat
from .packet_endpoints import COUNTER_BITS, RATE_BITS, Checker, Generator, Sink, endpoint_seeds
from .packet_router import PacketConfig, PacketRouter
from .timing import DEFAULT_PIPELINE

__all__ = [
    "PacketNetwork",
    "PacketSetup",
    "TABLE_BITS",
    "Tied",
    "TrafficLoad",
    "TrafficTop",
    "host_ports",
    "monitor_signature",
    "packet_router_name",
    "tree_sum",
]


class PacketSetup:
    """Packets on a network: the forwarding table (checked for deadlock freedom here), the packet
    format (``flit_bits``: a router for schedules and packets takes its :class:`~equimesh.rtl.design.Design`'s)
    and the input buffer depth (``packet_flits + 2`` unless given). The routers' pipeline depth is not
    here: a :class:`PacketNetwork`'s own, or the :class:`~equimesh.rtl.design.Design`'s for the routers
    carrying both modes.

    Parameters
    ----------
    table : ForwardingTable
        The MultiWrite forwarding table (seed 004, Section 4.3); a table whose channel dependency graph
        has a cycle raises :class:`~equimesh.schedules.routing.DeadlockError`.
    payload_flits : int
        Payload flits per packet.
    depth : int, optional
        Input buffer depth in flits (default ``packet_flits + 2``).
    flit_bits : int
        Width of a flit's body.
    """

    def __init__(
        self,
        table: ForwardingTable,
        payload_flits: int,
        depth: int | None = None,
        flit_bits: int = FLIT_BITS,
    ):
        check_deadlock_free(table)
        self.table = table
        self.fmt = PacketFormat(table.topology.nodes, payload_flits, flit_bits)
        self.depth = depth or self.fmt.packet_flits + 2
        self.config = PacketConfig(self.fmt, self.depth)

    def forwarding(self, v: int, ports: list[str]) -> dict[str, int]:
        """Node ``v``'s forwarding entries, the values of a router's ``own`` and ``reach`` inputs
        (``reach[k]``, for network port ``ports[k]``, in bits ``k * nodes`` and up)."""
        n, reach = self.fmt.nodes, self.table.reach[v]
        return {"own": 1 << v, "reach": sum(reach[p] << (k * n) for k, p in enumerate(ports))}

    def for_node(self, router, v: int, ports: list[str]) -> Tied:
        """``router`` (a packet router, or a scheduled router built with packets) with its forwarding
        inputs tied to node ``v``'s entries: what synthesis measures, as for a router built for ``v``."""
        return Tied(router, self.forwarding(v, ports))

    @property
    def buffer_bits(self) -> int:
        """Memory bits of one input buffer: ``depth`` flits."""
        return self.depth * self.fmt.flit.size


def tree_sum(terms: list):
    """The sum of many values as a balanced adder tree (a linear chain of hundreds of adds is
    as deep in logic, and too deep for the Amaranth simulator's recursive compiler).

    Parameters
    ----------
    terms : list
        The values (Amaranth values or numbers), at least one.

    Returns
    -------
    Value
        Their sum, pairwise.
    """
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def monitor_signature(fmt: PacketFormat) -> wiring.Signature:
    """A copy of one stream's handshake and payload, for test benches and the checker.

    Parameters
    ----------
    fmt : PacketFormat
        The packet format (the payload's layout, ``fmt.flit``).

    Returns
    -------
    wiring.Signature
        ``valid``, ``ready`` and ``payload``, all outputs.
    """
    return wiring.Signature({"valid": Out(1), "ready": Out(1), "payload": Out(fmt.flit)})


class Tied(wiring.Component):
    """``inner`` with some inputs tied to constants (``values``, by member name); its other ports are
    this component's. Synthesis flattens it, so the constants propagate into the logic.

    Parameters
    ----------
    inner : wiring.Component
        The component to wrap.
    values : dict[str, int]
        The constants, by member name of ``inner``'s signature.
    """

    def __init__(self, inner: wiring.Component, values: dict[str, int]):
        self.inner, self.values = inner, dict(values)
        super().__init__({n: m for n, m in inner.signature.members.items() if n not in self.values})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        m.d.comb += [Value.cast(getattr(inner, name)).eq(value) for name, value in self.values.items()]
        theirs = {path: value for path, _, value in inner.signature.flatten(inner)}
        for path, member, ours in self.signature.flatten(self):
            a, b = Value.cast(ours), Value.cast(theirs[path])
            m.d.comb += b.eq(a) if member.flow == In else a.eq(b)
        return m


def packet_router_name(ports: list[str]) -> str:
    """The Verilog module name of a packet router: its port count (network ports plus inject) and ports.

    Parameters
    ----------
    ports : list of str
        The router's network ports, in order.

    Returns
    -------
    str
        ``packet_router_<n>port_<ports>``.
    """
    return f"packet_router_{len(ports) + 1}port_{''.join(ports)}"


class PacketNetwork(wiring.Component):
    """Routers and links of ``table.topology``.

    Parameters
    ----------
    table : ForwardingTable
        The forwarding table; its topology gives the routers and links.
    payload_flits : int
        Payload flits per packet.
    depth : int, optional
        Input buffer depth in flits (:class:`PacketSetup`).
    pipeline : int
        The routers' pipeline depth (:class:`~equimesh.rtl.packet_router.PacketRouter`).
    instances : bool
        Routers as Verilog instances of one module per port set, instead of Amaranth submodules.
    flit_bits : int
        Width of a flit's body.

    Ports
    -----
    inject : In(stream).array(nodes)
    eject : Out(stream).array(lanes)  -- lane ``k`` is ``lanes[k] = (node, port)``: local copies
        that reached ``node`` through ``port``.
    link_flits : Out(32).array(links)  -- flits carried by each link.

    ``instances``: the routers are Verilog instances of one module per distinct port set
    (``self.designs``: module name -> :class:`PacketRouter`, for :mod:`~equimesh.rtl.verilog`);
    otherwise Amaranth submodules (for the Amaranth simulator).
    """

    def __init__(
        self,
        table: ForwardingTable,
        payload_flits: int,
        depth: int | None = None,
        pipeline: int = DEFAULT_PIPELINE,
        instances: bool = False,
        flit_bits: int = FLIT_BITS,
    ):
        self.setup = PacketSetup(table, payload_flits, depth, flit_bits)
        self.pipeline = pipeline
        self.table, self.fmt, self.instances = table, self.setup.fmt, instances
        topo = table.topology
        self.designs = {}
        for v in range(topo.nodes if instances else 0):
            name = packet_router_name(topo.ports(v))
            if name not in self.designs:
                self.designs[name] = PacketRouter(self.setup.config, topo.ports(v), pipeline)
        self.lanes = [(v, p) for v in range(topo.nodes) for p in topo.ports(v)]
        flit = stream.Signature(self.fmt.flit)
        super().__init__(
            {
                "inject": In(flit).array(topo.nodes),
                "eject": Out(flit).array(len(self.lanes)),
                "link_flits": Out(COUNTER_BITS).array(len(topo.links)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        topo = self.table.topology
        routers = []
        for v in range(topo.nodes):
            ports, name = topo.ports(v), packet_router_name(topo.ports(v))
            r = router_ports(
                m,
                self.designs[name] if self.instances else PacketRouter(self.setup.config, ports, self.pipeline),
                f"router_{v}",
                name if self.instances else None,
            )
            routers.append(r)
            m.d.comb += [r[k].eq(value) for k, value in self.setup.forwarding(v, ports).items()]
            inj = self.inject[v]
            m.d.comb += [
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
        for i, l in enumerate(topo.links):
            tx, rx = routers[l.src], routers[l.dst]
            src, dst = f"o_{l.src_port}", f"i_{l.dst_port}"
            m.d.comb += [
                rx[f"{dst}__valid"].eq(tx[f"{src}__valid"]),
                rx[f"{dst}__payload"].eq(tx[f"{src}__payload"]),
                tx[f"{src}__ready"].eq(rx[f"{dst}__ready"]),
            ]
            with m.If(tx[f"{src}__valid"] & rx[f"{dst}__ready"]):
                m.d.sync += self.link_flits[i].eq(self.link_flits[i] + 1)
        return m


def host_ports(net) -> list[str]:
    """The scheduled network's host and statistics ports (rtl/network.py) that TrafficTop passes through.

    Parameters
    ----------
    net : Network
        A scheduled :class:`~equimesh.rtl.network.Network` built with packets.

    Returns
    -------
    list of str
        The member names: the table and load ports, ``cycles`` and every statistics bus's ports.
    """
    names = ["steps", "group", "tab_we", "tab_addr", "load_addr", "host_addr", "cycles"]
    return names + [name for bus in net.buses.values() for name, _ in bus.ports()]


# The bitmap tables' write bus: data bits per load frame (with a scheduled network's load buses, the
# top's inputs stay under Amaranth's 65536 bits).
TABLE_BITS = 16384


class TrafficLoad:
    """How the host loads the generators' bitmap tables (:class:`TrafficTop`): ``group`` nodes per
    frame (node ``v`` is field ``v mod group`` of group ``v // group``), one entry address per frame;
    a field is a bitmap padded to 32-bit words, and a 32-bit packet limit per node beside it.

    Parameters
    ----------
    nodes : int
        Nodes of the network (one generator, one table field each).

    Attributes
    ----------
    field_bits : int
        Bits of one node's field: its bitmap padded to 32-bit words.
    group : int
        Nodes per frame (fields in :data:`TABLE_BITS`, at most ``nodes``).
    groups : int
        Frames per table entry.
    """

    def __init__(self, nodes: int):
        self.field_bits = 32 * -(-nodes // 32)
        self.group = max(1, min(nodes, TABLE_BITS // self.field_bits))
        self.groups = -(-nodes // self.group)


class TrafficTop(wiring.Component):
    """A network with a :class:`Generator` and a :class:`Sink` per node (and a :class:`Checker` if asked).

    ``net`` is a :class:`PacketNetwork`, or a scheduled :class:`~equimesh.rtl.network.Network` built
    with ``packets`` (then ``start``, ``done``, ``launch``, ``link_valid``, the host's load and read
    ports and the statistics block's counters pass through). The traffic is not part of the design:
    the host loads every generator's table of ``depth`` bitmaps (:class:`TrafficLoad`) and sets the
    rate, the sources' backlog, the sinks' stall probability and the table length before a run
    (:func:`equimesh.sim.traffic.traffic_load`).

    Parameters
    ----------
    net : PacketNetwork or Network
        The network the endpoints surround.
    depth : int
        Entries of each generator's bitmap table.
    check : bool
        Add a :class:`Checker` per node and its counters (the compiled soak), instead of the monitor ports.

    Ports
    -----
    stop : In(1)  -- generators create no new packet (from the next cycle on, as ``rate`` and ``stall``).
    rate, stall : In(17)  -- creation and backpressure probabilities (/ 2**16).
    table_len : In(range(depth + 1))  -- table entries in use.
    backlog : In(32)  -- the most packets a source queue holds (0: no bound; :class:`Generator`).
    table_we, table_group, table_addr : In  -- write entry ``table_addr`` of group ``table_group``'s tables;
    table_data : In(group x field_bits), table_limit : In(group x 32)  -- the group's bitmaps and packet limits.
    created : Out(32).array(nodes)  -- packets created per node (the offered load).
    sent : Out(32).array(nodes)  -- packets injected per node.
    ejected : Out(32)  -- flits taken by all sinks (progress, for the watchdog).
    link_flits : Out(32).array(links)
    without ``check``: inject_mon : Out(monitor).array(nodes), eject_mon : Out(monitor).array(lanes), for
        a per-flit scoreboard in Python;
    with ``check``: count, key_sum, key_sq_sum : Out(32).array(nodes) (per receiving node),
        header_errors, payload_errors : Out(32) (summed over nodes), copy_done : Out(lanes) (lane ``k`` takes
        a copy's last flit) and copy_stamp : Out(32).array(lanes) (that copy's injection cycle, ``now`` when the
        source's router took its header; one port per lane, as Amaranth writes no wire over 2**16 bits and a
        32x32 network has 4,096 lanes): the compiled model's harness logs the latency of every copy from them.
    """

    def __init__(self, net, depth: int, check: bool):
        self.net = net
        self.designs = net.designs if net.instances else {}  # router modules, for top_verilog
        self.fmt = fmt = net.fmt
        self.scheduled = "launch" in net.signature.members
        self.depth, self.check = depth, check
        self.load = load = TrafficLoad(fmt.nodes)
        nodes = fmt.nodes
        members = {
            "stop": In(1),
            "rate": In(RATE_BITS + 1),
            "stall": In(RATE_BITS + 1),
            "table_len": In(range(depth + 1)),
            "backlog": In(COUNTER_BITS),
            "table_we": In(1),
            "table_group": In(range(max(2, load.groups))),
            "table_addr": In(range(depth)),
            "table_data": In(load.group * load.field_bits),
            "table_limit": In(load.group * COUNTER_BITS),
            "created": Out(COUNTER_BITS).array(nodes),
            "sent": Out(COUNTER_BITS).array(nodes),
            "ejected": Out(COUNTER_BITS),
            "link_flits": Out(COUNTER_BITS).array(len(net.link_flits)),
        }
        if not check:
            members.update(
                {
                    "inject_mon": Out(monitor_signature(fmt)).array(nodes),
                    "eject_mon": Out(monitor_signature(fmt)).array(len(self.net.lanes)),
                }
            )
        if self.scheduled:
            members.update({"start": In(1), "done": Out(1), "launch": Out(1), "link_valid": Out(len(net.link_valid))})
            members.update({name: net.signature.members[name] for name in host_ports(net)})
        if check:
            members.update(
                {
                    "count": Out(COUNTER_BITS).array(nodes),
                    "key_sum": Out(COUNTER_BITS).array(nodes),
                    "key_sq_sum": Out(COUNTER_BITS).array(nodes),
                    "header_errors": Out(COUNTER_BITS),
                    "payload_errors": Out(COUNTER_BITS),
                    "copy_done": Out(len(net.lanes)),
                    "copy_stamp": Out(COUNTER_BITS).array(len(net.lanes)),
                }
            )
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        fmt, net, load = self.fmt, self.net, self.load
        m.submodules.net = net
        nodes = fmt.nodes
        chks = []
        now = Signal(COUNTER_BITS)  # cycles since reset: the generators stamp their headers with it
        m.d.sync += now.eq(now + 1)
        # The host's controls take effect a cycle after they are set: through a register, no logic of the
        # network depends combinationally on the model's inputs, so a compiled model evaluates it once per
        # cycle (on the clock edge), not again whenever an input changes.
        stop, rate, stall = Signal(init=1), Signal.like(self.rate), Signal.like(self.stall)
        m.d.sync += [stop.eq(self.stop), rate.eq(self.rate), stall.eq(self.stall)]
        m.d.comb += [self.link_flits[i].eq(net.link_flits[i]) for i in range(len(net.link_flits))]
        if self.scheduled:
            m.d.comb += [
                net.start.eq(self.start),
                self.done.eq(net.done),
                self.launch.eq(net.launch),
                self.link_valid.eq(net.link_valid),
            ]
            for name in host_ports(net):
                mine, theirs = getattr(self, name), getattr(net, name)
                m.d.comb += theirs.eq(mine) if net.signature.members[name].flow == In else mine.eq(theirs)
        # Lane k's copy completions, assigned to the lanes-wide port in one statement after the loop (Amaranth
        # checks every bit of a statement's target: a statement per lane took minutes at 32x32).
        done = [None] * len(net.lanes)
        for v in range(nodes):
            lanes = [k for k, (u, _) in enumerate(net.lanes) if u == v]
            seeds = endpoint_seeds(v, len(lanes))
            gen = Generator(fmt, self.depth)
            m.submodules[f"gen_{v}"] = gen
            wiring.connect(m, gen.o, net.inject[v])
            field = v % load.group
            m.d.comb += [
                gen.node.eq(v),
                gen.seed.eq(seeds["gen"]),
                gen.stop.eq(stop),
                gen.rate.eq(rate),
                gen.length.eq(self.table_len),
                gen.backlog.eq(self.backlog),
                gen.we.eq(self.table_we & (self.table_group == v // load.group)),
                gen.addr.eq(self.table_addr),
                gen.data.eq(self.table_data[field * load.field_bits :][:nodes]),
                gen.limit.eq(self.table_limit[field * COUNTER_BITS :][:COUNTER_BITS]),
                gen.now.eq(now),
                self.created[v].eq(gen.created),
                self.sent[v].eq(gen.sent),
            ]
            if not self.check:
                mon = self.inject_mon[v]
                m.d.comb += [mon.valid.eq(gen.o.valid), mon.ready.eq(gen.o.ready), mon.payload.eq(gen.o.payload)]
            sink = Sink(fmt, len(lanes))
            m.submodules[f"sink_{v}"] = sink
            m.d.comb += [sink.stall.eq(stall)] + [sink.seed[j].eq(x) for j, x in enumerate(seeds["sink"])]
            for j, k in enumerate(lanes):
                wiring.connect(m, net.eject[k], sink.i[j])
            if self.check:
                chk = Checker(fmt, len(lanes))
                m.submodules[f"check_{v}"] = chk
                m.d.comb += chk.own.eq(1 << v)
                chks.append(chk)
                for j, k in enumerate(lanes):
                    e, c = net.eject[k], chk.i[j]
                    m.d.comb += [c.valid.eq(e.valid), c.ready.eq(e.ready), c.payload.eq(e.payload)]
                    done[k] = chk.done[j]
                    m.d.comb += self.copy_stamp[k].eq(chk.stamp[j])
                m.d.comb += [
                    self.count[v].eq(chk.count),
                    self.key_sum[v].eq(chk.key_sum),
                    self.key_sq_sum[v].eq(chk.key_sq_sum),
                ]
        took = Signal(range(len(net.lanes) + 1))
        m.d.comb += took.eq(tree_sum([e.valid & e.ready for e in net.eject]))
        m.d.sync += self.ejected.eq(self.ejected + took)
        if not self.check:
            for mon, e in zip(self.eject_mon, net.eject):
                m.d.comb += [mon.valid.eq(e.valid), mon.ready.eq(e.ready), mon.payload.eq(e.payload)]
        else:
            m.d.comb += self.copy_done.eq(Cat(*done))
            for name in ("header_errors", "payload_errors"):
                m.d.comb += getattr(self, name).eq(tree_sum([getattr(c, name) for c in chks]))
        return m
