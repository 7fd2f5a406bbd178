"""TidalMesh-style baseline (APPROXIMATION): bidirectional "tide" 1-D collectives per row and column.

Source: seed 000, Section II-B and V-A ("TidalMesh [29]", Lim and Kim, HPCA 2025): a
mesh-specific AllReduce that overlaps ReduceScatter and AllGather of different chunks.
The TidalMesh paper itself was not available to us, so this is NOT its algorithm but
the approximation the project agreed on, stated plainly:

* AllGather: a shard's chunk first spreads along its row in both directions at once
  (the "tide" running out both ways from the root), then every node of that row
  spreads it along its column in both directions. Odd chunks go column-first, so both
  dimensions' links work at the same time (``K >= 2``).
* ReduceScatter: the time- and direction-reverse (tides running in towards the root);
  on the mesh every link has its reverse.
* The overlap of ReduceScatter and AllGather across chunks is not scheduled explicitly:
  the event-driven simulator starts each AllGather chunk as soon as its sum is complete,
  which gives that overlap wherever the links allow it.

The broadcast trees are dimension-ordered (XY / YX) and become timesteps through the
same list scheduler as the TTO-style baseline (:func:`.tto.schedule_trees`).
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase, Schedule
from ..topology import Topology
from .reverse import reverse_onto
from .tto import schedule_trees

__all__ = ["tidal_allgather", "tidalmesh"]


def _tide_tree(topo: Topology, root: int, row_first: bool, index: dict) -> np.ndarray:
    """Link into every node of the dimension-ordered broadcast tree from ``root``."""
    rows, cols = topo.rows, topo.cols
    r0, c0 = divmod(root, cols)
    parent = np.full(topo.nodes, -1, dtype=np.int64)
    for r in range(rows):
        for c in range(cols):
            if (r, c) == (r0, c0):
                continue
            if row_first:  # along row r0 to column c, then along column c to row r
                prev = (r - np.sign(r - r0), c) if r != r0 else (r, c - np.sign(c - c0))
            else:  # along column c0 to row r, then along row r to column c
                prev = (r, c - np.sign(c - c0)) if c != c0 else (r - np.sign(r - r0), c)
            u = int(prev[0]) * cols + int(prev[1])
            parent[r * cols + c] = index[(u, r * cols + c)]
    return parent


def tidal_allgather(topo: Topology, chunks: int) -> Phase:
    """TidalMesh-style AllGather: per root, a dimension-ordered broadcast tree, row first for even chunks
    and column first for odd ones, scheduled by :func:`.tto.schedule_trees`.

    Parameters
    ----------
    topo : Topology
        A complete 2D mesh (kind ``mesh``, every link).
    chunks : int
        K, chunks per shard.

    Returns
    -------
    Phase
        An AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.

    Raises
    ------
    ValueError
        If ``topo`` is not the complete 2D mesh.
    """
    if topo.kind != "mesh" or len(topo.links) != 2 * (2 * topo.rows * topo.cols - topo.rows - topo.cols):
        raise ValueError(f"the TidalMesh-style baseline runs on the complete 2D mesh, not the {topo.name}")
    index = {(l.src, l.dst): i for i, l in enumerate(topo.links)}
    trees = {flag: np.stack([_tide_tree(topo, r, flag, index) for r in range(topo.nodes)]) for flag in (True, False)}
    parent = np.stack([trees[c % 2 == 0] for c in range(chunks)], axis=1).reshape(topo.nodes * chunks, topo.nodes)
    return schedule_trees(topo, chunks, parent)


def tidalmesh(topo: Topology, chunks: int, collective: str) -> Schedule:
    """TidalMesh-style AllGather, ReduceScatter or AllReduce (ReduceScatter then AllGather) on the mesh.

    Parameters
    ----------
    topo : Topology
        A complete 2D mesh.
    chunks : int
        K, chunks per shard.
    collective : str
        ``"allgather"``, ``"reducescatter"`` or ``"allreduce"``.

    Returns
    -------
    Schedule
        ReduceScatter is the time- and direction-reverse of the AllGather; ``meta`` marks the approximation.
    """
    phases = []
    if collective in ("reducescatter", "allreduce"):
        phases.append(reverse_onto(tidal_allgather(topo, chunks), topo, topo))
    if collective in ("allgather", "allreduce"):
        phases.append(tidal_allgather(topo, chunks))
    return Schedule(collective, "tidalmesh", chunks, topo, phases, {"approximation": True})
