"""Argument helpers shared by command modules (a command module never imports another one):
the collective's run arguments and the schedule image they name."""

from __future__ import annotations

from .errors import InputError, UsageError
from .rtl.rom import RomError, compile_schedule
from .schedules import schedule as schedfile
from .schedules.routing import ALGORITHMS, RoutingError, forwarding_table
from .schedules.routing import load as load_table
from .schedules.synth import synthesize
from .schedules.topology import KINDS, TopologyError, build, parse_ring_dirs

COLLECTIVES = ("allgather", "reducescatter", "allreduce")


def add_topology_args(p) -> None:
    p.add_argument("--kind", default="equimesh", help=f"topology kind: {', '.join(KINDS)} (default equimesh)")
    p.add_argument("--rows", type=int, default=4, help="mesh rows R >= 2 (default 4)")
    p.add_argument("--cols", type=int, default=4, help="mesh columns C >= 2 (default 4)")
    p.add_argument("--ring-dirs", default=None,
                   help="EquiMesh ring directions (Algorithm 1's anticlockwise flag per edge): 'default' (cccc, "
                        "or at a few sizes without a Hamiltonian decomposition the choice with the shortest K=4 "
                        "AllGather, schedules/data/ring_dirs.json), or four letters a/c for top,bottom,left,right; "
                        "`schedule` also takes 'auto' (search all 16 now)")


def topology_from_args(args, ring_dirs: str | None = None):
    try:
        return build(args.kind, args.rows, args.cols,
                     ring_dirs=parse_ring_dirs(ring_dirs if ring_dirs is not None else args.ring_dirs))
    except TopologyError as e:
        raise UsageError(str(e)) from None


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
        if sched.overlapped:
            raise InputError(f"{args.schedule}: an overlapped AllReduce (format version 2) cannot run on the RTL: "
                             "the schedule tables run ReduceScatter and AllGather as phases")
        if args.collective is not None and args.collective != sched.collective:
            raise InputError(f"{args.schedule}: the schedule is {sched.collective}, not {args.collective}")
    else:
        sched = synthesize(topo, args.chunks, args.collective or "allgather")
    try:
        image = compile_schedule(sched, args.chunk_flits, topo)
    except RomError as e:
        raise InputError(f"{getattr(args, 'schedule', None) or 'schedule'}: {e}") from None
    return topo, sched, image


def add_pipeline_arg(p) -> None:
    """``--pipeline``: the routers' pipeline depth (rtl/router.py; docs/rtl.md "Timing")."""
    from .rtl.rom import DEFAULT_PIPELINE, PIPELINES

    p.add_argument("--pipeline", type=int, choices=PIPELINES, default=DEFAULT_PIPELINE,
                   help=f"router pipeline depth: 0 = memory reads and relay decisions in the switch's cycle, "
                        f"1 = registered table, lane, packet route and grant (clock up; schedules take "
                        f"steps x max(F, 4) + 5 cycles, packets 4 more cycles per hop), 2 = also the lane writes "
                        f"registered (for large lanes; steps x max(F, 5) + 6 cycles); default {DEFAULT_PIPELINE}")


def add_run_args(p, collective_default: str | None) -> None:
    add_topology_args(p)
    p.add_argument("--chunks", type=int, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument("--chunk-flits", type=int, default=16, help="flits per chunk F >= 1 (default 16)")
    p.add_argument("--collective", choices=COLLECTIVES, default=collective_default,
                   help="collective to run (default allgather)")


def table_from_args(args, topo):
    """``--routing``: an algorithm name, or a table file written by ``equimesh routing --out``."""
    if args.routing in ALGORITHMS:
        try:
            return forwarding_table(topo, args.routing)
        except RoutingError as e:
            raise UsageError(str(e)) from None
    try:
        t = load_table(args.routing)
    except RoutingError as e:
        raise InputError(str(e)) from None
    if t.topology.to_json() != topo.to_json():
        differ = "; their links differ (ring directions)" if t.topology.name == topo.name else ""
        raise InputError(f"{args.routing}: the table is for the {t.topology.name}, not the {topo.name}{differ}")
    return t
