"""Formal wrapper of a whole :class:`~equimesh.rtl.packet_router.PacketRouter` (input buffers, relays,
allocator, crossbar, link registers), through its ports.

The environment: any forwarding entries that partition the nodes (as for the relay); on every in-link
and on ``inject`` whole packets with non-empty bitmaps under the stream contract (``inject`` never
addresses its own node); every out-link's receiver is a virtual cut-through input buffer: within a
packet it is always ready, and between packets its ready, once up, stays up until it takes a flit
(its fill level only rises by what this link writes); the local lanes take flits or not, freely.

``link_order`` states the contract of the output link registers (stage L) against the crossbar's
output, which it reads at the router's internal port ``path.switched`` (and the owner at ``path.sel``).

The properties are proven by k-induction. The strengthening invariant (:func:`_invariant`) is stated
on the blocks' registers, which the wrapper reads by name (:func:`~.probe.internals`), against counters
of the flits each stream carried in its current packet:

* each relay's parse and grant state (``parsing``, ``word``, ``pend``, ``active``, ``branches``,
  ``settled``) against the flits it took from its input, as in ``rtl/formal/relay.py``;
* each input buffer's fill level, pointers and room, as in ``rtl/formal/input_buffer.py``, and where
  every flit inside (memory words, read through ports the wrapper adds; the head is the one at the read
  pointer) stands in its packet: the in-link's count is the relay's plus the flits inside;
* from pipeline 1 on, each output's busy bit, free bit, owner (stage G) and link register (stage L) against the
  relay that still owes it flits, and its out-link's count against that relay's branch; the matrix
  allocator's registered grant (stage A): shown as ``granting``, to disjoint free outputs, for waiting
  headers, its arbiter's order a total order. Pipeline 0 (combinational allocator, selects and
  outputs): at most one relay holds an output, and the out-link's count is the holding branch's;
* each local lane's count against its relay's local branch.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, Signal, Value
from amaranth.lib.memory import Memory

from ..packet_router import Allocator, InputBuffer, MatrixAllocator, PacketConfig, PacketRouter
from ..relay import Relay, mask_word
from . import Params, Prop, Wrapper
from .probe import anyconst, apart, internals, made, no_reset, ring_distance, stream_contract
from .relay import parse_invariant

__all__ = ["DESIGN", "INDUCTION_DEPTH", "PROPERTIES", "build"]

# The induction length tried, and the base case checked: the invariant closes at k = 2
# (it does with a depth as short as 1);
# the base case goes far enough for the allocator's double grant (mutation grant_busy) to FAIL with a trace.
INDUCTION_DEPTH = 6

_ENV = (
    "own and reach partition the nodes; in-links and inject send whole packets with non-empty bitmaps "
    "under the stream contract (inject never addresses its own node); each out-link's receiver is a "
    "virtual cut-through input buffer (ready within a packet; between packets its ready falls only "
    "after it took a flit); the local lanes' readies are free"
)
PROPERTIES = {
    "one_driver": Prop(
        "one_driver",
        "no two inputs drive one output, an output is driven only by the input that owns it, and no "
        "out-link refuses a flit of a granted packet (the router's own assertions)",
        _ENV,
    ),
    "link_order": Prop(
        "link_order",
        "the link register (stage L): every flit on an out-link is the flit the crossbar switched to that output "
        "the cycle before (pipeline 0: the same cycle), from the input that owned it, with first and last, the "
        "payload words and the header but its opcode unchanged and each bitmap word a subset of the switched "
        "one; no out-link refuses a flit of a granted packet",
        _ENV,
    ),
    "no_interleave": Prop(
        "no_interleave",
        "on every out-link and local lane the flits form whole packets, header first and tail last: a "
        "granted packet's flits are never interleaved with another packet's",
        _ENV,
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
    blocks = _elaborate(dut.path, p.pipeline > 0)
    outs = len(p.lanes)
    own = _forwarding(m, dut, fmt, outs)
    env = _environment(m, dut, fmt, p, own)
    _invariant(m, prop, dut, blocks, fmt, p, env)  # the strengthening invariant (k-induction)
    relays = blocks["relays"]
    if prop == "link_order":
        _link_order(m, dut, fmt, p, env, blocks)
    elif prop == "no_interleave":
        for ok, message in env["checks"]:
            m.d.comb += Assert(ok, message)
        # the precondition of an interleaving: a header waits for an out-link another input's packet is on
        contended = [
            r.pending & r.req[k] & getattr(dut, f"o_{port}").valid & ~dut.path.sel[k][j]
            for j, r in enumerate(relays)
            for k, port in enumerate(p.lanes)
        ]
        lanes = [getattr(dut, f"eject_{port}") for port in p.lanes]
        m.d.comb += [
            Cover(
                reduce(operator.add, [c.as_unsigned() for c in env["tails"]]) >= 2,
                "no_interleave cover: two tails leave on two out-links in one cycle",
            ),
            Cover(reduce(operator.or_, contended), "no_interleave cover: a header waits for an out-link in use"),
            Cover(
                reduce(operator.or_, [lane.valid & lane.payload.last for lane in lanes]),
                "no_interleave cover: a local copy's tail leaves on its lane",
            ),
        ]
    else:
        # the precondition of two drivers: two waiting headers want one output in the same cycle
        clash = [
            relays[i].pending & relays[j].pending & ((relays[i].req & relays[j].req) != 0)
            for j in range(len(relays))
            for i in range(j)
        ]
        m.d.comb += [
            Cover(
                reduce(operator.add, [getattr(dut, f"o_{port}").valid.as_unsigned() for port in p.lanes]) == outs,
                "one_driver cover: every out-link busy in one cycle",
            ),
            Cover(reduce(operator.or_, clash), "one_driver cover: two waiting headers want one output"),
        ]
    ports = [v for name, member in dut.signature.members.items() for v in _flat(getattr(dut, name))]
    # A header crosses a pipelined router in 6 + bitmap_flits cycles (rtl/relay.py), the unpipelined one in
    # 2 + bitmap_flits; its tail leaves packet_flits - 1 cycles later. The covers need two packets crossing
    # side by side. The proof is by k-induction (the invariant closes at k = 2), so its base case need only
    # reach the induction length.
    cover_depth = (7 if p.pipeline else 3) + fmt.bitmap_flits + fmt.packet_flits
    return Wrapper(m, ports, INDUCTION_DEPTH, cover_depth)


def _forwarding(m, dut, fmt, outs):
    """Any forwarding entries that partition the nodes (the forwarding table); returns ``own``."""
    nodes = fmt.nodes
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
    return own


def _framed(m, fmt, stream, name):
    """Flits taken on ``stream`` so far in its current packet, and whether its flit is where the framing
    puts it (header first, ``last`` on the packet's last flit)."""
    pos = Signal(range(fmt.packet_flits), name=f"{name}_pos")
    with m.If(stream.valid & stream.ready):
        m.d.sync += pos.eq(Mux(pos == fmt.packet_flits - 1, 0, pos + 1))
    flit = stream.payload
    ok = ~stream.valid | ((flit.first == (pos == 0)) & (flit.last == (pos == fmt.packet_flits - 1)))
    return pos, ok


def _environment(m, dut, fmt, p, own):
    """The in-links' and inject's contract, the out-links' receivers; the framing counters of every stream."""
    B = fmt.bitmap_flits
    env = {"in_pos": {}, "waiting": {}, "o_pos": {}, "eject_pos": {}, "ready_q": {}, "took_q": {}}
    sources = [(getattr(dut, f"i_{port}"), f"i_{port}") for port in p.lanes] + [(dut.inject, "inject")]
    for s, name in sources:
        env["waiting"][name] = stream_contract(m, s.valid, s.ready, s.payload, name)
        pos, ok = _framed(m, fmt, s, name)
        env["in_pos"][name] = pos
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
    checks, tails = [], []
    for port in p.lanes:
        out = getattr(dut, f"o_{port}")
        pos, ok = _framed(m, fmt, out, f"o_{port}")
        ready_q, took_q = Signal(name=f"o_{port}_ready_q"), Signal(name=f"o_{port}_took_q")
        m.d.sync += [ready_q.eq(out.ready), took_q.eq(out.valid & out.ready)]
        # The receiver: a virtual cut-through input buffer (rtl/packet_router.py, InputBuffer): within a packet
        # it is always ready; between packets its ready, once up, stays up until it takes a flit.
        m.d.comb += [Assume((pos == 0) | out.ready), Assume(~ready_q | took_q | out.ready)]
        env["o_pos"][port], env["ready_q"][port], env["took_q"][port] = pos, ready_q, took_q
        checks.append((ok, f"no_interleave: out-link {port}"))
        tails.append(out.valid & out.payload.last)
        lane = getattr(dut, f"eject_{port}")
        env["eject_pos"][port], ok = _framed(m, fmt, lane, f"eject_{port}")
        checks.append((ok, f"no_interleave: local lane {port}"))
    env["checks"], env["tails"] = checks, tails
    return env


def _link_order(m, dut, fmt, p, env, blocks):
    """Each out-link's flit against the crossbar output that fed its link register (rtl/packet_router.py)."""
    B = fmt.bitmap_flits
    trimmed = []  # the precondition of the subset check: the rewrite removes bits from a bitmap word
    for k, port in enumerate(p.lanes):
        out = getattr(dut, f"o_{port}")
        sw = fmt.flit(dut.path.switched[k].as_value()[: fmt.flit.size])
        owned = dut.path.sel[k].any()
        if p.pipeline:
            sw_q, owned_q = Signal(fmt.flit, name=f"switched_q_{port}"), Signal(name=f"owned_q_{port}")
            m.d.sync += [sw_q.eq(sw), owned_q.eq(owned)]
            sw, owned = sw_q, owned_q
        pos = env["o_pos"][port]
        o_body, s_body = out.payload.body.payload, sw.body.payload
        body_ok = Mux(
            pos == 0,
            o_body[1:] == s_body[1:],  # the header: only the opcode (its bit 0) is rewritten
            Mux(pos <= B, (o_body & ~s_body) == 0, o_body == s_body),
        )
        trimmed.append(out.valid & (pos >= 1) & (pos <= B) & (o_body != s_body))
        m.d.comb += Assert(
            ~out.valid | (owned & (out.payload.first == sw.first) & (out.payload.last == sw.last) & body_ok),
            f"link_order: out-link {port} carries the flit switched to it",
        )
        path = blocks["path"]
        if not p.pipeline:  # the rewrite's position counter (rtl/relay.py, position) is the link's framing counter
            at = Mux(pos > B + 1, B + 1, pos)
            m.d.comb += Assert(
                (pos == 0) | (path[f"pos_{port}"] == at), f"link_order: invariant: rewrite position {port}"
            )
        else:  # the link register exists from pipeline 1 on
            a_valid, a_flit, a_pos = path[f"a_valid_{port}"], path[f"a_flit_{port}"], path[f"a_pos_{port}"]
            inv = [
                # the link register takes the crossbar's output in every cycle, as the wrapper's register
                ("takes the switched flit", Value.cast(a_flit) == sw.as_value()),
                # a flit enters the link register only from a driver, and a driver owns the output
                ("holds only an owner's flit", ~a_valid | owned),
                # the rewrite's position counter (rtl/relay.py, position) is the link's framing counter,
                # saturated at the first payload flit
                ("rewrite position is the link's", (pos == 0) | (a_pos == Mux(pos > B + 1, B + 1, pos))),
            ]
            for what, c in inv:
                m.d.comb += Assert(c, f"link_order: invariant: link register {port} {what}")
    m.d.comb += Cover(
        reduce(operator.and_, [getattr(dut, f"o_{port}").valid & getattr(dut, f"o_{port}").payload.last for port in
                               p.lanes[:2]]),
        "link_order cover: two tails leave on two out-links in one cycle",
    )  # fmt: skip
    m.d.comb += Cover(reduce(operator.or_, trimmed), "link_order cover: a copy's bitmap word loses another port's bits")


def _invariant(m, prop, dut, blocks, fmt, p, env):
    """The router's strengthening invariant, stated on its blocks' registers: each relay's parse and grant
    state against the flits it took from its input, each input buffer's contents against the framing of its
    in-link, each output (its owner, busy bit and link register, from pipeline 1 on) against the relay that
    owns it and the framing of its out-link, the allocator's grant (pipeline >= 1) and each local lane's
    framing. Every conjunct is asserted under the property's name, so k-induction may assume it in the
    steps before."""
    L = fmt.packet_flits
    relays = blocks["relays"]
    rpos = []  # flits of its current packet each relay took from its input
    for j, relay in enumerate(relays):
        if relay.local:
            pos = Signal(range(L), name=f"relay_{j}_pos")
            with m.If(relay.i.valid & relay.i.ready):
                m.d.sync += pos.eq(Mux(pos == L - 1, 0, pos + 1))
        else:  # the injection relay's input is inject itself
            pos = env["in_pos"]["inject"]
        rpos.append(pos)
    inv = []
    for j, relay in enumerate(relays):
        waiting = relay.i.valid if relay.local else env["waiting"]["inject"]
        inv += [
            (f"relay {j} {what}", c) for what, c in _relay_invariant(fmt, relay, blocks["relay"][j], rpos[j], waiting)
        ]
    for j, port in enumerate(p.lanes):
        ok = _buffer_invariant(m, fmt, blocks, j, rpos[j], env["in_pos"][f"i_{port}"])
        inv += [(f"buffer {port} {what}", c) for what, c in ok]
    owes = _owes(fmt, blocks, rpos, len(p.lanes))
    if p.pipeline:
        inv += _output_invariant(fmt, blocks, p, env, owes) + _alloc_invariant(blocks)
    else:
        inv += _direct_output_invariant(blocks, p, env, owes)
    inv += _lane_invariant(blocks, p, env, owes)
    for what, c in inv:
        m.d.comb += Assert(c, f"{prop}: invariant: {what}")


def _relay_invariant(fmt, relay, regs, rpos, waiting):
    """A relay's registers against ``rpos``, the flits of its current packet it took (rtl/relay.py)."""
    B, outs = fmt.bitmap_flits, relay.outs
    parsing, word, active, branches, settled = (regs[k] for k in ("parsing", "word", "active", "branches", "settled"))
    passing = word == B + 1
    net = (settled & branches)[:outs]
    inv = parse_invariant(regs, rpos, fmt) + [
        ("no flit to a branch it does not need", ~active | (settled | branches).all()),
        # the local branch settles only by taking the flit, and then every network branch took it too (they
        # are always ready from pipeline 1 on; at pipeline 0 their receivers are ready within a granted packet,
        # and for its header, which the grant needed), so the flit is released in that cycle
        ("local branch never settled", ~active | ~branches[outs] | ~settled[outs]),
        # for the same reason the network branches take each flit together, so they are settled together, and
        # only while the local branch has not taken the flit
        ("network branches settle together", ~active | (net == 0) | ((net == branches[:outs]) & branches[outs])),
        # a settled branch took the input's flit, which stays until its release (the stream contract)
        ("a settled flit stays at the input", ~active | ~passing | (net == 0) | waiting),
    ]
    if relay.cut:  # stage Q: only a parsed header waits for its grant
        inv.append(("only a parsed header waits for a grant", ~regs["pend"] | (~parsing & ~active & ~passing)))
    if not relay.local:  # the injection relay has no local branch (a node never addresses itself)
        inv.append(("no local branch", ~regs["any_"][outs]))
    return inv


def _buffer_invariant(m, fmt, blocks, j, rpos, in_pos):
    """Input buffer ``j``'s contents (rtl/packet_router.py, InputBuffer): its fill level, pointers and room
    (as in rtl/formal/input_buffer.py), and where each flit inside stands in its packet: the in-link's
    framing counter is the relay's plus the flits inside, and each flit in the memory has ``first`` and
    ``last`` where that count puts them."""
    B, L = fmt.bitmap_flits, fmt.packet_flits
    buf, regs, mem = blocks["buffers"][j], blocks["buffer"][j], blocks["memories"][j]
    relay = blocks["relay"][j]
    depth = size = buf.depth
    level, fill, between = regs["level"], regs["fill"], regs["between"]
    produce, consume, show = mem.write_ports[0].addr, mem.read_ports[0].addr, mem.read_ports[1].addr
    count = Signal(range(depth + 2), name=f"buf_{j}_count")  # the flits inside: the level's code, as a number
    m.d.comb += count.eq(reduce(operator.add, [level[i].as_unsigned() for i in range(depth)]))

    # the position in its packet of the flit the relay presents: its header while it parses, then as it goes
    shown_at = Mux(relay["parsing"], 0, Mux(relay["word"] == B + 1, rpos, relay["word"]))
    head_flit = buf.o.payload
    inv = [
        # the level shifts up on a write and down on a read, from all zeros
        ("level is a thermometer code", level == Cat(*[count > i for i in range(depth)])),
        # the fill counts the popped flits not yet presented too
        ("fill is a thermometer code", fill == Cat(*[count + rpos - shown_at > i for i in range(depth)])),
        # they wrap at the memory's depth
        ("pointers in range", (produce < size) & (consume < size) & (show < size)),
        # a write advances the write pointer, a read the read pointer
        ("pointers apart by the flits inside", apart(consume, produce, count, size)),
        # the relay popped its packet's flits up to its count and presented them up to the shown one
        ("presentation behind the head by the flits popped", apart(show, consume, rpos - shown_at, size)),
        ("between packets at the link's header", between == (in_pos == 0)),  # set by the tail's ``last``
        # virtual cut-through
        ("the rest of the packet fits", between | (count + rpos - shown_at + L - in_pos <= depth)),
        # the buffer is a FIFO: the flits it took and has not passed on are the ones after the relay's count
        ("the flits inside complete the relay's count", _mod(m, rpos + count, L, f"buf_{j}_end") == in_pos),
        ("head framed", ~buf.o.valid | ((head_flit.first == (rpos == 0)) & (head_flit.last == (rpos == L - 1)))),
    ]
    if buf.registered:  # the registered ready promises no room that is not there, and is up within a packet
        inv += [("ready only with room", ~regs["ready"] | ~between | (count + rpos - shown_at <= depth - L))]
        inv += [("ready within a packet", between | regs["ready"])]
    for a in range(size):
        look = mem.read_port(domain="comb")
        m.d.comb += look.addr.eq(a)
        d = Signal(range(size), name=f"buf_{j}_dist_{a}")  # how far word a is behind the read pointer
        m.d.comb += d.eq(ring_distance(consume, a, size))
        at = _mod(m, rpos + d, L, f"buf_{j}_at_{a}")
        framed = (look.data.first == (at == 0)) & (look.data.last == (at == L - 1))
        inv.append((f"memory word {a} framed", (d >= count) | framed))
        # a popped flit not yet presented: the header or a bitmap word of the relay's packet
        kept = Signal(range(size), name=f"buf_{j}_kept_{a}")  # how far word a is behind the shown one
        m.d.comb += kept.eq(ring_distance(show, a, size))
        ahead = (kept < rpos - shown_at) & ~((look.data.first == (shown_at + kept == 0)) & ~look.data.last)
        inv.append((f"memory word {a} framed while kept", ~ahead))
    return inv


def _owes(fmt, blocks, rpos, outs):
    """``owes[j][k]``: relay ``j``'s granted packet has a flit left for output ``k``, and ``taken[j][k]``: the
    flits of it that branch ``k`` took (the presented flit's position, plus one once the branch took it)."""
    B, L = fmt.bitmap_flits, fmt.packet_flits
    owes, taken = [], []
    for j, regs in enumerate(blocks["relay"]):
        word, active, branches, settled = (regs[k] for k in ("word", "active", "branches", "settled"))
        pres = Mux(word == B + 1, rpos[j], word)
        taken.append([pres + settled[k] for k in range(outs + 1)])
        owes.append([active & branches[k] & ~(settled[k] & (pres == L - 1)) for k in range(outs + 1)])
    return {"owes": owes, "taken": taken}


def _output_invariant(fmt, blocks, p, env, owes):
    """Pipeline >= 1: each output's owner, busy bit and link register (stages G and L) against the relay that
    owns it, and its out-link's framing."""
    L = fmt.packet_flits
    path, relays = blocks["path"], blocks["relay"]
    busy = path["busy"]
    inv = []
    for k, port in enumerate(p.lanes):
        a_valid, a_flit, owner = path[f"a_valid_{port}"], fmt.flit(path[f"a_flit_{port}"]), path[f"owner_{port}"]
        o_pos = env["o_pos"][port]
        tail_in_link = a_valid & a_flit.last
        anyone = reduce(operator.or_, [o[k] for o in owes["owes"]])
        granted = reduce(operator.or_, [blocks["alloc"]["grant"][j] & r.req[k] for j, r in enumerate(blocks["relays"])])
        what = f"output {port}"
        for j in range(len(relays)):
            owing = owes["owes"][j][k]
            # the relay that still owes the output a flit owns it (so no other input drives it)
            inv.append((f"{what} owned by relay {j} while it owes a flit", ~owing | owner[j]))
            # the out-link took every flit the branch took but the one in the link register
            inv.append((f"{what} count is relay {j}'s", ~owing | (o_pos + a_valid == owes["taken"][j][k])))
        ready = env["ready_q"][port] & ~env["took_q"][port]
        inv += [
            (f"{what} owner one-hot, busy exactly when owned", ((owner & (owner - 1)) == 0) & (busy[k] == owner.any())),
            (f"{what} free exactly when neither busy nor in the link", path[f"free_{port}"] == (~busy[k] & ~a_valid)),
            (f"{what} busy while owed or with its tail in the link", ~busy[k] | anyone | tail_in_link),
            (f"{what} nothing owed behind the tail", ~tail_in_link | ~anyone),
            (f"{what} tail at the packet's end", ~tail_in_link | (o_pos == L - 1)),
            (f"{what} idle link", busy[k] | (~a_valid & (o_pos == 0))),
            (
                f"{what} link register framed",
                ~a_valid | ((a_flit.first == (o_pos == 0)) & (a_flit.last == (o_pos == L - 1))),
            ),
            # granted with room for the packet downstream: the receiver stays ready until it takes the header
            (f"{what} receiver ready for the header", ~((busy[k] | granted) & (o_pos == 0)) | ready),
        ]
    return inv


def _direct_output_invariant(blocks, p, env, owes):
    """Pipeline 0: no owner or link registers; an output is held by the relays' ``held`` (active with that
    branch), and its out-link's count is the owing branch's."""
    relays, outs = blocks["relay"], len(p.lanes)
    inv = []
    for k, port in enumerate(p.lanes):
        held = [r["active"] & r["branches"][k] for r in relays]
        anyone = reduce(operator.or_, [o[k] for o in owes["owes"]])
        o_pos = env["o_pos"][port]
        for j in range(len(relays)):
            for i in range(j):  # the allocator grants only outputs no packet holds
                inv.append((f"output {port} held by one of relays {i} and {j}", ~(held[i] & held[j])))
            inv.append((f"output {port} count is relay {j}'s", ~owes["owes"][j][k] | (o_pos == owes["taken"][j][k])))
        inv.append((f"output {port} idle link", anyone | (o_pos == 0)))
    for j, regs in enumerate(relays):  # the header leaves in its grant cycle, to every network branch (free)
        net = (regs["settled"] & regs["branches"])[:outs]
        took = ~regs["active"] | (regs["word"] != 0) | (net == regs["branches"][:outs])
        inv.append((f"relay {j} header taken by the network branches", took))
    return inv


def _lane_invariant(blocks, p, env, owes):
    """The local lane of input ``j``: its count is its relay's local branch's."""
    inv = []
    for j, port in enumerate(p.lanes):
        regs = blocks["relay"][j]
        local = regs["active"] & regs["branches"][len(p.lanes)]
        count = Mux(local, owes["taken"][j][len(p.lanes)], 0)
        inv.append((f"lane {port} count is relay {j}'s", env["eject_pos"][port] == count))
    return inv


def _alloc_invariant(blocks):
    """The matrix allocator's registered grant (stage A): a choice shows as ``granting`` in the grant's cycle,
    its inputs' outputs are disjoint and free, each granted input presents a waiting header; the arbiter's
    order is a total order (the matrix stays transitive), so the first eligible input is always chosen."""
    alloc, relays = blocks["alloc"], blocks["relays"]
    grant, granting = alloc["grant"], alloc["granting"]
    n = len(relays)
    busy = blocks["path"]["busy"]
    inv = [("allocator granting iff a grant", granting == grant.any())]
    for j, r in enumerate(relays):
        regs = blocks["relay"][j]
        waits = regs["pend"] & ~regs["parsing"] & ~regs["active"] & (regs["word"] == 0)
        inv.append((f"allocator grants relay {j} a waiting header", ~grant[j] | waits))
        inv.append((f"allocator grants relay {j} free outputs", ~grant[j] | ((r.req & busy) == 0)))
        for i in range(j):
            disjoint = ~(grant[i] & grant[j]) | ((relays[i].req & r.req) == 0)
            inv.append((f"allocator grants relays {i} and {j} disjoint outputs", disjoint))

    def before(i, j):
        return alloc[f"first_{i}_{j}"] if i < j else ~alloc[f"first_{j}_{i}"]

    for i in range(n):
        for j in range(n):
            for k in range(n):
                if len({i, j, k}) == 3:
                    order = ~(before(i, j) & before(j, k)) | before(i, k)
                    inv.append((f"allocator order transitive {i} {j} {k}", order))
    return inv


def _elaborate(path, cut):
    """Elaborate the router's :class:`PacketPath`, its input buffers, relays and allocator (``cut``: the
    :class:`MatrixAllocator`) by hand (each block's elaboration then returns that module), so the invariant
    can name their registers (:func:`~.probe.internals`). Returns the registers by block, the blocks and the
    buffers' memories."""

    def by_hand(block, classes=()):
        with made(*classes) as seen:
            body = block.elaborate(None)
        block.elaborate = lambda platform: body
        return internals(body), seen

    path_regs, seen = by_hand(path, (Relay, InputBuffer, Allocator))
    relays, buffers = seen[Relay], seen[InputBuffer]
    out = {"path": path_regs, "relays": relays, "buffers": buffers, "memories": []}
    out["relay"] = [by_hand(r)[0] for r in relays]
    alloc = seen[Allocator][0]
    assert isinstance(alloc, MatrixAllocator) == cut
    out["alloc"] = by_hand(alloc)[0]
    out["buffer"] = []
    for b in buffers:
        regs, mems = by_hand(b, (Memory,))
        out["buffer"].append(regs)
        out["memories"].append(mems[Memory][0])
    return out


def _mod(m, x, modulus, name):
    """``x mod modulus`` for a small ``x`` (below ``4 * modulus``), as a signal."""
    r = Signal(range(modulus), name=name)
    v = Value.cast(x).as_unsigned()
    m.d.comb += r.eq(Mux(v >= 3 * modulus, v - 3 * modulus, Mux(v >= 2 * modulus, v - 2 * modulus,
                                                                 Mux(v >= modulus, v - modulus, v))))  # fmt: skip
    return r


def _flat(member):
    """The signals of a port member (a stream's valid, ready and payload, or a plain port)."""
    if hasattr(member, "valid"):
        return [member.valid, member.ready, member.payload.as_value()]
    return [member.as_value() if hasattr(member, "as_value") else member]
