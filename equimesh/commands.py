"""Subcommands for the foundation: ``topology``, ``schedule``, ``verify``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .args import CHUNKS, SIDE, add_topology_args, count_list, items, size_list, topology_from_args
from .errors import InputError, UsageError, writing
from .progress import Progress
from .schedules import schedule as schedfile
from .schedules.alltoall import skewed_counts
from .schedules.schedule import lower_bound, schedule_bound
from .schedules.storage import check_storage
from .schedules.synth import ALGORITHMS, SynthesisError, synthesize
from .schedules.topology import KINDS, RING_DIRS_CHOICES, build, format_ring_dirs
from .schedules.verify import ScheduleInvalid, verify

__all__ = [
    "BENCH_ALGORITHMS",
    "BENCH_KINDS",
    "BENCH_SIZES",
    "LANE_AWARE",
    "cmd_bench_optimal",
    "cmd_bench_schedules",
    "cmd_demo",
    "cmd_schedule",
    "cmd_topology",
    "cmd_verify",
    "register",
    "register_bench",
    "register_bench_optimal",
    "register_demo",
]


def cmd_topology(args) -> int:
    """``equimesh topology``: build a topology (seed 000 Section III, Algorithm 1 for the EquiMesh kinds) and
    print its nodes, links, diameter, degrees, routers by port count and crossbar crosspoints (sum of P^2).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh topology`` (:func:`register`).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    t = topology_from_args(args)
    s = t.summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"{t.name}: {s['nodes']} nodes, {s['links']} links, diameter {s['diameter']}")
    print(
        f"  in-degree {s['in_degree']['min']}..{s['in_degree']['max']}, out-degree {s['out_degree']['min']}..{s['out_degree']['max']}"
    )
    print("  routers by port count (incl. L): " + ", ".join(f"{p}-port x{c}" for p, c in s["routers_by_ports"].items()))
    print(f"  crossbar crosspoints (sum P^2): {s['crosspoints']}")
    if "ring_dirs" in s:
        print(f"  ring directions (top,bottom,left,right; a=anticlockwise): {s['ring_dirs']}")
    return 0


def _skew(text: str, nodes: int) -> tuple[int, int]:
    """``--skew HOT:FACTOR``: HOT hot destinations (1..N) receiving FACTOR (>= 1) times the chunks."""
    try:
        hot, factor = (int(v) for v in text.split(":"))
    except ValueError:
        hot = factor = 0
    if not (1 <= hot <= nodes and 1 <= factor <= 1024):
        raise UsageError(f"--skew takes HOT:FACTOR with 1 <= HOT <= {nodes} and 1 <= FACTOR <= 1024 (got {text!r})")
    return hot, factor


def _synthesize(args, t, progress):
    if args.overlap:
        from .schedules.synth import overlap

        return overlap(t, args.chunks, "allreduce", args.algorithm)
    chunks, counts = args.chunks, None
    if args.skew:
        hot, factor = _skew(args.skew, t.nodes)
        chunks, counts = args.chunks * factor, skewed_counts(t.nodes, t.cols, args.chunks, hot, factor)
    try:
        return synthesize(
            t,
            chunks,
            args.collective,
            args.algorithm,
            lanes=args.storage == "lanes",
            time_limit=args.time_limit,
            progress=progress,
            counts=counts,
        )
    except SynthesisError as e:
        raise InputError(str(e)) from None


# the methods that honour the node storage lanes (their default --storage is lanes)
LANE_AWARE = ("auto", "ring", "split", "xtree", "xtree-matching", "xtree-paper", "mirrorxtree", "optimal", "cpsat")


def cmd_schedule(args) -> int:
    """``equimesh schedule``: synthesize a collective schedule (:func:`synthesize`; XTree is seed 000
    Algorithm 2, MirrorXTree Algorithm 3), verify it, check the lane rule when ``--storage lanes``, and print its
    steps against the lower bound (Section III-A). ``--ring-dirs auto`` tries the 16 ring directions and keeps
    the shortest; ``--out`` writes the schedule file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh schedule`` (:func:`register`).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    if not 0 < args.time_limit < float("inf"):
        raise UsageError(f"--time-limit must be > 0 (got {args.time_limit})")
    if args.overlap:
        from .schedules.methods.overlap import TREE_ALGORITHMS

        if args.algorithm == "auto":  # the overlapped schedule reschedules MirrorXTree's trees by default
            args.algorithm = "mirrorxtree"
        if args.collective != "allreduce":
            raise UsageError("--overlap applies to --collective allreduce only")
        if args.algorithm not in TREE_ALGORITHMS:
            raise UsageError(f"--overlap reschedules the trees of {', '.join(TREE_ALGORITHMS)}, not {args.algorithm}")
        if args.storage == "lanes":
            raise UsageError(
                "--overlap schedules do not model the storage lanes (the RTL cannot run them yet); use --storage none"
            )
        args.storage = "none"
    if args.skew and args.collective != "alltoall":
        raise UsageError("--skew applies to --collective alltoall only")
    if args.storage is None and args.collective == "alltoall":
        args.storage = "none"
    if args.storage is None:
        args.storage = "lanes" if args.algorithm in LANE_AWARE else "none"
    auto = args.ring_dirs == "auto"
    if auto and args.kind not in ("equimesh", "mirror-equimesh"):
        raise UsageError("--ring-dirs auto applies to equimesh and mirror-equimesh only")
    choices = RING_DIRS_CHOICES if auto else [args.ring_dirs]
    progress = Progress(f"{args.algorithm} {args.kind} {args.rows}x{args.cols}")
    t0 = time.perf_counter()
    sched = None
    for dirs in choices:  # cccc first; a schedule at the bound ends the search
        t = topology_from_args(args, dirs)
        try:
            cand = _synthesize(args, t, progress)
        except InputError:
            if dirs == choices[-1] and sched is None:
                raise
            continue
        if sched is None or cand.num_steps < sched.num_steps:
            sched = cand
        if sched.num_steps == lower_bound(t, args.chunks, args.collective):
            break
    seconds = time.perf_counter() - t0
    progress.close()
    t = sched.topology
    verify(sched)
    if args.storage == "lanes":
        check_storage(sched)
    phases = []
    for ph in [] if sched.overlapped else sched.phases:
        b = lower_bound(t, args.chunks, ph.collective)
        phases.append(
            {"collective": ph.collective, "steps": ph.num_steps, "bound": b, "efficiency": round(b / ph.num_steps, 4)}
        )
    bound = schedule_bound(sched)
    out = {
        "topology": t.name,
        "kind": t.kind,
        "rows": t.rows,
        "cols": t.cols,
        "chunks": sched.chunks,
        "collective": args.collective,
        "algorithm": args.algorithm,
        "method": sched.meta["method"],
        "storage": args.storage,
        "steps": sched.num_steps,
        "bound": bound,
        "efficiency": round(bound / sched.num_steps, 4),
        "seconds": round(seconds, 3),
        "overlapped": sched.overlapped,
    }
    if t.ring_dirs is not None:
        out["ring_dirs"] = format_ring_dirs(t.ring_dirs)
    for key in ("proven_optimal", "proven_lower"):
        if key in sched.meta:
            out[key] = sched.meta[key]
    if len(phases) > 1:
        out["phases"] = phases
    if args.out:
        with writing(args.out):
            sched.save(args.out)
        out["out"] = args.out
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        skew = f" (skew {args.skew})" if args.skew else ""
        print(
            f"{args.algorithm} ({out['method']}) {args.collective} on {t.name}, K={sched.chunks}{skew}: {out['steps']} steps, "
            f"bound {bound}, efficiency {out['efficiency']:.3f}, {seconds:.2f} s"
        )
        if "proven_optimal" in out:
            print(
                "proven optimal"
                if out["proven_optimal"]
                else f"not proven optimal: the time limit was hit; proven lower limit {out['proven_lower']} steps"
            )
    return 0


def cmd_verify(args) -> int:
    """``equimesh verify``: load a schedule file and check it against its topology and the collective's
    semantics (:func:`verify`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh verify`` (``file``: the schedule file).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    try:
        sched = schedfile.load(args.file)
        verify(sched)
    except (schedfile.ScheduleFileError, ScheduleInvalid) as e:
        raise InputError(str(e)) from None
    print(
        f"{args.file}: valid {sched.collective} ({sched.algorithm}) on {sched.topology.name}, "
        f"K={sched.chunks}, {sched.num_steps} steps"
    )
    return 0


def register(sub, bench) -> None:
    """Add ``topology``, ``schedule``, ``verify`` and ``demo``, and the ``schedules`` and ``optimal`` benchmarks.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    p = sub.add_parser("topology", help="build a topology and report degrees, ports, crosspoints, diameter")
    add_topology_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(func=cmd_topology)

    p = sub.add_parser("schedule", help="synthesize a collective schedule")
    add_topology_args(p)
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument(
        "--algorithm",
        default="auto",
        choices=ALGORITHMS,
        help="auto (default: the best valid method, named in the output as 'method'), ring "
        "(ring-pipelined on 4 Hamiltonian cycles, EquiMesh, K = 4m), split (3 Hamiltonian cycles and a "
        "2-cycle, N - 1 (the bound) or N steps per 4 chunks, stored EquiMesh sizes), xtree-paper "
        "(Algorithm 2 as printed), xtree-matching (equimesh's variant of Algorithm 2; old name "
        "xtree), mirrorxtree (Algorithm 3 on xtree-matching), multitree, ring2d, "
        "optimal (exact ILP, small sizes)",
    )
    p.add_argument("--collective", default="allgather", choices=["allgather", "reducescatter", "allreduce", "alltoall"])
    p.add_argument(
        "--storage",
        default=None,
        choices=["lanes", "none"],
        help="lanes: honour the RTL node storage (one chunk per lane per step) so `equimesh simulate` "
        "can run it; none: links only. Default: lanes for auto, ring, xtree, mirrorxtree and optimal; "
        "none for the baselines, which do not model lanes",
    )
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds for --algorithm optimal (default 60)")
    p.add_argument(
        "--skew",
        default=None,
        metavar="HOT:FACTOR",
        help="AllToAll only: HOT destinations spread over the node ids (seed 003's hot experts) receive "
        "FACTOR x K chunks from every source, the others K (file key 'counts', docs/alltoall.md)",
    )
    p.add_argument(
        "--overlap",
        action="store_true",
        help="AllReduce only: overlap ReduceScatter and AllGather of different chunks in one step list "
        "(format version 2; schedules/methods/overlap.py); links only (--storage none)",
    )
    p.add_argument("--out", help="write the schedule JSON here")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.set_defaults(func=cmd_schedule)

    p = sub.add_parser("verify", help="check a schedule file against its topology and the collective's semantics")
    p.add_argument("file")
    p.set_defaults(func=cmd_verify)
    register_bench(bench)
    register_bench_optimal(bench)
    register_demo(sub)


BENCH_KINDS = ("mesh", "equimesh", "overflow", "torus")
BENCH_SIZES = ("4x4", "8x8", "5x11", "16x16", "32x32")


class _Table:
    """A Markdown table printed row by row as it is measured (benchmarks take a while)."""

    def __init__(self, title: str, columns: list[str], show: bool = True):
        self.show = show
        self.lines = [
            f"# {title} ({time.strftime('%Y-%m-%d')})",
            "",
            "| " + " | ".join(columns) + " |",
            "|" + "---|" * len(columns),
        ]
        self._print(self.lines)

    def _print(self, lines: list[str]) -> None:
        if self.show:
            print("\n".join(lines), flush=True)

    def row(self, *cells) -> None:
        line = "| " + " | ".join(str(c) for c in cells) + " |"
        self.lines.append(line)
        self._print([line])


def _save_table(lines: list[str], out: str | None) -> None:
    if out:
        with writing(out):
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text("\n".join(lines) + "\n")
        print(f"saved {out}", file=sys.stderr)


def cmd_bench_schedules(args) -> int:
    """Steps, bound, efficiency and synthesis seconds per algorithm across kinds and sizes (every schedule verified).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench schedules`` (:func:`register_bench`).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    sizes, chunks = size_list(args.sizes), count_list(args.chunks, "--chunks")
    kinds = items(args.kinds, "--kinds")
    for k in kinds:
        if k not in KINDS:
            raise UsageError(f"unknown topology kind {k!r}; expected one of {', '.join(KINDS)}")
    algos = items(args.algorithms, "--algorithms")
    for a in algos:
        if a not in BENCH_ALGORITHMS:
            raise UsageError(f"bench schedules runs {', '.join(BENCH_ALGORITHMS)} (got {a!r})")
    import os
    import platform

    title = (
        f"equimesh bench schedules: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {args.collective}"
    )
    table = _Table(
        title,
        ["topology", "size", "K", "algorithm", "method", "storage", "steps", "bound", "efficiency", "seconds"],
        show=not args.summary,
    )
    groups: dict[tuple, list[tuple[int, int, float]]] = {}
    for r, c in sizes:
        for kind in kinds:
            t = build(kind, r, c)
            for k in chunks:
                for a in algos:
                    lane_aware = a in ("auto", "ring", "xtree", "xtree-matching", "xtree-paper")
                    storages = ["none", "lanes"] if (lane_aware and args.lanes and r * c <= 256) else ["none"]
                    if a == "auto" and args.lanes:
                        storages = ["lanes"]
                    for st in storages:
                        t0 = time.perf_counter()
                        try:
                            s = synthesize(t, k, args.collective, a, lanes=st == "lanes")
                        except SynthesisError as e:
                            table.row(kind, f"{r}x{c}", k, a, "-", st, "-", "-", "-", str(e).split(";")[0])
                            continue
                        sec = time.perf_counter() - t0
                        verify(s)
                        if st == "lanes":
                            check_storage(s)
                        b = lower_bound(t, k, args.collective)
                        table.row(
                            kind,
                            f"{r}x{c}",
                            k,
                            a,
                            s.meta["method"],
                            st,
                            s.num_steps,
                            b,
                            f"{b / s.num_steps:.3f}",
                            f"{sec:.2f}",
                        )
                        groups.setdefault((kind, k, a, st), []).append((s.num_steps, b, sec))
    summary = _Table(
        f"{title}, summary of {len(sizes)} sizes",
        ["topology", "K", "algorithm", "storage", "sizes at the bound", "lowest efficiency", "slowest seconds"],
    )
    for (kind, k, a, st), runs in groups.items():
        summary.row(
            kind,
            k,
            a,
            st,
            f"{sum(steps == b for steps, b, _ in runs)}/{len(runs)}",
            f"{min(b / steps for steps, b, _ in runs):.3f}",
            f"{max(sec for _, _, sec in runs):.2f}",
        )
    _save_table((table.lines if not args.summary else []) + [""] + summary.lines, args.out)
    return 0


BENCH_ALGORITHMS = ("auto", "ring", "xtree", "xtree-matching", "xtree-paper", "multitree", "ring2d")


def register_bench(sub) -> None:
    """Add ``equimesh bench schedules`` (:func:`cmd_bench_schedules`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh bench`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser("schedules", help="steps, bound, efficiency and seconds of schedule synthesis")
    p.add_argument("--kinds", default=",".join(BENCH_KINDS))
    p.add_argument("--sizes", default=",".join(BENCH_SIZES), help="comma-separated RxC sizes")
    p.add_argument("--chunks", default="1,4", help="comma-separated K values")
    p.add_argument("--algorithms", default="xtree,multitree", help="comma-separated: " + ", ".join(BENCH_ALGORITHMS))
    p.add_argument("--collective", default="allgather", choices=["allgather", "reducescatter", "allreduce"])
    p.add_argument(
        "--summary",
        action="store_true",
        help="print and save only the summary per topology, K, algorithm and storage (for sweeps over many sizes)",
    )
    p.add_argument(
        "--lanes",
        action="store_true",
        help="also run the lane-rule schedules of auto, ring and xtree (sizes up to 256 nodes; "
        "auto then runs with lanes only)",
    )
    p.add_argument("--out", default="bench/schedules.md", help="save the table here (default bench/schedules.md)")
    p.set_defaults(func=cmd_bench_schedules)


def cmd_bench_optimal(args) -> int:
    """XTree against an exact solver: proven optimum (or the proven lower limit on a timeout) per size.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench optimal`` (:func:`register_bench_optimal`).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    from .schedules.methods.cpsat import exact
    from .schedules.methods.optimal import optimal
    from .schedules.methods.xtree import xtree

    sizes, chunks = size_list(args.sizes), count_list(args.chunks, "--chunks")
    if not 0 < args.time_limit < float("inf"):
        raise UsageError(f"--time-limit must be > 0 (got {args.time_limit})")
    lanes = args.storage == "lanes"
    table = _Table(
        f"equimesh bench optimal: {args.solver}, storage {args.storage}, time limit {args.time_limit:g} s per size",
        ["topology", "size", "K", "bound", "optimum", "XTree", "XTree gap", "solver seconds"],
    )
    for r, c in sizes:
        t = build(args.kind, r, c)
        for k in chunks:
            xs = xtree(t, k, lanes=lanes).num_steps
            if args.solver == "cpsat":
                # CP-SAT looks for fewer steps than XTree; infeasible there = XTree is optimal
                res = exact(t, k, xs - 1, lanes=lanes, time_limit=args.time_limit)
                best = res.steps if res.steps is not None else xs
                steps = best if best == res.lower else None
                low, sec = res.lower, res.seconds
            else:
                res = optimal(t, k, lanes=lanes, time_limit=args.time_limit)
                steps, low, sec = res.steps, res.infeasible_below, res.seconds
            opt = str(steps) if steps is not None else f">= {low} (timeout)"
            gap = str(xs - steps) if steps is not None else f"<= {xs - low}"
            table.row(args.kind, f"{r}x{c}", k, lower_bound(t, k, "allgather"), opt, xs, gap, f"{sec:.1f}")
    _save_table(table.lines, args.out)
    return 0


def register_bench_optimal(sub) -> None:
    """Add ``equimesh bench optimal`` (:func:`cmd_bench_optimal`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh bench`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser("optimal", help="XTree's steps against the exact solver's proven optimum")
    p.add_argument("--kind", default="equimesh", choices=KINDS)
    p.add_argument("--sizes", default="2x3,3x3,3x4,4x4,4x5,5x5")
    p.add_argument("--chunks", default="1")
    p.add_argument("--storage", default="none", choices=["none", "lanes"])
    p.add_argument(
        "--solver",
        default="highs",
        choices=["highs", "cpsat"],
        help="highs: the time-expanded ILP (optimal.py); cpsat: the CP-SAT model (cpsat.py)",
    )
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per size (default 120)")
    p.add_argument("--out", default="bench/optimal.md")
    p.set_defaults(func=cmd_bench_optimal)


def cmd_demo(args) -> int:
    """The main job's schedule part: the best valid schedule (auto) on the 4x4 EquiMesh, mesh and overflow mesh.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh demo`` (:func:`register_demo`).

    Returns
    -------
    int
        The exit status, 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    out = Path(args.out)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    k = args.chunks
    print(
        f"AllGather, ReduceScatter, AllReduce by the best valid method (auto), {args.rows}x{args.cols}, K={k}, "
        "every schedule verified (storage: lanes = executable by the RTL; none = links only)\n"
    )
    head = (
        f"{'topology':<10} {'routers (ports x count)':<24} {'xpoints':>7} {'links':>5} {'D':>3} "
        f"{'collective':<14} {'storage':<7} {'method':<7} {'steps':>5} {'bound':>5} {'eff':>6}"
    )
    print(head)
    print("-" * len(head))
    for kind in ("mesh", "equimesh", "overflow"):
        t = build(kind, args.rows, args.cols)
        s = t.summary()
        routers = " ".join(f"{p}x{c}" for p, c in s["routers_by_ports"].items())
        for coll in ("allgather", "reducescatter", "allreduce"):
            for storage in ("none", "lanes"):
                sched = synthesize(t, k, coll, lanes=storage == "lanes")
                verify(sched)
                if storage == "lanes":
                    check_storage(sched)
                    with writing(out):
                        sched.save(out / f"{kind}_{args.rows}x{args.cols}_{coll}_k{k}.json")
                b = lower_bound(t, k, coll)
                print(
                    f"{kind:<10} {routers:<24} {s['crosspoints']:>7} {s['links']:>5} {s['diameter']:>3} "
                    f"{coll:<14} {storage:<7} {sched.meta['method']:<7} {sched.num_steps:>5} {b:>5} {b / sched.num_steps:>6.3f}"
                )
    print(f"\nschedule files (lanes) written to {out}/")
    return 0


def register_demo(sub) -> None:
    """Add ``equimesh demo`` (:func:`cmd_demo`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "demo", help="synthesize and verify the best schedules on mesh, EquiMesh and overflow; print the table"
    )
    p.add_argument("--rows", type=SIDE, default=4)
    p.add_argument("--cols", type=SIDE, default=4)
    p.add_argument("--chunks", type=CHUNKS, default=4)
    p.add_argument("--out", default="schedules/demo", help="where the lane schedules are written")
    p.set_defaults(func=cmd_demo)
