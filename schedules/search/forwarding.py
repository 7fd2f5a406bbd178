"""Forwarding-only AllGathers at the bound: an exact test of one schedule shape (issue 10).

A K = 4 AllGather at the bound N - 1 keeps every link busy in every step and never delivers a
chunk twice (docs/schedules.md). The simplest such schedules hold nothing and copy nothing: in
step 1 every node sends its 4 chunks on its 4 out-links; after that every node forwards, in
every step, the 4 chunks that arrived in the step before, through some per-step permutation of
its in-links to its out-links. The lane rule then holds by construction (each lane is read for
the one chunk it just received), and the schedule is 4N *tokens*, each walking a Hamiltonian
path from its root, such that in every step the tokens occupy every link once.

With permutations that never change this is the ring-pipelined AllGather on a Hamiltonian
decomposition (:mod:`.ringpipe`); letting them change from step to step is the wider question.
:func:`solve` decides it exactly with CP-SAT: one literal per (token, step, link), every token
on one link and every link under one token per step, a token's next link leaving the node its
link entered, every node but the root entered once. :func:`check` verifies an answer without
the model.

Decided so far (docs/schedules.md, "Why sides of different parity are hard"): infeasible at
2x3, 2x5, 2x7, 3x4 and 3x5, feasible at 2x4 and 3x3; that is, forwarding alone reaches the bound
exactly where a decomposition exists, on every size decided. So the stored schedules at the bound
on sizes without a decomposition (:mod:`.library`) must hold or copy chunks.

``equimesh search forwarding --sizes 2x3,3x5 --time-limit 120``
"""

from __future__ import annotations

import numpy as np

from ..topology import Topology

__all__ = ["check", "solve"]


def solve(topo: Topology, time_limit: float = 60.0, workers: int = 2) -> tuple[str, np.ndarray | None]:
    """CP-SAT's status (``FEASIBLE``/``OPTIMAL``, ``INFEASIBLE`` or ``UNKNOWN``) and, when found, the
    links ``walk[token, step - 1]`` of token ``4 r + c`` (root ``r``; token ``c`` leaves on the
    root's ``c``-th out-link) in steps ``1 .. N - 1``.

    Parameters
    ----------
    topo : Topology
        A topology with 4 in- and 4 out-links per node (the EquiMesh: K = 4 tokens per root, one per out-link).
    time_limit : float
        CP-SAT's limit in seconds.
    workers : int
        CP-SAT's search workers.

    Returns
    -------
    tuple of (str, numpy.ndarray or None)
        The status, and ``walk`` (int ``[4 N, N - 1]``) when a solution was found.
    """
    from ortools.sat.python import cp_model

    n, links = topo.nodes, len(topo.links)
    src, dst, dist = topo.link_src, topo.link_dst, topo.distances
    m = cp_model.CpModel()
    at: dict[tuple[int, int, int], object] = {}
    for tok in range(4 * n):
        r = tok // 4
        for step in range(1, n):
            for e in range(links):
                if step == 1 and e != topo.out_links[r][tok % 4]:
                    continue
                if step > 1 and (dist[r, src[e]] > step - 1 or dst[e] == r):
                    continue  # not reachable yet, or back into the root
                at[tok, step, e] = m.NewBoolVar("")
    for step in range(1, n):
        for tok in range(4 * n):
            m.AddExactlyOne([at[k] for e in range(links) if (k := (tok, step, e)) in at])
        for e in range(links):
            m.AddExactlyOne([at[k] for tok in range(4 * n) if (k := (tok, step, e)) in at])
    for tok in range(4 * n):
        r = tok // 4
        for v in range(n):
            if v != r:  # entered once
                m.AddExactlyOne(
                    [at[k] for step in range(1, n) for e in topo.in_links[v] if (k := (tok, step, e)) in at]
                )
        for step in range(1, n - 1):
            for e2 in range(links):
                if (tok, step + 1, e2) in at:  # leaves the node its last link entered
                    came = [at[k] for e in topo.in_links[src[e2]] if (k := (tok, step, e)) in at]
                    m.AddBoolOr(came + [at[tok, step + 1, e2].Not()])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.StatusName(solver.Solve(m))
    if status not in ("FEASIBLE", "OPTIMAL"):
        return status, None
    walk = np.full((4 * n, n - 1), -1, dtype=np.int64)
    for (tok, step, e), lit in at.items():
        if solver.Value(lit):
            walk[tok, step - 1] = e
    return status, walk


def check(topo: Topology, walk: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``walk`` is a forwarding-only AllGather at the bound (module docstring).

    Parameters
    ----------
    topo : Topology
        The topology.
    walk : numpy.ndarray
        int ``[4 N, N - 1]``: per token, its link in each step (:func:`solve`).

    Raises
    ------
    ValueError
        With the first step or token that breaks the shape.
    """
    n = topo.nodes
    src, dst = topo.link_src, topo.link_dst
    if walk.shape != (4 * n, n - 1):
        raise ValueError(f"expected {4 * n} tokens x {n - 1} steps, got {walk.shape}")
    for step in range(n - 1):
        if sorted(walk[:, step].tolist()) != list(range(len(topo.links))):
            raise ValueError(f"step {step + 1}: the tokens do not occupy every link once")
    for tok in range(4 * n):
        r, path = tok // 4, walk[tok]
        if src[path[0]] != r or any(src[path[i + 1]] != dst[path[i]] for i in range(n - 2)):
            raise ValueError(f"token {tok}: not a walk from node {r}")
        if sorted([r] + dst[path].tolist()) != list(range(n)):
            raise ValueError(f"token {tok}: does not visit every node once")
