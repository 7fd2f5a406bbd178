"""Subcommands for the hardware: ``simulate``, ``verilog``, ``compare``, ``bench rtl``.

The path of data: topology -> schedule -> ROM images (rtl/rom.py) -> network
(rtl/network.py) -> simulation (sim/harness.py) -> metrics (sim/metrics.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .commands import add_topology_args, topology_from_args
from .errors import InputError, UsageError, writing
from .rtl.rom import RomError, compile_schedule
from .schedules import schedule as schedfile
from .schedules.schedule import lower_bound
from .schedules.synth import synthesize

COLLECTIVES = ("allgather", "reducescatter", "allreduce")
LONG_RUN = 20000  # router-cycles (about 10 s in the Amaranth simulator) from which a progress bar is drawn


class Progress:
    """A one-line progress bar on stderr, drawn only for runs of at least ``min_total`` cycles."""

    def __init__(self, label: str, min_total: int):
        self.label, self.min_total = label, min_total

    def __call__(self, done: int, total: int) -> None:
        if total < self.min_total:
            return
        frac = min(1.0, done / total)
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% ({done}/{total} cycles)")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _check_sizes(args) -> None:
    if args.chunk_flits < 1:
        raise UsageError(f"--chunk-flits must be >= 1 (got {args.chunk_flits})")
    if args.chunks < 1:
        raise UsageError(f"--chunks must be >= 1 (got {args.chunks})")


def load_image(args):
    """Topology, schedule (synthesized or --schedule FILE) and its compiled ROM image."""
    _check_sizes(args)
    topo = topology_from_args(args)
    if getattr(args, "schedule", None):
        try:
            sched = schedfile.load(args.schedule)
        except schedfile.ScheduleFileError as e:
            raise InputError(str(e)) from None
        if args.collective is not None and args.collective != sched.collective:
            raise InputError(f"{args.schedule}: the schedule is {sched.collective}, not {args.collective}")
    else:
        sched = synthesize(topo, args.chunks, args.collective or "allgather")
    try:
        image = compile_schedule(sched, args.chunk_flits, topo)
    except RomError as e:
        raise InputError(f"{getattr(args, 'schedule', None) or 'schedule'}: {e}") from None
    return topo, sched, image


def bound_of(sched) -> int:
    return sum(lower_bound(sched.topology, sched.chunks, p.collective) for p in sched.phases)


def cmd_simulate(args) -> int:
    from .sim.harness import simulate
    from .sim.waveform import write_gtkw

    topo, sched, image = load_image(args)
    vcd = gtkw = None
    if args.vcd:
        vcd = Path(args.vcd)
        gtkw = vcd.with_suffix(".gtkw")
        with writing(vcd):
            vcd.parent.mkdir(parents=True, exist_ok=True)
    res = simulate(image, vcd=str(vcd) if vcd else None, progress=Progress(f"simulate {topo.name}", LONG_RUN // topo.nodes))
    if gtkw:
        write_gtkw(gtkw, vcd, topo)
    st = res.stats
    bound = bound_of(sched)
    out = {
        "topology": topo.name, "kind": topo.kind, "rows": topo.rows, "cols": topo.cols,
        "collective": sched.collective, "algorithm": sched.algorithm, "chunks": sched.chunks,
        "bit_exact": res.bit_exact, "mismatches": res.mismatches,
        "cycles": res.cycles, "steps": sched.num_steps, "chunk_flits": image.chunk_flits,
        "cycles_per_step": image.period, "bound_steps": bound, "efficiency": round(bound / sched.num_steps, 4),
        "ratio_to_steps_x_flits": round(st.ratio_to_steps_x_flits, 4),
        "link_utilization": round(st.mean, 4), "link_utilization_min": round(st.min, 4),
        "link_busy_matches_schedule": st.busy_matches_schedule,
        "link_utilization_per_link": [round(float(u), 4) for u in st.utilization],
        "link_utilization_per_step": [round(float(u), 4) for u in st.per_step],
        "sim_seconds": round(res.sim_seconds, 3), "cycles_per_second": round(res.cycles_per_second, 1),
        "router_cycles_per_second": round(res.cycles_per_second * topo.nodes, 1),
    }
    if vcd:
        out["vcd"], out["gtkw"] = str(vcd), str(gtkw)
    if res.first_mismatch:
        out["first_mismatch"] = res.first_mismatch
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{sched.collective} on {topo.name}, K={sched.chunks}, {image.chunk_flits} flits/chunk: "
              f"{'bit-exact' if res.bit_exact else 'MISMATCH: ' + str(res.first_mismatch)}")
        print(f"  {res.cycles} cycles for {sched.num_steps} steps (bound {bound}); "
              f"cycles / (steps x chunk_flits) = {st.ratio_to_steps_x_flits:.3f}")
        print(f"  link utilization mean {st.mean:.3f}, min {st.min:.3f}; busy cycles "
              f"{'match' if st.busy_matches_schedule else 'DO NOT match'} the schedule")
        print(f"  simulated in {res.sim_seconds:.2f} s: {res.cycles_per_second:.0f} cycles/s")
        if vcd:
            print(f"  waveform {vcd}, GTKWave save file {gtkw}")
    return 0 if res.bit_exact and st.busy_matches_schedule else 1


def add_run_args(p, collective_default: str | None) -> None:
    add_topology_args(p)
    p.add_argument("--chunks", type=int, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument("--chunk-flits", type=int, default=16, help="flits per chunk F >= 1 (default 16)")
    p.add_argument("--collective", choices=COLLECTIVES, default=collective_default,
                   help="collective to run (default allgather)")


def register(sub) -> None:
    p = sub.add_parser("simulate", help="run a collective cycle by cycle on the Amaranth network and check it bit for bit")
    add_run_args(p, None)
    p.add_argument("--schedule", help="run this schedule file instead of synthesizing one")
    p.add_argument("--vcd", help="write a VCD here (and a GTKWave .gtkw next to it)")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.set_defaults(func=cmd_simulate)
    register_verilog(sub)
    register_compare(sub)
    register_bench(sub)


def cmd_compare(args) -> int:
    from .sim.compare import compare

    _check_sizes(args)
    for n in (args.rows, args.cols):
        if n < 2:
            raise UsageError(f"rows and cols must be >= 2 (got {args.rows}x{args.cols})")
    with writing(args.out):
        Path(args.out).mkdir(parents=True, exist_ok=True)
    try:
        res = compare(args.rows, args.cols, args.chunks, args.chunk_flits, args.collective, args.out,
                      progress=lambda kind: Progress(f"simulate {kind}", LONG_RUN // (args.rows * args.cols)))
    except RomError as e:
        raise InputError(str(e)) from None
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"{args.collective} on {args.rows}x{args.cols}, K={args.chunks}, {args.chunk_flits} flits/chunk")
    print(f"{'kind':<10}{'steps':>6}{'cycles':>8}{'vs EqM':>8}{'util':>7}{'xpoints':>9}  routers by ports / cells per router")
    for kind, r in res.items():
        ports = ", ".join(f"{p}-port x{c}: {r['router_cells'][p]} cells" for p, c in r["routers_by_ports"].items())
        print(f"{kind:<10}{r['steps']:>6}{r['cycles']:>8}{r['cycles_vs_equimesh']:>8.3f}{r['link_utilization']:>7.3f}"
              f"{r['crosspoints']:>9}  {ports}{'' if r['bit_exact'] else '  NOT BIT-EXACT'}")
    print(f"heatmaps in {args.out}/")
    return 0 if all(r["bit_exact"] for r in res.values()) else 1


def register_compare(sub) -> None:
    p = sub.add_parser("compare", help="run one collective on mesh, equimesh and overflow: cycles, utilization, crossbar cost")
    p.add_argument("--rows", type=int, default=4, help="mesh rows R >= 2 (default 4)")
    p.add_argument("--cols", type=int, default=4, help="mesh columns C >= 2 (default 4)")
    p.add_argument("--chunks", type=int, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument("--chunk-flits", type=int, default=16, help="flits per chunk F >= 1 (default 16)")
    p.add_argument("--collective", choices=COLLECTIVES, default="allgather")
    p.add_argument("--out", default="out/compare", help="directory for heatmaps and synthesis files (default out/compare)")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.set_defaults(func=cmd_compare)


def cmd_verilog(args) -> int:
    from .rtl.verilog import export
    from .sim.harness import FLIT_BITS, lane_init

    topo, sched, image = load_image(args)
    packets = None
    if args.packets:
        from .rtl.packet import PacketError
        from .rtl.packet_network import PacketSetup
        from .traffic_commands import table_from_args

        if args.payload_flits < 1:
            raise UsageError(f"--payload-flits must be >= 1 (got {args.payload_flits})")
        try:
            packets = PacketSetup(table_from_args(args, topo), args.payload_flits)
        except PacketError as e:
            raise UsageError(str(e)) from None
    with writing(args.out):
        paths = export(image, lane_init(image, FLIT_BITS), args.out, FLIT_BITS, args.rom_dir, packets)
    print(f"{sched.collective} on {topo.name}, K={sched.chunks}, {image.chunk_flits} flits/chunk, "
          f"{sched.num_steps} steps" + (f", routers also carry packets ({packets.table.algorithm} routing, "
                                        f"{args.payload_flits} payload flits)" if packets else "") +
          f": wrote {len(paths)} files")
    for p in paths[:8]:
        print(f"  {p}")
    if len(paths) > 8:
        print(f"  ... and {len(paths) - 8} more")
    return 0


def register_verilog(sub) -> None:
    p = sub.add_parser("verilog", help="write synthesizable Verilog: the network top and one file per distinct router")
    add_run_args(p, None)
    p.add_argument("--schedule", help="build the ROMs from this schedule file instead of synthesizing one")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--rom-dir", help="also write each router's ROM here as a $readmemh hex file")
    p.add_argument("--packets", action="store_true",
                   help="routers that also carry MultiWrite packets (inject/eject streams, links with ready)")
    p.add_argument("--routing", default="shortcut", help="with --packets: forwarding tables (default shortcut)")
    p.add_argument("--payload-flits", type=int, default=8, help="with --packets: payload flits per packet (default 8)")
    p.set_defaults(func=cmd_verilog)


def cmd_bench_rtl(args) -> int:
    """Simulated cycles/s and router-cycles/s, Amaranth simulator and Icarus, for each size."""
    import platform
    import tempfile
    import time

    from .rtl.rom import compile_schedule
    from .schedules.topology import build
    from .sim.harness import simulate
    from .sim.verilog_sim import SimulatorMissing, check_simulator, run

    if not args.no_icarus:
        try:
            check_simulator("icarus")
        except SimulatorMissing as e:
            raise InputError(str(e)) from None
    rows = []
    for size in args.sizes:
        try:
            r, c = (int(x) for x in size.lower().split("x"))
            topo = build("equimesh", r, c)
        except ValueError:
            raise UsageError(f"--sizes takes RxC sizes such as 4x4 (got {size!r})") from None
        sched = synthesize(topo, args.chunks, "allgather")
        image = compile_schedule(sched, args.chunk_flits, topo)
        res = simulate(image, progress=Progress(f"amaranth {topo.name}", LONG_RUN // topo.nodes))
        rows.append((topo.name, "amaranth", res.cycles, res.sim_seconds, 0.0, res.bit_exact, "all"))
        if not args.no_icarus:
            # Reading every flit back through the host port takes a cycle and three cocotb
            # triggers per flit; the bench checks two nodes (the tests check every node).
            check = {0, topo.nodes - 1}
            with tempfile.TemporaryDirectory() as tmp:
                v = run(image, tmp, "icarus", check_nodes=check)
            ok = v.bit_exact and v.busy == (image.link_transfers * image.chunk_flits).tolist()
            rows.append((topo.name, "icarus", v.cycles, v.run_seconds, v.build_seconds, ok,
                         "nodes " + ", ".join(map(str, sorted(check)))))
    lines = [f"# equimesh bench-rtl ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
             f"{platform.python_implementation()} {platform.python_version()}): "
             f"EquiMesh AllGather, K={args.chunks}, {args.chunk_flits} flits/chunk", "",
             "| network | backend | cycles | run s | cycles/s | router-cycles/s | build s | bit-exact | memory checked |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for name, backend, cycles, secs, build_s, ok, checked in rows:
        nodes = int(name.split()[0].split("x")[0]) * int(name.split()[0].split("x")[1])
        lines.append(f"| {name} | {backend} | {cycles} | {secs:.2f} | {cycles / secs:.0f} | {cycles * nodes / secs:.0f} "
                     f"| {build_s:.1f} | {'yes' if ok else 'NO'} | {checked} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0 if all(r[5] for r in rows) else 1


def register_bench(sub) -> None:
    p = sub.add_parser("bench-rtl", help="benchmark: simulated cycles/s and router-cycles/s, Amaranth simulator and Icarus")
    p.add_argument("--sizes", nargs="+", default=["4x4", "8x8"], help="EquiMesh sizes (default 4x4 8x8)")
    p.add_argument("--chunks", type=int, default=4, help="chunks per shard K (default 4)")
    p.add_argument("--chunk-flits", type=int, default=16, help="flits per chunk F (default 16)")
    p.add_argument("--no-icarus", action="store_true", help="only the Amaranth simulator")
    p.add_argument("--out", default="bench/rtl.md", help="save the table here (default bench/rtl.md)")
    p.set_defaults(func=cmd_bench_rtl)
