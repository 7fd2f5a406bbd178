"""``equimesh search ...``: the offline searches that build ``schedules/data/`` (CP-SAT; minutes to hours).

Each subcommand parses its options and calls one function of :mod:`equimesh.schedules.search`; the
files it writes are read at run time with no solver (``docs/schedules.md``).
"""

from __future__ import annotations

import time
from pathlib import Path

from .args import count, seconds, writable
from .errors import InputError, UsageError
from .schedules.methods.hamiltonian import PERIOD, TILES
from .schedules.methods.library import LIBRARY
from .schedules.methods.split import SPLITS, TILE_SIDES, tail_keys
from .schedules.schedule import ScheduleFileError
from .schedules.topology import MAX_SIDE, RING_DIRS_TABLE, TopologyError, build, parse_ring_dirs, parse_sizes

__all__ = ["register"]


def _log(line: str) -> None:
    print(line, flush=True)


def _sizes(text: str, option: str = "--sizes") -> list[tuple[int, int]]:
    try:
        return parse_sizes(text, option)
    except TopologyError as e:
        raise UsageError(str(e)) from None


def cmd_library(args) -> int:
    from .schedules.search import library

    sizes = _sizes(args.sizes)
    try:
        dirs = parse_ring_dirs(args.ring_dirs)
    except TopologyError as e:
        raise UsageError(str(e)) from None
    writable(args.out)
    try:
        if args.add:
            library.add_files(args.add, args.out, _log)
            return 0
    except (ScheduleFileError, library.LibraryError) as e:
        raise InputError(str(e)) from None
    library.search(sizes, dirs, args.method, args.seeds, args.time_limit, args.out, _log)
    return 0


def cmd_split(args) -> int:
    from .schedules.search import split

    sizes, tiles = _sizes(args.sizes), _sizes(args.tiles, "--tiles")
    try:
        tails = tail_keys(args.tails)
        split.check_tiles(tiles, args.period)
    except TopologyError as e:
        raise UsageError(str(e)) from None
    writable(args.out)
    split.search(sizes, tails, tiles, args.period, args.time_limit, args.out, _log)
    return 0


def cmd_ringdirs(args) -> int:
    from .schedules.search import ringdirs

    sizes = _sizes(args.sizes) if args.sizes is not None else None
    writable(args.out)
    ringdirs.search(sizes, args.max_side, args.out, _log)
    return 0


def cmd_hamiltonian(args) -> int:
    from .schedules.search import hamiltonian

    first = _sizes(args.first, "--first")
    writable(args.out)
    hamiltonian.search(first, args.max_side, args.time_limit, args.seeds, args.retry_open, args.out, _log)
    return 0


def cmd_forwarding(args) -> int:
    from .schedules.search.forwarding import check, solve

    try:
        dirs = parse_ring_dirs(args.ring_dirs)
    except TopologyError as e:
        raise UsageError(str(e)) from None
    for r, c in _sizes(args.sizes):
        topo = build("equimesh", r, c, ring_dirs=dirs)
        t0 = time.perf_counter()
        status, walk = solve(topo, args.time_limit)
        if walk is not None:
            check(topo, walk)
        _log(f"{r}x{c}: {status} ({time.perf_counter() - t0:.1f} s)")
    return 0


def register(sub) -> None:
    """Add ``search`` and its subcommands to the ``equimesh`` parser.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "search",
        help="offline searches that build schedules/data/ (CP-SAT): library, split, ringdirs, hamiltonian, forwarding",
    )
    s = p.add_subparsers(dest="search", required=True, parser_class=type(p))

    q = s.add_parser(
        "library",
        help="solve lane-rule K = 4 AllGathers (EquiMesh and mirror) and store those at the "
        "bound or better than the best known (data/lane_schedules.json)",
    )
    q.add_argument("--sizes", default="2x3,3x4,2x5,3x5,4x5", help="comma-separated RxC")
    q.add_argument("--ring-dirs", default="default", help="default: each size's default directions")
    q.add_argument(
        "--method",
        choices=("cpsat", "repair", "at-bound", "partial", "tail"),
        default="cpsat",
        help="cpsat: the whole exact model; repair: XTree and CP-SAT windows; at-bound: at the bound with "
        "the lane rule soft and the schedule symmetric; partial: two chunk classes ring-pipelined, two "
        "solved on the links left; tail: re-solve a stored schedule's last steps (default cpsat)",
    )
    q.add_argument(
        "--seeds", type=count(1, 1000), default=4, help="tie-break orders (repair) or pairs of cycles (partial)"
    )
    q.add_argument("--time-limit", type=seconds, default=120.0, help="CP-SAT seconds per topology")
    q.add_argument(
        "--add",
        nargs="*",
        default=[],
        type=Path,
        help="schedule files (K = 4 lane-rule AllGathers at the bound) to store instead of solving",
    )
    q.add_argument("--out", type=Path, default=LIBRARY)
    q.set_defaults(func=cmd_library)

    q = s.add_parser("split", help="find splits, their tails and split tiles (data/splits.json)")
    q.add_argument("--sizes", default="", help="comma-separated RxC")
    q.add_argument(
        "--tiles",
        default="",
        help="comma-separated RxC, one side even and the other 13 or 15 (--period 4) or 9 (--period 2)",
    )
    q.add_argument(
        "--period",
        type=int,
        choices=sorted(TILE_SIDES),
        default=PERIOD,
        help="rows (columns) in the band of the tiles searched",
    )
    q.add_argument(
        "--tails",
        default="",
        help="comma-separated RxC, or 'all' (every stored split and every size up "
        "to 16x16 a tile covers): re-solve the split schedule's last steps",
    )
    q.add_argument("--time-limit", type=seconds, default=300.0, help="seconds per topology")
    q.add_argument("--out", type=Path, default=SPLITS)
    q.set_defaults(func=cmd_split)

    q = s.add_parser(
        "ringdirs",
        help="the ring directions with the shortest K = 4 AllGather per size "
        "(data/ring_dirs.json; about 20 minutes for every size up to 16)",
    )
    q.add_argument("--max-side", type=count(2, MAX_SIDE), default=16)
    q.add_argument("--sizes", help="only these sizes (RxC,...), kept with the others already in --out")
    q.add_argument("--out", type=Path, default=RING_DIRS_TABLE)
    q.set_defaults(func=cmd_ringdirs)

    q = s.add_parser("hamiltonian", help="tiles of Hamiltonian decompositions (data/hamiltonian_tiles.json)")
    q.add_argument("--time-limit", type=seconds, default=40.0, help="CP-SAT seconds per seed")
    q.add_argument("--seeds", type=count(1, 1000), default=3, help="CP-SAT seeds per tile")
    q.add_argument("--max-side", type=count(2, MAX_SIDE), default=16)
    q.add_argument("--first", default="12x12", help="comma-separated tile sizes to solve first")
    q.add_argument("--out", type=Path, default=TILES)
    q.add_argument("--retry-open", action="store_true", help="also retry the sizes listed under 'open'")
    q.set_defaults(func=cmd_hamiltonian)

    q = s.add_parser(
        "forwarding", help="decide forwarding-only AllGathers at the bound (an experiment; writes nothing)"
    )
    q.add_argument("--sizes", required=True, help="RxC,... (EquiMesh)")
    q.add_argument("--ring-dirs", default="default", help="ring directions (default: each size's default)")
    q.add_argument("--time-limit", type=seconds, default=60.0)
    q.set_defaults(func=cmd_forwarding)
