"""Formal wrapper of a whole :class:`~equimesh.rtl.packet_router.PacketRouter` (input buffers, relays,
allocator, crossbar, link registers), through its ports.

The environment: any forwarding entries that partition the nodes (as for the relay); on every in-link
and on ``inject`` whole packets with non-empty bitmaps under the stream contract (``inject`` never
addresses its own node); every out-link's receiver is a virtual cut-through input buffer: within a
packet it is always ready, and between packets its ready, once up, stays up until it takes a flit
(its fill level only rises by what this link writes); the local lanes take flits or not, freely.

``link_order`` states the contract of the output link registers (stage L) against the crossbar's
output, which it reads at the router's internal port ``path.switched`` (and the owner at ``path.sel``).

Induction is not attempted: the router's invariant is the conjunction of its buffers', relays' and
allocator's (each block's is stated in its own wrapper), which this wrapper does not restate. The
router is checked to a bound: one packet crossing it, and two crossing side by side.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Assert, Assume, Cover, Module, Mux, Signal

from ..packet_router import PacketConfig, PacketRouter
from ..relay import mask_word
from . import Params, Prop, Wrapper
from .probe import anyconst, no_reset, stream_contract

__all__ = ["DESIGN", "PROPERTIES", "build"]

_ENV = (
    "own and reach partition the nodes; in-links and inject send whole packets with non-empty bitmaps "
    "under the stream contract (inject never addresses its own node); each out-link's receiver is a "
    "virtual cut-through input buffer (ready within a packet; between packets its ready falls only "
    "after it took a flit); the local lanes' readies are free"
)
_BOUNDED = (
    "the router's inductive invariant is the conjunction of its input buffers', relays' and "
    "allocator's, not restated in this wrapper; the blocks are proven unbounded one by one"
)

PROPERTIES = {
    "one_driver": Prop(
        "one_driver",
        "no two inputs drive one output, an output is driven only by the input that owns it, and no "
        "out-link refuses a flit of a granted packet (the router's own assertions)",
        _ENV,
        unbounded=False,
        why=_BOUNDED,
    ),
    "link_order": Prop(
        "link_order",
        "the link register (stage L): every flit on an out-link is the flit the crossbar switched to that output "
        "the cycle before (pipeline 0: the same cycle), from the input that owned it, with first and last, the "
        "payload words and the header but its opcode unchanged and each bitmap word a subset of the switched "
        "one; no out-link refuses a flit of a granted packet",
        _ENV,
        unbounded=False,
        why=_BOUNDED,
    ),
    "no_interleave": Prop(
        "no_interleave",
        "on every out-link and local lane the flits form whole packets, header first and tail last: a "
        "granted packet's flits are never interleaved with another packet's",
        _ENV,
        unbounded=False,
        why=_BOUNDED,
    ),
}

# Design assertions that belong to a property (rtl/packet_router.py).
DESIGN = {
    "one_driver": ("router: two inputs drive output", "router: output"),
    "link_order": ("router: output",),  # "router: output <p> refused a flit of a granted packet", and the owner
}


def build(p: Params, prop: str):
    """The packet router's formal wrapper for property ``prop`` (the table of docs/formal.md).

    Parameters
    ----------
    p : Params
        The block's parameters.
    prop : str
        ``one_driver``, ``link_order`` or ``no_interleave``.

    Returns
    -------
    Wrapper
        The module with the router, its environment's ``Assume``s, the property's ``Assert``s and ``Cover``s.
    """
    fmt = p.fmt
    cfg = PacketConfig(fmt, p.buffer_depth or fmt.packet_flits + 2)
    dut = PacketRouter(cfg, list(p.lanes), p.pipeline)
    m = Module()
    m.submodules.dut = dut
    no_reset(m)
    nodes, outs = fmt.nodes, len(p.lanes)
    own = anyconst(m, nodes, "own")
    reach = [anyconst(m, nodes, f"reach_{k}") for k in range(outs)]
    m.d.comb += [
        dut.own.eq(own),
        Assume((own != 0) & ((own & (own - 1)) == 0)),
        Assume(reduce(operator.or_, reach, own) == (1 << nodes) - 1),
    ]
    union = own
    for k in range(outs):
        m.d.comb += [dut.reach[k].eq(reach[k]), Assume((reach[k] & union) == 0)]
        union = union | reach[k]

    def framed(stream, name):
        """Flits taken on ``stream`` so far in its current packet; assumes or checks the framing."""
        pos = Signal(range(fmt.packet_flits), name=f"{name}_pos")
        with m.If(stream.valid & stream.ready):
            m.d.sync += pos.eq(Mux(pos == fmt.packet_flits - 1, 0, pos + 1))
        flit = stream.payload
        ok = ~stream.valid | ((flit.first == (pos == 0)) & (flit.last == (pos == fmt.packet_flits - 1)))
        return pos, ok

    B = fmt.bitmap_flits
    sources = [(getattr(dut, f"i_{port}"), f"i_{port}") for port in p.lanes] + [(dut.inject, "inject")]
    for s, name in sources:
        stream_contract(m, s.valid, s.ready, s.payload, name)
        pos, ok = framed(s, name)
        word = s.payload.body.payload
        seen = Signal(fmt.width, name=f"{name}_seen")  # the OR of the packet's bitmap words taken so far
        with m.If(s.valid & s.ready):
            m.d.sync += seen.eq(Mux(pos == 0, 0, seen | word))
        is_bitmap = s.valid & (pos >= 1) & (pos <= B)
        # rtl/packet.py: whole packets; seed 004: a MultiWrite addresses at least one node
        m.d.comb += [Assume(ok), Assume(~(s.valid & (pos == B)) | ((seen | word) != 0))]
        if fmt.nodes % fmt.width:  # a bitmap names only nodes of the network (PacketFormat.check_bitmap)
            m.d.comb += Assume(~(s.valid & (pos == B)) | (word[fmt.nodes % fmt.width :] == 0))
        if name == "inject":  # a node never addresses itself (rtl/relay.py asserts it)
            m.d.comb += Assume(~is_bitmap | ((word & mask_word(fmt, own, (pos - 1).as_unsigned())) == 0))
    checks, covers = [], []
    for port in p.lanes:
        out = getattr(dut, f"o_{port}")
        pos, ok = framed(out, f"o_{port}")
        ready_q, took_q = Signal(name=f"o_{port}_ready_q"), Signal(name=f"o_{port}_took_q")
        m.d.sync += [ready_q.eq(out.ready), took_q.eq(out.valid & out.ready)]
        # The receiver: a virtual cut-through input buffer (rtl/packet_router.py, InputBuffer).
        m.d.comb += [Assume((pos == 0) | out.ready), Assume(~ready_q | took_q | out.ready)]
        checks.append((ok, f"no_interleave: out-link {port}"))
        covers.append(out.valid & out.payload.last)
        lane = getattr(dut, f"eject_{port}")
        _, ok = framed(lane, f"eject_{port}")
        checks.append((ok, f"no_interleave: local lane {port}"))
    if prop == "link_order":
        _link_order(m, dut, fmt, p)
    elif prop == "no_interleave":
        for ok, message in checks:
            m.d.comb += Assert(ok, message)
        m.d.comb += Cover(
            reduce(operator.add, [c.as_unsigned() for c in covers]) >= 2,
            "no_interleave cover: two tails leave on two out-links in one cycle",
        )
    else:
        m.d.comb += Cover(
            reduce(operator.add, [getattr(dut, f"o_{port}").valid.as_unsigned() for port in p.lanes]) == outs,
            "one_driver cover: every out-link busy in one cycle",
        )
    ports = [v for name, member in dut.signature.members.items() for v in _flat(getattr(dut, name))]
    # A header crosses a pipelined router in 7 + bitmap_flits cycles (rtl/relay.py), the unpipelined one in
    # 3 + bitmap_flits; its tail leaves packet_flits - 1 cycles later. The bound covers two packets crossing
    # side by side (the cover); the solver's time per step grows fast beyond it.
    depth = (8 if p.pipeline else 4) + B + fmt.packet_flits
    return Wrapper(m, ports, depth, depth)


def _link_order(m, dut, fmt, p):
    """Each out-link's flit against the crossbar output that fed its link register (rtl/packet_router.py)."""
    B = fmt.bitmap_flits
    for k, port in enumerate(p.lanes):
        out = getattr(dut, f"o_{port}")
        sw = fmt.flit(dut.path.switched[k].as_value()[: fmt.flit.size])
        owned = dut.path.sel[k].valid
        if p.pipeline:
            sw_q, owned_q = Signal(fmt.flit, name=f"switched_q_{port}"), Signal(name=f"owned_q_{port}")
            m.d.sync += [sw_q.eq(sw), owned_q.eq(owned)]
            sw, owned = sw_q, owned_q
        pos = Signal(range(fmt.packet_flits), name=f"link_pos_{port}")
        with m.If(out.valid & out.ready):
            m.d.sync += pos.eq(Mux(out.payload.last, 0, pos + 1))
        o_body, s_body = out.payload.body.payload, sw.body.payload
        body_ok = Mux(
            pos == 0,
            o_body[1:] == s_body[1:],  # the header: only the opcode (its bit 0) is rewritten
            Mux(pos <= B, (o_body & ~s_body) == 0, o_body == s_body),
        )
        m.d.comb += Assert(
            ~out.valid | (owned & (out.payload.first == sw.first) & (out.payload.last == sw.last) & body_ok),
            f"link_order: out-link {port} carries the flit switched to it",
        )
    m.d.comb += Cover(
        reduce(operator.and_, [getattr(dut, f"o_{port}").valid & getattr(dut, f"o_{port}").payload.last for port in
                               p.lanes[:2]]),
        "link_order cover: two tails leave on two out-links in one cycle",
    )  # fmt: skip


def _flat(member):
    """The signals of a port member (a stream's valid, ready and payload, or a plain port)."""
    if hasattr(member, "valid"):
        return [member.valid, member.ready, member.payload.as_value()]
    return [member.as_value() if hasattr(member, "as_value") else member]
