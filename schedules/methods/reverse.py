"""Algorithm 3, line 2 (seed 000, MirrorXTree): an AllGather of the mirror topology, reversed in time and
direction onto the links of the original, is its ReduceScatter."""

from __future__ import annotations

import numpy as np

from ..schedule import Phase
from ..topology import Topology

__all__ = ["reverse_onto"]


def reverse_onto(phase: Phase, mirror: Topology, topo: Topology) -> Phase:
    """Time- and direction-reverse an AllGather of ``mirror`` onto ``topo``'s links (Algorithm 3, line 2).

    Parameters
    ----------
    phase : Phase
        An AllGather phase on ``mirror``.
    mirror : Topology
        The mirror of ``topo`` (every link of ``mirror`` exists reversed in ``topo``).
    topo : Topology
        The topology the ReduceScatter runs on.

    Returns
    -------
    Phase
        The ReduceScatter phase on ``topo``: step s of the result is step ``S - 1 - s`` of ``phase``.
    """
    index = {}
    for i, l in enumerate(topo.links):
        index.setdefault((l.src, l.dst, l.src_port, l.dst_port), i)
    remap = np.array([index[(l.dst, l.src, l.dst_port, l.src_port)] for l in mirror.links], dtype=np.int64)
    steps = []
    for s in reversed(phase.steps):
        a = np.array(s, dtype=np.int64).reshape(-1, 3).copy()
        a[:, 0] = remap[a[:, 0]]
        steps.append(a)
    return Phase("reducescatter", steps)
