"""One network, both modes: packet traffic, a scheduled collective requested in the middle of it,
and more traffic after it (seed 004 Section 4 on the routers of seed 000 Section III).

The network is :class:`~equimesh.rtl.network.Network` built with packets: every
router carries MultiWrite packets and runs its schedule table over the same
crossbar and links. ``start`` is raised at cycle ``start_at``; the routers stop
taking new packets, the packets in flight drain, and the schedule starts in the
first cycle no router holds a packet (``launch``). After ``done`` the packets
flow again.

Two independent references check the run: the schedule semantics (every node's
final lanes bit for bit, every link busy ``transfers x chunk_flits`` cycles
during the schedule, the run lasting ``steps x period + LATENCY`` cycles from launch (``rtl/rom.py``),
exactly as without packets) and the packet scoreboard of
:mod:`equimesh.sim.traffic` (one intact copy per destination, nothing lost,
nothing duplicated, nothing misdelivered).
"""

from __future__ import annotations

import json
import time

import numpy as np
from amaranth.sim import Simulator

from ..rtl.design import Design, fit
from ..rtl.network import Network, buses, top_ports
from ..rtl.packet import PacketFormat
from ..rtl.packet_network import PacketSetup, TrafficTop
from ..rtl.rom import NetworkImage
from ..rtl.timing import DEFAULT_PIPELINE
from ..schedules.routing import ForwardingTable
from .harness import drive, run_to_end
from .metrics import link_stats
from .program import Program, check, final_reads, join, make_program, merged, read_back, scalar
from .traffic import Run, Traffic, traffic_load

__all__ = [
    "MixedRun",
    "mixed_load",
    "mixed_params",
    "mixed_program",
    "mixed_top",
    "run_mixed_compiled",
    "simulate_mixed",
]


class MixedRun:
    """One mixed run's control and checking, independent of the simulator (like :class:`~equimesh.sim.traffic.Run`).

    Every cycle: drive ``stop`` and ``start`` from :meth:`drive`, then hand the sampled ``launch``,
    ``done``, ``link_valid`` and the endpoint monitors to :meth:`observe` until it returns True;
    then :meth:`results` with the link counters and the lanes read back through the host port.

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule (:func:`~equimesh.rtl.rom.compile_schedule`).
    design : Design
        The hardware parameters.
    fmt : PacketFormat
        The packets' layouts.
    traffic : Traffic
        What the generators send.
    lane_nodes : list of int
        The nodes in lane order (the network's ``lanes``).
    start_at : int
        The cycle at which ``start`` requests the collective.
    cycles : int
        Random patterns: cycles the generators inject before they stop.
    """

    def __init__(
        self,
        image: NetworkImage,
        design: Design,
        fmt,
        traffic: Traffic,
        lane_nodes: list[int],
        *,
        start_at: int,
        cycles: int,
    ):
        self.image, self.design, self.start_at = image, design, start_at
        self.run = Run(fmt, traffic, lane_nodes, cycles)
        self.limit = start_at + cycles + design.run_cycles(image.steps) + 100_000
        self.edge = 0
        self.launched = self.done_at = self.in_flight_at_request = None
        self.trace: list[int] = []  # link_valid from the cycle after the launch to ``done``
        self.moved_in_schedule = 0  # packet handshakes at the endpoints while the schedule runs
        self.headers = [0, 0, 0]  # packets injected before the launch, while it runs, after ``done``

    def drive(self) -> tuple[bool, bool]:
        """``(stop, start)`` for the coming cycle."""
        return self.run.stop, self.edge == self.start_at

    @property
    def running(self) -> bool:
        return self.launched is not None and self.done_at is None

    def observe(self, launch: int, done: int, link_valid: int, inj, ej) -> bool:
        """One cycle's samples (monitors as in :meth:`Run.observe`); True when the run is over."""
        run = self.run
        if self.edge == self.start_at:
            self.in_flight_at_request = run.sb.in_flight
        self.edge += 1
        if launch and self.launched is None:
            self.launched = self.edge
        elif self.running:
            self.trace.append(link_valid)
            if done:
                self.done_at = self.edge
                self.trace[-1] = 0  # packets may move again in this cycle; the schedule's last flit was earlier
        running = self.running
        if running:
            self.moved_in_schedule += sum(1 for v, r, _ in list(inj) + list(ej) if v and r)
        phase = 0 if self.launched is None else 1 if running else 2
        self.headers[phase] += sum(1 for v, r, f in inj if v and r and f & 1)
        over = run.observe(inj, ej, paused=running)
        return run.deadlock or (over and self.done_at is not None) or self.edge > self.limit

    def results(self, link_flits: list[int], host_data) -> dict:
        """``host_data``: the lanes read back (uint32 ``[addresses, words]``,
        :func:`~equimesh.sim.program.final_reads` addresses)."""
        image = self.image
        links = len(image.topology.links)
        schedule = {
            "requested_at": self.start_at,
            "in_flight_at_request": self.in_flight_at_request,
            "launched_at": self.launched,
            "done": self.done_at is not None,
            "expected_cycles": self.design.run_cycles(image.steps),
        }
        sched_flits = 0
        if self.done_at is not None:
            cycles = self.done_at - self.launched
            busy = _decode(self.trace, links).sum(axis=0)
            o = check(image, self.design, cycles, cycles, busy, host_data)
            mism, first = o.mismatches, o.first_mismatch
            st = link_stats(image, busy, cycles, self.design.period)
            sched_flits = int(st.busy.sum())
            schedule.update(
                {
                    "drain_cycles": self.launched - self.start_at - 1,
                    "cycles": st.cycles,
                    "bit_exact": mism == 0,
                    "mismatches": mism,
                    "link_busy_matches_schedule": st.busy_matches_schedule,
                    "link_utilization": round(st.mean, 4),
                    "packet_flits_during_schedule": self.moved_in_schedule,
                }
            )
            if first:
                schedule["first_mismatch"] = first
        packets = self.run.results(link_flits)
        packets["injected_before"], _, packets["injected_after"] = self.headers
        # The link counters count every flit; the schedule's are the busy cycles of its window.
        packets["flit_hops"] -= sched_flits
        packets["link_utilization"] = round(packets["flit_hops"] / (links * max(packets["cycles"], 1)), 4)
        return {"schedule": schedule, "packets": packets}


def _decode(trace: list[int], links: int) -> np.ndarray:
    """bool [cycles, links] from the per-cycle link_valid integers."""
    raw = np.array([[(t >> (8 * b)) & 0xFF for b in range((links + 7) // 8)] for t in trace], dtype=np.uint8)
    if len(raw) == 0:
        return np.zeros((0, links), dtype=bool)
    return np.unpackbits(raw, axis=1, bitorder="little")[:, :links].astype(bool)


def mixed_top(
    design: Design,
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    check: bool = False,
    instances: bool = False,
) -> TrafficTop:
    """The network carrying both modes, with a generator and a sink per node (and a checker with ``check``);
    ``instances``: its routers are instances of their Verilog modules (``rtl/network.py``). Of the traffic
    only its table depth is part of the design.

    Parameters
    ----------
    design : Design
        The hardware parameters; its pipeline depth and flit width are the packet routers' too.
    table : ForwardingTable
        The packets' forwarding tables.
    traffic : Traffic
        The traffic (its table depth only).
    payload_flits : int
        Payload flits per packet.
    check : bool
        Add the per-node hardware checkers.
    instances : bool
        Routers as instances of their Verilog modules.

    Returns
    -------
    TrafficTop
        The top-level module.
    """
    setup = PacketSetup(table, payload_flits, flit_bits=design.flit_bits)
    net = Network(design, setup, instances=instances)
    return TrafficTop(net, traffic.depth, check=check)


def mixed_params(design: Design, table: ForwardingTable, traffic: Traffic, payload_flits: int) -> str:
    """The text that determines :func:`mixed_top` (with the RTL's source): the key of its cached Verilog,
    for the compiled model and for the cocotb bench alike.

    Parameters
    ----------
    design : Design
        The hardware parameters.
    table : ForwardingTable
        The packets' forwarding tables.
    traffic : Traffic
        The traffic (its table depth only).
    payload_flits : int
        Payload flits per packet.

    Returns
    -------
    str
        JSON text.
    """
    return json.dumps(["mixed", repr(design), table.to_json(), traffic.depth, payload_flits])


def mixed_load(
    image: NetworkImage, design: Design, fmt: PacketFormat, traffic: Traffic, stall: float, widths: dict[str, int]
):
    """The host's load before a mixed run, the same on every backend: the tables and lanes
    (:func:`~equimesh.sim.program.make_program`) beside the generators' tables
    (:func:`~equimesh.sim.traffic.traffic_load`), generators stopped, ``start`` low.

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule (:func:`~equimesh.rtl.rom.compile_schedule`).
    design : Design
        The hardware parameters.
    fmt : PacketFormat
        The packets' layouts.
    traffic : Traffic
        What the generators send.
    stall : float
        The sinks' probability of refusing a flit in a cycle.
    widths : dict
        The top's port widths by name.

    Returns
    -------
    Drive
        The load segment.
    """
    load = merged(make_program(image, design, widths).segments[0], traffic_load(fmt, traffic, stall))
    load.values["start"] = scalar(np.zeros(load.frames), 1)
    return load


def simulate_mixed(
    image: NetworkImage,
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    *,
    start_at: int,
    cycles: int,
    stall: float = 0.0,
    vcd: str | None = None,
    pipeline: int = DEFAULT_PIPELINE,
) -> dict:
    """Run packets for ``cycles`` cycles (random patterns) with the collective requested at ``start_at``,
    in the Amaranth simulator, on routers of pipeline depth ``pipeline`` (both paths, rtl/router.py).
    Returns the schedule's and the packets' results (see module docstring).

    The host first loads the tables, lanes and generators' tables (generators stopped), as every
    backend does (:func:`mixed_load`).

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule (:func:`~equimesh.rtl.rom.compile_schedule`).
    table : ForwardingTable
        The packets' forwarding tables (MultiWrite, seed 004).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    start_at : int
        The cycle at which ``start`` requests the collective.
    cycles : int
        Random patterns: cycles the generators inject before they stop.
    stall : float
        The sinks' probability of refusing a flit in a cycle.
    vcd : str, optional
        Write a waveform of the run here.
    pipeline : int
        The routers' pipeline depth (:data:`~equimesh.rtl.timing.PIPELINES`).

    Returns
    -------
    dict
        ``schedule``: request, launch, drain and run cycles, bit exactness, link busy counts and utilization;
        ``packets``: the scoreboard's verdict (delivered, lost, duplicated, misdelivered, latencies, deadlock).
        Also ``sim_seconds``.
    """
    design = fit(image, pipeline=pipeline)
    top = mixed_top(design, table, traffic, payload_flits)
    load = mixed_load(image, design, top.fmt, traffic, stall, top_ports(top)[2])
    sigs = [top.launch, top.done, top.link_valid]
    for mon in list(top.inject_mon) + list(top.eject_mon):
        sigs += [mon.valid, mon.ready, mon.payload.as_value()]
    n_inj = len(top.inject_mon)
    mixed = MixedRun(image, design, top.fmt, traffic, [v for v, _ in top.net.lanes], start_at=start_at, cycles=cycles)
    out = {}

    async def bench(ctx):
        await drive(ctx, top, load)
        sampler = ctx.tick().sample(*sigs).__aiter__()
        while True:
            stop, start = mixed.drive()
            ctx.set(top.stop, stop)
            ctx.set(top.start, start)
            _, _, launch, done, valid, *vals = await sampler.__anext__()
            mons = [tuple(vals[i : i + 3]) for i in range(0, len(vals), 3)]
            if mixed.observe(launch, done, valid, mons[:n_inj], mons[n_inj:]):
                break
        reads = final_reads(image)
        host = np.zeros((reads, -(-len(top.host_data) // 32)), dtype=np.uint32)
        for a in range(reads):
            ctx.set(top.host_addr, a)
            for _ in range(mixed.design.host_latency):
                await ctx.tick()
            host[a] = np.frombuffer(ctx.get(top.host_data).to_bytes(4 * host.shape[1], "little"), dtype="<u4")
        out.update(mixed.results([ctx.get(s) for s in top.link_flits], host))

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    t0 = time.perf_counter()
    run_to_end(sim, 1e-8, vcd or None)
    out["sim_seconds"] = round(time.perf_counter() - t0, 3)
    return out


def mixed_program(
    image: NetworkImage,
    design: Design,
    fmt,
    traffic: Traffic,
    widths: dict[str, int],
    *,
    start_at: int,
    cycles: int,
    stall: float,
) -> tuple[Program, dict]:
    """The compiled model's program of a mixed run, event for event as :func:`simulate_mixed`: load
    (generators stopped), packets from edge 0, ``start`` for the one edge ``start_at``, ``stop`` from
    edge ``cycles`` (random patterns), clock until ``done``, drain the packets (as
    :func:`~equimesh.sim.traffic.packet_segments`), read the counters, then the lanes. The program's
    edge counts are absolute: the load's frames come first. Returns the program and the indices of
    its marks (``done``: the segments that may see ``done``, ``end``) and captures (``counters``, ``read``).

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule (:func:`~equimesh.rtl.rom.compile_schedule`).
    design : Design
        The hardware parameters.
    fmt : PacketFormat
        The packets' layouts.
    traffic : Traffic
        What the generators send.
    widths : dict
        The compiled top's port widths by name.
    start_at : int
        The cycle at which ``start`` requests the collective.
    cycles : int
        Random patterns: cycles the generators inject before they stop.
    stall : float
        The sinks' probability of refusing a flit in a cycle.

    Returns
    -------
    tuple of (Program, dict)
        The program and ``{"done": [segment indices], "end": i, "counters": i, "read": i}``.
    """
    from .program import Capture, ClockTo, Set, Until
    from .traffic import DRAIN_LIMIT, WATCHDOG, counter_ports, target_flits

    read = make_program(image, design, widths).segments[3]
    load = mixed_load(image, design, fmt, traffic, stall, widths)
    t0 = load.frames
    limit = t0 + start_at + cycles + design.run_cycles(image.steps) + 100_000
    s, c = t0 + start_at, t0 + cycles if traffic.counts is None else None
    on, off, stop = ({name: scalar([v], 1)} for name, v in (("start", 1), ("start", 0), ("stop", 1)))
    segs = [load, Set({"stop": scalar([0], 1)})]
    if c is not None and c <= s:
        segs += [ClockTo(c), Set(stop)]
    segs += [ClockTo(s), Set(on), ClockTo(s + 1), Set(off)]
    done = [len(segs)]
    if c is not None and c > s + 1:
        segs += [Until("done", 1, c), ClockTo(c), Set(stop)]
        done.append(len(segs))
    elif c == s + 1:
        segs.append(Set(stop))
    segs.append(Until("done", 1, limit))
    target = target_flits(fmt, traffic)  # then the packets: drained (random) or all delivered (finite)
    segs.append(Until("ejected", 2**64 - 1 if target is None else target, limit + DRAIN_LIMIT, WATCHDOG))
    at = {"done": done, "end": len(segs) - 1}
    names = counter_ports(fmt.nodes, len(image.topology.links)) + ["cycles"]
    names += [port for port, _ in buses(design)["busy"].ports()]
    at["counters"] = len(segs)
    segs += [Capture(names), read]
    at["read"] = len(segs) - 1
    return Program(segs, widths), at


def run_mixed_compiled(
    image: NetworkImage,
    table: ForwardingTable,
    traffic: Traffic,
    payload_flits: int,
    workdir,
    *,
    start_at: int,
    cycles: int,
    stall: float = 0.0,
    log=None,
    pipeline: int = DEFAULT_PIPELINE,
    vcd: str | None = None,
) -> dict:
    """:func:`simulate_mixed` on the compiled Verilator model (cached per design; no Python per cycle).

    The schedule is checked bit for bit as on every backend (:func:`~equimesh.sim.program.check` on the
    lanes read back, the statistics block's cycles and per-link busy counts); the packets by the hardware
    checkers' counters (:func:`~equimesh.sim.traffic.soak_verdict`). Per-cycle figures the counters do
    not give (packets in flight at the request, injections before and after the schedule, packet flits
    while it ran, latencies) are None; the link busy counts matching the schedule show no packet flit
    used a link while it ran. ``vcd``: a waveform of the whole run (FST for a ``.fst`` name).

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule (:func:`~equimesh.rtl.rom.compile_schedule`).
    table : ForwardingTable
        The packets' forwarding tables (MultiWrite, seed 004).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    workdir : str or pathlib.Path
        Where the model runs.
    start_at : int
        The cycle at which ``start`` requests the collective.
    cycles : int
        Random patterns: cycles the generators inject before they stop.
    stall : float
        The sinks' probability of refusing a flit in a cycle.
    log : callable, optional
        ``log(line)`` for build steps.
    pipeline : int
        The routers' pipeline depth.
    vcd : str, optional
        Write a waveform of the run here (``.fst`` for FST).

    Returns
    -------
    dict
        ``schedule``: request, launch, drain and run cycles, bit exactness, link busy counts and utilization;
        ``packets``: the scoreboard's verdict (delivered, lost, duplicated, misdelivered, latencies, deadlock).
        Also ``sim_seconds``, ``simulator``, ``build_seconds`` and ``cached``.
    """
    from pathlib import Path

    from .backends import trace_kind
    from .traffic import completion, finished, read_counters, soak_verdict, whole_top_kind
    from .verilator import build_top

    design = fit(image, pipeline=pipeline)
    fmt = PacketFormat(table.topology.nodes, payload_flits, design.flit_bits)
    model, widths = build_top(
        lambda: mixed_top(design, table, traffic, payload_flits, check=True, instances=True),
        mixed_params(design, table, traffic, payload_flits),
        log,
        kind=whole_top_kind(fmt.nodes),
        trace=trace_kind(vcd),
    )
    program, at = mixed_program(image, design, fmt, traffic, widths, start_at=start_at, cycles=cycles, stall=stall)
    t0 = program.segments[0].frames
    rec = model.run(program, Path(workdir), trace=str(Path(vcd).resolve()) if vcd else None)
    done_edge = next((rec["marks"][i].edge for i in at["done"] if rec["marks"][i].reached), None)
    end = rec["marks"][at["end"]]
    got = rec["captures"][at["counters"]]
    links = len(image.topology.links)
    counters = read_counters(lambda n: int(got[n][0]), fmt.nodes, links)
    schedule = {
        "requested_at": start_at,
        "in_flight_at_request": None,
        "launched_at": None,
        "done": done_edge is not None,
        "expected_cycles": design.run_cycles(image.steps),
    }
    sched_flits = 0
    if done_edge is not None:
        done_at = done_edge - t0 + 1  # as MixedRun counts: the edge after the one that sampled ``done``
        run_cycles = int(got["cycles"][0])
        busy = join(design, got, "busy").reshape(-1).astype(np.int64)[:links]
        o = check(image, design, run_cycles, run_cycles, busy, read_back(design, rec))
        st = link_stats(image, busy, run_cycles, design.period)
        sched_flits = int(st.busy.sum())
        launched = done_at - run_cycles
        schedule.update(
            {
                "launched_at": launched,
                "drain_cycles": launched - start_at - 1,
                "cycles": st.cycles,
                "bit_exact": o.bit_exact,
                "mismatches": o.mismatches,
                "link_busy_matches_schedule": st.busy_matches_schedule,
                "link_utilization": round(st.mean, 4),
                "packet_flits_during_schedule": None,
            }
        )
        if o.first_mismatch:
            schedule["first_mismatch"] = o.first_mismatch
    last = completion(end, traffic.counts is not None) - t0
    packets = soak_verdict(
        fmt,
        traffic,
        cycles=max(last, done_at if done_edge is not None else 0),
        deadlock=not finished(end, traffic.counts is not None),
        **counters,
    )
    packets["completion"] = last
    packets["flit_hops"] -= sched_flits  # the link counters count every flit; the schedule's are its busy cycles
    packets["link_utilization"] = round(packets["flit_hops"] / (links * max(packets["cycles"], 1)), 4)
    packets["injected_before"] = packets["injected_after"] = None
    seconds = sum(m.seconds for m in rec["marks"].values())
    return {
        "schedule": schedule,
        "packets": packets,
        "sim_seconds": round(seconds, 3),
        "simulator": "verilator",
        "build_seconds": round(model.build_seconds, 1),
        "cached": model.cached,
    }
