"""Subcommands for the hardware: ``simulate``, ``verilog``, ``compare``, ``bench rtl``.

The path of data: topology -> schedule -> ROM images (rtl/rom.py) -> network
(rtl/network.py) -> simulation (sim/harness.py) -> metrics (sim/metrics.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .args import (
    CHUNK_FLITS,
    CHUNKS,
    COLLECTIVES,
    PAYLOAD_FLITS,
    SIDE,
    THREADS,
    add_pipeline_arg,
    add_run_args,
    count,
    load_image,
    table_from_args,
)
from .errors import InputError, UsageError, print_and_save, writing
from .progress import Progress
from .rtl.design import MAX_DEPTH, MAX_LANE_FLITS
from .rtl.rom import RomError
from .schedules.schedule import lower_bound
from .schedules.synth import synthesize

__all__ = [
    "add_backend_arg",
    "add_design_args",
    "bound_of",
    "cmd_bench_rtl",
    "cmd_compare",
    "cmd_simulate",
    "cmd_verilog",
    "register",
    "register_bench",
    "register_compare",
    "register_verilog",
    "run_backend",
]


def bound_of(sched) -> int:
    """The lower bound of a schedule's run in steps: the sum over its phases (ReduceScatter, then AllGather
    for an AllReduce) of seed 000 Section III-A's bound.

    Parameters
    ----------
    sched : Schedule
        The schedule.

    Returns
    -------
    int
        The bound in timesteps.
    """
    return sum(lower_bound(sched.topology, sched.chunks, p.collective) for p in sched.phases)


def _design(args, image):
    from .rtl.design import fit

    try:
        return fit(
            image, slots=getattr(args, "slots", None), depth=getattr(args, "depth", None), pipeline=args.pipeline
        )
    except RomError as e:
        raise InputError(f"{getattr(args, 'schedule', None) or 'schedule'}: {e}") from None


def run_backend(image, backend: str, design=None, vcd=None, label: str = "", model: str = "auto", threads="auto"):
    """Run a compiled image on ``backend``; missing or failing simulators become one-line errors.

    Parameters
    ----------
    image : NetworkImage
        The compiled schedule (:func:`compile_schedule`).
    backend : str
        ``verilator``, ``icarus`` or ``amaranth`` (:data:`equimesh.sim.backends.BACKENDS`).
    design : Design, optional
        The hardware parameters; by default the image's fitted design.
    vcd : str or pathlib.Path, optional
        Where to write a waveform.
    label : str
        Shown beside the backend on the progress line.
    model : str
        The Verilator model kind (:data:`equimesh.sim.backends.MODELS`).
    threads : int or str
        The tiled model's threads, or ``auto`` (:func:`equimesh.sim.tiles.auto_threads`).

    Returns
    -------
    RunResult
        The run, checked bit for bit against the reference model (:func:`equimesh.sim.backends.run_image`).
    """
    from .rtl.design import fit
    from .sim.backends import model_kind, run_image, trace_kind
    from .sim.tiles import auto_threads
    from .sim.verilator import VerilatorError
    from .sim.verilog_sim import SimulatorMissing

    if threads == "auto":
        d = design or fit(image)
        kind = model_kind(model, d.nodes, d.pipeline, trace_kind(vcd)) if backend == "verilator" else backend
        threads = auto_threads(kind, d.nodes)

    def log(line):
        print(f"equimesh: {line}", file=sys.stderr, flush=True)

    progress = Progress(f"{backend} {label}")
    try:
        return run_image(image, backend, design, vcd=vcd, log=log, model=model, progress=progress, threads=threads)
    except (VerilatorError, SimulatorMissing) as e:
        raise InputError(str(e)) from None
    except RuntimeError as e:  # a cocotb bench that wrote nothing, a network that never finished
        raise InputError(f"{backend}: {e}") from None
    finally:
        progress.close()


def cmd_simulate(args) -> int:
    """``equimesh simulate``: run one collective cycle by cycle on the RTL, check every node's memory bit
    for bit against the pure-Python reference, and print cycles and link utilization against the bound;
    ``--vcd`` writes a waveform and a GTKWave save file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh simulate`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when the run is bit exact, else 1; bad input raises :class:`UsageError` or
        :class:`InputError` (one line).
    """
    from .sim.waveform import write_gtkw

    topo, sched, image = load_image(args)
    design = _design(args, image)
    vcd = gtkw = None
    if args.vcd:
        vcd = Path(args.vcd)
        gtkw = vcd.with_suffix(".gtkw")
        if vcd.suffix == ".fst" and args.backend != "verilator":
            raise UsageError("FST waveforms need --backend verilator; use a .vcd file name")
        with writing(vcd):
            vcd.parent.mkdir(parents=True, exist_ok=True)
        if vcd.is_dir():
            raise UsageError(f"--vcd {vcd} is a directory; give a file name")
    res = run_backend(image, args.backend, design, str(vcd) if vcd else None, topo.name, args.model, args.threads)
    if gtkw:
        write_gtkw(gtkw, vcd, topo, args.backend)
    st, o = res.stats, res.outcome
    bound = bound_of(sched)
    ok = res.bit_exact and st.busy_matches_schedule and res.counters_agree
    out = {
        "topology": topo.name,
        "kind": topo.kind,
        "rows": topo.rows,
        "cols": topo.cols,
        "collective": sched.collective,
        "algorithm": sched.algorithm,
        "chunks": sched.chunks,
        "backend": res.backend,
        "design": design.describe(),
        "bit_exact": res.bit_exact,
        "mismatches": o.mismatches,
        "cycles": res.cycles,
        "rtl_cycle_counter": o.rtl_cycles,
        "steps": sched.num_steps,
        "chunk_flits": image.chunk_flits,
        "cycles_per_step": design.period,
        "bound_steps": bound,
        "efficiency": round(bound / sched.num_steps, 4),
        "ratio_to_steps_x_flits": round(st.ratio_to_steps_x_flits, 4),
        "link_utilization": round(st.mean, 4),
        "link_utilization_min": round(st.min, 4),
        "link_busy_matches_schedule": st.busy_matches_schedule,
        "link_utilization_per_link": [round(float(u), 4) for u in st.utilization],
        "link_utilization_per_step": [round(float(u), 4) for u in st.per_step],
        "sim_seconds": round(res.run_seconds, 4),
        "cycles_per_second": round(res.cycles_per_second, 1),
        "router_cycles_per_second": round(res.cycles_per_second * topo.nodes, 1),
        "build_seconds": round(res.build_seconds, 2),
        "cached": res.cached,
        "threads": res.threads,
        "solo_cycles": res.solo_cycles,
    }
    if vcd:
        out["vcd"], out["gtkw"] = str(vcd), str(gtkw)
    if o.first_mismatch:
        out["first_mismatch"] = o.first_mismatch
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{sched.collective} on {topo.name}, K={sched.chunks}, {image.chunk_flits} flits/chunk, "
            f"{res.backend}: {'bit-exact' if res.bit_exact else 'MISMATCH: ' + str(o.first_mismatch)}"
        )
        print(
            f"  {res.cycles} cycles for {sched.num_steps} steps (bound {bound}); "
            f"cycles / (steps x chunk_flits) = {st.ratio_to_steps_x_flits:.3f}; the RTL cycle counter "
            f"{'agrees' if res.counters_agree else 'says ' + str(o.rtl_cycles)}"
        )
        print(
            f"  link utilization mean {st.mean:.3f}, min {st.min:.3f}; busy cycles "
            f"{'match' if st.busy_matches_schedule else 'DO NOT match'} the schedule"
        )
        build = (
            "no build"
            if res.backend == "amaranth"
            else "cached model"
            if res.cached
            else f"built in {res.build_seconds:.1f} s"
        )
        print(f"  run phase {res.run_seconds:.3f} s: {res.cycles_per_second:,.0f} cycles/s ({build})")
        print(f"  design: {design.describe()}")
        if vcd:
            print(f"  waveform {vcd}, GTKWave save file {gtkw}")
    return 0 if ok else 1


def add_design_args(p) -> None:
    """``--depth``, ``--slots`` and ``--pipeline``: the design's schedule-table entries, chunk slots per
    lane and router pipeline depth (:func:`equimesh.rtl.design.fit` picks what is not given).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    p.add_argument(
        "--depth",
        type=count(1, MAX_DEPTH),
        help="schedule-table entries of the design (default: the next power of two >= 16 that holds the schedule)",
    )
    p.add_argument(
        "--slots",
        type=count(1, MAX_LANE_FLITS),
        help="chunk slots per lane of the design (default: the next power of two >= 16 that holds the schedule)",
    )
    add_pipeline_arg(p)


def add_backend_arg(p) -> None:
    """``--backend`` (verilator, icarus or amaranth), ``--model`` (the Verilator model kind) and ``--threads``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    from .sim.backends import BACKENDS, MODELS

    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="verilator",
        help="simulator: verilator (compiled, cached per design; default), icarus (cocotb), "
        "amaranth (the reference simulator)",
    )
    p.add_argument(
        "--model",
        choices=MODELS,
        default="auto",
        help="Verilator model: flat (every router inlined: slow build, fast run), tiled (each distinct "
        "router compiled once, the links wired in C++: a build that does not grow with the size), "
        "modules (every router an instance of its module's class), hierarchical (each distinct router "
        "compiled once by Verilator: a much slower run); auto: flat up to 64 nodes, tiled above "
        "(modules for a waveform or pipeline 0)",
    )
    p.add_argument(
        "--threads",
        type=THREADS,
        default="auto",
        help="threads of the tiled model, each clocking a share of the routers (same results); auto (default): "
        "one per 32 nodes up to the idle usable cores",
    )


def register(sub, bench) -> None:
    """Add ``simulate``, ``verilog`` and ``compare``, and the ``rtl`` benchmark.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    p = sub.add_parser("simulate", help="run a collective cycle by cycle on the RTL and check it bit for bit")
    add_run_args(p, None)
    add_design_args(p)
    add_backend_arg(p)
    p.add_argument("--schedule", help="run this schedule file instead of synthesizing one")
    p.add_argument("--vcd", help="write a waveform here (.vcd; .fst with verilator) and a GTKWave .gtkw next to it")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.set_defaults(func=cmd_simulate)
    register_verilog(sub)
    register_compare(sub)
    register_bench(bench)


def cmd_compare(args) -> int:
    """``equimesh compare``: run one collective on each topology kind of the same size (mesh, EquiMesh,
    overflow, torus, Supermesh), check each bit for bit, and tabulate cycles, utilization, crossbar cost and,
    from measured or given clocks, time.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh compare`` (:func:`register_compare`).

    Returns
    -------
    int
        The exit status: 0 when every run is bit exact, else 1; bad input raises :class:`UsageError` or
        :class:`InputError` (one line).
    """
    from .rtl.design import fit
    from .sim.compare import CompareError, add_time, clocks, compare, read_fpga

    if args.clock_mhz is not None and not 0 < args.clock_mhz < float("inf"):
        raise UsageError(f"--clock-mhz must be > 0 (got {args.clock_mhz})")
    kinds = list(dict.fromkeys(args.kinds))
    try:
        fmax = read_fpga(args.fmax_from or (), kinds, args.rows, args.cols, args.chunk_flits, args.pipeline)
        with writing(args.out):
            Path(args.out).mkdir(parents=True, exist_ok=True)
            res = compare(
                args.rows,
                args.cols,
                args.chunks,
                args.chunk_flits,
                args.collective,
                args.out,
                lambda image, label: run_backend(
                    image,
                    args.backend,
                    fit(image, pipeline=args.pipeline),
                    label=label,
                    model=args.model,
                    threads=args.threads,
                ),
                kinds,
            )
        if args.fmax_from:
            add_time(res, clocks(fmax, res))
        elif args.clock_mhz is not None:
            add_time(res, {kind: args.clock_mhz for kind in res})
    except (RomError, CompareError) as e:
        raise InputError(str(e)) from None
    if args.json:
        print(json.dumps(res, indent=2))
        return 0 if all(r["bit_exact"] for r in res.values()) else 1
    timed = "time_ns" in next(iter(res.values()))
    print(f"{args.collective} on {args.rows}x{args.cols}, K={args.chunks}, {args.chunk_flits} flits/chunk")
    head = f"{'kind':<10}{'steps':>6}{'cycles':>8}{'vs EqM':>8}{'util':>7}{'xpoints':>9}"
    if timed:
        head += f"{'MHz':>8}{'time ns':>10}{'vs EqM':>8}"
    print(head + "  routers by ports / cells per router")
    for kind, r in res.items():
        ports = ", ".join(f"{p}-port x{c}: {r['router_cells'][p]} cells" for p, c in r["routers_by_ports"].items())
        line = (
            f"{kind:<10}{r['steps']:>6}{r['cycles']:>8}{_ratio(r['cycles_vs_equimesh'])}"
            f"{r['link_utilization']:>7.3f}{r['crosspoints']:>9}"
        )
        if timed:
            line += (
                f"{'-' if r['clock_mhz'] is None else round(r['clock_mhz'], 1):>8}"
                f"{'-' if r['time_ns'] is None else r['time_ns']:>10}{_ratio(r['time_vs_equimesh'])}"
            )
        print(f"{line}  {ports}{'' if r['bit_exact'] else '  NOT BIT-EXACT'}")
    print(f"heatmaps in {args.out}/")
    return 0 if all(r["bit_exact"] for r in res.values()) else 1


def _ratio(x) -> str:
    return f"{'-' if x is None else f'{x:.3f}':>8}"


def register_compare(sub) -> None:
    """Add ``equimesh compare`` (:func:`cmd_compare`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    from .sim.compare import KINDS

    p = sub.add_parser(
        "compare",
        help="run one collective on mesh, EquiMesh, overflow, torus and Supermesh: "
        "cycles, utilization, crossbar cost, and time from measured Fmax",
    )
    p.add_argument("--rows", type=SIDE, default=4, help="mesh rows R >= 2 (default 4)")
    p.add_argument("--cols", type=SIDE, default=4, help="mesh columns C >= 2 (default 4)")
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument("--chunk-flits", type=CHUNK_FLITS, default=16, help="flits per chunk F >= 1 (default 16)")
    p.add_argument("--collective", choices=COLLECTIVES, default="allgather")
    p.add_argument(
        "--kinds",
        nargs="+",
        choices=KINDS,
        default=list(KINDS),
        metavar="KIND",
        help=f"topologies to compare (default all: {' '.join(KINDS)})",
    )
    clock = p.add_mutually_exclusive_group()
    clock.add_argument(
        "--fmax-from",
        nargs="+",
        metavar="FILE",
        help="JSON files of 'equimesh fpga --json', one per kind: adds a time column "
        "(cycles / the slowest router's median Fmax)",
    )
    clock.add_argument("--clock-mhz", type=float, help="adds a time column at this clock for every kind")
    p.add_argument(
        "--out", default="out/compare", help="directory for heatmaps and synthesis files (default out/compare)"
    )
    add_backend_arg(p)
    add_pipeline_arg(p)
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.set_defaults(func=cmd_compare)


def cmd_verilog(args) -> int:
    """``equimesh verilog``: write the synthesizable Verilog of a network design (one module per distinct
    router), its host load sequence, a FuseSoC core file and, with ``--tables-dir``, the tables as
    ``$readmemh`` images.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh verilog`` (:func:`register_verilog`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    from .rtl.verilog import LINT_WAIVERS, TOP, core_name, fusesoc_core, load_sequence, network_verilog, write_tables
    from .sim.program import lane_images

    topo, sched, image = load_image(args)
    design = _design(args, image)
    packets = None
    if args.packets:
        from .rtl.packet import PacketError
        from .rtl.packet_network import PacketSetup

        try:
            packets = PacketSetup(table_from_args(args, topo), args.payload_flits, flit_bits=design.flit_bits)
        except PacketError as e:
            raise UsageError(str(e)) from None
    out = Path(args.out)
    nv = network_verilog(design, packets)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / f"{TOP}.v", out / "lint.vlt", out / "load.md"]
        paths[0].write_text(nv.text)
        paths[1].write_text(LINT_WAIVERS)
        paths[2].write_text(load_sequence(design, image, nv.widths))
    images = []
    if args.tables_dir:
        lanes, _ = lane_images(image, design)
        ml = design.max_lanes

        def lane_words(v, i):
            return [int.from_bytes(lanes[a, v * ml + i].tobytes(), "little") for a in range(lanes.shape[0])]

        with writing(args.tables_dir):
            images = write_tables(image, design, lane_words, args.tables_dir)
        paths += images
    if args.formal:
        from .rtl.verilog import write_proofs

        with writing(out / "formal"):
            paths += write_proofs(design, out / "formal", args.payload_flits if packets else None)
    core = out / f"{core_name(design)}.core"
    with writing(core):
        core.write_text(fusesoc_core(design, out, paths[0], paths[1], images))
    paths.insert(3, core)
    print(
        f"{topo.name}: {design.describe()}"
        + (
            f"; routers also carry packets ({packets.table.algorithm} routing, {args.payload_flits} payload flits)"
            if packets
            else ""
        )
    )
    print(
        f"  runs any schedule that fits it; loaded here with {sched.collective}, K={sched.chunks}, "
        f"{sched.num_steps} steps: wrote {len(paths)} files"
    )
    for p in paths[:6]:
        print(f"  {p}")
    if len(paths) > 6:
        print(f"  ... and {len(paths) - 6} more")
    return 0


def register_verilog(sub) -> None:
    """Add ``equimesh verilog`` (:func:`cmd_verilog`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "verilog",
        help="write synthesizable Verilog of a network design (one module per distinct "
        "router), its host load sequence, a FuseSoC core file, and optionally the "
        "tables as $readmemh images",
    )
    add_run_args(p, None)
    add_design_args(p)
    p.add_argument(
        "--schedule",
        help="size the design for (and write the tables of) this schedule file instead of a synthesized one",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--tables-dir", help="also write each router's schedule table and initial lanes here as $readmemh images"
    )
    p.add_argument(
        "--packets",
        action="store_true",
        help="routers that also carry MultiWrite packets (inject/eject streams, links with ready)",
    )
    p.add_argument("--routing", default="shortcut", help="with --packets: forwarding tables (default shortcut)")
    p.add_argument(
        "--payload-flits", type=PAYLOAD_FLITS, default=8, help="with --packets: payload flits per packet (default 8)"
    )
    p.add_argument(
        "--formal",
        action="store_true",
        help="also write the formal property wrappers and a SymbiYosys .sby file per property under "
        "OUT/formal (docs/formal.md)",
    )
    p.set_defaults(func=cmd_verilog)


def cmd_bench_rtl(args) -> int:
    """Run-phase cycles/s, router-cycles/s and build seconds per size and backend (one table).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench rtl`` (:func:`register_bench`).

    Returns
    -------
    int
        The exit status: 0 when every run is bit exact, else 1; bad input raises :class:`UsageError` or
        :class:`InputError` (one line).
    """
    import os
    import platform
    import tempfile
    import time

    from .rtl.rom import compile_schedule
    from .schedules.topology import build

    sizes = []
    for size in args.sizes:
        try:
            r, c = (int(x) for x in size.lower().split("x"))
            sizes.append(build("equimesh", r, c))
        except ValueError:
            raise UsageError(f"--sizes takes RxC sizes such as 4x4 (got {size!r})") from None
    cold = tempfile.TemporaryDirectory(prefix="equimesh-cache-") if args.cold else None
    if cold:
        os.environ["EQUIMESH_CACHE"] = cold.name
    rows = []
    try:
        for topo in sizes:
            sched = synthesize(topo, args.chunks, args.collective)
            image = compile_schedule(sched, args.chunk_flits, topo)
            for backend in args.backends:
                for model in args.models if backend == "verilator" else ["-"]:
                    t0 = time.perf_counter()
                    res = run_backend(image, backend, label=topo.name, model=model if model != "-" else "auto")
                    wall = time.perf_counter() - t0
                    ok = res.bit_exact and res.stats.busy_matches_schedule and res.counters_agree
                    rows.append((topo, backend, model, res, wall, ok))
    finally:
        if cold:
            cold.cleanup()
    lines = [
        f"# equimesh bench rtl ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}): EquiMesh {args.collective}, "
        f"K={args.chunks}, {args.chunk_flits} flits/chunk, {'empty' if args.cold else 'warm'} model cache",
        "",
        "| network | backend | model | threads | cycles | run s | cycles/s | router-cycles/s | build s | cached "
        "| wall s | bit-exact |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for topo, backend, model, res, wall, ok in rows:
        lines.append(
            f"| {topo.name} | {backend} | {model} | {res.threads} | {res.cycles} | {res.run_seconds:.4f} | "
            f"{res.cycles_per_second:,.0f} | {res.cycles_per_second * topo.nodes:,.0f} | "
            f"{res.build_seconds:.1f} | {'yes' if res.cached else 'no'} | {wall:.1f} | "
            f"{'yes' if ok else 'NO'} |"
        )
    text = "\n".join(lines) + "\n"
    print_and_save(text, args.out)
    return 0 if all(r[5] for r in rows) else 1


def register_bench(sub) -> None:
    """Add ``equimesh bench rtl`` (:func:`cmd_bench_rtl`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh bench`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    from .sim.backends import BACKENDS, MODELS

    p = sub.add_parser(
        "rtl", help="run-phase cycles/s, router-cycles/s and build seconds per size and simulator backend"
    )
    p.add_argument("--sizes", nargs="+", default=["4x4", "8x8"], help="EquiMesh sizes (default 4x4 8x8)")
    p.add_argument(
        "--backends",
        nargs="+",
        choices=BACKENDS,
        default=["verilator", "amaranth"],
        help="backends to run (default verilator amaranth)",
    )
    p.add_argument(
        "--models", nargs="+", choices=MODELS, default=["auto"], help="Verilator model kinds to run (default auto)"
    )
    p.add_argument("--collective", choices=COLLECTIVES, default="allgather")
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunks per shard K (default 4)")
    p.add_argument("--chunk-flits", type=CHUNK_FLITS, default=16, help="flits per chunk F (default 16)")
    p.add_argument("--cold", action="store_true", help="start from an empty model cache (measures builds)")
    p.add_argument("--out", default="bench/rtl.md", help="save the table here (default bench/rtl.md)")
    p.set_defaults(func=cmd_bench_rtl)
