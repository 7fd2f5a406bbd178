"""Formal wrapper of the packet router's :class:`~equimesh.rtl.packet_router.InputBuffer` (virtual
cut-through: ready for a header only when the whole packet fits).

The link side is any sender that keeps the stream contract (valid holds until ready, payload stable)
and sends whole packets (a header, ``bitmap_flits`` bitmap words, then ``payload_flits`` flits, the last
marked ``last``; :mod:`~equimesh.rtl.packet`); the head
side (the relay) takes or refuses the head in any cycle. The wrapper counts the flits inside
(``count``) and follows one flit the solver picks (``pick``, any one, at any time): it records its
payload and how many flits are ahead of it, and checks that it leaves, unchanged, exactly when those
have left. A flit lost, duplicated or overtaken would break that for some choice of the tracked flit.

For k-induction the wrapper states where every flit is: the fill level's thermometer code is
``count``, the memory holds ``count`` flits between its pointers, the head is the word at the read
pointer, and the tracked flit is in the memory word ``ahead`` after it (read through a port the
wrapper adds).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal
from amaranth.lib.memory import Memory

from ..packet_router import InputBuffer
from . import Params, Prop, Wrapper
from .probe import internals, made, no_reset, stream_contract

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
        "it: none lost, duplicated or reordered",
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

    # ---- the wrapper's count and the tracked flit ----
    count = Signal(range(depth + 2))
    m.d.sync += count.eq(count + take - pop)
    pick = Signal()  # free input: track the flit taken in this cycle
    tracking, ahead = Signal(), Signal(range(depth + 1))
    data = Signal(fmt.flit.size)
    done = Signal()  # the tracked flit has left (one flit per trace is followed)
    leaves = tracking & pop & (ahead == 0)
    with m.If(~tracking & ~done & pick & take):
        m.d.sync += [tracking.eq(1), data.eq(dut.i.payload.as_value()), ahead.eq(count - pop)]
    with m.Elif(tracking & pop):
        m.d.sync += ahead.eq(ahead - 1)
        with m.If(ahead == 0):
            m.d.sync += [tracking.eq(0), done.eq(1)]

    # ---- the strengthening invariant: where every flit is ----
    level, between = regs["level"], regs["between"]
    produce, consume = mem.write_ports[0].addr, mem.read_ports[0].addr  # the pointers address the ports
    look = mem.read_port(domain="comb")
    offset = Signal(range(2 * depth))
    m.d.comb += offset.eq(consume + ahead)
    m.d.comb += look.addr.eq(Mux(offset >= depth, offset - depth, offset))
    inv = [
        count <= depth,
        level == Cat(*[count > i for i in range(depth)]),
        produce < depth,  # the pointers stay in the memory (its depth need not be a power of 2)
        consume < depth,
        Mux(produce >= consume, produce - consume, produce + depth - consume) == Mux(count == depth, 0, count),
        between == (pos == 0),
        pos < fmt.packet_flits,
        ~tracking | (ahead < count),
        ~tracking | (look.data.as_value() == data),
        # Virtual cut-through: the rest of the packet being received fits.
        between | (count + fmt.packet_flits - pos <= depth),
    ]
    if p.pipeline > 0:  # the registered ready promises no room that is not there
        inv.append(~regs["ready"] | ~between | (count <= depth - fmt.packet_flits))
    for i, c in enumerate(inv):
        m.d.comb += Assert(c, f"{prop}: invariant {i}")

    if prop == "buffer_order":
        m.d.comb += [
            Assert(~leaves | (dut.o.payload.as_value() == data), "buffer_order: the tracked flit leaves unchanged"),
            Assert(~(tracking & (ahead == 0)) | dut.o.valid, "buffer_order: the tracked flit is presented"),
            Cover(
                leaves & (ahead == 0) & (count == depth), "buffer_order cover: the tracked flit leaves a full buffer"
            ),
            Cover(done & (count == 0), "buffer_order cover: a flit went through and the buffer drained"),
        ]
    else:
        m.d.comb += [
            Assert(~take | (count < depth), "buffer_room: no write into a full buffer"),
            Assert(~dut.o.valid | (count >= 1), "buffer_room: the head is valid only when a flit is inside"),
            Assert(
                ~(take & dut.i.payload.first) | (count <= depth - fmt.packet_flits),
                "buffer_room: a header is taken only when its packet fits",
            ),
            Assert(~dut.i.valid | dut.i.payload.first | dut.i.ready, "buffer_room: a body flit never waits for room"),
            Cover(
                take & dut.i.payload.first & (count == depth - fmt.packet_flits),
                "buffer_room cover: a header fills the buffer to the last packet's room",
            ),
        ]
    ports = [
        dut.i.valid,
        dut.i.ready,
        dut.i.payload.as_value(),
        dut.o.valid,
        dut.o.ready,
        dut.o.payload.as_value(),
        dut.empty,
        pick,
    ]
    return Wrapper(m, ports, 2 * depth + 4, 3 * depth + 6)
