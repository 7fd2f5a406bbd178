"""One node of a packet traffic top as a module of its own: the node's router, endpoints and counters.

:class:`PacketTile` is what :class:`~equimesh.rtl.packet_network.TrafficTop` (built with ``check``)
holds per node, with everything that tells the nodes apart as inputs: the forwarding entries
(``own``, ``reach``), the node number the generator writes into its headers, and the seeds of the
generator's and the sinks' random sources. Nodes with the same ports are then one module, which the
tiled compiled model (:mod:`equimesh.sim.tiled_traffic`) compiles once and instantiates per node, wiring the
links between instances itself.

Every signal that crosses from one tile to another is a register output: a link's ``valid`` and
``payload`` leave the sender's link register, and a receiver's ``ready`` is its input buffer's register
(the packet router's pipeline 1 and 2; pipeline 0 has combinational outputs and no tiles). A tiled
network therefore computes the same cycle as the flat top when every tile samples, at the clock edge,
its neighbours' outputs of the cycle before.

Gated clock domains. ``sync`` clocks what runs every cycle whatever the traffic: the cycle count and
the generator (its random source and source queue). ``net`` clocks the router and the link counters,
which change only while a packet is in the router or offered to it. Nothing the router reads comes from
``sync`` registers but the generator's flit, so a compiled model evaluates little of the router on
``sync``'s edges alone. The flat top has one clock; the tiled model gives ``net`` a clock of its own
(``net_clk``) and skips its edge while the tile rests:

* a cycle is *quiet* when the router holds no packet and no header waits at its injection input
  (:class:`~equimesh.rtl.packet_router.PacketPath`'s ``quiet``), the generator offers no flit and no link
  into the tile is valid;
* ``rested`` (a ``net`` register) records that the last ``net`` edge was taken in a quiet cycle: the
  registers computed from others a cycle late have then taken their quiet values. An input buffer's
  ``ready`` is one: it may still say "no room" in the first quiet cycle, and a tile asleep from then on
  would refuse its neighbour's next packet for ever;
* ``busy`` is ``~(quiet & rested)`` but for the links, and depends on registers only: the harness
  clocks ``net`` in a cycle when ``busy`` or a link into the tile is valid.

A rested tile's ``net`` edge would leave every register as it is, so skipping it changes no record; the
tiled model's records equal the flat top's word for word (``tests/test_packets_compiled.py``).

Within a busy tile the parts rest apart, each in a domain of its own:

* each network input's buffer and relay, and the injection relay
  (:func:`~equimesh.rtl.packet_router.port_domain`, ``in_<port>`` and ``in_inject``; ``PacketPath``'s
  ``port_domains``), clocked while ``busy_<port>`` or the input's link is valid. ``busy_<port>`` is
  ``~(port_quiet & rested_<port>)``, with ``port_quiet`` the path's (the buffer holds no flit, the
  relay is ``vacant``) and ``rested_<port>`` the same record as ``rested``, of that domain;
  ``busy_inject`` is also up while the generator offers a flit. An input's registers read the
  router's (the grant, the local lane's ``ready``) only while it holds a packet;
* the sinks, the checker and the ejection count (:data:`EJECT_DOMAIN`), clocked while a local lane is
  valid (``busy_eject``): a sink's random source steps, and the checker counts, only for a flit
  offered to them.

Every one of them is busy only while ``net`` is, so the harness looks at them only in the cycles it
clocks ``net``. A busy router mostly holds one packet on one input: at 8x8, 0.05 flits/node/cycle, the
inputs' domains take 11 % of their edges, the router's 42 % (``input_clocked``, ``router_clocked`` in
``--json``).
"""

from __future__ import annotations

from amaranth.hdl import Cat, DomainRenamer, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .packet_endpoints import COUNTER_BITS, RATE_BITS, Checker, Generator, Sink, endpoint_seeds
from .packet_network import PacketSetup, tree_sum
from .packet_router import PacketRouter, port_domain

__all__ = ["EJECT_DOMAIN", "GATED_DOMAIN", "NODE_INPUTS", "PacketTile", "tile_inputs"]

NODE_INPUTS = ("own", "reach", "node", "gen_seed", "sink_seed")  # what tells the nodes' tiles apart
GATED_DOMAIN = "net"  # the domain the tiled model clocks only while the tile is busy (module docstring)
EJECT_DOMAIN = "eject"  # the sinks' and the checker's, clocked while a local lane is valid (module docstring)


class PacketTile(wiring.Component):
    """A packet router with its node's :class:`Generator`, :class:`Sink` and :class:`Checker`.

    Parameters
    ----------
    setup : PacketSetup
        The network's packets (format, buffer depth).
    ports : list of str
        The router's network ports, in order.
    depth : int
        Entries of the generator's bitmap table.
    pipeline : int
        The router's pipeline depth, 1 or 2 (see the module docstring).

    Ports
    -----
    i_<port>, o_<port> : the router's links (:class:`~equimesh.rtl.packet_router.PacketRouter`).
    own, reach : the router's forwarding entries.
    node : In(src_bits)  -- the generator's ``src``.
    gen_seed : In(32), sink_seed : In(16).array(lanes)  -- the random sources' seeds (:func:`endpoint_seeds`).
    stop, rate, stall, table_len, backlog : as :class:`~equimesh.rtl.packet_network.TrafficTop`'s (the first
        three registered as there).
    table_we, table_addr, table_data, table_limit : this generator's table write port.
    created, sent, count, key_sum, key_sq_sum, header_errors, payload_errors : Out(32)  -- this node's
        counters (:class:`TrafficTop`'s per node, or its summands).
    ejected : Out(32)  -- flits this node's sinks took.
    link_flits : Out(32).array(ports)  -- flits sent on each output link.
    copy_done : Out(lanes), copy_stamp : Out(32).array(lanes)  -- this node's lanes, one per port.
    busy : Out(1)  -- the ``net`` domain's edge is needed even if no link into the tile is valid (see the
        module docstring); a function of registers only.
    busy_<port> : Out(1)  -- the same for network input ``port``'s domain, ``busy_inject`` for the injection
        input's and ``busy_eject`` for :data:`EJECT_DOMAIN` (see the module docstring).
    """

    def __init__(self, setup: PacketSetup, ports: list[str], depth: int, pipeline: int):
        if pipeline < 1:
            raise ValueError("a packet tile needs registered links (pipeline 1 or 2)")
        self.setup, self.ports, self.depth, self.pipeline = setup, list(ports), depth, pipeline
        fmt, lanes = setup.fmt, len(ports)
        self.router = PacketRouter(setup.config, self.ports, pipeline, port_domains=True)
        members = {n: m for n, m in self.router.signature.members.items() if not n.startswith(("inject", "eject"))}
        members.update(
            {
                "node": In(fmt.src_bits),
                "gen_seed": In(32),
                "sink_seed": In(RATE_BITS).array(lanes),
                "stop": In(1),
                "rate": In(RATE_BITS + 1),
                "stall": In(RATE_BITS + 1),
                "table_len": In(range(depth + 1)),
                "backlog": In(COUNTER_BITS),
                "table_we": In(1),
                "table_addr": In(range(depth)),
                "table_data": In(fmt.nodes),
                "table_limit": In(COUNTER_BITS),
                **{n: Out(COUNTER_BITS) for n in _COUNTERS},
                "ejected": Out(COUNTER_BITS),
                "link_flits": Out(COUNTER_BITS).array(lanes),
                "copy_done": Out(lanes),
                "copy_stamp": Out(COUNTER_BITS).array(lanes),
                "busy": Out(1),
                **{f"busy_{p}": Out(1) for p in [*self.ports, "inject", "eject"]},
            }
        )
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        fmt, router, lanes = self.setup.fmt, self.router, len(self.ports)
        m.submodules.router = DomainRenamer(GATED_DOMAIN)(router)
        now = Signal(COUNTER_BITS)
        m.d.sync += now.eq(now + 1)
        stop, rate, stall = Signal(init=1), Signal.like(self.rate), Signal.like(self.stall)
        # ``stall`` as a ``net`` register: the host sets it before the traffic, and no flit is ejected in a
        # router's first edge after a rest (its packet must arrive first), so it has been loaded by then.
        m.d.sync += [stop.eq(self.stop), rate.eq(self.rate)]
        m.d[GATED_DOMAIN] += stall.eq(self.stall)
        m.d.comb += [router.own.eq(self.own), router.reach.eq(self.reach)]
        for k, p in enumerate(self.ports):
            wiring.connect(m, wiring.flipped(getattr(self, f"i_{p}")), getattr(router, f"i_{p}"))
            wiring.connect(m, getattr(router, f"o_{p}"), wiring.flipped(getattr(self, f"o_{p}")))
            out = getattr(self, f"o_{p}")
            with m.If(out.valid & out.ready):
                m.d[GATED_DOMAIN] += self.link_flits[k].eq(self.link_flits[k] + 1)
        m.submodules.gen = gen = Generator(fmt, self.depth)
        wiring.connect(m, gen.o, router.inject)
        m.d.comb += [
            gen.node.eq(self.node),
            gen.seed.eq(self.gen_seed),
            gen.stop.eq(stop),
            gen.rate.eq(rate),
            gen.length.eq(self.table_len),
            gen.backlog.eq(self.backlog),
            gen.we.eq(self.table_we),
            gen.addr.eq(self.table_addr),
            gen.data.eq(self.table_data),
            gen.limit.eq(self.table_limit),
            gen.now.eq(now),
            self.created.eq(gen.created),
            self.sent.eq(gen.sent),
        ]
        sink = Sink(fmt, lanes)
        m.submodules.sink = DomainRenamer(EJECT_DOMAIN)(sink)
        chk = Checker(fmt, lanes)
        m.submodules.check = DomainRenamer(EJECT_DOMAIN)(chk)
        m.d.comb += [sink.stall.eq(stall), chk.own.eq(self.own)]
        ejects = [getattr(router, f"eject_{p}") for p in self.ports]
        for k, e in enumerate(ejects):
            wiring.connect(m, e, sink.i[k])
            c = chk.i[k]
            m.d.comb += [
                sink.seed[k].eq(self.sink_seed[k]),
                c.valid.eq(e.valid),
                c.ready.eq(e.ready),
                c.payload.eq(e.payload),
                self.copy_stamp[k].eq(chk.stamp[k]),
            ]
        m.d.comb += self.copy_done.eq(chk.done)
        m.d.comb += [getattr(self, n).eq(getattr(chk, n)) for n in _COUNTERS[2:]]
        took = Signal(range(lanes + 1))
        m.d.comb += took.eq(tree_sum([e.valid & e.ready for e in ejects]))
        m.d[EJECT_DOMAIN] += self.ejected.eq(self.ejected + took)
        m.d.comb += self.busy_eject.eq(Cat(e.valid for e in ejects).any())
        # The router and each input rest the same way (module docstring); the generator's flit, a register of
        # the tile, counts against quiet, a link's ``valid`` only against the record (the harness wakes on it).
        links = [getattr(self, f"i_{p}").valid for p in self.ports]
        _rest(m, GATED_DOMAIN, router.path.quiet & ~gen.o.valid, Cat(*links).any(), self.busy, "rested")
        for k, p in enumerate(self.ports):
            _rest(m, port_domain(p), router.path.port_quiet[k], links[k], getattr(self, f"busy_{p}"), f"rested_{p}")
        quiet = router.path.port_quiet[len(self.ports)] & ~gen.o.valid
        _rest(m, port_domain("inject"), quiet, 0, self.busy_inject, "rested_inject")
        return m


def _rest(m: Module, domain: str, quiet: Value, arriving: Value, busy: Value, name: str) -> None:
    """Drive ``busy`` (``~(quiet & rested)``) for ``domain``: ``rested`` (a register of the domain, named
    ``name``) records that its last edge was taken in a quiet cycle with nothing ``arriving``."""
    rested = Signal(name=name)
    m.d.comb += busy.eq(~(quiet & rested))
    m.d[domain] += rested.eq(quiet & ~arriving)


# The node's counters: the generator's two, then the checker's.
_COUNTERS = ("created", "sent", "count", "key_sum", "key_sq_sum", "header_errors", "payload_errors")


def tile_inputs(setup: PacketSetup, v: int, ports: list[str]) -> dict[str, int | list[int]]:
    """Node ``v``'s values of a :class:`PacketTile`'s per-node inputs.

    Parameters
    ----------
    setup : PacketSetup
        The network's packets.
    v : int
        The node.
    ports : list of str
        Its router's network ports.

    Returns
    -------
    dict
        :data:`NODE_INPUTS`: ``own``, ``reach``, ``node``, ``gen_seed`` (ints) and ``sink_seed`` (one int
        per lane).
    """
    seeds = endpoint_seeds(v, len(ports))
    return {**setup.forwarding(v, ports), "node": v, "gen_seed": seeds["gen"], "sink_seed": seeds["sink"]}
