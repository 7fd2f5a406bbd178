"""Argument helpers shared by command modules (a command module never imports another one):
the collective's run arguments and the schedule image they name."""

from __future__ import annotations

from .commands import add_topology_args, topology_from_args
from .errors import InputError, UsageError
from .rtl.rom import RomError, compile_schedule
from .schedules import schedule as schedfile
from .schedules.synth import synthesize

COLLECTIVES = ("allgather", "reducescatter", "allreduce")


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


def add_run_args(p, collective_default: str | None) -> None:
    add_topology_args(p)
    p.add_argument("--chunks", type=int, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument("--chunk-flits", type=int, default=16, help="flits per chunk F >= 1 (default 16)")
    p.add_argument("--collective", choices=COLLECTIVES, default=collective_default,
                   help="collective to run (default allgather)")
