"""Formal wrapper of the MultiWrite :class:`~equimesh.rtl.relay.Relay` of one network input (seed 004,
Section 4.1 and 4.3.3), through its ports only.

The copies are what the router sends: each network branch ``k`` the header rewritten by
:func:`~equimesh.rtl.relay.rewrite_header` with ``reach[k]`` (and, from pipeline 1 on, the relay's
registered opcode decision ``multi[k]``), the local branch the header rewritten to the router's own
bit. The environment:

* ``own`` and ``reach`` are any forwarding entries (chosen once) that partition the nodes: ``own`` one
  node, the ``reach`` masks disjoint, together every node (the forwarding table,
  :mod:`~equimesh.schedules.routing`);
* the input is any sequence of whole packets with any non-empty bitmap, under the stream contract;
* the allocator grants only a waiting header (and from pipeline 1 on registers its choice, so a grant
  follows a cycle in which the header already waited);
* a network branch takes a header when first offered (virtual cut-through: the allocator granted the
  output only with room for the whole packet downstream); otherwise every branch's ready, the local
  delivery's above all, is free (any backpressure).

The wrapper follows the packet being relayed: the branches its header needs, and per branch whether it
took the flit now offered. For k-induction it states that the relay's registers (``active``,
``branches``, ``settled``, ``multi``) agree with that.
"""

from __future__ import annotations

import operator
from functools import reduce
from math import isqrt

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, Signal
from amaranth.lib import data

from .. import relay as relay_module
from ..packet import Opcode, PacketFormat
from ..relay import Relay
from . import Params, Prop, Wrapper
from .probe import anyconst, internals, no_reset, stream_contract

_ENV = ("own and reach partition the nodes (the forwarding table); the input keeps the stream contract and "
        "sends whole packets with non-empty bitmaps; the allocator grants only a waiting header (pipeline >= "
        "1: one that waited a cycle); a network branch takes the header when first offered (virtual "
        "cut-through); all other readies, the local delivery's above all, are free")

PROPERTIES = {
    "split_cover": Prop(
        "split_cover",
        "when the header is released, the union of the copies' bitmaps that the network branches took is the "
        "input bitmap without the own node, and the local branch took its copy exactly when the bitmap has "
        "the own node", _ENV),
    "split_disjoint": Prop(
        "split_disjoint",
        "the copies are pairwise disjoint, each copy's bitmap is non-empty and lies inside its port's reach "
        "mask (the local copy: the own bit)", _ENV),
    "plain_write": Prop(
        "plain_write",
        "a copy with one destination leaves as a WRITE, a copy with several as a MULTIWRITE", _ENV),
    "release_after_all": Prop(
        "release_after_all",
        "a flit is released from the input only after every branch of its packet took it", _ENV),
    "relay_latency": Prop(
        "relay_latency",
        "bounded liveness: with every branch always ready and no other input competing for the outputs (the "
        "allocator grants as soon as it can), a header leaves 3 cycles after it reached the input's head "
        "(pipeline 0: in that cycle) and every other flit in the cycle it arrives",
        _ENV + "; for this property also: every ready is 1 and the grant comes as soon as the allocator allows"),
    "branch_once": Prop(
        "branch_once",
        "each branch takes each flit of its packet exactly once, in input order, and nothing else (no "
        "duplicate, no flit offered to a branch the header does not need, none while the input is empty)",
        _ENV),
}


def fmt_of(p: Params) -> PacketFormat:
    return PacketFormat(p.nodes, p.payload_flits)


def _union(values):
    return reduce(operator.or_, values)


def _single(v):
    return (v != 0) & ((v & (v - 1)) == 0)


def build(p: Params, prop: str):
    fmt = fmt_of(p)
    outs, nodes = len(p.lanes), fmt.nodes
    cut = p.pipeline > 0
    dut = Relay(fmt, outs, local=True, cut=cut)
    dut._MustUse__silence = True  # elaborated below, by hand
    m = Module()
    body = dut.elaborate(None)
    m.submodules.dut = body
    no_reset(m)
    regs = internals(body)
    n = outs + 1
    head = dut.i.payload
    bitmap = head.body.header.bitmap

    # ---- forwarding entries: any partition of the nodes, chosen once ----
    own = anyconst(m, nodes, "own")
    reach = [anyconst(m, nodes, f"reach_{k}") for k in range(outs)]
    union = own
    m.d.comb += [dut.own.eq(own), Assume(_single(own))]
    for k in range(outs):
        m.d.comb += [dut.reach[k].eq(reach[k]), Assume((reach[k] & union) == 0)]  # disjoint from own and earlier
        union = union | reach[k]
    m.d.comb += Assume(union == (1 << nodes) - 1)  # every node is reached

    # ---- the input: whole packets, non-empty bitmaps, the stream contract ----
    stream_contract(m, dut.i.valid, dut.i.ready, dut.i.payload, "input")
    pos = Signal(range(fmt.packet_flits))  # flits of the current packet released
    release = dut.i.valid & dut.i.ready
    with m.If(release):
        m.d.sync += pos.eq(Mux(pos == fmt.packet_flits - 1, 0, pos + 1))
    m.d.comb += [
        Assume(~dut.i.valid | ((head.first == (pos == 0)) & (head.last == (pos == fmt.packet_flits - 1)))),
        Assume(~dut.i.valid | ~head.first | (bitmap != 0)),
        Assume(~dut.hold),  # a network input is never held (rtl/packet_router.py: only the injection relay)
    ]
    # ---- the allocator ----
    pending_q = Signal()
    m.d.sync += pending_q.eq(dut.pending & ~dut.grant)
    m.d.comb += Assume(~dut.grant | (dut.pending & (pending_q if cut else 1)))

    # ---- the branches' readies; the copies ----
    offered = dut.valid
    took = Signal(n)
    m.d.comb += took.eq(dut.valid & dut.ready)
    for k in range(outs):
        m.d.comb += Assume(~(offered[k] & head.first) | dut.ready[k])  # virtual cut-through
    copies = []
    for k in range(n):
        copy = Signal(fmt.flit, name=f"copy_{k}")
        if k < outs:
            relay_module.rewrite_header(m, copy, head, reach[k], dut.multi[k] if cut else None)
        else:
            relay_module.rewrite_header(m, copy, head, own, Const(0, 1))
        copies.append(copy)

    # ---- the packet being relayed, as the wrapper sees it ----
    need = Signal(n)  # the branches the header at the input needs (seed 004, Section 4.3.3 rule 3)
    m.d.comb += need.eq(Cat(*[(bitmap & reach[k]) != 0 for k in range(outs)], (bitmap & own) != 0))
    branches = Signal(n)  # of the packet whose header was released
    got = Signal(n)       # branches that took the flit now offered
    sent = Signal(nodes)  # union of the header copies taken so far
    wanted = Signal(n)    # the branches of the packet at the input: need at its header, then branches
    m.d.comb += wanted.eq(Mux(pos == 0, need, branches))
    with m.If(release):
        m.d.sync += [got.eq(0), sent.eq(0)]
        with m.If(head.first):
            m.d.sync += branches.eq(need)
    with m.Else():
        m.d.sync += got.eq(got | took)
        with m.If(head.first & dut.i.valid):
            m.d.sync += sent.eq(sent | _union([Mux(took[k], copies[k].body.header.bitmap, 0) for k in range(n)]))
    now_sent = sent | _union([Mux(took[k], copies[k].body.header.bitmap, 0) for k in range(n)])
    finished = got | took

    # ---- the strengthening invariant: the relay's registers agree ----
    active, r_branches, settled = regs["active"], regs["branches"], regs["settled"]
    inv = [
        (pos == 0) | active,
        pos < fmt.packet_flits,
        ~active | (pos != 0) | dut.i.valid,
        ~active | (r_branches == wanted) | (pos == 0) & ~dut.i.valid,
        ~(active & dut.i.valid) | (r_branches == wanted),
        ~active | (settled == (got | ~wanted)),
        active | (got == 0),
        ~dut.i.valid | ((got & ~wanted) == 0),
        ~dut.i.valid | ~head.first | (sent == _union([Mux(got[k], copies[k].body.header.bitmap, 0) for k in range(n)])),
        dut.i.valid | ((got == 0) & (sent == 0)),
        ~dut.i.valid | head.first | (sent == 0),
    ]
    if cut:
        # Stage Q: the opcode tree's group registers follow the head a cycle late, ``multi_q`` two, and
        # only while no packet passes. ``age`` counts the cycles the head has been offered unchanged.
        age = Signal(range(4))
        m.d.sync += age.eq(Mux(dut.i.valid & ~release, Mux(age == 3, 3, age + 1), 0))
        multi_q = regs["multi_q"]
        groups = isqrt(nodes)
        expect = Cat(*[~_single(bitmap & reach[k]) & ((bitmap & reach[k]) != 0) for k in range(outs)])
        for k in range(outs):
            part = Signal(nodes, name=f"expect_part_{k}")
            m.d.comb += part.eq(bitmap & reach[k])
            g_any, g_sev = relay_module.pairs(m, part, Const(0, nodes), groups, f"expect_{k}")
            inv.append(~dut.i.valid | (age < 1) | ((regs[f"group_any_{k}"] == g_any) & (regs[f"group_sev_{k}"] == g_sev)))
        inv += [
            ~dut.pending | (age >= 1),
            ~(pending_q & dut.i.valid) | (age >= 2),
            ~dut.i.valid | ~head.first | (age >= 2) | ~active,
            ~dut.i.valid | ~head.first | (age < 2) | (multi_q == expect),
        ]
    for i, c in enumerate(inv):
        m.d.comb += Assert(c, f"{prop}: invariant {i}")

    header_out = release & head.first
    if prop == "split_cover":
        m.d.comb += [
            Assert(~header_out | ((now_sent & ~own) == (bitmap & ~own)), "split_cover: network copies cover the bitmap"),
            Assert(~header_out | (finished[outs] == ((bitmap & own) != 0)), "split_cover: local copy iff own bit"),
            Cover(header_out & (Cat(*[finished[k] for k in range(n)]) == (1 << n) - 1),
                  "split_cover cover: a header copied to every branch"),
        ]
    elif prop == "split_disjoint":
        for k in range(n):
            part = copies[k].body.header.bitmap
            mask = reach[k] if k < outs else own
            m.d.comb += Assert(~(took[k] & head.first) | ((part != 0) & ((part & ~mask) == 0) & ((part & sent) == 0)),
                               f"split_disjoint: branch {k}")
            for j in range(k):
                m.d.comb += Assert(~(took[k] & took[j] & head.first) | ((part & copies[j].body.header.bitmap) == 0),
                                   f"split_disjoint: branches {j} and {k}")
        m.d.comb += Cover(header_out & (Cat(*[finished[k] for k in range(outs)]) == (1 << outs) - 1),
                          "split_disjoint cover: a header split over every network branch")
    elif prop == "plain_write":
        for k in range(n):
            c = copies[k].body.header
            m.d.comb += Assert(~(took[k] & head.first) | ((c.opcode == Opcode.WRITE) == _single(c.bitmap)),
                               f"plain_write: branch {k}")
        m.d.comb += [Cover(took[0] & head.first & _single(copies[0].body.header.bitmap) & ~_single(bitmap),
                           "plain_write cover: a multicast leaves one branch as a WRITE"),
                     Cover(took[0] & head.first & ~_single(copies[0].body.header.bitmap),
                           "plain_write cover: a branch keeps a MULTIWRITE")]
    elif prop == "relay_latency":
        bound = 3 if cut else 0  # rtl/relay.py: stages Q, A, G, then the switch (h + 3)
        wait = Signal(range(bound + 2))
        m.d.sync += wait.eq(Mux(dut.i.valid & ~release, Mux(wait == bound + 1, wait, wait + 1), 0))
        m.d.comb += [
            Assume(dut.ready == (1 << n) - 1),
            Assume(dut.grant == (dut.pending & (pending_q if cut else 1))),
            Assert(~dut.i.valid | (wait <= bound), "relay_latency: no flit waits longer than the bound"),
            Assert(~dut.i.valid | head.first | release, "relay_latency: a body flit leaves when it arrives"),
            Assert(~dut.i.valid | ~head.first | (wait < bound) | release, "relay_latency: a header leaves at the bound"),
            Cover(release & head.first & (wait == bound), "relay_latency cover: a header leaves at the bound"),
        ]
    elif prop == "release_after_all":
        m.d.comb += [
            Assert(~release | ((finished & wanted) == wanted), "release_after_all: every branch took the flit"),
            Cover(release & ~head.first & (got[outs]) & ~took[outs] & wanted[outs],
                  "release_after_all cover: a flit released after a slow local branch"),
        ]
    else:
        m.d.comb += [
            Assert((took & got) == 0, "branch_once: no branch takes a flit twice"),
            Assert(~offered.any() | dut.i.valid, "branch_once: nothing offered while the input is empty"),
            Assert((offered & ~wanted) == 0, "branch_once: only the packet's branches are offered its flits"),
            Cover(release & head.last & (wanted == (1 << n) - 1), "branch_once cover: a tail leaves to every branch"),
        ]
    ports = [dut.i.valid, dut.i.ready, dut.i.payload.as_value(), dut.valid, dut.ready, dut.req, dut.pending,
             dut.hold, dut.grant, dut.held, dut.active, dut.multi]
    return Wrapper(m, ports, 8, 4 * fmt.packet_flits + 8)
