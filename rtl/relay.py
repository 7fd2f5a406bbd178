"""The MultiWrite relay of one router input (seed 004, Section 4.1 and 4.3.3).

On a header the relay splits the destination bitmap over the router's outputs:
``bitmap & reach[port]`` for every network port (``reach``, the router's
forwarding entries, from the forwarding table, :mod:`equimesh.schedules.routing`)
and the router's own bit (``own``) for the local delivery. Both are inputs the
network ties to its node's values, as FlooNoC's routers take their id and route
map, so every router with the same ports is one Verilog module. Every non-empty
part is a branch: one copy of the packet leaves on that port. The copy's header is rewritten to its part
(:func:`rewrite_header`), which is the metadata update that keeps downstream
relays from delivering twice or looping; a part with one bit becomes a plain
WRITE (rule 2 of Section 4.3.3).

Flow control (FlooNoC's multicast contract): a flit is released from the input
only when every branch has accepted it. The branches are asynchronous within
one flit: each branch's ``valid`` stays up until that branch takes the flit
(a ``settled`` bit per branch remembers it), so no branch waits on another's
``ready`` combinationally and branches drift apart by at most one flit. The
network branches of the header are granted together (``grant``, from the
router's allocator, only when every requested output is free and its receiver
has room for the whole packet), so they always take the header in the cycle it
is first presented; only the local delivery can lag.

Pipeline (``cut``, the router's ``pipeline`` 1; FlooNoC's route computation
ahead of allocation and its cut between allocation and switch traversal, and
an output register). The registers of every stage of a header, from
the cycle ``h`` it is the input buffer's head (a flit written into the buffer
in cycle ``t`` is its head in ``t + 2``, :class:`~equimesh.rtl.packet_router.InputBuffer`):

* stage Q (request, cycle ``h``): while the relay is idle, the head's route
  (``want``, the non-empty parts of the bitmap split) is registered every
  cycle: ``want_q``, ``pend``. The allocator sees only these registers, never
  the bitmap. Per network output, whether that copy keeps more than one
  destination (``multi``, the rewritten opcode) is needed only when the header
  leaves: its tree is registered half way (``group_any_*``, ``group_sev_*``,
  about sqrt(nodes) groups) and finished into ``multi_q`` in the next cycle;
* stage A (allocation, ``h + 1``): the router's allocator chooses and
  registers its grant (``grant``, ``granting`` and the arbiter's order in
  :class:`~equimesh.rtl.packet_router.MatrixAllocator`);
* stage G (grant, ``h + 2``): the grant sets ``active`` and latches
  ``branches``, and the router registers each granted output's owner, its
  crossbar select (``owner_<port>``, ``busy``);
* switch (``h + 3``): the header leaves the input; every branch ``valid``
  comes from registers (``active``, ``settled``) and the input
  buffer's output register. A network branch's ``ready`` is 1: with virtual
  cut-through its receiver refuses no flit of the packet (below), so the
  release waits only for the local delivery, one LUT of four register bits;
* stage L (link, ``h + 4``): the header is on the link, from the output's
  link register (``a_*`` in the router), its bitmap and opcode rewritten
  behind the register.

So a header takes 6 cycles per hop against pipeline 0's 2 (buffer 2, Q, A, G,
L); the flits behind it follow one a cycle. The receivers still have room: an
output is granted only while no packet holds it, its link register is empty and
its receiver has room for the whole packet; nothing else can fill that receiver
before the header arrives, and within a packet a receiver always takes the next
flit (:class:`~equimesh.rtl.packet_router.InputBuffer`; the router asserts it on
every output). With ``cut`` off (pipeline 0) the route, the grant
and the header's departure share one cycle and the outputs are not registered.
"""

from __future__ import annotations

from math import isqrt

from amaranth.hdl import Assert, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .packet import Opcode, PacketFormat


def forwarding_ports(fmt: PacketFormat, outs: int) -> dict:
    """A router's forwarding entries, inputs the network ties to its node's values
    (:meth:`~equimesh.rtl.packet_network.PacketSetup.forwarding`): ``own``, the node's bit, and
    ``reach``, per network output the destinations it serves."""
    return {"own": In(fmt.nodes), "reach": In(data.ArrayLayout(fmt.nodes, outs))}


def pairs(m: Module, any_: Value, sev: Value, width: int, name: str) -> tuple[Value, Value]:
    """Reduce the (any, several) pairs of bit groups, a level at a time, until at most ``width``
    groups are left: per level, group ``i`` joins the groups ``2i`` and ``2i + 1`` (any of the two;
    several in one of them, or any in both). Built on whole vectors (the even and the odd positions
    of the level below, a signal pair per level), so a 256-bit bitmap is 8 levels of a few vector
    operations, not a thousand one-bit signals in the Verilog. Returns the (any, several) vectors."""
    any_, sev = Value.cast(any_), Value.cast(sev)
    level = 0
    while len(any_) > max(width, 1):
        if len(any_) % 2:
            any_, sev = Cat(any_, Const(0, 1)), Cat(sev, Const(0, 1))
        a1, a2 = (Cat(any_[i] for i in range(k, len(any_), 2)) for k in (0, 1))
        s1, s2 = (Cat(sev[i] for i in range(k, len(sev), 2)) for k in (0, 1))
        any_, sev = Signal(len(a1), name=f"{name}_any{level}"), Signal(len(a1), name=f"{name}_sev{level}")
        m.d.comb += [any_.eq(a1 | a2), sev.eq(s1 | s2 | (a1 & a2))]
        level += 1
    return any_, sev


def rewrite_header(m: Module, out, flit, mask, multi=None) -> None:
    """Drive ``out`` with ``flit``; on a header, the bitmap becomes ``bitmap & mask`` and the opcode
    WRITE when one destination is left, MULTIWRITE otherwise (seed 004, Section 4.1 metadata update).
    ``multi``: that opcode decision made ahead of time (1 = MULTIWRITE); by default it is computed here."""
    part = Signal.like(flit.body.header.bitmap)
    m.d.comb += [part.eq(flit.body.header.bitmap & mask), out.eq(flit)]
    if multi is None:
        multi = (part & (part - 1)) != 0
    with m.If(flit.first):
        m.d.comb += [
            out.body.header.bitmap.eq(part),
            out.body.header.opcode.eq(Mux(multi, Opcode.MULTIWRITE, Opcode.WRITE)),
        ]


class Relay(wiring.Component):
    """Branch control of one input: route computation, the fork and its release.

    Parameters
    ----------
    fmt : PacketFormat.
    outs : the router's network outputs.
    local : whether this input can deliver locally (False for the injection input:
        a node never addresses itself).
    cut : stages Q and G (see above): the header leaves two cycles after it reached the head.

    Ports
    -----
    own : In(nodes)  -- the router's own bit (delivered locally).
    reach : In(ArrayLayout(nodes, outs))  -- per network output, in the router's output order, the
        destinations it serves.
    i : In(stream of flits)  -- the input buffer's head; a header when the relay is idle.
    valid : Out(outputs + 1), ready : In(outputs + 1)  -- one handshake per branch: bit ``k`` is
        network output ``k``, the last bit the local lane. ``valid[k]`` asks that branch to take the
        presented flit; the router copies the flit there through its crossbar.
    req : Out(outputs)  -- the outputs the waiting header needs; meaningful while ``pending``.
    pending : Out(1)  -- a header waits for its grant.
    hold : In(1)  -- the waiting header does not ask for its grant (a granted packet completes). Only
        the injection input is held; the hold never reaches the release of a granted packet.
    grant : In(1)  -- from the allocator: all of ``req`` are this input's from now to the tail.
    held : Out(outputs)  -- outputs owned by this input's packet after its grant cycle.
    active : Out(1)  -- a granted packet is passing (with ``cut``: from the cycle after its grant
        to its tail).
    multi : Out(outputs)  -- with ``cut``: per network output, the header's copy there keeps more
        than one destination (registered in stage Q, valid while the packet passes).
    """

    def __init__(self, fmt: PacketFormat, outs: int, local: bool, cut: bool = False):
        self.fmt, self.outs, self.local, self.cut = fmt, outs, local, cut
        n = outs + 1
        super().__init__({
            **forwarding_ports(fmt, outs),
            "i": In(stream.Signature(fmt.flit)),
            "valid": Out(n),
            "ready": In(n),
            "req": Out(outs),
            "pending": Out(1),
            "hold": In(1),
            "grant": In(1),
            "held": Out(outs),
            "active": Out(1),
            "multi": Out(outs),
        })

    def elaborate(self, platform):
        m = Module()
        outs = self.outs
        head = self.i.payload
        bitmap = head.body.header.bitmap

        active = Signal()          # a granted packet is passing (set at grant, cleared after the tail)
        branches = Signal(outs + 1)  # its branches, latched at the grant
        settled = Signal(outs + 1)   # for the presented flit: not a branch, or a branch that already took it

        want = Signal(outs + 1)
        parts = [Signal.like(bitmap, name=f"part_{k}") for k in range(outs)]  # the bitmap split
        for k, part in enumerate(parts):
            m.d.comb += [part.eq(bitmap & self.reach[k]), want[k].eq(part != 0)]
        if self.local:
            m.d.comb += want[outs].eq((bitmap & self.own) != 0)
        m.d.comb += [
            self.held.eq(Mux(active, branches[:outs], 0)),
            self.active.eq(active),
        ]

        if self.cut:  # stage Q registers the route; the header leaves the cycle after its grant
            pend, want_q, multi_q = Signal(), Signal(outs + 1), Signal(outs)
            # The opcode decision is needed only when the header leaves (``h + 3``), so its tree is cut in
            # two: the (any, several) pairs of about sqrt(nodes) groups per part in stage Q (``group_*``,
            # loaded in every cycle), the rest in the next cycle (``multi_q``, held while the packet
            # passes). The head is the waiting header from ``h`` until it leaves, so ``multi_q`` holds its
            # decision from ``h + 2`` on. (``part & (part - 1) != 0`` would be a carry chain as long as
            # the bitmap; the tree has log depth.)
            groups = isqrt(len(bitmap))
            with m.If(~active):  # the head is the waiting header (or nothing): its route, every cycle
                m.d.sync += want_q.eq(want)
            for k, part in enumerate(parts):
                g_any, g_sev = pairs(m, part, Const(0, len(part)), groups, f"multi_{k}")
                q_any, q_sev = Signal.like(g_any, name=f"group_any_{k}"), Signal.like(g_sev, name=f"group_sev_{k}")
                m.d.sync += [q_any.eq(g_any), q_sev.eq(g_sev)]
                with m.If(~active):
                    m.d.sync += multi_q[k].eq(pairs(m, q_any, q_sev, 1, f"multi_q_{k}")[1][0])
            m.d.sync += pend.eq(self.i.valid & ~self.hold & ~active & ~self.grant)
            m.d.comb += [self.pending.eq(pend & self.i.valid & (~self.hold | self.grant)), self.req.eq(want_q[:outs]),
                         self.multi.eq(multi_q)]
            # The header leaves only once active (its grant cycle has no flit to move): ``settled`` is a
            # register, so the release is an AND of two register bits per branch and the buffer's head.
            latched, now, go = want_q, settled, self.i.valid & active
        else:  # the header leaves in its grant cycle, to the branches of its route
            m.d.comb += [self.pending.eq(self.i.valid & ~self.hold & ~active), self.req.eq(want[:outs])]
            latched, now, go = want, Mux(active, settled, ~want), self.i.valid & (active | self.grant)
        done = Signal(outs + 1)
        m.d.comb += [self.valid.eq(Mux(go, ~now, 0)), done.eq(now | self.ready)]
        release = go & done.all()
        m.d.comb += self.i.ready.eq(release)

        with m.If(self.grant):
            m.d.sync += [active.eq(1), branches.eq(latched)]
        with m.If(release):  # the next flit goes to every branch again
            m.d.sync += settled.eq(~Mux(self.grant, latched, branches))
            with m.If(head.last):
                m.d.sync += active.eq(0)
        with m.Elif(go):
            m.d.sync += settled.eq(now | self.ready)
        with m.Elif(self.grant):
            m.d.sync += settled.eq(~latched)

        # Invariants: an idle relay sees headers only; a grant comes only for a waiting header;
        # a header addresses somebody and never its own injector; network branches take the
        # header when it is first presented (the allocator checked room downstream).
        m.d.sync += [
            Assert(~self.pending | head.first, "relay: a body flit arrived without its header"),
            Assert(~self.grant | self.pending, "relay: grant without a waiting header"),
            Assert(~self.pending | (bitmap != 0), "relay: header with an empty bitmap"),
            Assert(~(go & head.first) | ((self.valid[:outs] & ~self.ready[:outs]) == 0),
                   "relay: a granted output refused the header"),
        ]
        if self.cut:
            m.d.sync += Assert(~(self.i.valid & ~active) | head.first, "relay: a body flit arrived without its header")
        if not self.local:
            m.d.sync += Assert(~self.pending | ((bitmap & self.own) == 0), "relay: a node addressed its own packet")
        return m
