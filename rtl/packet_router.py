"""The packet router: input buffers, one :class:`~equimesh.rtl.relay.Relay` per input, an allocator,
and the crossbar of the schedule-driven router (:class:`~equimesh.rtl.crossbar.Crossbar`).

:class:`PacketPath` is all of it but the crossbar; :class:`PacketRouter` adds a
crossbar of its own, and the scheduled router (``rtl/router.py``, with
``packets=``) shares its crossbar and links with it.

Datapath of one router with network ports ``P`` (seed 000, Section III-B: the
mesh's N/E/S/W, an EquiMesh ring entering and leaving through its edge's port):

* inputs: one :class:`InputBuffer` per network port, plus ``inject`` (the local
  generator, unbuffered: the source holds its flit until it is taken);
* each input's relay asks for the outputs its header needs (``req``);
* :class:`Allocator` grants a header all its outputs at once, round robin over
  the inputs;
* the crossbar moves each input's head flit to the outputs it owns; each output
  rewrites the header bitmap to ``bitmap & reach[port]``;
* local delivery: one ``eject_<port>`` lane per network input (the local copy
  leaves on the lane of the port it arrived on, so a node can take a flit from
  every in-link in the same cycle, like the per-port lanes of the scheduled
  router). Its header is rewritten to the router's own bit.

Pipeline (``pipeline`` 1, and 2, the default, which deepens only the schedule
path; the stage of every register in ``rtl/relay.py``): the route is registered
ahead of allocation (stage Q), the
allocator is :class:`MatrixAllocator` with its grant registered (stage A), each
output's owner is registered at the grant and is the crossbar select (stage
G), and every output has a link register (stage L) with the header rewrite
behind it; the input buffers' ``ready`` is a register, and so is whether an
output is free for the allocator (no owner, link register empty), ANDed with
its receiver's ``ready``. The link register needs
no second entry and the relays no per-flit ``ready`` from the network outputs:
with virtual cut-through (below) a receiver refuses no flit of a granted packet
(an assertion checks it on every output), so only the local delivery can hold an
input. Pipeline 0: the
round robin :class:`Allocator`, crossbar selects and outputs combinational.

Virtual cut-through: a receiver takes a header only when its buffer has room
for the whole packet (:class:`InputBuffer`), and the allocator grants only when
every requested output's receiver takes the header. A granted packet then never
waits on a network link, which is why multicast replication adds no channel
dependency (:mod:`equimesh.schedules.routing`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce

from amaranth.hdl import Assert, Cat, Const, DomainRenamer, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .crossbar import Crossbar, select_layout
from .flit import WORD_BITS, flit_layout
from .packet import Opcode, PacketFormat
from .relay import Relay, forwarding_ports, mask_word, position, rewrite
from .timing import DEFAULT_PIPELINE

__all__ = [
    "Allocator",
    "InputBuffer",
    "MatrixAllocator",
    "PacketConfig",
    "PacketPath",
    "PacketRouter",
    "packet_ports",
    "port_domain",
]


class InputBuffer(wiring.Component):
    """A FIFO of ``depth`` >= packet length flits, ready for a header only when the whole packet fits.

    Storage (as ``SyncFIFO``): a memory of ``depth`` entries read without a clock at the read pointer,
    which is the head (``o``): a flit written in cycle ``t`` is the head in ``t + 1``. An FPGA maps it
    to distributed RAM (ECP5 ``TRELLIS_DPR16X4``, 16 entries each). The read, which is the relay's
    release and so ends the router's longest decision, changes only pointers and fill levels, a few
    flip-flops: no flit-wide register waits on it (a registered head would need the release at every
    one of its flip-flops' enables). Each fill level is a thermometer code (bit ``i``: more than ``i``
    flits) that shifts up on a write and down on a read, and "is there room for a packet" is one bit
    of a code (no adder, no comparator).

    Presentation (``shown``, ``advance``; seed 004, Section 6.4: the bitmap words follow the header).
    The relay pops a packet's header and bitmap words to parse them before the packet is granted
    (:mod:`~equimesh.rtl.relay`), and presents them afterwards. They stay in the memory until
    presented: a second read port at the presentation pointer ``show`` (one step per ``advance``) is
    the flit the relay presents, the header, the bitmap words, then the payload, when ``show`` has
    caught up with the read pointer and the two move together. So the crossbar takes every flit of
    a packet from the memory, one flip-flop (``show``) and a memory read away: no multiplexer between
    the relay's registers and the input's head. Two levels: ``level`` counts the flits not yet popped
    (the head is valid when it is not zero), ``fill`` those not yet presented, the popped header and
    bitmap words included; room, and so ``i.ready``, is counted on ``fill``, so a write never
    overwrites a flit waiting to be presented and the memory needs no entries beyond ``depth``.
    Counting the kept words changes no cycle for a packet of more than ``depth - packet_flits``
    payload flits (the default ``depth`` is ``packet_flits + 2``): a header is ready to be taken only
    when at most that many flits are inside, and while the previous packet still has words to present
    none of its payload has been popped.

    With ``registered`` (pipeline 1) ``i.ready`` is a register: computed a cycle ahead from the fill
    after this cycle's write, counting no presentation (so it never promises room that is not there
    yet); within a packet it stays up, the room for the whole packet was there when its header came.

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    depth : int
        Flits it holds, at least a packet's (``fmt.packet_flits``) and 2.
    registered : bool
        ``i.ready`` from a register (pipeline 1), see above.

    Ports
    -----
    i : In(stream)  -- the link. ``i.ready`` depends only on registers (the fill level and
        whether a packet is half received), never on ``i.valid`` or the payload.
    o : Out(stream)  -- the head flit, for the relay to parse and pop.
    shown : Out(flit)  -- the flit at the presentation pointer.
    advance : In(1)  -- the shown flit was presented; the consumer advances ``show`` only past flits it
        popped or pops in the same cycle.
    empty : Out(1)  -- no flit buffered.
    """

    def __init__(self, fmt: PacketFormat, depth: int, registered: bool = False):
        if depth < max(2, fmt.packet_flits):
            raise ValueError(f"input buffer depth {depth} is smaller than a packet ({fmt.packet_flits} flits)")
        self.fmt, self.depth, self.registered = fmt, depth, registered
        flit = stream.Signature(fmt.flit)
        super().__init__({"i": In(flit), "o": Out(flit), "shown": Out(fmt.flit), "advance": In(1), "empty": Out(1)})

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        m.submodules.mem = mem = Memory(shape=self.fmt.flit, depth=depth, init=[])
        wr, rd, present = mem.write_port(), mem.read_port(domain="comb"), mem.read_port(domain="comb")
        produce, consume, show = Signal(range(depth)), Signal(range(depth)), Signal(range(depth))

        def step(ptr):  # the next entry
            return ptr.eq(Mux(ptr == depth - 1, 0, ptr + 1))

        level = Signal(depth)  # thermometer: bit i = more than i flits not yet popped
        fill = Signal(depth)  # thermometer: bit i = more than i flits not yet presented

        def at_most(n):  # the memory holds at most n flits not yet presented
            return Const(int(n >= 0), 1) if not 0 <= n < depth else ~fill[n]

        def count(code, up, down):  # a thermometer code's next value
            inc, dec = Cat(Const(1, 1), code[:-1]), Cat(code[1:], Const(0, 1))
            return Mux(up, Mux(down, code, inc), Mux(down, dec, code))

        take = self.i.valid & self.i.ready
        pop = self.o.valid & self.o.ready
        between = Signal(init=1)  # the next flit on the link is a header
        room = depth - self.fmt.packet_flits  # the most flits inside that leave room for a packet
        if self.registered:
            ready = Signal(init=1)
            nxt_between = Mux(take, self.i.payload.last, between)
            m.d.sync += ready.eq(~nxt_between | Mux(take, at_most(room - 1), at_most(room)))
            m.d.comb += self.i.ready.eq(ready)
        else:
            m.d.comb += self.i.ready.eq(at_most(depth - 1) & (~between | at_most(room)))
        m.d.sync += [level.eq(count(level, take, pop)), fill.eq(count(fill, take, self.advance))]
        m.d.comb += [
            wr.addr.eq(produce),
            wr.data.eq(self.i.payload),
            wr.en.eq(take),
            rd.addr.eq(consume),
            self.o.payload.eq(rd.data),
            present.addr.eq(show),
            self.shown.eq(present.data),
            self.o.valid.eq(level[0]),
            self.empty.eq(~level[0]),
        ]
        with m.If(take):
            m.d.sync += [step(produce), between.eq(self.i.payload.last)]
        with m.If(pop):
            m.d.sync += step(consume)
        with m.If(self.advance):
            m.d.sync += step(show)
        m.d.sync += [
            Assert(~take | (self.i.payload.first == between), "input buffer: packets interleaved on a link"),
            Assert(between | ~self.i.valid | at_most(depth - 1), "input buffer: a packet body waited for room"),
            Assert(~take | at_most(depth - 1), "input buffer: a flit written into a full buffer"),
            Assert(~self.advance | pop | (show != consume), "input buffer: a flit presented before it was popped"),
        ]
        return m


class Allocator(wiring.Component):
    """All-or-nothing output allocation, round robin over ``inputs``.

    Each cycle the inputs are visited from the priority pointer on. A waiting
    header is granted when none of its requested outputs is busy, refusing, or
    granted to an input visited before it. The pointer leaves an input only once
    that input is served or idle, so the oldest waiting input has first pick
    whenever its outputs are free together.

    A waiting input reserves nothing: if it did, another input of the router
    would wait for the outputs *it* waits for, a dependency outside the routing
    function that closes cycles in the channel dependency graph (the first
    version did this and deadlocked the 2x3 mesh at 20% load). The price is
    that a wide multicast has no hard bound on its wait for all its outputs to
    be free in the same cycle; the soak measures that it still gets through.

    Parameters
    ----------
    inputs : int
        The router's inputs (network inputs and ``inject``).
    outputs : int
        Its network outputs.

    Ports
    -----
    pending : In(inputs), req : In(ArrayLayout(outputs, inputs)) -- from the relays.
    free : In(outputs)  -- output not owned and its receiver ready for a header.
    grant : Out(inputs)
    """

    def __init__(self, inputs: int, outputs: int):
        self.inputs, self.outputs = inputs, outputs
        super().__init__(
            {
                "pending": In(inputs),
                "req": In(outputs).array(inputs),
                "free": In(outputs),
                "grant": Out(inputs),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.inputs
        ptr = Signal(range(n))
        grants = []
        for p in range(n):  # the grants for each pointer value, then select one
            g = Signal(n, name=f"grant_from_{p}")
            taken = ~self.free
            for j in [(p + k) % n for k in range(n)]:
                m.d.comb += g[j].eq(self.pending[j] & ((self.req[j] & taken) == 0))
                now = Signal(self.outputs, name=f"taken_{p}_{j}")  # a signal: keeps the chain linear
                m.d.comb += now.eq(taken | Mux(g[j], self.req[j], 0))
                taken = now
            grants.append(g)
        with m.Switch(ptr):
            for p in range(n):
                with m.Case(p):
                    m.d.comb += self.grant.eq(grants[p])
        with m.If(~self.pending.bit_select(ptr, 1) | self.grant.bit_select(ptr, 1)):
            m.d.sync += ptr.eq(Mux(ptr == n - 1, 0, ptr + 1))
        return m


class MatrixAllocator(Allocator):
    """All-or-nothing output allocation in a few logic levels, its grant registered (pipeline 1).

    An input is *eligible* when it waits and every output it requests is free. It is chosen unless
    an eligible input that goes before it requests one of the same outputs. ``before`` is a
    register per pair of inputs (a matrix arbiter's triangle): a chosen input goes behind every
    input not chosen in the same cycle, so the least recently granted goes first. There is no
    chain through the inputs (the round robin :class:`Allocator` visits them one after another):
    eligibility, the pairwise conflicts and the choice are each a level or two of logic.

    Stage A: the choice is registered and is the next cycle's ``grant``. In that cycle the router's
    owners do not show its outputs taken yet, so nothing is chosen (the choice of a cycle may grant
    several inputs; a packet holds its outputs at least two cycles anyway). The order follows the
    registered grant.

    Like :class:`Allocator` a waiting input reserves nothing: it blocks another only in a cycle in
    which it is eligible itself, and the first eligible input in the order is always chosen. The
    choice is not maximal: an eligible input blocked by one that is itself blocked waits a cycle.

    Ports: as :class:`Allocator`; ``grant`` comes the cycle after the choice.
    """

    def elaborate(self, platform):
        m = Module()
        n = self.inputs
        first = {(i, j): Signal(init=1, name=f"first_{i}_{j}") for i in range(n) for j in range(i + 1, n)}

        def before(i, j):
            return first[i, j] if i < j else ~first[j, i]

        granting = Signal()  # a grant is presented this cycle: its outputs are not yet shown taken
        elig, choice = Signal(n), Signal(n)
        for j in range(n):
            m.d.comb += elig[j].eq(self.pending[j] & ~granting & ((self.req[j] & ~self.free) == 0))
        for j in range(n):
            blocked = [elig[i] & before(i, j) & ((self.req[i] & self.req[j]) != 0) for i in range(n) if i != j]
            m.d.comb += choice[j].eq(elig[j] & ~Cat(*blocked).any())
        # The first eligible input is always chosen, so something is chosen exactly when something is eligible.
        m.d.sync += [self.grant.eq(choice), granting.eq(elig.any())]
        for (i, j), f in first.items():
            with m.If(self.grant[i] ^ self.grant[j]):
                m.d.sync += f.eq(self.grant[j])
        return m


@dataclass(frozen=True)
class PacketConfig:
    """What a router needs to carry packets: the format and the input buffer depth in flits. Its
    node's forwarding entries are inputs (``own``, ``reach``: :func:`~equimesh.rtl.relay.forwarding_ports`),
    so the Verilog of a router does not depend on its node.

    Attributes
    ----------
    fmt : PacketFormat
        The network's packet format (seed 004, Section 4.1).
    depth : int
        Input buffer depth in flits.
    """

    fmt: PacketFormat
    depth: int

    @property
    def flit_bits(self) -> int:
        """Crossbar width for these flits: whole 32-bit words."""
        return -(-self.fmt.flit.size // WORD_BITS) * WORD_BITS


def packet_ports(fmt: PacketFormat, ports: list[str]) -> dict:
    """The packet ports of a router: its forwarding entries ``own`` and ``reach`` (``reach[k]``: network
    port ``ports[k]``), ``inject``, and per network port its links ``i_<port>``, ``o_<port>`` and its
    local lane ``eject_<port>`` (:class:`PacketPath`, :class:`PacketRouter`).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    ports : list of str
        The router's network ports, in order.

    Returns
    -------
    dict
        The members of the router's signature, by name.
    """
    flit = stream.Signature(fmt.flit)
    members = {**forwarding_ports(fmt, len(ports)), "inject": In(flit)}
    for p in ports:
        members.update({f"i_{p}": In(flit), f"o_{p}": Out(flit), f"eject_{p}": Out(flit)})
    return members


def port_domain(port: str) -> str:
    """The clock domain of network input ``port``'s buffer and relay in a :class:`PacketPath` built with
    ``port_domains``.

    Parameters
    ----------
    port : str
        The network port, e.g. ``N``, or ``inject`` (the injection relay).

    Returns
    -------
    str
        ``in_<port>``.
    """
    return f"in_{port}"


class PacketPath(wiring.Component):
    """The packet datapath of one router except its crossbar: input buffers, relays, allocator,
    header rewrite and local lanes. :class:`PacketRouter` gives it a crossbar of its own; the
    scheduled :class:`~equimesh.rtl.router.Router` built with ``packets=`` shares its crossbar with it.

    Crossbar inputs are the network ports in ``ports`` order, then ``inject``; its outputs are the
    network ports.

    Parameters
    ----------
    fmt, depth : as :class:`PacketConfig`.
    ports : the network ports (each carries one link in and one link out).
    xbar_bits : width of the crossbar flits (a multiple of 32 bits, at least ``fmt.flit.size``).
    port_domains : each network input's :class:`InputBuffer` and :class:`~equimesh.rtl.relay.Relay`, and
        the injection relay, in a clock domain of their own, :func:`port_domain` (``sync`` else), which
        the tiled packet model clocks only while that input holds or receives a packet
        (:mod:`~equimesh.rtl.packet_tile`).

    Ports
    -----
    own, reach, i_<port>, o_<port>, inject, eject_<port> : as :class:`PacketRouter`.
    heads : Out(ArrayLayout(flit, inputs))  -- each input's head flit, to the crossbar inputs.
    sel : Out(ArrayLayout(select, outputs))  -- the crossbar selects, one-hot (the outputs' owners).
    switched : In(ArrayLayout(flit, outputs))  -- the crossbar outputs; ``o_<port>`` carries them
        with the header rewritten.
    hold : In(1)  -- take no new packet from ``inject`` (a packet already granted completes).
    idle : Out(1)  -- no flit buffered and no packet passing: the router holds no packet.
    quiet : Out(1)  -- ``idle``, and no header waiting at ``inject`` either: every relay ``vacant``.
        With no flit offered on a link or at ``inject``, a clock edge then moves no packet (the tiled
        model skips the path's clock, docs/packets.md).
    port_quiet : Out(ports + 1)  -- with ``port_domains`` only: per network input, its buffer holds no
        flit and its relay is ``vacant``; the last bit, the injection relay is ``vacant``. With no flit
        offered to the input, a clock edge of its domain then changes none of its registers but those
        computed a cycle late from others (the buffer's registered ``ready``), which one more edge
        settles.
    """

    def __init__(
        self,
        fmt: PacketFormat,
        ports: list[str],
        depth: int,
        xbar_bits: int,
        pipeline: int = DEFAULT_PIPELINE,
        port_domains: bool = False,
    ):
        if xbar_bits < fmt.flit.size:
            raise ValueError(f"a {xbar_bits}-bit crossbar cannot carry {fmt.flit.size}-bit packet flits")
        self.fmt, self.ports, self.depth = fmt, list(ports), depth
        self.pipeline, self.port_domains = pipeline, port_domains
        inputs, outs = len(self.ports) + 1, len(self.ports)
        members = packet_ports(fmt, self.ports)
        members.update(
            {
                "heads": Out(data.ArrayLayout(flit_layout(xbar_bits), inputs)),
                "sel": Out(data.ArrayLayout(select_layout(inputs, hot=True), outs)),
                "switched": In(data.ArrayLayout(flit_layout(xbar_bits), outs)),
                "hold": In(1),
                "idle": Out(1),
                "quiet": Out(1),
                **({"port_quiet": Out(outs + 1)} if port_domains else {}),
            }
        )
        super().__init__(members)

    def switch(self, m: Module, name: str) -> Crossbar:
        """Add the path's crossbar to ``m`` (submodule ``name``): the heads in, one-hot owners as selects, the
        outputs back as ``switched``. The packet router's, and the router for both's packet crossbar.

        Parameters
        ----------
        m : Module
            The router's module.
        name : str
            The crossbar's submodule name.

        Returns
        -------
        Crossbar
        """
        outs = len(self.ports)
        xbar = Crossbar(outs + 1, outs, len(self.heads[0].as_value()), hot=True)
        m.submodules[name] = xbar
        m.d.comb += [xbar.i.eq(self.heads), xbar.sel.eq(self.sel), self.switched.eq(xbar.o)]
        return xbar

    def elaborate(self, platform):
        m = Module()
        fmt, ports = self.fmt, self.ports
        outs = len(ports)

        sources = []  # the head stream of every input: network ports, then inject
        relays = []
        empty = []
        cut = self.pipeline > 0
        domains = [port_domain(p) if self.port_domains else "sync" for p in [*ports, "inject"]]
        for k, p in enumerate(ports):
            buf = InputBuffer(fmt, self.depth, registered=cut)
            m.submodules[f"buf_{p}"] = DomainRenamer(domains[k])(buf)
            wiring.connect(m, wiring.flipped(getattr(self, f"i_{p}")), buf.i)
            sources.append(buf.o)
            empty.append(buf.empty)
            relays.append(relay := Relay(fmt, outs, local=True, cut=cut))
            m.d.comb += [relay.shown.eq(buf.shown), buf.advance.eq(relay.advance)]
            if self.port_domains:
                m.d.comb += self.port_quiet[k].eq(buf.empty & relay.vacant)
        sources.append(self.inject)
        relays.append(Relay(fmt, outs, local=False, cut=cut))
        if self.port_domains:
            m.d.comb += self.port_quiet[outs].eq(relays[-1].vacant)
        for j, (src, relay) in enumerate(zip(sources, relays)):
            m.submodules[f"relay_{j}"] = DomainRenamer(domains[j])(relay)
            m.d.comb += [relay.own.eq(self.own), relay.reach.eq(self.reach)]
            if src is self.inject:  # ``hold`` stops a new header; a granted packet completes
                m.d.comb += relay.hold.eq(self.hold)
            m.d.comb += [relay.i.payload.eq(src.payload), relay.i.valid.eq(src.valid), src.ready.eq(relay.i.ready)]
        m.submodules.alloc = alloc = (MatrixAllocator if cut else Allocator)(len(relays), outs)
        # A granted header counts as held from its grant cycle (with a cut it is not yet active); a flit
        # in a link register (cut) is still in the router.
        linked = Signal(outs)
        m.d.comb += self.idle.eq(
            Cat(*empty).all()
            & ~Cat(r.active for r in relays).any()
            & ~alloc.grant.any()
            & ~Cat(r.holding for r in relays).any()
            & ~linked.any()
        )
        m.d.comb += self.quiet.eq(self.idle & Cat(r.vacant for r in relays).all())
        for j, relay in enumerate(relays):
            m.d.comb += [
                alloc.pending[j].eq(relay.pending),
                alloc.req[j].eq(relay.req),
                relay.grant.eq(alloc.grant[j]),
                self.heads[j].as_value().eq(relay.o.as_value()),
            ]
        busy = Signal(outs)
        if not cut:
            m.d.comb += busy.eq(reduce(operator.or_, [relay.held for relay in relays]))

        for k, p in enumerate(ports):
            out = getattr(self, f"o_{p}")
            drivers = [relay.valid[k] for relay in relays]
            switched = fmt.flit(self.switched[k].as_value()[: fmt.flit.size])
            if cut:
                # Stage G: the output's owner, registered one-hot at its grant, is the crossbar select; the
                # output is free again once its tail has left the link register.
                owner = Signal(len(relays), name=f"owner_{p}")
                nxt = Signal(len(relays), name=f"owner_next_{p}")  # its next value
                # Expressions, not If blocks: an event simulator (Icarus) evaluates them at time 0.
                won = Cat(alloc.grant[j] & relay.req[k] for j, relay in enumerate(relays))
                granted = won.any()
                # Stage L: the link register. Virtual cut-through: an output is granted only when its
                # receiver has room for the whole packet, and only this link fills that receiver, so no flit
                # of a granted packet is ever refused: the register takes the switched flit in every cycle
                # and the branches' ``ready`` is 1 (the release waits only for the local delivery).
                a_valid, a_flit, a_multi = (
                    Signal(name=f"a_valid_{p}"),
                    Signal(fmt.flit, name=f"a_flit_{p}"),
                    Signal(name=f"a_multi_{p}"),
                )
                take = Const(1, 1)
                driven = Cat(*drivers).any()
                m.d.sync += [
                    a_valid.eq(driven),
                    a_flit.eq(switched),
                    a_multi.eq((Cat(r.multi[k] for r in relays) & owner).any()),
                ]
                m.d.sync += Assert(~a_valid | out.ready, f"router: output {p} refused a flit of a granted packet")
                free = Signal(init=1, name=f"free_{p}")  # ``~busy & ~a_valid`` (below)
                m.d.comb += [
                    linked[k].eq(a_valid),
                    out.valid.eq(a_valid),
                    alloc.free[k].eq(free & out.ready),
                ]
                tail_left = a_valid & a_flit.last  # never with a grant: that needs an idle link
                m.d.comb += [nxt.eq(Mux(granted, won, Mux(tail_left, 0, owner))), self.sel[k].eq(owner)]
                # ``busy`` is ``owner.any()`` (an invariant of the formal wrapper), kept as a flip-flop of its own, and
                # ``free`` is ``~busy & ~a_valid``, a flip-flop of their next values: the allocator's ``free`` then
                # reads one register and the receiver's ``ready`` (a register in the neighbour).
                busy_next = granted | (busy[k] & ~tail_left)
                m.d.sync += [busy[k].eq(busy_next), free.eq(~busy_next & ~driven), owner.eq(nxt)]
                pos = position(m, fmt, a_flit, a_valid, f"a_pos_{p}")
                rewrite(m, fmt, out.payload, a_flit, pos, self.reach[k], a_multi)  # behind it
                m.d.sync += Assert(
                    (Cat(*drivers) & ~owner) == 0, f"router: output {p} driven by an input that does not own it"
                )
            else:
                take = out.ready
                m.d.comb += [
                    alloc.free[k].eq(~busy[k] & out.ready),
                    out.valid.eq(Cat(*drivers).any()),
                    self.sel[k].eq(Cat(*drivers)),  # one-hot: only an output's holder drives it
                ]
                multi = (Cat(r.multi[k] for r in relays) & self.sel[k]).any()
                pos = position(m, fmt, switched, out.valid & out.ready, f"pos_{p}")
                rewrite(m, fmt, out.payload, switched, pos, self.reach[k], multi)
            for relay in relays:
                m.d.comb += relay.ready[k].eq(take)
            # Constellation's switch assertion: at most one input drives an output.
            onehot = Signal(len(drivers))
            m.d.comb += onehot.eq(Cat(*drivers))
            m.d.sync += Assert((onehot & (onehot - 1)) == 0, f"router: two inputs drive output {p}")

        self._local_lanes(m, relays)
        m.d.comb += relays[-1].ready[outs].eq(1)  # the injection relay never delivers locally
        return m

    def _local_lanes(self, m: Module, relays: list) -> None:
        """Local delivery (seed 004, Section 4.3.3): network input ``j``'s relay delivers on the lane of
        its arrival port, ``eject_<port>``, its copy rewritten to the own bit."""
        fmt, outs = self.fmt, len(self.ports)
        for j, p in enumerate(self.ports):  # local delivery: the lane of the arrival port
            lane = getattr(self, f"eject_{p}")
            relay = relays[j]
            m.d.comb += [lane.valid.eq(relay.valid[outs]), relay.ready[outs].eq(lane.ready)]
            # The local copy (rtl/relay.py, ``rewrite`` with the own bit): a WRITE, and since a relay delivers
            # locally only when the bitmap has the own bit, each bitmap word is the own bit's word, with no
            # path from the buffer's memory. Whether ``o`` is a bitmap word and the own bit's word come from
            # ``index`` (a register) alone, kept as signals of their own (``keep``): synthesis maps them ahead of
            # the presented flit (16x16 packet router 2,631 -> 2,558 LUT4, 142.7 -> 153.1 MHz, median of 3 seeds),
            # though it still decodes the memory's ``first`` once for all 64 bits (its critical path remains).
            in_bitmap = Signal(name=f"lane_bitmap_{p}", attrs={"keep": 1})
            own_word = Signal(fmt.width, name=f"lane_own_{p}", attrs={"keep": 1})
            m.d.comb += [
                in_bitmap.eq((relay.index != 0) & (relay.index <= fmt.bitmap_flits)),
                own_word.eq(mask_word(fmt, self.own, relay.index - 1)),
                lane.payload.eq(relay.o),
            ]
            with m.If(relay.o.first):
                m.d.comb += lane.payload.body.header.opcode.eq(Opcode.WRITE)
            with m.Elif(in_bitmap):
                m.d.comb += lane.payload.body.payload.eq(own_word)
                m.d.sync += Assert(
                    ~lane.valid | ((relay.o.body.payload & own_word) == own_word),
                    f"router: a local copy on lane {p} of a packet without the own bit",
                )


class PacketRouter(wiring.Component):
    """One MultiWrite router: a :class:`PacketPath` and its own :class:`~equimesh.rtl.crossbar.Crossbar`.

    Parameters
    ----------
    cfg : the format and buffer depth (:class:`PacketConfig`).
    ports : its network ports (each carries one link in and one link out).
    pipeline : the router's pipeline depth (``rtl/relay.py``; a network's, or its
        :class:`~equimesh.rtl.design.Design`'s for the router carrying both modes).
    port_domains : as :class:`PacketPath`'s.

    Ports
    -----
    own : In(nodes)  -- the node's bit: headers carrying it are delivered locally.
    reach : In(ArrayLayout(nodes, ports))  -- ``reach[k]``: the destinations network port ``ports[k]``
        serves (the forwarding table, :meth:`~equimesh.rtl.packet_network.PacketSetup.forwarding`).
    i_<port> : In(stream)   -- the link arriving on ``port``.
    o_<port> : Out(stream)  -- the link leaving on ``port``. Its ``ready`` is a virtual cut-through
        receiver's (an :class:`InputBuffer`'s): room for a whole packet at a header, and from pipeline
        1 on never down within a packet (asserted).
    inject : In(stream)     -- packets from the local generator.
    eject_<port> : Out(stream) -- local copies that arrived on ``port``.
    """

    def __init__(
        self, cfg: PacketConfig, ports: list[str], pipeline: int = DEFAULT_PIPELINE, port_domains: bool = False
    ):
        self.path = PacketPath(cfg.fmt, ports, cfg.depth, cfg.flit_bits, pipeline, port_domains)
        self.ports = list(ports)
        super().__init__(packet_ports(cfg.fmt, self.ports))

    def elaborate(self, platform):
        m = Module()
        m.submodules.path = path = self.path
        path.switch(m, "xbar")
        for name, member in self.signature.members.items():  # the path's packet ports are ours
            if member.is_port:  # the forwarding entries
                m.d.comb += getattr(path, name).eq(getattr(self, name))
            elif member.flow == In:
                wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(path, name))
            else:
                wiring.connect(m, getattr(path, name), wiring.flipped(getattr(self, name)))
        return m
