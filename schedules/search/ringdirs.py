"""Default ring directions per size: the choice of Algorithm 1's ``anticlockwise`` flags with the
shortest lane-rule AllGather (seed 000, Section III-B: each edge's ring may run either way).

With the default ``cccc`` every EquiMesh that has a Hamiltonian decomposition runs the
ring-pipelined AllGather at the bound (:mod:`..methods.ringpipe`), so the directions only matter where none
exists: sides of different parity (:mod:`..methods.parity`), and 3 x C with C = 1 mod 4. There, ``auto`` runs XTree, whose
step count depends on the directions by a step or two, or a split schedule (:mod:`..methods.split`; its tiles
are made for ``cccc``). Trying all 16 choices at every command
would multiply the synthesis time by 16, so it is done once, here, for K = 4 (the chunk count of
the headline results), and the sizes where another choice is strictly shorter are stored in
``data/ring_dirs.json``; :func:`~equimesh.schedules.topology.default_ring_dirs` reads them. ``--ring-dirs auto``
still searches all 16 for any other K or collective.

Regenerate: ``equimesh search ringdirs [--max-side 16]`` (about 20 minutes on 2 cores),
or ``--sizes 4x7,...`` for some sizes only (after new stored schedules: :mod:`..methods.library` runs a stored
schedule under any directions that a symmetry or the mirror maps it onto).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from ..methods.hamiltonian import cccc, may_decompose
from ..synth import synthesize
from ..topology import RING_DIRS_CHOICES, RING_DIRS_TABLE, build, parse_ring_dirs

__all__ = ["CHUNKS", "best_choice", "needs_search", "search"]

CHUNKS = 4


def needs_search(rows: int, cols: int) -> bool:
    """Sizes where ``cccc`` has no decomposition: sides of different parity
    (:func:`~.hamiltonian.may_decompose` is false), and 3 x C with C = 1 mod 4 (exact search).

    Parameters
    ----------
    rows, cols : int
        The EquiMesh's size.

    Returns
    -------
    bool
        Whether the ring directions are searched at this size (:func:`best_choice`).
    """
    return not may_decompose(cccc(rows, cols)) or (3 in (rows, cols) and rows * cols // 3 % 4 == 1)


def best_choice(rows: int, cols: int) -> tuple[str, dict[str, int]]:
    """The choice with the fewest AllGather steps, and the steps of every choice. On a tie, the
    fewest AllReduce steps, that is the fewest ReduceScatter steps (it runs on the mirror, the
    opposite directions), then the first in :data:`~equimesh.schedules.topology.RING_DIRS_CHOICES` (``cccc`` first).

    Parameters
    ----------
    rows, cols : int
        The EquiMesh's size.

    Returns
    -------
    tuple of (str, dict)
        The chosen ring directions (four letters a/c; Algorithm 1's anticlockwise flag per edge), and the K = 4
        AllGather's steps per choice.
    """

    def topo(d: str):
        return build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(d))

    steps = {d: synthesize(topo(d), CHUNKS, "allgather").num_steps for d in RING_DIRS_CHOICES}
    fewest = min(steps.values())
    tied = [d for d in RING_DIRS_CHOICES if steps[d] == fewest]
    if len(tied) == 1:
        return tied[0], steps
    reducescatter = {d: synthesize(topo(d), CHUNKS, "reducescatter").num_steps for d in tied}
    return min(tied, key=lambda d: reducescatter[d]), steps


def search(
    sizes: list[tuple[int, int]] | None,
    max_side: int = 16,
    out: Path = RING_DIRS_TABLE,
    log: Callable[[str], None] = print,
) -> None:
    """Search the 16 ring-direction choices and store the winners that beat ``cccc``.

    Parameters
    ----------
    sizes : list of (rows, cols) or None
        Only these sizes, kept with the others already in ``out`` (if it exists); None: every size up to
        ``max_side`` that needs a search (the file is written anew).
    max_side : int
        The largest side searched when ``sizes`` is None.
    out : Path
        The ring-directions file.
    log : callable
        Receives one line per size.
    """
    data = {
        "format": "equimesh-ring-dirs",
        "chunks": CHUNKS,
        "collective": "allgather",
        "storage": "lanes",
        "best": {},
        "steps": {},
    }
    if sizes is not None:
        if out.exists():
            data = json.loads(out.read_text())
    else:
        sizes = sorted(
            ((r, c) for r in range(2, max_side + 1) for c in range(2, max_side + 1) if needs_search(r, c)),
            key=lambda rc: rc[0] * rc[1],
        )
    for r, c in sizes:
        t0 = time.perf_counter()
        best, steps = best_choice(r, c)
        log(f"{r}x{c}: cccc {steps['cccc']}, {best} {steps[best]} ({time.perf_counter() - t0:.1f} s)")
        for table in ("best", "steps"):
            data[table].pop(f"{r}x{c}", None)
        if steps[best] < steps["cccc"]:
            data["best"][f"{r}x{c}"] = best
            data["steps"][f"{r}x{c}"] = [steps["cccc"], steps[best]]
    out.write_text(json.dumps(data, indent=1) + "\n")
