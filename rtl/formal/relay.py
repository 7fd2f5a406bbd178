"""Formal wrapper of the MultiWrite :class:`~equimesh.rtl.relay.Relay` of one network input (seed 004,
Sections 4.1, 4.3.3 and 6.4), with fixed-width flits: a header, ``bitmap_flits`` bitmap words, then
the payload (:mod:`~equimesh.rtl.packet`).

The copies are what the router sends: branch ``k``'s copy of a flit is the relay's output ``o``
rewritten by the shipped :func:`~equimesh.rtl.relay.rewrite` at the flit's position on that branch
(the wrapper counts the flits each branch took, as the router's link counts them) with ``reach[k]``
and the relay's opcode decision ``multi[k]``; the local copy is rewritten with the own bit. The
environment:

* ``own`` and ``reach`` are any forwarding entries (chosen once) that partition the nodes: ``own`` one
  node, the ``reach`` masks disjoint, together every node (the forwarding table,
  :mod:`~equimesh.schedules.routing`);
* the input is any sequence of whole packets (header, bitmap words, payload: ``first`` and ``last``
  where :mod:`~equimesh.rtl.packet` puts them) with a non-empty bitmap, under the stream contract;
* the allocator grants only a waiting header (from pipeline 1 on it registers its choice, so a grant
  follows a cycle in which the header already waited: :class:`~equimesh.rtl.packet_router.MatrixAllocator`);
* a network branch takes a header when first offered (virtual cut-through: the allocator granted the
  output only with room for the whole packet downstream); every other ready, the local delivery's
  above all, is free (any backpressure). A network input is never held.

The wrapper records the packet as it enters (header and bitmap words) and counts the flits each branch
took. For k-induction it states that the relay's registers (the parse state ``parsing``/``word`` and
its decodes, the route ``any_``/``mine`` over the words split so far and ``sev`` over the words summed
so far, from pipeline 1 on the parts of the word waiting to be split ``got_<k>``/``at``/``split`` and the
split bits waiting to be summed ``tally``/``tally_any_<k>``/``tally_sev_<k>`` (per group of the word's bits)
/``tally_was``, the grant state ``active``/``branches``/``settled``) agree with that record.

The input buffer keeps the header and the bitmap words the relay popped and shows the flit the relay
presents (:class:`~equimesh.rtl.packet_router.InputBuffer`, ``shown`` and ``advance``). The wrapper is
that buffer, ideal: it counts the relay's ``advance`` pulses and shows that flit of the packet, the
recorded header or bitmap word, or the head once the count reached the flits popped. ``branch_once``
also checks the buffer's side of the contract: the relay presents only flits it popped, keeps at most
the header and the bitmap words popped ahead of the presented one, and pops the payload as it presents
it (``buffer_order`` proves the real buffer shows what this ideal one does).
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, Signal

from .. import relay as relay_module
from ..packet import Opcode
from ..relay import Relay
from . import Params, Prop, Wrapper
from .probe import anyconst, internals, no_reset, stream_contract

__all__ = ["PROPERTIES", "build", "parse_invariant"]

_ENV = (
    "own and reach partition the nodes (the forwarding table); the input keeps the stream contract and sends "
    "whole packets (header, bitmap words, payload) with non-empty bitmaps; the allocator grants only a waiting "
    "header (pipeline >= 1: one that waited a cycle); a network branch takes the header when first offered "
    "(virtual cut-through); all other readies, the local delivery's above all, are free"
)

PROPERTIES = {
    "split_cover": Prop(
        "split_cover",
        "when the packet's tail is released, the union of the network copies' bitmaps (every word) is the input "
        "bitmap without the own node, and the local branch took its copy exactly when the bitmap has the own node",
        _ENV,
    ),
    "split_disjoint": Prop(
        "split_disjoint",
        "the copies' bitmap words are pairwise disjoint, each inside its port's reach mask (the local copy: the "
        "own bit); a branch is offered the packet only if its part of the bitmap is non-empty",
        _ENV,
    ),
    "plain_write": Prop(
        "plain_write",
        "a copy with one destination leaves as a WRITE, a copy with several as a MULTIWRITE",
        _ENV,
    ),
    "release_after_all": Prop(
        "release_after_all",
        "a payload flit is released from the input only after every branch of its packet took it; at the "
        "tail's release every branch took the whole packet",
        _ENV,
    ),
    "branch_once": Prop(
        "branch_once",
        "each branch takes each flit of its packet exactly once and in order (header, bitmap words, payload) "
        "and unchanged; nothing is offered before the bitmap is parsed, nor to a branch the packet does not need; "
        "the input buffer is asked to show only flits popped, at most the header and the bitmap words ahead",
        _ENV,
    ),
    "relay_latency": Prop(
        "relay_latency",
        "bounded liveness: with every branch always ready and the grant as early as the allocator allows, the "
        "header leaves 4 cycles after its last bitmap word was taken (pipeline 0: 1 cycle), each bitmap word "
        "in the cycle after the one before, and each payload flit in the cycle it reaches the input's head",
        _ENV + "; for this property also: every ready is 1 and the grant comes as soon as the allocator allows",
    ),
}


def parse_invariant(regs, pos, fmt) -> list[tuple[str, object]]:
    """A relay's parse and grant state against ``pos``, the flits of its current packet it took from its
    input (rtl/relay.py): the conjuncts of the strengthening invariant that the relay's wrapper and the
    packet router's (rtl/formal/packet_router.py) share.

    Parameters
    ----------
    regs : dict
        The relay's registers by name (:func:`~.probe.internals`): ``parsing``, ``word``, its decodes
        ``at_header``, ``cur`` and ``passing``, and ``active``.
    pos : Value
        The wrapper's count of the flits the relay took in its current packet.
    fmt : PacketFormat
        The network's packet format.

    Returns
    -------
    list of (str, Value)
        Each conjunct with what it states.
    """
    B, L = fmt.bitmap_flits, fmt.packet_flits
    parsing, word, active = regs["parsing"], regs["word"], regs["active"]
    return [
        ("count in range", pos < L),  # the wrapper's counter wraps at the packet's end
        # it parses the header and the bitmap words, then passes the payload
        ("parses the header and bitmap", parsing == (pos <= B)),
        ("parses the next flit", ~parsing | (word == pos)),
        ("word in range", word <= B + 1),
        # the decodes of ``word`` kept in registers beside it
        ("at_header decodes word", regs["at_header"] == (word == 0)),
        ("passing decodes word", regs["passing"] == (word == B + 1)),
        ("granted only once parsed", ~parsing | ~active),
        ("presents its header until granted", active | parsing | (word == 0)),
        # the payload waits at the input while the header and the bitmap words are presented
        ("payload waits at the input", parsing | (word == B + 1) | (pos == B + 1)),
    ] + (
        [("cur addresses word's bitmap word", (word == 0) | (word == B + 1) | (regs["cur"] == word - 1))]
        if B > 1  # one bitmap word: ``cur`` has no bits
        else []
    )


def _union(values):
    return reduce(operator.or_, values)


def _single(v):
    return (v != 0) & ((v & (v - 1)) == 0)


def _several(v):
    return (v & (v - 1)) != 0


def _environment(m, dut, fmt, outs):
    """The forwarding entries (any partition of the nodes) and the input's contract; returns
    ``own``, ``reach``, the input position counter and the stream contract's waiting register."""
    nodes, L = fmt.nodes, fmt.packet_flits
    own = anyconst(m, nodes, "own")
    reach = [anyconst(m, nodes, f"reach_{k}") for k in range(outs)]
    union = own
    m.d.comb += [dut.own.eq(own), Assume(_single(own))]  # the forwarding table: one own node
    for k in range(outs):
        # the forwarding table routes each node through one port: disjoint masks, none with the own node
        m.d.comb += [dut.reach[k].eq(reach[k]), Assume((reach[k] & union) == 0)]
        union = union | reach[k]
    m.d.comb += Assume(union == (1 << nodes) - 1)  # every node is reached
    head = dut.i.payload
    waiting = stream_contract(m, dut.i.valid, dut.i.ready, head, "input")  # the input buffer's head stream
    in_pos = Signal(range(L))  # flits of the current packet taken from the input
    with m.If(dut.i.valid & dut.i.ready):
        m.d.sync += in_pos.eq(Mux(in_pos == L - 1, 0, in_pos + 1))
    m.d.comb += [
        # rtl/packet.py: whole packets, the header first, the last flit marked
        Assume(~dut.i.valid | ((head.first == (in_pos == 0)) & (head.last == (in_pos == L - 1)))),
        Assume(~dut.hold),  # a network input is never held (rtl/packet_router.py: only the injection relay)
    ]
    return own, reach, in_pos, waiting


def build(p: Params, prop: str):
    """The relay of one network input of node 0's router for ``p``, its environment and property ``prop``.

    Parameters
    ----------
    p : Params
        The design: the router's ports, the pipeline (``cut`` from 1 on), the packet format.
    prop : str
        One of :data:`PROPERTIES`.

    Returns
    -------
    Wrapper
        The wrapper, its ports, the proof depth (a tail leaves within it) and the cover depth.
    """
    fmt = p.fmt
    outs, nodes, B, L, W = len(p.lanes), fmt.nodes, fmt.bitmap_flits, fmt.packet_flits, fmt.width
    n = outs + 1
    cut = p.pipeline > 0
    dut = Relay(fmt, outs, local=True, cut=cut)
    dut._MustUse__silence = True  # elaborated below, by hand
    m = Module()
    body = dut.elaborate(None)
    m.submodules.dut = body
    no_reset(m)
    regs = internals(body)
    own, reach, in_pos, waiting = _environment(m, dut, fmt, outs)
    head, o = dut.i.payload, dut.o
    take = dut.i.valid & dut.i.ready
    parsed = in_pos >= B + 1  # the header and every bitmap word are in the relay

    # ---- the packet as it entered: header and bitmap words ----
    hdr_in = Signal(W)
    words = [Signal(W, name=f"word_in_{j}") for j in range(B)]
    with m.If(take & (in_pos == 0)):
        m.d.sync += hdr_in.eq(head.body.payload)
    for j in range(B):
        with m.If(take & (in_pos == j + 1)):
            m.d.sync += words[j].eq(head.body.payload)
    bitmap = Signal(nodes)
    m.d.comb += bitmap.eq(Cat(*words)[:nodes])
    # seed 004: a MultiWrite addresses at least one node (PacketFormat.bitmap; the relay asserts it)
    last_seen = Cat(*words[:-1], head.body.payload)[:nodes]
    m.d.comb += Assume(~(dut.i.valid & (in_pos == B)) | (last_seen != 0))
    need = Signal(n)  # the branches the packet needs (seed 004, Section 4.3.3 rule 3)
    m.d.comb += need.eq(Cat(*[(bitmap & reach[k]) != 0 for k in range(outs)], (bitmap & own) != 0))

    # ---- the allocator ----
    pending_q = Signal()
    m.d.sync += pending_q.eq(dut.pending & ~dut.grant)
    # the allocator grants a waiting header; MatrixAllocator registers its choice (a cycle of waiting)
    m.d.comb += Assume(~dut.grant | (dut.pending & (pending_q if cut else 1)))

    # ---- the branches: readies, flits taken, copies ----
    took = Signal(n)
    m.d.comb += took.eq(dut.valid & dut.ready)
    for k in range(outs):  # virtual cut-through: a granted output's receiver has room for the packet
        m.d.comb += Assume(~(dut.valid[k] & o.first) | dut.ready[k])
    tail_out = take & head.last
    bpos = [Signal(range(L + 1), name=f"bpos_{k}") for k in range(n)]  # flits branch k took of this packet
    for k in range(n):
        with m.If(tail_out):
            m.d.sync += bpos[k].eq(0)
        with m.Elif(took[k]):
            m.d.sync += bpos[k].eq(bpos[k] + 1)
    copies = []
    for k in range(n):
        copy = Signal(fmt.flit, name=f"copy_{k}")
        mask, multi = (reach[k], dut.multi[k]) if k < outs else (own, Const(0, 1))
        relay_module.rewrite(m, fmt, copy, o, bpos[k], mask, multi)
        copies.append(copy)
    masks = [reach[k] for k in range(outs)] + [own]
    # ``sent``: per bitmap word, the union of the copies taken so far (network copies, then the local one)
    sent = [Signal(W, name=f"sent_{j}") for j in range(B)]
    sent_local = [Signal(W, name=f"sent_local_{j}") for j in range(B)]
    for j in range(B):
        net = _union([Mux(took[k] & (bpos[k] == j + 1), copies[k].body.payload, 0) for k in range(outs)])
        loc = Mux(took[outs] & (bpos[outs] == j + 1), copies[outs].body.payload, 0)
        with m.If(tail_out):
            m.d.sync += [sent[j].eq(0), sent_local[j].eq(0)]
        with m.Else():
            m.d.sync += [sent[j].eq(sent[j] | net), sent_local[j].eq(sent_local[j] | loc)]

    for j in range(B):  # ``sent`` holds exactly the copies of word j that the branches took
        mw = [relay_module.mask_word(fmt, mk, j) for mk in masks]
        net = _union([Mux(bpos[k] > j + 1, words[j] & mw[k], 0) for k in range(outs)])
        loc = Mux(bpos[outs] > j + 1, words[j] & mw[outs], 0)
        what = (
            f"split_cover: the copies of bitmap word {j} taken so far are the word within their masks"
            if prop == "split_cover"
            else f"{prop}: invariant sent {j}"
        )
        m.d.comb += Assert((sent[j] == net) & (sent_local[j] == loc), what)

    def expected(q):
        """The body of flit ``q`` of the packet: the header, a bitmap word, or the input's payload flit."""
        word = words[0] if B == 1 else Cat(*words).word_select((q - 1).as_unsigned()[: max(1, (B - 1).bit_length())], W)
        return Mux(q == 0, hdr_in, Mux(q <= B, word, head.body.payload))

    # ---- the input buffer's presentation: it keeps the popped header and bitmap words (rtl/packet_router.py) ----
    adv = Signal(range(L))  # flits of the packet the relay presented (``advance``) so far
    with m.If(dut.advance):
        m.d.sync += adv.eq(Mux(adv == L - 1, 0, adv + 1))
    shown = dut.shown
    m.d.comb += [  # the flit ``adv``: the head once the presentation caught up with it, else a kept flit
        shown.first.eq(Mux(adv == in_pos, head.first, adv == 0)),
        shown.last.eq(Mux(adv == in_pos, head.last, 0)),
        shown.body.payload.eq(Mux(adv == in_pos, head.body.payload, expected(adv))),
    ]
    kept = [  # the buffer's contract (only popped flits are presented); the rest: at most 1 + bitmap_flits kept
        (adv <= in_pos, "presents no flit it has not popped"),
        (~dut.advance | (adv < in_pos) | take, "advances only past a popped flit"),
        (in_pos - adv <= B + 1, "keeps at most the header and the bitmap words"),
        ((adv <= B) | (adv == in_pos), "presents the payload as it pops it"),
    ]
    if prop == "branch_once":
        m.d.comb += [Assert(c, f"branch_once: the input buffer's presentation {what}") for c, what in kept]

    _invariants(m, prop, dut, regs, fmt, reach, own, in_pos, waiting, words, hdr_in, need, bpos, pending_q, cut, adv)

    ctx = dict(
        m=m, dut=dut, fmt=fmt, n=n, outs=outs, reach=reach, own=own, in_pos=in_pos, parsed=parsed, bitmap=bitmap,
        need=need, took=took, bpos=bpos, copies=copies, masks=masks, sent=sent, sent_local=sent_local,
        tail_out=tail_out, take=take, expected=expected, pending_q=pending_q, cut=cut,
    )  # fmt: skip
    _PROPS[prop](**ctx)
    ports = [dut.i.valid, dut.i.ready, head.as_value(), o.as_value(), dut.index, dut.valid, dut.ready, dut.req,
             dut.pending, dut.hold, dut.grant, dut.held, dut.active, dut.multi]  # fmt: skip
    # The base case reaches a tail: the header leaves B + 4 cycles after it was taken (pipeline 2), the bitmap
    # words and the payload follow one a cycle, so a bug in any flit's copy shows within the depth.
    depth = 2 * B + fmt.payload_flits + 6
    return Wrapper(m, ports, depth, depth + 2)


def _invariants(m, prop, dut, regs, fmt, reach, own, in_pos, waiting, words, hdr_in, need, bpos, pending_q, cut, adv):
    """The strengthening invariant: the relay's registers agree with the wrapper's record of the packet."""
    outs, nodes, B = len(reach), fmt.nodes, fmt.bitmap_flits
    parsing, word = regs["parsing"], regs["word"]
    any_, sev, mine = regs["any_"], regs["sev"], regs["mine"]
    active, branches, settled = regs["active"], regs["branches"], regs["settled"]
    parsed = in_pos >= B + 1
    # the bitmap words split so far: those taken, but the one taken in the last cycle while its parts wait in ``got_*``
    # to be split (pipeline >= 1: ``split``)
    split = regs["split"] if cut else Const(0, 1)
    partial = Signal(nodes)
    m.d.comb += partial.eq(Cat(*[Mux(in_pos > j + 1 + split, words[j], 0) for j in range(B)])[:nodes])
    # the words summed into ``sev``: those split, but the one split in the last cycle while its (any, several)
    # bits wait to be summed (pipeline >= 1: ``tally``)
    tally = regs["tally"] if cut else Const(0, 1)
    summed = Signal(nodes)
    m.d.comb += summed.eq(Cat(*[Mux(in_pos > j + 1 + split + tally, words[j], 0) for j in range(B)])[:nodes])
    pres = Mux(word == B + 1, in_pos, word)  # the position of the flit the relay presents
    inv = [c for _, c in parse_invariant(regs, in_pos, fmt)]
    inv += [(word != B + 1) | ~parsing]
    inv += [adv == Mux(parsing, 0, pres)]  # the input buffer shows the flit the relay presents
    started = in_pos > 1 + split  # a word of this packet was split: the route is this packet's
    route = [~started | (any_[k] == ((partial & reach[k]) != 0)) for k in range(outs)]
    route += [~started | (sev[k] == _several(summed & reach[k])) for k in range(outs)]
    route += [~started | (any_[outs] == ((partial & own) != 0)), ~started | (mine == ((partial & own) != 0))]
    inv += route
    for k in range(outs + 1):
        inv += [
            active | (bpos[k] == 0),
            ~active | (branches[k] == need[k]),
            ~active | need[k] | (settled[k] & (bpos[k] == 0)),
            ~active | ~need[k] | (bpos[k] == pres + settled[k]),
            ~active | ~need[k] | ~settled[k] | (word != B + 1) | waiting,
        ]
    if cut:
        pend = regs["pend"]
        inv += [~pend | (parsed & ~active & (word != B + 1)), ~pending_q | pend]
        # the word waiting to be split is the one taken in the last cycle
        at = regs["at"] if B > 1 else Const(0, 1)
        inv += [~split | (in_pos == at + 2)]
        for k, mask in enumerate([*reach, own]):  # its parts: the word ANDed with each mask word, own last
            got = regs[f"got_{k}"]
            inv += [~split | (at != j) | (got == (words[j] & relay_module.mask_word(fmt, mask, j))) for j in range(B)]
        # the bits waiting to be summed are those of the word split in the last cycle (the words split but not
        # summed), and ``tally_was`` the route of the words before it (those summed)
        # in groups of GROUP_BITS bits of the word (group g: the nodes n with n mod width in g's range)
        t_was, G = regs["tally_was"], relay_module.GROUP_BITS
        groups = [sum(1 << n for n in range(nodes) if (n % fmt.width) // G == g) for g in range(-(-fmt.width // G))]
        inv += [~tally | ((in_pos >= 2 + split) & (in_pos <= B + 1 + split))]
        for k in range(outs):
            part = partial & ~summed & reach[k]
            t_any, t_sev = regs[f"tally_any_{k}"], regs[f"tally_sev_{k}"]
            for g, group in enumerate(groups):
                inv += [~tally | ((t_any[g] == ((part & group) != 0)) & (t_sev[g] == _several(part & group)))]
            inv += [~tally | (t_was[k] == ((summed & reach[k]) != 0))]
    for i, c in enumerate(inv):
        m.d.comb += Assert(c, f"{prop}: invariant {i}")


def _split_cover(m, dut, fmt, outs, own, bitmap, took, bpos, sent, sent_local, tail_out, need, n, **_):
    nodes = fmt.nodes
    net, loc = Cat(*sent)[:nodes], Cat(*sent_local)[:nodes]
    local_took = (bpos[outs] != 0) | took[outs]
    m.d.comb += [
        Assert(~tail_out | (net == (bitmap & ~own)), "split_cover: the network copies cover the bitmap without own"),
        Assert(~tail_out | (loc == (bitmap & own)), "split_cover: the local copy is the own bit"),
        Assert(~tail_out | (local_took == ((bitmap & own) != 0)), "split_cover: a local copy iff the own bit"),
        Cover(tail_out & (need == (1 << n) - 1), "split_cover cover: a packet copied to every branch"),
    ]


def _split_disjoint(m, dut, fmt, outs, n, took, bpos, copies, masks, sent, sent_local, parsed, need, tail_out, **_):
    B = fmt.bitmap_flits
    for k in range(n):
        part = copies[k].body.payload
        q = bpos[k]
        j = (q - 1).as_unsigned()[: max(1, (B - 1).bit_length())]
        mask = relay_module.mask_word(fmt, masks[k], j)
        before = (
            Cat(*sent).word_select(j, fmt.width) | Cat(*sent_local).word_select(j, fmt.width)
            if B > 1
            else (sent[0] | sent_local[0])
        )
        bm = took[k] & (q >= 1) & (q <= B)
        m.d.comb += [
            Assert(~bm | ((part & ~mask) == 0), f"split_disjoint: branch {k}'s copy inside its mask"),
            Assert(~bm | ((part & before) == 0), f"split_disjoint: branch {k}'s copy disjoint from the earlier ones"),
            Assert(~dut.valid[k] | (parsed & need[k]), f"split_disjoint: branch {k} offered only with destinations"),
        ]
        for i in range(k):
            both = bm & took[i] & (bpos[i] == q)
            m.d.comb += Assert(
                ~both | ((part & copies[i].body.payload) == 0), f"split_disjoint: branches {i} and {k} disjoint"
            )
    m.d.comb += Cover(
        tail_out & (need[:outs] == (1 << outs) - 1), "split_disjoint cover: a packet split over every network branch"
    )


def _plain_write(m, outs, n, took, bpos, copies, masks, bitmap, **_):
    for k in range(n):
        c = copies[k].body.header
        hd = took[k] & (bpos[k] == 0)
        m.d.comb += Assert(~hd | ((c.opcode == Opcode.WRITE) == _single(bitmap & masks[k])), f"plain_write: branch {k}")
    part0 = bitmap & masks[0]
    m.d.comb += [
        Cover(took[0] & (bpos[0] == 0) & _single(part0) & ~_single(bitmap), "plain_write cover: a multicast leaves "
              "one branch as a WRITE"),
        Cover(took[0] & (bpos[0] == 0) & ~_single(part0), "plain_write cover: a branch keeps a MULTIWRITE"),
    ]  # fmt: skip


def _release_after_all(m, fmt, n, outs, take, in_pos, need, bpos, took, tail_out, **_):
    B, L = fmt.bitmap_flits, fmt.packet_flits
    payload = take & (in_pos >= B + 1)
    done = Cat(*[~need[k] | (bpos[k] + took[k] > in_pos) for k in range(n)])
    whole = Cat(*[Mux(need[k], bpos[k] + took[k] == L, bpos[k] == 0) for k in range(n)])
    m.d.comb += [
        Assert(~payload | done.all(), "release_after_all: every branch took the flit before its release"),
        Assert(~tail_out | whole.all(), "release_after_all: at the tail every branch took the whole packet"),
        Cover(payload & need[outs] & ~took[outs] & (bpos[outs] > in_pos) & (in_pos == B + 1),
              "release_after_all cover: a flit released after a slow local branch"),
    ]  # fmt: skip


def _branch_once(m, dut, fmt, n, outs, took, bpos, need, parsed, in_pos, expected, tail_out, **_):
    B, L = fmt.bitmap_flits, fmt.packet_flits
    o = dut.o
    for k in range(n):
        q = bpos[k]
        right = (
            parsed
            & need[k]
            & (o.first == (q == 0))
            & (o.last == (q == L - 1))
            & (o.body.payload == expected(q))
            & ((q <= B) | (dut.i.valid & (in_pos == q)))
        )
        m.d.comb += Assert(~took[k] | right, f"branch_once: branch {k} takes the packet's next flit, unchanged")
        m.d.comb += Assert(~dut.valid[k] | (parsed & need[k]), f"branch_once: branch {k} offered only its packets")
    m.d.comb += Cover(tail_out & (need == (1 << n) - 1), "branch_once cover: a tail leaves to every branch")


def _relay_latency(m, dut, fmt, n, outs, take, in_pos, parsed, need, bpos, took, pending_q, cut, **_):
    B = fmt.bitmap_flits
    bound = 4 if cut else 1  # rtl/relay.py: presented the cycle after the last word, then stages Q, A, G
    since = Signal(range(bound + 2))  # cycles since the last bitmap word was taken, until the header left
    left = Cat(*[bpos[k] != 0 for k in range(n)]).any()
    m.d.sync += since.eq(Mux(take & (in_pos == B), 1, Mux(since == bound + 1, since, since + 1)))
    waiting_hdr = parsed & ~left
    m.d.comb += [
        Assume(dut.ready == (1 << n) - 1),  # this property only: every branch always ready
        Assume(dut.grant == (dut.pending & (pending_q if cut else 1))),  # and the earliest grant
        Assert(~waiting_hdr | (since <= bound), "relay_latency: the header waits at most the bound"),
        Assert(~(took.any() & dut.o.first) | (since == bound), "relay_latency: the header leaves at the bound"),
    ]
    for k in range(n):
        late = need[k] & (bpos[k] >= 1) & ((bpos[k] <= B) | dut.i.valid) & ~took[k]
        m.d.comb += Assert(~(parsed & late), f"relay_latency: branch {k} takes every later flit at once")
    m.d.comb += Cover(took.any() & dut.o.first & (since == bound), "relay_latency cover: a header leaves at the bound")


_PROPS = {
    "split_cover": _split_cover,
    "split_disjoint": _split_disjoint,
    "plain_write": _plain_write,
    "release_after_all": _release_after_all,
    "branch_once": _branch_once,
    "relay_latency": _relay_latency,
}
