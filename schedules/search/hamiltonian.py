"""The offline search that fills ``schedules/data/hamiltonian_tiles.json`` (``equimesh search
hamiltonian``): tiles of Hamiltonian decompositions of the EquiMesh (:mod:`..methods.hamiltonian`).

Tiles already stored are kept, so a run can be resumed; sizes that :func:`..methods.hamiltonian.from_tile`
already gives (by transposition or a cut period) are skipped, and so are sides of different parity
(proven: no decomposition, :mod:`..methods.parity`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from ..methods.hamiltonian import PERIOD, TILES, cccc, from_tile, make_tile, tile_side

__all__ = ["search"]


def search(
    first: list[tuple[int, int]],
    max_side: int = 16,
    time_limit: float = 40.0,
    seeds: int = 3,
    retry_open: bool = False,
    out: Path = TILES,
    log: Callable[[str], None] = print,
) -> None:
    """Solve the missing tiles for every side up to ``max_side`` (and 32) and store them.

    Parameters
    ----------
    first : list of (rows, cols)
        Tile sizes to solve first.
    max_side : int
        The largest network side whose tile is searched.
    time_limit : float
        CP-SAT seconds per seed.
    seeds : int
        CP-SAT seeds per tile.
    retry_open : bool
        Also retry the sizes the file lists as open.
    out : Path
        The tiles file.
    log : callable
        Receives one line per tile.
    """
    data = (
        json.loads(out.read_text())
        if out.exists()
        else {"format": "equimesh-hamiltonian-tiles", "period": PERIOD, "tiles": [], "open": []}
    )
    have = {(t["rows"], t["cols"]) for t in data["tiles"]}
    if not retry_open:
        have |= {(o[0], o[1]) for o in data.get("open", [])}
    sides = sorted({tile_side(n)[0] for n in list(range(2, max_side + 1)) + [32]})
    todo = sorted(((r, c) for r in sides for c in sides if r % 2 == c % 2), key=lambda rc: rc[0] * rc[1])
    todo = first + [rc for rc in todo if rc not in first]
    for r, c in todo:
        if (r, c) in have or from_tile(cccc(r, c)) is not None:  # stored, transposed or cut
            continue
        t0 = time.perf_counter()
        rec, status = make_tile(r, c, time_limit, seeds)
        log(f"{r}x{c}: {status} ({time.perf_counter() - t0:.1f} s)")
        data["open"] = [o for o in data["open"] if tuple(o[:2]) != (r, c)]
        if rec is None:
            data["open"].append([r, c, status])
        else:
            data["tiles"].append(rec)
            have.add((r, c))
        out.write_text(json.dumps(data, indent=1) + "\n")
