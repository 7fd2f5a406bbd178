"""The offline search that fills ``schedules/data/ring_dirs.json`` (``equimesh search ringdirs``): the
choice of Algorithm 1's ``anticlockwise`` flags with the shortest K = 4 lane-rule AllGather at every size
that needs one (:mod:`..methods.ringdirs`). About 20 minutes on 2 cores for every size up to 16.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from ..methods.ringdirs import CHUNKS, best_choice, needs_search
from ..topology import RING_DIRS_TABLE

__all__ = ["search"]


def search(sizes: list[tuple[int, int]] | None, max_side: int = 16, out: Path = RING_DIRS_TABLE,
           log: Callable[[str], None] = print) -> None:
    """Search the 16 ring-direction choices and store the winners that beat ``cccc``.

    Parameters
    ----------
    sizes : list of (rows, cols) or None
        Only these sizes, kept with the others already in ``out``; None: every size up to
        ``max_side`` that needs a search (the file is written anew).
    max_side : int
        The largest side searched when ``sizes`` is None.
    out : Path
        The ring-directions file.
    log : callable
        Receives one line per size.
    """
    data = {"format": "equimesh-ring-dirs", "chunks": CHUNKS, "collective": "allgather", "storage": "lanes",
            "best": {}, "steps": {}}
    if sizes:
        data = json.loads(out.read_text())
    else:
        sizes = sorted(((r, c) for r in range(2, max_side + 1) for c in range(2, max_side + 1)
                        if needs_search(r, c)), key=lambda rc: rc[0] * rc[1])
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
