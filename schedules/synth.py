"""Schedule synthesis: topology + collective + algorithm -> Schedule.

ReduceScatter is always built by MirrorXTree's construction (seed 000,
Algorithm 3): synthesize an AllGather on the mirror topology, then reverse it
in time and direction onto the links of the original topology. AllReduce is
that ReduceScatter followed by the AllGather, as two ``phases``.
"""

from __future__ import annotations

import numpy as np

from .multitree import multitree
from .optimal import optimal
from .ring2d import ring2d
from .schedule import Phase, Schedule
from .topology import Topology
from .xtree import xtree

ALGORITHMS = ("xtree", "mirrorxtree", "multitree", "ring2d", "optimal")


class SynthesisError(RuntimeError):
    """The algorithm could not produce a schedule (e.g. the exact solver ran out of time)."""


def reverse_onto(phase: Phase, mirror: Topology, topo: Topology) -> Phase:
    """Algorithm 3, line 2: time- and direction-reverse an AllGather of ``mirror`` onto ``topo``'s links."""
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


def allgather(topo: Topology, chunks: int, algorithm: str, lanes: bool, time_limit: float, progress) -> Phase:
    if algorithm in ("xtree", "mirrorxtree"):
        return xtree(topo, chunks, lanes=lanes, progress=progress)
    if algorithm == "multitree":
        return multitree(topo, chunks)
    if algorithm == "ring2d":
        return ring2d(topo, chunks)
    if algorithm == "optimal":
        res = optimal(topo, chunks, lanes=lanes, time_limit=time_limit)
        if res.phase is None:
            raise SynthesisError(
                f"exact solver: no decision within {time_limit:g} s on {topo.name} (K={chunks}); "
                f"every step count below {res.infeasible_below} is proven infeasible")
        return res.phase
    raise SynthesisError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")


def synthesize(topo: Topology, chunks: int, collective: str, algorithm: str = "xtree", lanes: bool = True,
               time_limit: float = 60.0, progress=None) -> Schedule:
    """Build the schedule.

    ``lanes=True`` (the default) makes it honour the RTL's node storage rule
    (``storage.py``), so the hardware can run it; ``lanes=False`` gives the
    pure collective schedule, limited only by the links.
    """
    if algorithm in ("multitree", "ring2d") and lanes:
        raise SynthesisError(f"{algorithm} does not model the node storage lanes; pass lanes=False "
                             "(--storage none), or use xtree or optimal")
    phases = []
    if collective in ("reducescatter", "allreduce"):
        m = topo.mirror()
        phases.append(reverse_onto(allgather(m, chunks, algorithm, lanes, time_limit, progress), m, topo))
    if collective in ("allgather", "allreduce"):
        phases.append(allgather(topo, chunks, algorithm, lanes, time_limit, progress))
    if not phases:
        raise SynthesisError(f"unknown collective {collective!r}")
    meta = {"storage": "lanes"} if lanes else {}
    return Schedule(collective, algorithm, chunks, topo, phases, meta)
