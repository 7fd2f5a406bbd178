"""Exact AllToAll on tiny networks: a CP-SAT model of docs/alltoall.md's rules, for a given step count.

Variables ``x[c, l, t]``: chunk ``c`` crosses link ``l`` at step ``t``, created only where a chunk can
be at the link's source by step ``t`` (``dist(source, src(l)) <= t``) and can still reach its
destination afterwards (``dist(dst(l), destination) <= T - 1 - t``). ``h[c, v, t]``: node ``v``
holds chunk ``c`` after step ``t``. Constraints: one chunk per link per step; a node sends only a
chunk it held after the previous step (the source from the start); it holds a chunk only if it held
it before or received it in this step; no node receives a chunk twice and the source never
receives its own; the destination holds it after the last step. :func:`exact_alltoall` tries
``T = bound, bound + 1, ...``: the first feasible ``T`` is optimal when every smaller one was proven
infeasible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from ..alltoall import lower_bound
from ..schedule import Phase
from ..topology import Topology

__all__ = ["ExactResult", "feasible", "exact_alltoall"]


@dataclass
class ExactResult:
    """``phase``: the shortest schedule found (None if none); ``lower``: every step count below it is
    proven infeasible; ``proven``: ``phase`` has ``lower`` steps.

    Attributes
    ----------
    phase : Phase or None
        The schedule found.
    lower : int
        The proven lower limit in steps.
    proven : bool
        ``phase`` is optimal.
    """

    phase: Phase | None
    lower: int
    proven: bool


def feasible(topo: Topology, chunks: int, steps: int, time_limit: float) -> tuple[str, Phase | None]:
    """Solve the model for ``steps`` steps: ``("feasible", phase)``, ``("infeasible", None)`` or
    ``("unknown", None)``.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    steps : int
        T, the step count to decide.
    time_limit : float
        CP-SAT's limit in seconds.

    Returns
    -------
    tuple of (str, Phase or None)
        The decision, and the ``alltoall`` phase when feasible.
    """
    n, k, links = topo.nodes, chunks, range(len(topo.links))
    dist, lsrc, ldst = topo.distances, topo.link_src, topo.link_dst
    m = cp_model.CpModel()
    x, per_link, into = {}, {}, {}
    pairs = [(s, d, p) for s in range(n) for d in range(n) if s != d for p in range(k)]
    for c, (s, d, _) in enumerate(pairs):
        for l in links:
            for t in range(steps):
                if dist[s, lsrc[l]] <= t and dist[ldst[l], d] <= steps - 1 - t and ldst[l] != s:
                    x[c, l, t] = v = m.new_bool_var("")
                    per_link.setdefault((l, t), []).append(v)
                    into.setdefault((c, int(ldst[l]), t), []).append(v)
    for vs in per_link.values():
        m.add_at_most_one(vs)
    for c, (s, d, _) in enumerate(pairs):
        held = [1 if v == s else 0 for v in range(n)]  # held after the previous step
        for t in range(steps):
            now = []
            for v in range(n):
                got = into.get((c, v, t), [])
                h = m.new_bool_var("") if v != s else 1
                if v != s:
                    m.add(h <= held[v] + sum(got))
                now.append(h)
            for l in links:
                if (c, l, t) in x:
                    m.add(x[c, l, t] <= held[int(lsrc[l])])
            held = now
        for v in range(n):
            m.add_at_most_one([u for t in range(steps) for u in into.get((c, v, t), [])])
        m.add(held[d] == 1)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        return "infeasible", None
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "unknown", None
    rows = [[] for _ in range(steps)]
    for (c, l, t), v in x.items():
        if solver.value(v):
            s, d, p = pairs[c]
            rows[t].append([l, s, d * k + p])
    return "feasible", Phase("alltoall", [np.array(r, dtype=np.int64).reshape(-1, 3) for r in rows])


def exact_alltoall(topo: Topology, chunks: int, upper: int, time_limit: float = 20.0) -> ExactResult:
    """The shortest schedule of at most ``upper`` steps, trying ``T`` from the lower bound upwards,
    ``time_limit`` seconds per ``T``; stops at the first ``T`` not decided.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    upper : int
        The largest step count to try (e.g. the relay schedule's steps minus one).
    time_limit : float
        CP-SAT's limit in seconds per step count.

    Returns
    -------
    ExactResult
        The schedule (or None) and the proven lower limit.
    """
    lower = lower_bound(topo, chunks)
    for t in range(lower, upper + 1):
        status, phase = feasible(topo, chunks, t, time_limit)
        if status == "feasible":
            return ExactResult(phase, lower, True)
        if status == "unknown":
            return ExactResult(None, lower, False)
        lower = t + 1
    return ExactResult(None, lower, False)
