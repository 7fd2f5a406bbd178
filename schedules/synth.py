"""Schedule synthesis entry point: topology + collective + algorithm -> Schedule."""

from __future__ import annotations

import numpy as np

from .schedule import Phase, Schedule
from .topology import Topology, build
from .xtree import xtree


def reverse_onto(phase: Phase, mirror: Topology, topo: Topology) -> Phase:
    """Algorithm 3, line 2: time- and direction-reverse an AllGather of the mirror onto ``topo``'s links."""
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


def synthesize(topo: Topology, chunks: int, collective: str, algorithm: str = "xtree") -> Schedule:
    if collective == "allgather":
        phases = [xtree(topo, chunks)]
    elif collective == "reducescatter":
        m = topo.mirror()
        phases = [reverse_onto(xtree(m, chunks), m, topo)]
    else:
        m = topo.mirror()
        phases = [reverse_onto(xtree(m, chunks), m, topo), xtree(topo, chunks)]
    return Schedule(collective, algorithm, chunks, topo, phases)
