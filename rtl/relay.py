"""The MultiWrite relay of one router input (seed 004, Sections 4.1, 4.3.3 and 6.4).

Parse stage (the bitmap buffer). A packet's destination bitmap follows its
header in ``bitmap_flits`` words (:mod:`equimesh.rtl.packet`). The relay takes
(pops) the header and the bitmap words from its input one a cycle, before the
packet asks for any output. They are kept until the packet is presented: at a
network input in the input buffer itself, which has ``1 + bitmap_flits``
entries for them and shows the presented flit at a pointer the relay advances
(``shown``, ``advance``; :class:`~equimesh.rtl.packet_router.InputBuffer`);
at the injection input, whose generator shows a flit only once, the header in
a register and each bitmap word in a small buffer (a memory of
``bitmap_flits`` words of ``flit_bits``). For each word it ANDs the word with every egress
port's reach-mask word (``reach``, the router's forwarding entries, from the
forwarding table, :mod:`equimesh.schedules.routing`) and with the node's own
bit (``own``) and accumulates, per port, whether that part has any destination
and whether it has several (:func:`several`, a log-depth tree per word). From
pipeline 1 on a word is split a cycle after it is taken, from registers: its
parts, the word ANDed with each mask word (``got_<k>``, the own bit's last), and
its index ``at`` (``split`` marks it), so each tree starts at flip-flops of its
own, each feeding one tree only; the
last word's split falls in stage Q (below), which waits a cycle anyway. Only the
"any" half of a split is summed in its cycle (``any_``, the route the allocator
reads in stage A); the "any" and "several" bits of the word's groups of
:data:`GROUP_BITS` bits wait a cycle more in registers of their own
(``tally_any_<k>``, ``tally_sev_<k>``, with ``tally_was``, the route before
the word; ``tally`` marks them) before ``sev`` sums them (:func:`summaries`:
several groups, or one group with several), so the tree is split between two
cycles and no path runs from it through the sum. ``sev`` decides only the copies'
opcodes (``multi``), which the router takes when the header is switched, two
cycles after the last word's sum. After the last word the route is known: every
non-empty part is a branch (one copy of the packet leaves on that port) and its
opcode is known (rule 2 of Section 4.3.3: a part with one destination becomes a
plain WRITE). The relay then presents the packet again, header and bitmap
words from where they are kept, then the payload straight from the input. At a
network input every flit of the packet reaches the crossbar from the input
buffer's memory, one flip-flop (its presentation pointer) and a memory read
away, with no multiplexer in between. Each copy's bitmap words are rewritten
behind the crossbar, word by word, to ``word & reach-mask word`` of its port
(:func:`rewrite`): the metadata update that keeps downstream relays from
delivering twice or looping. Both ``own`` and ``reach`` are inputs the
network ties to its node's values, as FlooNoC's routers take their id and
route map, so every router with the same ports is one Verilog module.

Why a buffer and not forwarding with empty-word suppression: the header must
name its copies before it leaves (the allocator grants all of a packet's
outputs at once, and a copy's opcode, WRITE or MULTIWRITE, is in the header),
and both depend on every bitmap word; a relay that forwarded the header first
would have to send copies to ports that turn out empty. The buffer costs
``1 + bitmap_flits`` cycles per hop (the header and each bitmap word taken one
a cycle) and ``1 + bitmap_flits`` flits of memory per input.

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
an output register). From the cycle ``h`` a header is the input buffer's head
(a flit written into the buffer in cycle ``t`` is its head in ``t + 1``,
:class:`~equimesh.rtl.packet_router.InputBuffer`):

* parse (cycles ``h`` .. ``h + bitmap_flits``): the header and the bitmap words
  are taken, each word split in the next cycle and the route accumulated
  (``any_``), each word's several bits summed into ``sev`` a cycle after its
  split;
* stage Q (``p = h + bitmap_flits + 1``): the parsed header is presented, the
  last word split; the route (registers) waits for ``pend``, so the allocator
  sees only registers;
* stage A (``p + 1``): the router's allocator chooses and registers its grant
  (``grant``, ``granting`` and the arbiter's order in
  :class:`~equimesh.rtl.packet_router.MatrixAllocator`); the last word's
  several bits are summed into ``sev``, which holds the copies' opcodes
  (``multi``) from stage G on;
* stage G (``p + 2``): the grant sets ``active`` and latches ``branches``, and
  the router registers each granted output's owner, one-hot, its crossbar
  select (``owner_<port>``, ``busy``);
* switch (``p + 3``): the header leaves the relay, and the router registers
  its copies' opcodes (``multi``); every branch ``valid`` comes
  from registers (``active``, ``settled``). A network branch's ``ready`` is 1:
  with virtual cut-through its receiver refuses no flit of the packet (below),
  so the release waits only for the local delivery;
* stage L (``p + 4``): the header is on the link, from the output's link
  register (``a_*`` in the router), its opcode and bitmap words rewritten
  behind the register.

So a header takes ``6 + bitmap_flits`` cycles per hop (buffer 1, parse
``1 + bitmap_flits``, Q, A, G, L) and ``2 + bitmap_flits`` with pipeline 0
(buffer 1, parse, then route, grant and departure in one cycle, outputs not
registered); the flits behind it follow one a cycle. The receivers still have
room: an output is granted only while no packet holds it, its link register is
empty and its receiver has room for the whole packet; nothing else can fill
that receiver before the header arrives, and within a packet a receiver always
takes the next flit (:class:`~equimesh.rtl.packet_router.InputBuffer`; the
router asserts it on every output).
"""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .packet import Opcode, PacketFormat

__all__ = ["GROUP_BITS", "Relay", "forwarding_ports", "mask_word", "position", "rewrite", "several", "summaries"]

# From pipeline 1 on a split word's "several" half is counted in groups of GROUP_BITS bits, each group's
# (any, several) registered (``tally_any_<k>``, ``tally_sev_<k>``) and the groups summed a cycle later, so
# the tree of a 64-bit word is cut after its fourth level (8x8 packet router: 152.7 -> 161.3 MHz, journal).
GROUP_BITS = 16
GROUP_LEVEL = GROUP_BITS.bit_length() - 1  # the level of summaries() whose bits summarise GROUP_BITS bits


def forwarding_ports(fmt: PacketFormat, outs: int) -> dict:
    """A router's forwarding entries, inputs the network ties to its node's values
    (:meth:`~equimesh.rtl.packet_network.PacketSetup.forwarding`): ``own``, the node's bit, and
    ``reach``, per network output the destinations it serves (seed 004, Section 4.3: the per-port
    destination sets that split a bitmap).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format (``nodes`` bits per entry).
    outs : int
        The router's network outputs.

    Returns
    -------
    dict
        The members ``own`` and ``reach``, inputs of the router's signature.
    """
    return {"own": In(fmt.nodes), "reach": In(data.ArrayLayout(fmt.nodes, outs))}


def summaries(m: Module, x: Value, name: str) -> list[tuple[Value, Value]]:
    """Whether each group of bits of ``x`` has any bit set and whether it has at least two, for groups
    of 1, 2, 4, ... bits (rule 2 of seed 004, Section 4.3.3: a copy with one destination becomes a plain
    WRITE).

    A balanced tree of (any, several) pairs, built in place on whole vectors: in level ``l`` bit ``p``
    summarises bits ``p .. p + 2**l - 1`` of ``x`` (any: ``a[p] | a[p + s]``; several:
    ``s[p] | s[p + s] | (a[p] & a[p + s])`` with ``s = 2**(l - 1)``), so the groups of ``2**l`` bits
    are the bits at multiples of ``2**l`` and bit 0 of the last level summarises the whole of ``x``.
    Each level is a shift and a few bitwise operations on the whole vector (a 64-bit word: 6 levels),
    which a compiled simulator evaluates as a handful of word operations; synthesis keeps only the
    cones of the bits read, the same log-depth trees of LUTs as ones built bit by bit.

    Parameters
    ----------
    m : Module
        The module the levels are added to (combinational).
    x : Value
        The bit group, e.g. a bitmap word ANDed with a port's reach-mask word.
    name : str
        Prefix of the level signals' names.

    Returns
    -------
    list of tuple of Value
        Per level ``l`` (from 0, ``x`` itself), the vectors ``(any, several)``.
    """
    x = Value.cast(x)
    width = 1 << max(len(x) - 1, 0).bit_length()
    a, s = x.as_unsigned(), Const(0, width)
    levels, step = [(a, s)], 1
    while step < width:
        level = len(levels) - 1
        a_next, s_next = Signal(width, name=f"{name}_any{level}"), Signal(width, name=f"{name}_sev{level}")
        m.d.comb += [a_next.eq(a | (a >> step)), s_next.eq(s | (s >> step) | (a & (a >> step)))]
        a, s, step = a_next, s_next, step * 2
        levels.append((a, s))
    return levels


def several(m: Module, x: Value, name: str) -> tuple[Value, Value]:
    """Whether ``x`` has any bit set and whether it has at least two: bit 0 of the last level of
    :func:`summaries`.

    Parameters
    ----------
    m : Module
        The module the levels are added to (combinational).
    x : Value
        The bit group.
    name : str
        Prefix of the level signals' names.

    Returns
    -------
    tuple of Value
        ``(any, several)``, one bit each.
    """
    a, s = summaries(m, x, name)[-1]
    return a[0], s[0]


def mask_word(fmt: PacketFormat, mask: Value, j: Value) -> Value:
    """Word ``j`` of a ``nodes``-wide mask, as a bitmap flit carries it (nodes ``j * flit_bits`` and up).

    Parameters
    ----------
    fmt : PacketFormat
        The network's packet format.
    mask : Value
        The mask, ``nodes`` bits (a port's reach, or the node's own bit).
    j : Value
        The bitmap word's index, ``0 .. bitmap_flits - 1``.

    Returns
    -------
    Value
        ``fmt.width`` bits of the mask, zero-padded above ``nodes``.
    """
    mask = Value.cast(mask)
    if fmt.bitmap_flits == 1:
        return mask
    padded = Cat(mask, Const(0, fmt.bitmap_flits * fmt.width - fmt.nodes))
    # A choice among the words, not a shift of the whole mask: a compiled simulator then moves one
    # machine word instead of shifting a ``nodes``-bit vector every cycle (synthesis: the same muxes).
    words = Array(padded[i * fmt.width : (i + 1) * fmt.width] for i in range(fmt.bitmap_flits))
    return words[Value.cast(j).as_unsigned()]


def position(m: Module, fmt: PacketFormat, flit, took: Value, name: str) -> Value:
    """Where ``flit`` stands in its packet: 0 the header, ``1 .. bitmap_flits`` a bitmap word,
    ``bitmap_flits + 1`` a payload word. A register counts the flits taken (``took``) since the header.

    Parameters
    ----------
    m : Module
        The module the counter is added to.
    fmt : PacketFormat
        The network's packet format.
    flit : View
        The flit (its ``first`` bit marks a header).
    took : Value
        The flit is taken in this cycle.
    name : str
        The counter's name.

    Returns
    -------
    Value
        The position, ``0 .. bitmap_flits + 1``.
    """
    last = fmt.bitmap_flits + 1
    nxt = Signal(range(last + 1), name=name)
    pos = Signal(range(last + 1), name=f"{name}_now")
    m.d.comb += pos.eq(Mux(flit.first, 0, nxt))
    with m.If(took):
        m.d.sync += nxt.eq(Mux(pos == last, last, pos + 1))
    return pos


def rewrite(m: Module, fmt: PacketFormat, out, flit, pos: Value, mask: Value, multi: Value) -> None:
    """Drive ``out`` with ``flit`` (at position ``pos``, :func:`position`) rewritten for one copy: a header's
    opcode becomes MULTIWRITE if ``multi``, else WRITE (seed 004, Section 4.3.3, rule 2), and bitmap word
    ``j`` becomes ``word & mask word j`` (Section 4.1, the metadata update).

    Parameters
    ----------
    m : Module
        The module the logic is added to (combinational).
    fmt : PacketFormat
        The network's packet format.
    out : View
        The copy's flit, driven here.
    flit : View
        The flit the relay presents.
    pos : Value
        Its position in the packet.
    mask : Value
        The copy's destination set (the port's reach, or the node's own bit), ``nodes`` bits.
    multi : Value
        The copy keeps more than one destination.
    """
    m.d.comb += out.eq(flit)
    with m.If(flit.first):
        m.d.comb += out.body.header.opcode.eq(Mux(multi, Opcode.MULTIWRITE, Opcode.WRITE))
    with m.Elif((pos != 0) & (pos <= fmt.bitmap_flits)):
        m.d.comb += out.body.payload.eq(flit.body.payload & mask_word(fmt, mask, pos - 1))


class Relay(wiring.Component):
    """Parse stage (the bitmap buffer) and branch control of one input: route, fork and release.

    Parameters
    ----------
    fmt : PacketFormat.
    outs : the router's network outputs.
    local : a network input: it can deliver locally, and its input buffer keeps the header and the
        bitmap words and shows the presented flit (False for the injection input: a node never
        addresses itself, and its generator shows a flit once).
    cut : stages Q and G (see above): the header leaves three cycles after it is presented.

    Ports
    -----
    own : In(nodes)  -- the router's own bit (delivered locally).
    reach : In(ArrayLayout(nodes, outs))  -- per network output, in the router's output order, the
        destinations it serves.
    i : In(stream of flits)  -- the input buffer's head (or the generator): taken a flit a cycle while
        the relay parses a header and its bitmap words; then the payload, as the branches take it.
    o : Out(flit)  -- the flit presented to the branches (the crossbar input): the parsed header, its
        bitmap words, then the input's payload flits (at a network input: ``shown``).
    shown : In(flit), advance : Out(1)  -- a network input's (``local``) only: the flit its input
        buffer shows, and the release of the presented flit, which moves the buffer to the next one.
    index : Out(range(bitmap_flits + 2))  -- where ``o`` stands in its packet (:func:`position`).
    valid : Out(outputs + 1), ready : In(outputs + 1)  -- one handshake per branch: bit ``k`` is
        network output ``k``, the last bit the local lane. ``valid[k]`` asks that branch to take ``o``.
    req : Out(outputs)  -- the outputs the waiting header needs; meaningful while ``pending``.
    pending : Out(1)  -- a parsed header waits for its grant.
    hold : In(1)  -- no new header is taken and a parsed one does not ask for its grant (a granted
        packet, or one whose bitmap is being parsed, completes). Only the injection input is held; the
        hold never reaches the release of a granted packet.
    grant : In(1)  -- from the allocator: all of ``req`` are this input's from now to the tail.
    held : Out(outputs)  -- outputs owned by this input's packet after its grant cycle.
    active : Out(1)  -- a granted packet is passing (with ``cut``: from the cycle after its grant
        to its tail).
    multi : Out(outputs)  -- per network output, the copy there keeps more than one destination (a
        register, valid from the header's presentation, with ``cut`` from two cycles after it (stage
        G), until its tail leaves).
    holding : Out(1)  -- a network input's relay holds flits of a packet (parsed, or being parsed); the
        injection input's, a header whose bitmap words are still coming.
    vacant : Out(1)  -- no packet at all: none being parsed, waiting for its grant or passing.
    """

    def __init__(self, fmt: PacketFormat, outs: int, local: bool, cut: bool = False):
        self.fmt, self.outs, self.local, self.cut = fmt, outs, local, cut
        n = outs + 1
        super().__init__(
            {
                **forwarding_ports(fmt, outs),
                "i": In(stream.Signature(fmt.flit)),
                "o": Out(fmt.flit),
                "index": Out(range(fmt.bitmap_flits + 2)),
                "valid": Out(n),
                "ready": In(n),
                "req": Out(outs),
                "pending": Out(1),
                "hold": In(1),
                "grant": In(1),
                "held": Out(outs),
                "active": Out(1),
                "multi": Out(outs),
                "holding": Out(1),
                "vacant": Out(1),
                **({"shown": In(fmt.flit), "advance": Out(1)} if local else {}),
            }
        )

    def _parts(self, word: Value, at: Value) -> list[Value]:
        """Bitmap word ``word`` (index ``at``) ANDed with each network output's reach-mask word, then with
        the own bit's word: the parts the split counts."""
        masks = [*self.reach[: self.outs], self.own]
        return [word & mask_word(self.fmt, mask, at) for mask in masks]

    def _route(self, m: Module, got: list, at: Value, split: Value) -> tuple[Signal, Signal, Signal]:
        """The route of the words split so far (seed 004, Section 4.3.3): per branch whether a
        destination was found (``any_``, the network outputs then the local lane), per network
        output whether several were (``sev``, the copy's opcode), and whether the own bit was set
        (``mine``). ``got`` is the word split in this cycle (``split``) as its parts (:meth:`_parts`),
        ``at`` its index; the first word starts the route afresh."""
        outs = self.outs
        any_ = Signal(outs + 1)  # per branch (network outputs, then local): a destination found
        sev = Signal(outs)  # per network output: several destinations found
        mine = Signal()  # the node's own bit was set
        own_hit = got[outs] != 0
        fresh = at == 0
        # outside ``If(split)``: a compiled model then does not mask every level of every tree
        trees = [summaries(m, got[k], f"word_{k}") for k in range(outs)]
        w_any = Cat(t[-1][0][0] for t in trees)
        was_any = Mux(fresh, 0, any_[:outs])  # the words split before this one
        with m.If(split):
            m.d.sync += [any_[:outs].eq(was_any | w_any), mine.eq((mine & ~fresh) | own_hit)]
            if self.local:
                m.d.sync += any_[outs].eq((any_[outs] & ~fresh) | own_hit)
        if self.cut:  # each group's (any, several) waits a cycle in registers of its own before ``sev`` sums them
            tally = Signal(name="tally")
            tally_was = Signal(outs, name="tally_was")  # ``any_`` before the word: the words already in ``sev``
            m.d.sync += [tally.eq(split), tally_was.eq(was_any)]
            word_sev = []
            for k, levels in enumerate(trees):
                group_any, group_sev = (
                    Cat(v[g] for g in range(0, len(got[k]), GROUP_BITS)) for v in levels[GROUP_LEVEL]
                )
                tally_any = Signal(len(group_any), name=f"tally_any_{k}")
                tally_sev = Signal(len(group_sev), name=f"tally_sev_{k}")
                m.d.sync += [tally_any.eq(group_any), tally_sev.eq(group_sev)]
                t_any, t_sev = several(m, tally_any, f"groups_{k}")  # several groups, or a group with several
                word_sev.append(tally_sev.any() | t_sev | (tally_was[k] & t_any))
            with m.If(tally):
                m.d.sync += sev.eq(sev | Cat(word_sev))
            with m.Elif(split & fresh):  # never with a tally: the header is taken between two packets' words
                m.d.sync += sev.eq(0)
        else:
            w_sev = Cat(t[-1][1][0] for t in trees)
            with m.If(split):
                m.d.sync += sev.eq(Mux(fresh, 0, sev) | w_sev | (was_any & w_any))
        return any_, sev, mine

    def elaborate(self, platform):
        m = Module()
        fmt, outs, B = self.fmt, self.outs, self.fmt.bitmap_flits

        # ----- parse: the header and the bitmap words, one a cycle; the route accumulates -----
        parsing = Signal(init=1)  # taking the next packet's header and bitmap words from ``i``
        word = Signal(range(B + 2))  # parsing: the next flit's position; else the presented flit's
        # Its decodes, registers updated with it (the presented flit's select needs no comparator):
        at_header = Signal(init=1)  # word == 0
        cur = Signal(range(B))  # word - 1, the bitmap word addressed, while 1 <= word <= B
        passing = Signal()  # word == B + 1: the payload passes from the input

        def step():  # word + 1
            return [word.eq(word + 1), at_header.eq(0), cur.eq(word), passing.eq(word == B)]

        def restart():  # word 0
            return [word.eq(0), at_header.eq(1), passing.eq(0)]

        body = self.i.payload.body.payload
        # ``hold``: no new header. Apart from the rest of the parse, so that ``hold`` reaches only the registers
        # a header changes (``passing`` and ``parsing`` change at the last bitmap word).
        taking_header = parsing & at_header & self.i.valid & ~self.hold
        taking_word = parsing & ~at_header & self.i.valid
        taking = taking_header | taking_word
        if self.cut:  # a bitmap word's parts are registered when it is taken and split a cycle later
            at, split = Signal(range(B), name="at"), Signal(name="split")
            got = [Signal(fmt.width, name=f"got_{k}") for k in range(outs + 1)]  # the last: the own bit's part
            m.d.sync += split.eq(taking_word)
            with m.If(taking_word):
                m.d.sync += [*(g.eq(p) for g, p in zip(got, self._parts(body, cur))), at.eq(cur)]
        else:
            got, at, split = self._parts(body, cur), cur, taking_word
        any_, sev, mine = self._route(m, got, at, split)
        with m.If(taking_header):  # ``passing`` stays 0: the header is not the last bitmap word
            m.d.sync += [word.eq(1), at_header.eq(0), cur.eq(0)]
        with m.Elif(taking_word):
            with m.If(word == B):
                m.d.sync += [parsing.eq(0), *restart()]
            with m.Else():
                m.d.sync += step()

        # ----- present: the header, the bitmap words, then the input's payload -----
        h_valid = ~parsing & (~passing | self.i.valid)
        tail = passing & self.i.payload.last
        if self.local:  # from the input buffer, which keeps the popped header and bitmap words
            m.d.comb += self.o.eq(self.shown)
        else:  # the generator shows a flit once: the header from a register, the bitmap words from a buffer
            hdr = Signal(fmt.width)
            m.submodules.bitmap = buf = Memory(shape=fmt.width, depth=B, init=[])
            wr, rd = buf.write_port(), buf.read_port(domain="comb")
            m.d.comb += [wr.addr.eq(cur), wr.data.eq(body), wr.en.eq(taking_word), rd.addr.eq(cur)]
            with m.If(taking_header):
                m.d.sync += hdr.eq(body)
            m.d.comb += [
                self.o.first.eq(~parsing & at_header),
                self.o.last.eq(tail),
                self.o.body.payload.eq(Mux(at_header, hdr, Mux(passing, body, rd.data))),
            ]
        m.d.comb += [
            self.index.eq(word),
            # the injection input's parsed header waits outside the network; its bitmap still coming does not
            self.holding.eq((~parsing | ~at_header) if self.local else (parsing & ~at_header)),
        ]

        active = Signal()  # a granted packet is passing (set at grant, cleared after the tail)
        branches = Signal(outs + 1)  # its branches, latched at the grant
        settled = Signal(outs + 1)  # for the presented flit: not a branch, or a branch that already took it
        want = any_
        m.d.comb += [self.held.eq(Mux(active, branches[:outs], 0)), self.active.eq(active), self.multi.eq(sev)]
        m.d.comb += self.vacant.eq(parsing & at_header & ~active)

        if self.cut:  # stage Q: ``pending`` waits a cycle for the registered route; the header leaves once active
            pend = Signal()
            m.d.sync += pend.eq(h_valid & ~self.hold & ~active & ~self.grant)
            # ``h_valid`` holds while ``pend`` does (parsed, not passing: asserted), so not ``i.valid``
            m.d.comb += [self.pending.eq(pend & (~self.hold | self.grant)), self.req.eq(want[:outs])]
            m.d.sync += Assert(~pend | (~parsing & ~passing & ~active), "relay: a waiting header is not parsed")
            latched, now, go = want, settled, h_valid & active
        else:  # the header leaves in its grant cycle, to the branches of its route
            m.d.comb += [self.pending.eq(h_valid & ~self.hold & ~active), self.req.eq(want[:outs])]
            latched, now, go = want, Mux(active, settled, ~want), h_valid & (active | self.grant)
        done = Signal(outs + 1)
        m.d.comb += [self.valid.eq(Mux(go, ~now, 0)), done.eq(now | self.ready)]
        release = go & done.all()
        if self.local:
            m.d.comb += self.advance.eq(release)
        m.d.comb += self.i.ready.eq(Mux(parsing, ~at_header | ~self.hold, passing & release))

        with m.If(self.grant):
            m.d.sync += [active.eq(1), branches.eq(latched)]
        with m.If(release):  # the next flit goes to every branch again
            m.d.sync += settled.eq(~Mux(self.grant, latched, branches))
            with m.If(tail):
                m.d.sync += [active.eq(0), parsing.eq(1), *restart()]
            with m.Elif(~passing):
                m.d.sync += step()
        with m.Elif(go):
            m.d.sync += settled.eq(now | self.ready)
        with m.Elif(self.grant):
            m.d.sync += settled.eq(~latched)

        # Invariants: a packet starts with its header and its header only; a grant comes only for a
        # waiting header; a header addresses somebody and never its own injector; network branches
        # take the header when it is first presented (the allocator checked room downstream).
        m.d.sync += [
            Assert(~taking | (self.i.payload.first == at_header), "relay: a packet without its header"),
            Assert(~taking | ~self.i.payload.last, "relay: a packet ended inside its bitmap"),
            Assert(~self.grant | self.pending, "relay: grant without a waiting header"),
            Assert(~self.pending | (any_ != 0), "relay: header with an empty bitmap"),
            Assert(
                ~(go & self.o.first) | ((self.valid[:outs] & ~self.ready[:outs]) == 0),
                "relay: a granted output refused the header",
            ),
        ]
        if not self.local:
            m.d.sync += Assert(~self.pending | ~mine, "relay: a node addressed its own packet")
        return m
