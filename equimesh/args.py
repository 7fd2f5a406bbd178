"""Argument helpers shared by command modules (a command module never imports another one):
the ranges of sizes and counts, the collective's run arguments and the schedule image they name."""

from __future__ import annotations

import argparse
from pathlib import Path

from .errors import InputError, UsageError, writing
from .rtl.packet import MAX_PAYLOAD_FLITS
from .rtl.rom import MAX_CHUNK_FLITS, RomError, compile_schedule
from .schedules import schedule as schedfile
from .schedules.routing import ALGORITHMS, RoutingError, forwarding_table
from .schedules.routing import load as load_table
from .schedules.synth import synthesize
from .schedules.topology import KINDS, MAX_SIDE, TopologyError, build, parse_ring_dirs, parse_sizes

__all__ = [
    "CHUNKS",
    "CHUNK_FLITS",
    "COLLECTIVES",
    "PAYLOAD_FLITS",
    "SIDE",
    "THREADS",
    "add_pipeline_arg",
    "add_run_args",
    "add_topology_args",
    "count",
    "count_list",
    "items",
    "load_image",
    "seconds",
    "size_list",
    "routing_table",
    "table_from_args",
    "topology_from_args",
    "writable",
]

COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall")


def count(lo: int, hi: int):
    """An argparse ``type``: an integer in ``lo..hi``; anything else is the parser's one-line error
    ("argument --chunks: must be 1..16777216 (got 0)"), never a value that later exhausts memory.

    Parameters
    ----------
    lo, hi : int
        The smallest and largest value accepted (both included).

    Returns
    -------
    callable
        ``text -> int``, raising :class:`argparse.ArgumentTypeError` outside ``lo..hi``.
    """

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be {lo}..{hi} (got {value})")
        return value

    return integer


def seconds(text: str) -> float:
    """An argparse ``type``: a time limit in seconds, finite and > 0; anything else is the parser's one-line error.

    Parameters
    ----------
    text : str
        The option's value as typed.

    Returns
    -------
    float
        The limit in seconds.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0 seconds (got {text})")
    return value


def writable(path: str | Path) -> None:
    """Make ``path``'s folder, or raise one InputError line, before any long work that ends by writing it.

    Parameters
    ----------
    path : str or pathlib.Path
        The file the command will write.
    """
    with writing(path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def items(text: str, option: str) -> list[str]:
    """The comma-separated items of ``option``'s value, stripped; an empty item is an error, never dropped.

    Parameters
    ----------
    text : str
        The option's value.
    option : str
        The option's name, for the error line (``"--kinds"``).

    Returns
    -------
    list of str
        The items in order.
    """
    parts = [t.strip() for t in text.split(",")]
    if not all(parts):
        raise UsageError(f"{option} has an empty item (got {text!r})")
    return parts


def count_list(text: str, option: str, lo: int = 1, hi: int = schedfile.MAX_CHUNKS) -> list[int]:
    """A comma-separated list of integers in ``lo..hi`` (``--chunks 1,4``).

    Parameters
    ----------
    text : str
        The option's value.
    option : str
        The option's name, for the error line.
    lo, hi : int
        The range of each item (both included); by default 1 .. the chunks a schedule file may declare.

    Returns
    -------
    list of int
        The items in order.
    """
    convert = count(lo, hi)
    try:
        return [convert(t) for t in items(text, option)]
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"{option}: {e}") from None


def size_list(text: str, option: str = "--sizes") -> list[tuple[int, int]]:
    """A comma-separated list of RxC sizes, each side 2..MAX_SIDE (``--sizes 4x4,8x8``; :func:`parse_sizes`).

    Parameters
    ----------
    text : str
        The option's value.
    option : str
        The option's name, for the error line.

    Returns
    -------
    list of tuple of int
        ``(rows, cols)`` per item, in order.
    """
    try:
        return parse_sizes(",".join(items(text, option)), option)
    except TopologyError as e:
        raise UsageError(str(e)) from None


SIDE = count(2, MAX_SIDE)  # --rows, --cols: a topology side
CHUNKS = count(1, schedfile.MAX_CHUNKS)  # --chunks: K, as in a schedule file
CHUNK_FLITS = count(1, MAX_CHUNK_FLITS)  # --chunk-flits: F
PAYLOAD_FLITS = count(1, MAX_PAYLOAD_FLITS)  # --payload-flits: a packet's payload
_THREAD_COUNT = count(1, MAX_SIDE * MAX_SIDE)


def THREADS(text: str) -> int | str:  # noqa: N802 (an argparse type, named as the others)
    """An argparse ``type`` for ``--threads``: ``auto``, or a count of at least one (at most one per node).

    Parameters
    ----------
    text : str
        The option's value.

    Returns
    -------
    int or str
        The count, or ``"auto"``.
    """
    return "auto" if text == "auto" else _THREAD_COUNT(text)


def add_topology_args(p) -> None:
    """``--kind``, ``--rows``, ``--cols`` and ``--ring-dirs``: the topology of seed 000 Section III
    (Algorithm 1's edge rings for the EquiMesh kinds) that a command builds.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    p.add_argument("--kind", default="equimesh", help=f"topology kind: {', '.join(KINDS)} (default equimesh)")
    p.add_argument("--rows", type=SIDE, default=4, help=f"mesh rows R, 2..{MAX_SIDE} (default 4)")
    p.add_argument("--cols", type=SIDE, default=4, help=f"mesh columns C, 2..{MAX_SIDE} (default 4)")
    p.add_argument(
        "--ring-dirs",
        default=None,
        help="EquiMesh ring directions (Algorithm 1's anticlockwise flag per edge): 'default' (cccc, "
        "or at a few sizes without a Hamiltonian decomposition the choice with the shortest K=4 "
        "AllGather, schedules/data/ring_dirs.json), or four letters a/c for top,bottom,left,right; "
        "`schedule` also takes 'auto' (search all 16 now)",
    )


def topology_from_args(args, ring_dirs: str | None = None):
    """The topology named by :func:`add_topology_args`'s options; a bad kind, size or ring-direction
    string is one :class:`UsageError` line.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options with ``kind``, ``rows``, ``cols`` and ``ring_dirs``.
    ring_dirs : str, optional
        Ring directions that override ``args.ring_dirs`` (``"default"``, ``"auto"`` or four letters a/c).

    Returns
    -------
    Topology
        The built topology.
    """
    try:
        return build(
            args.kind,
            args.rows,
            args.cols,
            ring_dirs=parse_ring_dirs(ring_dirs if ring_dirs is not None else args.ring_dirs),
        )
    except TopologyError as e:
        raise UsageError(str(e)) from None


def load_image(args):
    """Topology, schedule (synthesized or --schedule FILE) and its compiled ROM image.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed :func:`add_run_args` options, and ``schedule`` (a file, or None to synthesize one).

    Returns
    -------
    tuple
        ``(topology, schedule, image)``: the :class:`Topology`, the :class:`Schedule` and its
        :class:`NetworkImage` for ``args.chunk_flits`` flits per chunk.
    """
    topo = topology_from_args(args)
    if getattr(args, "schedule", None):
        try:
            sched = schedfile.load(args.schedule)
        except schedfile.ScheduleFileError as e:
            raise InputError(str(e)) from None
        if sched.overlapped:
            raise InputError(
                f"{args.schedule}: an overlapped AllReduce (format version 2) cannot run on the RTL: "
                "the schedule tables run ReduceScatter and AllGather as phases"
            )
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
    """``--pipeline``: the routers' pipeline depth (rtl/router.py; docs/rtl.md "Timing").

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    from .rtl.timing import DEFAULT_PIPELINE, PIPELINES

    p.add_argument(
        "--pipeline",
        type=int,
        choices=PIPELINES,
        default=DEFAULT_PIPELINE,
        help=f"router pipeline depth: 0 = memory reads and relay decisions in the switch's cycle, "
        f"1 = registered table, lane, packet route and grant (clock up; schedules take "
        f"steps x max(F, 4) + 5 cycles, packets 4 more cycles per hop), 2 = also the lane writes "
        f"registered (for large lanes; steps x max(F, 5) + 6 cycles); default {DEFAULT_PIPELINE}",
    )


def add_run_args(p, collective_default: str | None) -> None:
    """The topology options, and a collective's run: ``--chunks`` K (chunks per shard), ``--chunk-flits``
    F (flits per chunk) and ``--collective`` (seed 000 Section III-A).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    collective_default : str or None
        ``--collective``'s default; None when a ``--schedule`` file may name it instead.
    """
    add_topology_args(p)
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunks per shard K >= 1 (default 4)")
    p.add_argument(
        "--chunk-flits", type=CHUNK_FLITS, default=16, help=f"flits per chunk F, 1..{MAX_CHUNK_FLITS} (default 16)"
    )
    p.add_argument(
        "--collective", choices=COLLECTIVES, default=collective_default, help="collective to run (default allgather)"
    )


def routing_table(topo, algorithm: str = "shortcut"):
    """:func:`~equimesh.schedules.routing.forwarding_table`, its ports cached (``EQUIMESH_CACHE/routing``,
    keyed by the topology, the algorithm and the source of the routing and topology modules): a 32x32
    shortcut table takes 4-5 s to build and 1.4 s to read and check. A cached table is checked like a
    table file (shape, loops, deadlock freedom); one that fails is built again.

    Parameters
    ----------
    topo : Topology
        The network to route.
    algorithm : str
        One of :data:`~equimesh.schedules.routing.ALGORITHMS`.

    Returns
    -------
    ForwardingTable
        The table.

    Raises
    ------
    RoutingError
        As :func:`~equimesh.schedules.routing.forwarding_table`.
    """
    import hashlib
    import inspect
    import json

    from .rtl.cache import cache_root, json_record
    from .schedules import routing, topology
    from .schedules.routing import ForwardingTable, check_deadlock_free

    made = []

    def make() -> dict:
        made.append(forwarding_table(topo, algorithm))
        return {"algorithm": made[0].algorithm, "ports": made[0].ports}

    text = json.dumps([topo.to_json(), algorithm]) + inspect.getsource(routing) + inspect.getsource(topology)
    path = cache_root() / "routing" / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
    rec = json_record(path, ("algorithm", "ports"), make)
    if made:
        return made[0]
    try:
        t = ForwardingTable(topo, [[str(p) for p in row] for row in rec["ports"]], str(rec["algorithm"]))
        check_deadlock_free(t)
        return t
    except (RoutingError, TypeError, IndexError, KeyError):
        path.unlink(missing_ok=True)
        return forwarding_table(topo, algorithm)


def table_from_args(args, topo):
    """``--routing``: an algorithm name, or a table file written by ``equimesh routing --out``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options with ``routing``.
    topo : Topology
        The topology the table must route.

    Returns
    -------
    ForwardingTable
        The forwarding table; a file for another topology is one :class:`InputError` line.
    """
    if args.routing in ALGORITHMS:
        try:
            return routing_table(topo, args.routing)
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
