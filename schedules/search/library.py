"""The offline search that fills ``schedules/data/lane_schedules.json`` (``equimesh search library``).

Each size given is solved, for the EquiMesh and its mirror, as a lane-rule K = 4 AllGather by one of
the methods below, and a schedule is stored when it reaches the bound or beats XTree and what is
stored (best known). The run-time side, :mod:`..methods.library`, reads the file and checks every
schedule again; no solver runs at command time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..methods import cpsat, partial
from ..methods.library import BASE, LIBRARY, TAIL_WINDOWS, check, key, lookup
from ..methods.xtree import xtree
from ..schedule import Phase, load, lower_bound
from ..synth import synthesize
from ..topology import Topology, build

__all__ = ["METHODS", "LibraryError", "add_files", "search", "store"]

METHODS = ("cpsat", "repair", "at-bound", "partial", "tail")


class LibraryError(ValueError):
    """A schedule file that cannot be stored; the message is one line."""


def _open(out: Path) -> dict:
    return (
        json.loads(out.read_text())
        if out.exists()
        else {"format": "equimesh-lane-schedules", "chunks": BASE, "schedules": []}
    )


def _have(data: dict, topo: Topology) -> Phase | None:
    """The shortest schedule of ``topo`` stored in ``data`` so far, or None."""
    return lookup(topo, {rec["key"]: rec["steps"] for rec in data["schedules"]})


def store(data: dict, topo: Topology, phase: Phase, out: Path) -> None:
    """Check ``phase`` and store it under ``topo``'s key in ``data`` (written to ``out``), in place of a
    longer one stored there.

    Parameters
    ----------
    data : dict
        The library file's contents, updated in place.
    topo : Topology
        An EquiMesh or its mirror.
    phase : Phase
        A K = 4 lane-rule AllGather of ``topo``.
    out : Path
        The file to write.
    """
    check(topo, phase)
    data["schedules"] = [rec for rec in data["schedules"] if rec["key"] != key(topo)]
    data["schedules"].append(
        {"key": key(topo), "steps": [np.asarray(st, dtype=np.int64).reshape(-1, 3).tolist() for st in phase.steps]}
    )
    out.write_text(json.dumps(data, separators=(",", ":")) + "\n")


def add_files(paths: list[Path], out: Path = LIBRARY, log: Callable[[str], None] = print) -> None:
    """Store schedule files found earlier: K = 4 lane-rule AllGathers of an EquiMesh at the bound.

    Parameters
    ----------
    paths : list of Path
        Schedule files.
    out : Path
        The library file.
    log : callable
        Receives one line per file.

    Raises
    ------
    LibraryError
        A file that is not a K = 4 AllGather on an EquiMesh (or its mirror) at the bound.
    """
    data = _open(out)
    for path in paths:
        sched = load(path)
        topo = sched.topology
        if (
            sched.collective != "allgather"
            or sched.chunks != BASE
            or topo.kind not in ("equimesh", "mirror-equimesh")
            or [l.as_list() for l in topo.links]
            != [l.as_list() for l in build(topo.kind, topo.rows, topo.cols, ring_dirs=topo.ring_dirs).links]
        ):
            raise LibraryError(f"{path}: not a K = {BASE} AllGather on an EquiMesh or its mirror")
        check(topo, sched.phases[0])
        if sched.num_steps != lower_bound(topo, BASE, "allgather"):
            raise LibraryError(f"{path}: {sched.num_steps} steps, not at the bound")
        known = _have(data, topo)
        if known is None or sched.num_steps < known.num_steps:
            store(data, topo, sched.phases[0], out)
            log(f"{key(topo)}: stored from {path}")
        else:
            log(f"{key(topo)}: not stored from {path}: a schedule as short is stored")


def _solve(topo: Topology, method: str, known: Phase | None, seeds: int, time_limit: float) -> Phase | None:
    """One network's schedule by ``method`` (None: nothing at the bound, for the methods that search
    only there)."""
    if method == "tail":
        return cpsat.improve_tail(topo, BASE, known, True, time_limit, windows=TAIL_WINDOWS)
    if method == "at-bound":
        return cpsat.at_bound(topo, BASE, time_limit).phase
    if method == "partial":
        return partial.solve(topo, seeds, time_limit)
    if method == "repair":
        return cpsat.repair(topo, BASE, seeds, time_limit=time_limit)
    return synthesize(topo, BASE, "allgather", "cpsat", time_limit=time_limit).phases[0]


def search(
    sizes: list[tuple[int, int]],
    ring_dirs: dict | None,
    method: str = "cpsat",
    seeds: int = 0,
    time_limit: float = 120.0,
    out: Path = LIBRARY,
    log: Callable[[str], None] = print,
) -> None:
    """Solve each size (EquiMesh and mirror) and store what reaches the bound or beats the best known.

    Networks stored at the bound, directly or as a symmetric image, are skipped; ``tail`` only
    re-solves networks that have a stored schedule.

    Parameters
    ----------
    sizes : list of (rows, cols)
        The sizes to solve.
    ring_dirs : dict or None
        Ring directions (None: each size's default).
    method : str
        One of ``METHODS``: ``cpsat`` (the whole exact model), ``repair`` (XTree and CP-SAT windows,
        :func:`..methods.cpsat.repair`, ``seeds`` tie-break orders), ``at-bound`` (at the bound with
        the lane rule soft and the schedule symmetric, :func:`..methods.cpsat.at_bound`), ``partial``
        (partial ring pipelining, :mod:`..methods.partial`, up to ``seeds`` pairs of cycles) or
        ``tail`` (re-solve a stored schedule's tail with longer CP-SAT windows).
    seeds : int
        Seeds for ``repair`` and ``partial``.
    time_limit : float
        CP-SAT seconds per network.
    out : Path
        The library file.
    log : callable
        Receives one line per network.
    """
    data = _open(out)
    for r, c in sizes:
        for kind in ("equimesh", "mirror-equimesh"):
            topo = build(kind, r, c, ring_dirs=ring_dirs)
            bound = lower_bound(topo, BASE, "allgather")
            known = _have(data, topo)
            if known is not None and known.num_steps == bound or method == "tail" and known is None:
                continue
            t0 = time.perf_counter()
            phase = _solve(topo, method, known, seeds, time_limit)
            if phase is None:
                log(f"{key(topo)}: none at the bound {bound} ({time.perf_counter() - t0:.1f} s)")
                continue
            beat = min(xtree(topo, BASE, lanes=True).num_steps, np.inf if known is None else known.num_steps)
            log(
                f"{key(topo)}: {phase.num_steps} steps, bound {bound}, to beat {beat} "
                f"({time.perf_counter() - t0:.1f} s)"
            )
            if phase.num_steps == bound or phase.num_steps < beat:
                store(data, topo, phase, out)
