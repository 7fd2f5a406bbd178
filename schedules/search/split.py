"""The offline search that fills ``schedules/data/splits.json`` (``equimesh search split``).

It finds splits (:mod:`..methods.split`) for the sizes given, EquiMesh and mirror with each size's
default ring directions, and stores those whose schedule (with its tail, if one is found) is shorter
than the best known (XTree, or stored); it solves and stores the tails asked for; and it finds split
tiles (ring directions ``cccc``) and stores those found, with tails up to 16 per side.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..methods.library import check, key, stored
from ..methods.split import (
    SPLITS,
    TILE_SIDES,
    K,
    construct_record,
    format_step,
    length,
    make_tile,
    parse_colours,
    parse_transfers,
    solve,
    solve_tail,
    stored_split,
    tile_key,
    tile_sizes,
)
from ..methods.xtree import xtree
from ..schedule import Phase, lower_bound
from ..topology import TopologyError, build, parse_ring_dirs

__all__ = ["check_tiles", "search"]


def _splits(topo_sizes, data: dict, time_limit: float, save, log) -> None:
    for r, c in topo_sizes:
        for kind in ("equimesh", "mirror-equimesh"):
            topo = build(kind, r, c)
            if any(rec["key"] == key(topo) for rec in data["splits"]):
                continue
            t0 = time.perf_counter()
            rec = solve(topo, time_limit)
            if rec is None:
                log(f"{key(topo)}: no split found ({time.perf_counter() - t0:.1f} s)")
                continue
            tail = (
                [parse_transfers(t) for t in rec.pop("tail")]
                if "tail" in rec  # two 2-cycles: found with it
                else solve_tail(topo, parse_colours(rec["colours"]), rec, time_limit)
            )
            steps = topo.nodes - 1 if tail is not None else length(topo, rec["pairs"])
            known = stored(topo, K)
            beat = min(xtree(topo, K, lanes=True).num_steps, known.num_steps if known is not None else np.inf)
            bound = lower_bound(topo, K, "allgather")
            log(f"{key(topo)}: split {steps} steps, bound {bound}, to beat {beat} ({time.perf_counter() - t0:.1f} s)")
            if steps < beat:
                data["splits"].append(rec)
                if tail is not None:
                    data.setdefault("tails", {})[key(topo)] = [format_step(t) for t in tail]
                save()


def _tails(keys: list[str], data: dict, time_limit: float, save, log) -> None:
    for name in keys:
        if name in data.setdefault("tails", {}):
            continue
        kind, size, dirs = name.split()
        topo = build(kind, *(int(v) for v in size.split("x")), ring_dirs=parse_ring_dirs(dirs))
        colour, rec = stored_split(topo)
        t0 = time.perf_counter()
        tail = solve_tail(topo, colour, rec, time_limit)
        log(f"{name}: {'tail found' if tail is not None else 'no tail found'} ({time.perf_counter() - t0:.1f} s)")
        if tail is not None:
            prefix = construct_record(topo, colour, rec, until=topo.nodes - len(tail) - 1)
            check(topo, Phase("allgather", prefix.steps + tail))
            data["tails"][name] = [format_step(t) for t in tail]
            save()


def check_tiles(tiles: list[tuple[int, int]], period: int) -> None:
    """Raise :class:`TopologyError` unless every tile has one side even and the other in ``TILE_SIDES[period]``.

    Parameters
    ----------
    tiles : list of tuple of int
        The tiles' ``(rows, cols)``.
    period : int
        The split's period, a key of ``TILE_SIDES``.

    Raises
    ------
    TopologyError
        For the first tile that does not fit, in one line.
    """
    for r, c in tiles:
        if (r + c) % 2 == 0 or (r if r % 2 else c) not in TILE_SIDES[period]:
            sides = " or ".join(map(str, TILE_SIDES[period]))
            raise TopologyError(f"tile {r}x{c} with period {period}: one side must be even and the other {sides}")


def _tiles(tiles: list[tuple[int, int]], period: int, data: dict, time_limit: float, save, log) -> None:
    check_tiles(tiles, period)
    for r, c in tiles:
        size = f"{r}x{c}"
        for kind in ("equimesh", "mirror-equimesh"):
            data.setdefault("tiles", [])
            if any((t["kind"], t["rows"], t["cols"]) == (kind, r, c) for t in data["tiles"]):
                continue
            t0 = time.perf_counter()
            known = next(
                (
                    t
                    for t in data["tiles"]
                    if kind == "mirror-equimesh" and (t["kind"], t["rows"], t["cols"]) == ("equimesh", r, c)
                ),
                None,
            )
            served = {other for t in data["tiles"] if t["kind"] == kind for other in t["sizes"]}
            served |= {
                other
                for other in tile_sizes(r, c, period)
                if any(rec["key"] == tile_key(kind, other) for rec in data["splits"])
            }
            rec = make_tile(
                kind, r, c, time_limit, known=known, tail_seconds=time_limit, period=period, skip=frozenset(served)
            )
            found = "sizes " + " ".join(rec["sizes"]) if rec else "none found"
            log(f"{kind} {size} tile: {found} ({time.perf_counter() - t0:.1f} s)")
            if rec is not None:
                for served_size, choice in rec["sizes"].items():
                    if "tail" in choice:
                        data.setdefault("tails", {})[tile_key(kind, served_size)] = choice.pop("tail")
                data["tiles"].append(rec)
                save()


def search(
    sizes: list[tuple[int, int]],
    tails: list[str],
    tiles: list[tuple[int, int]],
    period: int,
    time_limit: float = 300.0,
    out: Path = SPLITS,
    log: Callable[[str], None] = print,
) -> None:
    """Find splits, tails and tiles, and store what improves on the best known (module docstring).

    Parameters
    ----------
    sizes : list of (rows, cols)
        Sizes to find splits for.
    tails : list of str
        Library keys (``kind RxC dirs``) whose split schedule's last steps are re-solved one shorter.
    tiles : list of (rows, cols)
        Tile sizes: one side even, the other in ``TILE_SIDES[period]``.
    period : int
        Rows (columns) in the band of the tiles searched.
    time_limit : float
        CP-SAT seconds per topology.
    out : Path
        The splits file.
    log : callable
        Receives one line per topology.

    Raises
    ------
    TopologyError
        A tile size whose sides do not fit ``period``.
    """
    data = json.loads(out.read_text()) if out.exists() else {"format": "equimesh-splits", "splits": []}

    def save() -> None:
        out.write_text(json.dumps(data, indent=1) + "\n")

    _splits(sizes, data, time_limit, save, log)
    _tails(tails, data, time_limit, save, log)
    _tiles(tiles, period, data, time_limit, save, log)
