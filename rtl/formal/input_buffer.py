"""Formal wrapper of the packet router's :class:`~equimesh.rtl.packet_router.InputBuffer` (virtual
cut-through: ready for a header only when the whole packet fits).

The link side is any sender that keeps the stream contract (valid holds until ready, payload stable)
and sends whole packets (a header, ``bitmap_flits`` bitmap words, then ``payload_flits`` flits, the last
marked ``last``; :mod:`~equimesh.rtl.packet`); the head
side (the relay) takes or refuses the head in any cycle, and advances the presentation pointer only
past flits it popped (or pops in that cycle; ``rtl/formal/relay.py`` proves the relay keeps that
contract), as many as it likes. The wrapper counts the flits inside
(``count``) and those popped and not yet presented (``behind``), and follows one flit the solver picks
(``pick``, any one, at any time): it records its payload and how many flits are ahead of it at the head
and at the presentation pointer, and checks that it leaves the head, and is shown, unchanged, exactly
when those have gone. A flit lost, duplicated, overtaken or overwritten while kept would break that for
some choice of the tracked flit.

For k-induction the wrapper states where every flit is: the thermometer codes are ``count`` (not
popped) and ``count + behind`` (not presented), the memory holds ``count`` flits between its write
and read pointers and ``behind`` between the presentation and read pointers, and the tracked flit is
in the memory word ``ahead_shown`` after the presentation pointer (read through a port the wrapper
adds).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal
from amaranth.lib.memory import Memory

from ..packet_router import InputBuffer
from . import Params, Prop, Wrapper
from .probe import apart, internals, made, no_reset, stream_contract

__all__ = ["PROPERTIES", "build"]

_SENDER = (
    "the link keeps the stream contract (valid holds until ready, payload stable: the sender is a "
    "link register or the injecting node), and sends whole packets (header first, last on the "
    "packet's last flit, rtl/packet.py); the head may be taken or refused in any cycle"
)

PROPERTIES = {
    "buffer_order": Prop(
        "buffer_order",
        "every flit taken from the link leaves the head unchanged, after exactly the flits taken before "
        "it, and is shown unchanged at the presentation pointer after exactly those were presented: none "
        "lost, duplicated, reordered or overwritten while kept",
        _SENDER,
    ),
    "buffer_room": Prop(
        "buffer_room",
        "no flit is written into a full buffer, the head is valid only when a flit is inside, and a "
        "header is taken only when the whole packet fits (a body flit never waits for room)",
        _SENDER,
    ),
}


def build(p: Params, prop: str):
    """The input buffer's formal wrapper for property ``prop`` (the table of docs/formal.md).

    Parameters
    ----------
    p : Params
        The block's parameters.
    prop : str
        ``buffer_order`` or ``buffer_room``.

    Returns
    -------
    Wrapper
        The module with the buffer, its environment's ``Assume``s, the property's ``Assert``s and ``Cover``s.
    """
    fmt = p.fmt
    depth = p.buffer_depth or fmt.packet_flits + 2
    dut = InputBuffer(fmt, depth, registered=p.pipeline > 0)
    dut._MustUse__silence = True  # elaborated below, by hand
    m = Module()
    with made(Memory) as seen:
        body = dut.elaborate(None)
    m.submodules.dut = body
    no_reset(m)
    regs = internals(body)
    mem = seen[Memory][0]

    # ---- the sender's contract ----
    stream_contract(m, dut.i.valid, dut.i.ready, dut.i.payload, "link")
    pos = Signal(range(fmt.packet_flits))  # flits of the current packet already taken
    take = dut.i.valid & dut.i.ready
    pop = dut.o.valid & dut.o.ready
    with m.If(take):
        m.d.sync += pos.eq(Mux(pos == fmt.packet_flits - 1, 0, pos + 1))
    # rtl/packet.py: a packet is a header (first) and payload_flits flits, the last one marked.
    m.d.comb += Assume(
        ~dut.i.valid | ((dut.i.payload.first == (pos == 0)) & (dut.i.payload.last == (pos == fmt.packet_flits - 1)))
    )

    # ---- the relay's side of the presentation: it shows only popped flits ----
    L = fmt.packet_flits
    behind = Signal(range(depth + 1))  # flits popped and not yet presented
    m.d.sync += behind.eq(behind + pop - dut.advance)
    m.d.comb += Assume(~dut.advance | (behind != 0) | pop)

    # ---- the wrapper's count and the tracked flit ----
    t = _track(m, dut, depth, take, pop, behind)
    count, pick, tracking, ahead, showing, ahead_shown = (
        t[k] for k in ("count", "pick", "tracking", "ahead", "showing", "ahead_shown")
    )
    data, done, leaves, shown_now = (t[k] for k in ("data", "done", "leaves", "shown_now"))

    # ---- the strengthening invariant: where every flit is ----
    level, fill, between = regs["level"], regs["fill"], regs["between"]
    # the pointers address the ports
    produce, consume, show = mem.write_ports[0].addr, mem.read_ports[0].addr, mem.read_ports[1].addr

    def plus(ptr, n):  # the memory word ``n`` after pointer ``ptr``
        offset = Signal(range(2 * depth), name=f"{ptr.name}_plus")
        m.d.comb += offset.eq(ptr + n)
        return Mux(offset >= depth, offset - depth, offset)

    look = mem.read_port(domain="comb")
    m.d.comb += look.addr.eq(plus(show, ahead_shown))
    inv = [
        count + behind <= depth,
        level == Cat(*[count > i for i in range(depth)]),
        fill == Cat(*[count + behind > i for i in range(depth)]),
        produce < depth,  # the pointers stay in the memory (its depth need not be a power of 2)
        consume < depth,
        show < depth,
        apart(consume, produce, count, depth),
        apart(show, consume, behind, depth),
        between == (pos == 0),
        pos < fmt.packet_flits,
        ~tracking | (ahead < count),
        tracking == (showing & (ahead_shown >= behind)),  # not popped yet
        ~tracking | (ahead_shown == ahead + behind),
        ~showing | (ahead_shown < count + behind),
        ~showing | (look.data.as_value() == data),
        # Virtual cut-through: the rest of the packet being received fits.
        between | (count + behind + L - pos <= depth),
    ]
    if p.pipeline > 0:  # the registered ready promises no room that is not there
        inv.append(~regs["ready"] | ~between | (count + behind <= depth - L))
    for i, c in enumerate(inv):
        m.d.comb += Assert(c, f"{prop}: invariant {i}")

    if prop == "buffer_order":
        m.d.comb += [
            Assert(~leaves | (dut.o.payload.as_value() == data), "buffer_order: the tracked flit leaves unchanged"),
            Assert(~(tracking & (ahead == 0)) | dut.o.valid, "buffer_order: the tracked flit is presented"),
            Assert(~shown_now | (dut.shown.as_value() == data), "buffer_order: the tracked flit is shown unchanged"),
            Cover(
                leaves & (ahead == 0) & (count == depth), "buffer_order cover: the tracked flit leaves a full buffer"
            ),
            Cover(done & (count == 0), "buffer_order cover: a flit went through and the buffer drained"),
            Cover(
                shown_now & (behind == 1 + fmt.bitmap_flits),
                "buffer_order cover: the tracked flit shown, a header and its bitmap words popped behind it",
            ),
        ]
    else:
        m.d.comb += [
            Assert(~take | (count + behind < depth), "buffer_room: no write into a full buffer"),
            Assert(~dut.o.valid | (count >= 1), "buffer_room: the head is valid only when a flit is inside"),
            Assert(
                ~(take & dut.i.payload.first) | (count + behind <= depth - L),
                "buffer_room: a header is taken only when its packet fits",
            ),
            Assert(~dut.i.valid | dut.i.payload.first | dut.i.ready, "buffer_room: a body flit never waits for room"),
            Cover(
                take & dut.i.payload.first & (count + behind == depth - L) & (behind != 0),
                "buffer_room cover: a header fills the buffer to the last packet's room, popped flits kept",
            ),
        ]
    ports = [
        dut.i.valid,
        dut.i.ready,
        dut.i.payload.as_value(),
        dut.o.valid,
        dut.o.ready,
        dut.o.payload.as_value(),
        dut.shown.as_value(),
        dut.advance,
        dut.empty,
        pick,
    ]
    return Wrapper(m, ports, 2 * depth + 4, 3 * depth + 6)


def _track(m, dut, depth, take, pop, behind):
    """The wrapper's count of the flits inside and the flit it follows (``pick``): until it leaves the
    head (``tracking``, ``ahead`` flits before it there) and until it is presented (``showing``,
    ``ahead_shown`` flits before it at the presentation pointer). Returns the signals by name."""
    fmt = dut.fmt
    count = Signal(range(depth + 2))
    m.d.sync += count.eq(count + take - pop)
    pick = Signal()  # free input: track the flit taken in this cycle
    tracking, ahead = Signal(), Signal(range(depth + 1))
    showing, ahead_shown = Signal(), Signal(range(depth + 1))  # until it is presented, and flits before it there
    data = Signal(fmt.flit.size)
    done = Signal()  # the tracked flit has left (one flit per trace is followed)
    leaves = tracking & pop & (ahead == 0)
    shown_now = showing & (ahead_shown == 0)
    with m.If(~tracking & ~showing & ~done & pick & take):
        m.d.sync += [
            tracking.eq(1),
            showing.eq(1),
            data.eq(dut.i.payload.as_value()),
            ahead.eq(count - pop),
            ahead_shown.eq(count + behind - dut.advance),
        ]
    with m.Else():
        with m.If(tracking & pop):
            m.d.sync += ahead.eq(ahead - 1)
            with m.If(ahead == 0):
                m.d.sync += tracking.eq(0)
        with m.If(showing & dut.advance):
            m.d.sync += ahead_shown.eq(ahead_shown - 1)
            with m.If(ahead_shown == 0):
                m.d.sync += [showing.eq(0), done.eq(1)]
    return dict(
        count=count, pick=pick, tracking=tracking, ahead=ahead, showing=showing, ahead_shown=ahead_shown,
        data=data, done=done, leaves=leaves, shown_now=shown_now,
    )  # fmt: skip
