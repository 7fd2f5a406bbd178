"""Formal wrapper of the schedule-driven :class:`~equimesh.rtl.router.Router` (seed 000, Section III;
the S4NOC step counter and table), for any table and lane contents the host can load.

The host is free: it writes any table entry and any lane flit, starts any run length ``steps`` in
``1..depth``; the in-links carry anything. The wrapper keeps a cycle counter ``cnt`` from the start;
the timing model of ``rtl/rom.py`` (``run_cycles``: steps x max(F, MIN_PERIOD) + LATENCY) gives the
cycle of ``done``. The table is read through one more read port the wrapper adds to the router's
table memory, so the properties compare the router with its own table, not with a copy.

For k-induction the wrapper states the invariant that ties the router's counters to ``cnt``: in a
run, ``cnt = 1 + T + step * period + flit`` (``T``: the fill cycle of pipeline 1 and 2), ``last`` is
``steps - 1``, the drain chain holds ``over`` delayed, and with the table read ahead the registers
of stage T hold the entries of the current and the next step.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, Signal
from amaranth.lib.memory import Memory

from ..lane import Lane
from ..rom import entry_layout
from ..router import Router
from ..timing import LATENCY, period
from . import Params, Prop, Wrapper
from .probe import internals, made, no_reset

__all__ = ["PROPERTIES", "build", "tap_done", "tap_rd_addr"]

_HOST = (
    "the host keeps the router's contract (rtl/router.py): it starts a run only when the last one is "
    "done (or none ran), with 1 <= steps <= table depth, loads the table and lanes only while no run "
    "is in flight, and from pipeline 1 on writes no table entry in the two cycles before start"
)

PROPERTIES = {
    "done_timing": Prop(
        "done_timing",
        "done rises exactly steps x max(F, MIN_PERIOD) + LATENCY cycles after the edge that takes start, for "
        "every steps up to the table depth, is low before and stays high until the next start",
        _HOST,
    ),
    "link_schedule": Prop(
        "link_schedule",
        "an out-link is valid exactly in the flit cycles (flit < F) of the steps whose table entry selects "
        "that output, 2 + T cycles after the lanes are read (T = 1 from pipeline 1 on)",
        _HOST,
    ),
    "lane_addr": Prop(
        "lane_addr",
        "in every live cycle each lane's read address is rd_slot x F + flit of its table entry, every "
        "scheduled write goes to wr_slot x F + flit of the entry it belongs to, and both are below slots x F",
        _HOST,
    ),
}


def tap_done(m: Module, done):
    """The router's ``done`` as the properties see it (:mod:`~equimesh.rtl.formal.mutations` delays it).

    Parameters
    ----------
    m : Module
        The wrapper's module (a mutation adds its register here).
    done : Signal
        The router's ``done`` output.

    Returns
    -------
    Value
        ``done`` itself (a mutation returns it one cycle late).
    """
    return done


def tap_rd_addr(m: Module, addr):
    """A lane's read address as the properties see it (a mutation adds one).

    Parameters
    ----------
    m : Module
        The wrapper's module.
    addr : Value
        The lane's read address.

    Returns
    -------
    Value
        ``addr`` itself (a mutation returns ``addr + 1``).
    """
    return addr


def _table_ports(p: Params, router: Router):
    return [
        router.start,
        router.steps,
        router.done,
        router.tab_we,
        router.tab_addr,
        router.tab_data.as_value(),
        router.load_we,
        router.load_addr,
        router.load_data.as_value(),
        router.host_addr,
        router.host_data.as_value(),
    ] + [
        v
        for port in router.lanes
        for link in (getattr(router, f"i_{port}"), getattr(router, f"o_{port}"))
        for v in (link.valid, link.flit.as_value())
    ]


def _host(m: Module, p: Params, dut: Router, done, P: int, piped: int) -> SimpleNamespace:
    """The host's contract (``Assume``) and the wrapper's run counter: ``busy``, ``cnt``, ``steps_q``,
    ``finished``, ``tab_we_q``, ``settled`` and the run's ``total``, ``base`` and ``cover`` depths."""
    busy = Signal()  # a run is in flight: from the edge that takes start until done
    cnt = Signal(range(p.table_depth * P + LATENCY[p.pipeline] + 2))
    steps_q = Signal.like(dut.steps)
    finished = Signal()  # done was reached and no start came since
    taken = dut.start & ~busy
    tab_we_q = Signal()
    m.d.sync += tab_we_q.eq(dut.tab_we)
    m.d.comb += [
        # rtl/router.py: start is taken while not running; the host waits for done.
        Assume(~dut.start | ~busy),
        Assume(~dut.start | ((dut.steps >= 1) & (dut.steps <= p.table_depth))),
        # The host loads the table and the lanes only while no run is in flight (the lanes' write port is
        # the host's only outside stage C; the table is read throughout the run).
        Assume(~(busy | dut.start) | ~dut.tab_we),
        Assume(~(busy | dut.start) | (dut.load_we == 0)),
        Assume(~(busy | dut.start) | (dut.tab_addr < p.table_depth)),
    ]
    settled = Signal(range(3))  # cycles since reset, up to 2: then the table's read registers hold a word
    m.d.sync += settled.eq(Mux(settled == 2, 2, settled + 1))
    if piped:  # entry 0 reaches the read-ahead register two edges after its write (asserted by the router),
        # and after power-up two edges after reset (a block RAM's output registers start undefined)
        m.d.comb += Assume(~dut.start | ~(dut.tab_we | tab_we_q) & (settled == 2))
    with m.If(taken):
        m.d.sync += [busy.eq(1), cnt.eq(1), steps_q.eq(dut.steps), finished.eq(0)]
    with m.Elif(busy & done):
        m.d.sync += [busy.eq(0), finished.eq(1)]
    with m.Elif(busy):
        m.d.sync += cnt.eq(cnt + 1)
    with m.If(dut.start):
        m.d.sync += finished.eq(0)
    total = steps_q * P + LATENCY[p.pipeline]  # rtl/rom.py run_cycles: the edges from start to done
    base = 1 + piped  # cnt in the first cycle of step 0
    cover = p.table_depth * P + LATENCY[p.pipeline] + 4  # a run of the whole table, from reset
    return SimpleNamespace(
        busy=busy,
        cnt=cnt,
        steps_q=steps_q,
        finished=finished,
        tab_we_q=tab_we_q,
        settled=settled,
        total=total,
        base=base,
        cover=cover,
    )


def _invariant(p: Params, regs: dict, h: SimpleNamespace, done, P: int, piped: int) -> tuple[list, SimpleNamespace]:
    """The strengthening invariant (tagged with every property: each needs it to close), and the router's
    counters it names (``run``, ``over``, ``step``, ``flit``, ``last``, ``fill``)."""
    busy, cnt, steps_q, finished, total, base = h.busy, h.cnt, h.steps_q, h.finished, h.total, h.base
    run, over, step, flit, last = (regs[k] for k in ("run", "over", "step", "flit", "last"))
    fill = regs["fill"] if piped else Const(0, 1)  # pipeline 0 has no fill cycle
    drains = [regs[f"drain_{k}"] for k in range(1 + p.pipeline)]
    end = base + steps_q * P  # cnt in the cycle after the last step: over rises
    inv = [
        ~busy | ((steps_q >= 1) & (steps_q <= p.table_depth) & (cnt >= 1) & (cnt <= total)),
        busy | (~run & ~fill),
        run == (busy & (cnt >= base) & (cnt < end)),
        ~run | ((last == steps_q - 1) & (cnt == base + step * P + flit) & (flit < P) & (step <= last)),
        ~busy | ~run | ~over,
        ~busy | (over == (cnt >= end)),
        ~busy | (done == (cnt == total)),
        busy | (done == finished),
        busy | ~fill,
    ]
    inv += [~busy | (d == (cnt >= end + 1 + k)) for k, d in enumerate(drains)]
    inv += [~busy | (drains[-1] == (cnt >= total - 1)) | (cnt < end)]
    if piped:
        inv.append(fill == (busy & (cnt == 1)))
    if not piped:
        inv.append(Cat(*drains).any() | over | ~done | ~busy)
    # Outside a run the counters and the drain chain are what `done` (or reset) left.
    inv += [
        busy | ~run,
        busy | finished | (~over & ~Cat(*drains).any() & ~done),
        busy | ~finished | (over & Cat(*drains).all()),
    ]
    return inv, SimpleNamespace(run=run, over=over, step=step, flit=flit, last=last, fill=fill)


def _read_ahead(
    m: Module, p: Params, prop: str, regs: dict, table, look, entry_now, run, step, flit, settled, tab_we_q, F: int
) -> None:
    """With the table read ahead (pipeline >= 1), stage T's registers hold the entry of the step in force."""
    # Stage T: the table's read port (its data register) and tab_q follow ``nxt``, the step after the
    # current one, with one and two cycles of delay; a table write reaches them one and two cycles later.
    entry, tab_q, nxt = regs["entry"], regs["tab_q"], regs["nxt"]
    rd_data = table.read_ports[0].data
    ahead = table.read_port(domain="comb")
    first = table.read_port(domain="comb")
    m.d.comb += [ahead.addr.eq(nxt), first.addr.eq(0)]
    tab_we_qq, run_q, run_qq = Signal(), Signal(), Signal()
    m.d.sync += [tab_we_qq.eq(tab_we_q), run_q.eq(run), run_qq.eq(run_q)]
    m.d.comb += [
        Assert(~run | (entry == look.data), f"{prop}: the entry register holds the step's entry"),
        Assert(~run | (nxt == (step + 1)[: len(nxt)]), f"{prop}: read-ahead address in a run"),
        Assert(run | (nxt == 0), f"{prop}: read-ahead address outside a run"),
        Assert(~run | (flit < 1) | (rd_data == ahead.data), f"{prop}: table read register"),
        Assert(~run | (flit < 2) | (tab_q == ahead.data), f"{prop}: read-ahead register"),
        Assert(
            run | run_q | tab_we_q | (settled < 1) | (rd_data == first.data),
            f"{prop}: table read register outside a run",
        ),
        Assert(
            run | run_q | run_qq | tab_we_q | tab_we_qq | (settled < 2) | (tab_q == first.data),
            f"{prop}: read-ahead register outside a run",
        ),
    ]
    if p.pipeline > 1:  # the read addresses are counters, loaded from stage T at each step's first flit
        for i, port in enumerate(p.lanes):
            ctr = regs[f"rd_addr_{port}"]
            m.d.comb += Assert(
                ~run | (ctr == (entry_now.lane[i].rd_slot * F + flit)[: len(ctr)]),
                f"{prop}: lane {port} read counter",
            )


def build(p: Params, prop: str):
    """The formal wrapper of one schedule router property: the :class:`~equimesh.rtl.router.Router` driven by a free host (see the module
    docstring), with the invariant that ties its step and flit counters to the cycle count for
    k-induction, and the timing model (``run_cycles``) as the reference for ``done``.

    Parameters
    ----------
    p : Params
        The design the wrapper is built for (its lanes, pipeline, chunk flits F, slots, table depth and flit width).
    prop : str
        The property, a key of :data:`PROPERTIES`; the wrapper states its assertions and covers.

    Returns
    -------
    Wrapper
        The top module, its ports, the default proof depth and the cover depth.
    """
    n, F, P = len(p.lanes), p.chunk_flits, period(p.chunk_flits, p.pipeline)
    piped = int(p.pipeline > 0)
    dut = Router(p.lanes, p.lanes, p.slots, F, p.table_depth, p.reduce, p.flit_bits, pipeline=p.pipeline)
    dut._MustUse__silence = True  # elaborated below, by hand
    m = Module()
    with made(Lane, Memory) as seen:
        body = dut.elaborate(None)
    m.submodules.dut = body
    no_reset(m)
    regs = internals(body)
    table = seen[Memory][0]  # the router makes its table before its lanes
    lay = entry_layout(n, p.slots)
    lanes = seen[Lane]
    done = tap_done(m, dut.done)

    h = _host(m, p, dut, done, P, piped)
    inv, c = _invariant(p, regs, h, done, P, piped)
    busy, cnt, steps_q, finished, tab_we_q, settled = h.busy, h.cnt, h.steps_q, h.finished, h.tab_we_q, h.settled
    total, base, cover = h.total, h.base, h.cover
    run, step, flit = c.run, c.step, c.flit

    if prop == "done_timing":
        for i, c in enumerate(inv):
            m.d.comb += Assert(c, f"done_timing: invariant {i}")
        m.d.comb += [
            Assert(~busy | (done == (cnt == total)), "done_timing: done exactly at steps x period + LATENCY"),
            Assert(busy | (done == finished), "done_timing: done holds until the next start"),
            Cover(busy & done & (steps_q == p.table_depth), "done_timing cover: a run of the full table depth"),
        ]
        return Wrapper(m, _table_ports(p, dut), P + LATENCY[p.pipeline] + 4, cover)

    # The table as the router sees it, through a port of its own (combinational, at the step in force).
    look = table.read_port(domain="comb")
    m.d.comb += look.addr.eq(step)
    entry_now = lay(look.data)
    live = run & (flit < F)
    for i, c in enumerate(inv):
        m.d.comb += Assert(c, f"{prop}: invariant {i}")
    # The table does not change while a run is in flight (assumed above), so the entry of a step is the
    # one read at that step; with the table read ahead, stage T's registers hold it.
    if piped:
        _read_ahead(m, p, prop, regs, table, look, entry_now, run, step, flit, settled, tab_we_q, F)

    if prop == "link_schedule":
        # The expected valid of every out-link, delayed by the stages from A to the link register.
        delay = 2 + piped
        for o, port in enumerate(p.lanes):
            want = live & entry_now.out[o].valid
            for k in range(delay):
                q = Signal(name=f"want_{port}_{k}")
                m.d.sync += q.eq(want)
                want = q
                if k + 1 < delay:  # the delay line is what the stage registers carry
                    st = ("r", "b")[1 - piped :][k]
                    m.d.comb += Assert(
                        q == (regs[f"{st}_live"] & lay(regs[f"{st}_ops"]).out[o].valid),
                        f"link_schedule: stage {st} carries out-link {port}",
                    )

            m.d.comb += [
                Assert(getattr(dut, f"o_{port}").valid == want, f"link_schedule: out-link {port}"),
                Cover(
                    getattr(dut, f"o_{port}").valid
                    & busy
                    & (steps_q == p.table_depth)
                    & (cnt >= base + (p.table_depth - 1) * P + delay),
                    f"link_schedule cover: out-link {port} in the last step of a full-depth run",
                ),
            ]
        return Wrapper(m, _table_ports(p, dut), P + LATENCY[p.pipeline] + 4, cover)

    assert prop == "lane_addr"
    size = p.slots * F
    # Stage A: the read address of every lane, from the entry in force and the flit.
    for i, lane in enumerate(lanes):
        op = entry_now.lane[i]
        addr = tap_rd_addr(m, lane.rd_addr)
        m.d.comb += Assert(
            ~live | ((addr == op.rd_slot * F + flit) & (addr < size)), f"lane_addr: lane {p.lanes[i]} read address"
        )
    # Stage C (W): the write of a flit goes where the entry of the step it was read in says.
    delay = 2 + piped + int(p.pipeline > 1)  # A -> (R) -> B -> C (-> W)
    w_step, w_flit, w_live = step, flit, live
    for k in range(delay):
        s_, f_, l_ = (
            Signal.like(step, name=f"w_step_{k}"),
            Signal.like(flit, name=f"w_flit_{k}"),
            Signal(name=f"w_live_{k}"),
        )
        m.d.sync += [s_.eq(w_step), f_.eq(w_flit), l_.eq(w_live)]
        w_step, w_flit, w_live = s_, f_, l_
    wlook = table.read_port(domain="comb")
    m.d.comb += wlook.addr.eq(w_step)
    went = lay(wlook.data)
    for i, lane in enumerate(lanes):
        op = went.lane[i]
        scheduled = w_live & op.wr_en
        m.d.comb += [
            Assert(
                ~scheduled | (lane.wr_en & (lane.wr_addr == op.wr_slot * F + w_flit) & (lane.wr_addr < size)),
                f"lane_addr: lane {p.lanes[i]} write address",
            ),
            Cover(
                scheduled & (op.wr_slot == p.slots - 1) & (w_flit == F - 1),
                f"lane_addr cover: lane {p.lanes[i]} writes the last flit of its last slot",
            ),
        ]
    return Wrapper(m, _table_ports(p, dut), P + LATENCY[p.pipeline] + 4, cover)
