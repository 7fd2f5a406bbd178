"""Algorithm 2 as printed against equimesh's XTree variant (seed 000, Section IV-A): a step table of `equimesh paper`.

Every schedule in the table is checked by the verifier (and, with the lane rule, by the storage
check) before its step count is reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...schedules.methods.xtree import xtree
from ...schedules.methods.xtree_paper import ASSIGN, xtree_paper
from ...schedules.schedule import Schedule, lower_bound
from ...schedules.storage import check_storage
from ...schedules.topology import build
from ...schedules.verify import verify

__all__ = ["SIZES", "CHUNKS", "Row", "algorithm2_rows", "algorithm2_table"]

SIZES = ((2, 3), (4, 4), (8, 8), (5, 11), (16, 16))
CHUNKS = (1, 4, 16)


@dataclass
class Row:
    """Steps of every method on one EquiMesh size, K and storage rule.

    Attributes
    ----------
    size : str
        ``"RxC"``.
    chunks : int
        K, chunks per shard.
    storage : str
        ``"lanes"`` (the node storage rule) or ``"links only"``.
    bound : int
        The AllGather's lower bound in steps (Section III-A).
    paper : dict
        Steps of Algorithm 2 as printed, per reading of line 11
        (:data:`~equimesh.schedules.methods.xtree_paper.ASSIGN`).
    matching : int
        Steps of equimesh's variant (xtree-matching).
    seconds : float
        Synthesis and checking time of the row.
    """

    size: str
    chunks: int
    storage: str
    bound: int
    paper: dict[str, int]  # reading of line 11 (ASSIGN) -> steps of Algorithm 2 as printed
    matching: int  # equimesh's variant (xtree-matching)
    seconds: float


def _checked(topo, k: int, lanes: bool, phase) -> int:
    s = Schedule("allgather", "check", k, topo, [phase], {"storage": "lanes"} if lanes else {})
    verify(s)
    if lanes:
        check_storage(s)
    return phase.num_steps


def algorithm2_rows(sizes=SIZES, chunks=CHUNKS, progress=None) -> list[Row]:
    """Steps of Algorithm 2 (each reading of ``assign``) and of xtree-matching, links only and with lanes.

    Parameters
    ----------
    sizes : iterable of tuple of int
        EquiMesh sizes ``(rows, cols)``.
    chunks : iterable of int
        Chunk counts K.
    progress : callable, optional
        ``progress(row)`` after each row.

    Returns
    -------
    list of Row
        Per size, K and storage rule; every schedule verified (and storage-checked with lanes).
    """
    rows = []
    for r, c in sizes:
        topo = build("equimesh", r, c)
        for k in chunks:
            for lanes in (False, True):
                t0 = time.perf_counter()
                paper = {a: _checked(topo, k, lanes, xtree_paper(topo, k, lanes=lanes, assign=a)) for a in ASSIGN}
                matching = _checked(topo, k, lanes, xtree(topo, k, lanes=lanes))
                rows.append(
                    Row(
                        f"{r}x{c}",
                        k,
                        "lanes" if lanes else "links only",
                        lower_bound(topo, k, "allgather"),
                        paper,
                        matching,
                        time.perf_counter() - t0,
                    )
                )
                if progress is not None:
                    progress(rows[-1])
    return rows


def algorithm2_table(rows: list[Row]) -> list[str]:
    """Markdown table lines: bound, the three readings of Algorithm 2, xtree-matching.

    Parameters
    ----------
    rows : list of Row
        :func:`algorithm2_rows`'s rows.

    Returns
    -------
    list of str
        The table's lines; each cell is the steps and, in brackets, the bound over them.
    """
    head = ["EquiMesh", "K", "storage", "bound"] + [f"xtree-paper {a}" for a in ASSIGN] + ["xtree-matching"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in rows:
        cells = [w.size, str(w.chunks), w.storage, str(w.bound)]
        cells += [f"{w.paper[a]} ({w.bound / w.paper[a]:.2f})" for a in ASSIGN]
        cells.append(f"{w.matching} ({w.bound / w.matching:.2f})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines
