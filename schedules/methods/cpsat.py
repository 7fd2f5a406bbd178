"""Exact AllGather schedules with OR-Tools CP-SAT: a time-expanded model that minimizes the step count.

The model of :mod:`.optimal` (docs/architecture.md semantics, seed 000 Section III-A
bound), in CP-SAT form and as one optimization instead of a feasibility
search per step count:

* ``y[l, x, t]``: link ``l`` carries chunk ``x = root * K + chunk`` in step
  ``t < T`` (``T`` = a known step count, e.g. XTree's); created only from the
  first step at which the link's source can hold ``x`` (its distance from the
  root);
* every link carries at most one chunk per step; every node other than the
  root receives every chunk exactly once, from a sender that received it in
  an earlier step; a node that needs as many chunks as its in-links carry in
  ``T`` steps (every node, for K = 4 at the EquiMesh bound) has every in-link
  busy in every step, which the model states as exactly one chunk per link
  and step (the same solutions; CP-SAT finds the 2x5 K = 4 lane-rule
  schedule several times faster);
* with ``lanes=True``, the node storage rule of ``storage.py``: ``at[v, x, p]``
  says that ``x`` arrived at ``v`` through in-port ``p`` (the root: its home
  lane); per node, lane and step, at most one chunk is both stored in that lane
  and sent on some out-link;
* the objective is the step of the last transfer (plus one).

CP-SAT's bound on the objective is a proof: when it meets the schedule found,
that step count is the optimum; on a time limit the result says how far the
proof got (``lower``).

:func:`at_bound` runs the same model at the step bound with the lane rule soft,
interleaved LNS in one thread and the schedule invariant under a symmetry of the
grid (docs/schedules.md "2x7 at the bound"); :func:`repair` re-solves XTree's tails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..schedule import Phase, lower_bound
from ..storage import home_lanes, link_lanes
from ..topology import Topology, grid_maps

__all__ = [
    "ExactResult",
    "at_bound",
    "exact",
    "grid_automorphism",
    "improve_tail",
    "invariant_under",
    "repair",
    "start_lanes",
]


@dataclass
class ExactResult:
    """The outcome of a CP-SAT run.

    Attributes
    ----------
    phase : Phase or None
        The best schedule found (None if none within the limit).
    steps : int or None
        Its step count.
    lower : int
        Proven: no schedule has fewer steps.
    seconds : float
        Wall-clock time.
    proven : bool
        ``steps == lower``: the step count is optimal.
    """

    phase: Phase | None  # the best schedule found (None if none within the limit)
    steps: int | None  # its step count
    lower: int  # proven: no schedule has fewer steps
    seconds: float

    @property
    def proven(self) -> bool:
        """A schedule was found and its step count equals the proven lower limit."""
        return self.steps is not None and self.steps == self.lower


def start_lanes(topo: Topology, chunks: int, prefix: list[np.ndarray] = ()) -> np.ndarray:
    """``lane[v, x]``: the lane where node v keeps chunk x after the steps ``prefix``, -1 if it lacks it
    (before any step: every root holds its chunks in their home lanes).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    prefix : list of numpy.ndarray
        Steps of ``[link, root, chunk]`` rows already taken.

    Returns
    -------
    numpy.ndarray
        int64, shape (N, N x K), chunk ``x = root * K + chunk``: global lane ids or -1.
    """
    n, K = topo.nodes, chunks
    lane = np.full((n, n * K), -1, dtype=np.int64)
    lane[np.repeat(np.arange(n), K), np.arange(n * K)] = home_lanes(topo, K).reshape(-1)
    if len(prefix):
        tr = np.concatenate([np.asarray(s, dtype=np.int64).reshape(-1, 3) for s in prefix])
        _, dst_lane = link_lanes(topo)
        lane[topo.link_dst[tr[:, 0]], tr[:, 1] * K + tr[:, 2]] = dst_lane[tr[:, 0]]
    return lane


def _model(topo: Topology, chunks: int, horizon: int, lane0: np.ndarray, lanes: bool):
    """The time-expanded model (module docstring) at ``horizon`` steps from the state ``lane0``: the
    CP-SAT model with the link and receive constraints, the variables ``y[l, x, t]``, and (``lanes``)
    the read literals per lane and step, ``reads[lane, t]``, that the lane rule bounds; None if some
    node needs more chunks than its in-links carry in ``horizon`` steps."""
    from ortools.sat.python import cp_model

    n, K, T = topo.nodes, chunks, horizon
    X = n * K
    src, dst = topo.link_src, topo.link_dst
    held = lane0 >= 0
    # earliest[u, x]: the first step at which u can hold x (its distance from the nearest holder)
    earliest = np.empty((n, X), dtype=np.int64)
    for x in range(X):
        earliest[:, x] = topo.distances[held[:, x]].min(axis=0)
    missing, indeg = (~held).sum(axis=1), np.bincount(dst, minlength=n)
    if (missing > indeg * T).any():
        return None
    m = cp_model.CpModel()
    y: dict[tuple[int, int, int], object] = {}
    for l in range(len(src)):
        for x in np.nonzero(~held[dst[l]] & (earliest[src[l]] < T))[0].tolist():
            for t in range(int(earliest[src[l], x]), T):
                y[l, x, t] = m.NewBoolVar("")
    by_link_step: dict[tuple[int, int], list] = {}
    recv: dict[tuple[int, int], list] = {}  # (node, x) -> [(t, var, link)]
    for (l, x, t), v in y.items():
        by_link_step.setdefault((l, t), []).append(v)
        recv.setdefault((int(dst[l]), x), []).append((t, v, l))
    # a node that needs as many chunks as its in-links can carry in T steps has every in-link busy in
    # every step (with K = 4 at the EquiMesh bound: every node): exactly one chunk, not at most one
    tight = missing == indeg * T
    for l in range(len(src)):
        for t in range(T):
            vs = by_link_step.get((l, t), [])
            if tight[dst[l]]:
                m.AddExactlyOne(vs)
            elif vs:
                m.AddAtMostOne(vs)
    for v, x in zip(*np.nonzero(~held)):
        m.AddExactlyOne([b for _, b, _ in recv.get((int(v), int(x)), [])])
    for (l, x, t), v in y.items():
        u = int(src[l])
        if not held[u, x]:
            m.AddBoolOr([b for tt, b, _ in recv.get((u, x), []) if tt < t] + [v.Not()])
    reads: dict[tuple[int, int], list] = {}  # (lane, t) -> read literals
    if lanes:
        _, dst_lane = link_lanes(topo)
        # at[v, x][lane]: x is kept in that lane of v
        at: dict[tuple[int, int], dict[int, object]] = {}
        for (v, x), arrivals in recv.items():
            per: dict[int, list] = {}
            for _, b, l in arrivals:
                per.setdefault(int(dst_lane[l]), []).append(b)
            at[v, x] = {}
            for ln, bs in per.items():
                a = m.NewBoolVar("")
                m.Add(a == sum(bs))
                at[v, x][ln] = a
        send: dict[tuple[int, int, int], list] = {}
        for (l, x, t), v in y.items():
            send.setdefault((int(src[l]), x, t), []).append(v)
        for (u, x, t), vs in send.items():
            s = m.NewBoolVar("")
            m.AddMaxEquality(s, vs)
            if held[u, x]:
                reads.setdefault((int(lane0[u, x]), t), []).append(s)
                continue
            for ln, a in at[u, x].items():
                r = m.NewBoolVar("")
                m.AddBoolOr([s.Not(), a.Not(), r])
                reads.setdefault((ln, t), []).append(r)
    return m, y, reads


def _phase(solver, y: dict, chunks: int, steps: int) -> Phase:
    """The transfers that ``solver``'s solution puts on the links, step by step."""
    out = [[] for _ in range(steps)]
    for (l, x, t), v in y.items():
        if solver.Value(v):
            out[t].append((l, x // chunks, x % chunks))
    return Phase("allgather", [np.array(s, dtype=np.int64).reshape(-1, 3) for s in out])


def exact(
    topo: Topology,
    chunks: int,
    horizon: int,
    lanes: bool = True,
    time_limit: float = 60.0,
    workers: int = 1,
    start: np.ndarray | None = None,
    symmetry: tuple[np.ndarray, np.ndarray] | None = None,
) -> ExactResult:
    """The shortest AllGather with at most ``horizon`` steps (None if there is none: then
    ``lower = horizon + 1`` proves that ``horizon + 1`` steps are needed when the solver decided it).

    ``start`` (from :func:`start_lanes`) begins from a later state: then the result is the shortest
    completion of that state, and ``lower`` bounds the completion's steps. ``symmetry``, the images
    ``(link, chunk)`` of a symmetry of ``topo`` (:func:`invariant_under`), admits only schedules it
    maps onto themselves: then ``lower`` holds for those only.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    horizon : int
        T, the most steps allowed.
    lanes : bool
        Impose the node storage rule (:mod:`..storage`).
    time_limit : float
        Seconds for CP-SAT.
    workers : int
        CP-SAT workers.
    start : numpy.ndarray or None
        A state from :func:`start_lanes`; None: the start of the collective.
    symmetry : tuple of (numpy.ndarray, numpy.ndarray) or None
        ``(link, chunk)`` images for :func:`invariant_under`.

    Returns
    -------
    ExactResult
        Below the bound (seed 000, Section III-A) ``lower`` is the bound; on a timeout without a
        solution ``lower`` is the bound (1 from a ``start``).
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    T = horizon
    bound = lower_bound(topo, chunks, "allgather") if start is None else 1
    if T < bound:
        return ExactResult(None, None, bound, time.perf_counter() - t0)
    built = _model(topo, chunks, T, start_lanes(topo, chunks) if start is None else start, lanes)
    if built is None:  # more chunks than the in-links carry in T steps: no schedule
        return ExactResult(None, None, T + 1, time.perf_counter() - t0)
    m, y, reads = built
    if symmetry is not None:
        invariant_under(m, y, *symmetry)
    span = m.NewIntVar(bound, T, "steps")
    for (l, x, t), v in y.items():
        m.Add(span >= t + 1).OnlyEnforceIf(v)
    for rs in reads.values():
        if len(rs) > 1:
            m.AddAtMostOne(rs)
    m.Minimize(span)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.Solve(m)
    seconds = time.perf_counter() - t0
    if status == cp_model.INFEASIBLE:
        return ExactResult(None, None, T + 1, seconds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return ExactResult(None, None, bound, seconds)
    steps = int(solver.Value(span))
    return ExactResult(_phase(solver, y, chunks, steps), steps, int(solver.BestObjectiveBound()), seconds)


def grid_automorphism(topo: Topology, chunks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The first symmetry of the grid other than the identity that maps ``topo``'s links onto
    themselves (:func:`.topology.grid_maps`; at 2 x C with ``cccc`` the row flip, v <-> v +- C, ports
    N <-> S), as ``(node, link, chunk)`` images, with ``chunk`` over all ``chunks`` indices (chunk c
    keeps its round c // 4); None if there is none or it does not permute the chunk indices.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray, numpy.ndarray) or None
        ``node`` (shape (N,)), ``link`` (int64, shape (L,)) and ``chunk`` (shape (K,)) images.
    """
    c = np.arange(chunks)
    for node, link, chunk4 in grid_maps(topo, topo):
        chunk = c - c % 4 + chunk4[c % 4]
        if (link != np.arange(len(link))).any() and sorted(chunk.tolist()) == c.tolist():
            return node, link, chunk
    return None


def invariant_under(m, y: dict, link: np.ndarray, chunk: np.ndarray) -> None:
    """Keep only the schedules that a symmetry maps onto themselves: ``y[l, x, t] = y[link[l], chunk[x],
    t]``, with ``chunk`` the image of every chunk ``x = root * K + index`` (a symmetry of the grid has
    order 1, 2 or 4; one equality per variable outside its orbit's first).

    Parameters
    ----------
    m : ortools.sat.python.cp_model.CpModel
        The model; constraints are added to it.
    y : dict
        ``(l, x, t) -> BoolVar`` of :func:`exact`'s model.
    link : numpy.ndarray
        Image of each link id.
    chunk : numpy.ndarray
        Image of each chunk ``x`` (shape (N x K,)).
    """
    for k, v in y.items():
        orbit, (l, x, t) = [k], k
        for _ in range(3):
            l, x = int(link[l]), int(chunk[x])
            orbit.append((l, x, t))
        if k != min(orbit):
            m.Add(v == y[min(orbit)])


def at_bound(topo: Topology, chunks: int, time_limit: float = 600.0, invariant: bool = True) -> ExactResult:
    """A lane-rule AllGather at the step bound, by the model of :func:`exact` at that fixed horizon
    changed in three ways (docs/schedules.md "2x7 at the bound"):

    * the lane rule is soft: per lane and step the reads beyond one are counted and their sum
      minimized (0 = a lane-rule schedule), so every links-only solution is a start and CP-SAT's
      LNS has an objective to work on;
    * one worker with ``interleave_search``: the first-solution and LNS subsolvers take turns in one
      thread (plain one-worker search only descends);
    * with ``invariant``, only schedules that :func:`grid_automorphism` maps onto themselves (about
      half the variables), if ``topo`` has such a symmetry.

    Each group of parallel links u -> w is a symmetry too (swap the links' traffic, the lanes they
    enter and w's own chunks kept in those lanes); it is broken by ordering those own chunks by the
    neighbours they go to in step 0, for one group per orbit of the automorphism under
    ``invariant`` (breaking a group and its image as well can exclude every invariant schedule).

    The result has the schedule if the excess reads reach 0; ``lower`` is the bound plus one if the
    solver proved that no lane-rule schedule meets the bound (only without the invariance).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    time_limit : float
        Seconds for CP-SAT.
    invariant : bool
        Admit only schedules invariant under :func:`grid_automorphism`.

    Returns
    -------
    ExactResult
        ``phase`` and ``steps`` (the bound) when found; else ``lower`` is the bound, or the bound
        plus one when proven.
    """
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    K, T = chunks, lower_bound(topo, chunks, "allgather")
    sym = grid_automorphism(topo, K) if invariant else None
    built = _model(topo, K, T, start_lanes(topo, K), True)
    if built is None:
        return ExactResult(None, None, T + 1, time.perf_counter() - t0)
    m, y, reads = built
    excess = []
    for rs in reads.values():
        if len(rs) > 1:
            e = m.NewIntVar(0, len(rs) - 1, "")
            m.Add(sum(rs) <= 1 + e)
            excess.append(e)
    m.Minimize(sum(excess))
    home, (_, dst_lane) = home_lanes(topo, K), link_lanes(topo)
    parallel: dict[tuple[int, int], list[int]] = {}
    for l, (u, w) in enumerate(zip(topo.link_src.tolist(), topo.link_dst.tolist())):
        parallel.setdefault((u, w), []).append(l)
    node = np.arange(topo.nodes) if sym is None else sym[0]
    broken: set[tuple[int, int]] = set()
    for (u, w), group in parallel.items():
        own = [np.nonzero(home[w] == dst_lane[l])[0] for l in group]
        if len(group) < 2 or (u, w) in broken or any(len(c) == 0 for c in own):
            continue
        img = (u, w)
        for _ in range(4):  # a symmetry of the grid has order 1, 2 or 4
            img = (int(node[img[0]]), int(node[img[1]]))
            broken.add(img)
        out = sorted({int(z) for z in topo.link_dst[topo.out_links[w]]})

        def key(c: int):
            """Where w's own chunk c goes in step 0 (links to neighbour i, weighted 2^i): the swap
            exchanges the keys of the two chunks, so one of each pair of solutions keeps the order."""
            return sum(
                2**i * y[l, w * K + c, 0] for i, z in enumerate(out) for l in topo.out_links[w] if topo.link_dst[l] == z
            )

        for a, b in zip(own, own[1:]):
            m.Add(key(int(a[0])) >= key(int(b[0])))
    if sym is not None:
        node, link, chunk = sym
        x = np.arange(topo.nodes * K)
        invariant_under(m, y, link, node[x // K] * K + chunk[x % K])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    solver.parameters.interleave_search = True
    status = solver.Solve(m)
    seconds = time.perf_counter() - t0
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and solver.ObjectiveValue() == 0:
        return ExactResult(_phase(solver, y, K, T), T, T, seconds)
    proven = status == cp_model.INFEASIBLE or status == cp_model.OPTIMAL
    return ExactResult(None, None, T + 1 if proven and sym is None else T, seconds)


def improve_tail(
    topo: Topology,
    chunks: int,
    phase: Phase,
    lanes: bool = True,
    time_limit: float = 10.0,
    windows: tuple[int, ...] = (4, 6, 8),
) -> Phase:
    """CP-SAT windows: keep the first steps of ``phase``, re-solve its last ``w`` steps exactly in
    fewer; repeat while that shortens it, trying the windows in order, within ``time_limit``, and
    stop at the step bound (no window can prove anything below it faster than the bound does).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    phase : Phase
        An AllGather, e.g. XTree's.
    lanes : bool
        Impose the node storage rule.
    time_limit : float
        Seconds in all.
    windows : tuple of int
        The window sizes w (steps) to try, in order; a window that finds nothing moves to the next.

    Returns
    -------
    Phase
        ``phase`` or a shorter AllGather with the same first steps.
    """
    t0 = time.perf_counter()
    best = phase
    bound = lower_bound(topo, chunks, "allgather")
    i = 0
    while i < len(windows):
        left = time_limit - (time.perf_counter() - t0)
        w = min(windows[i], best.num_steps)
        if left <= 0 or w < 2 or best.num_steps <= bound:
            break
        prefix = best.steps[: best.num_steps - w]
        res = exact(topo, chunks, w - 1, lanes, left, start=start_lanes(topo, chunks, prefix))
        if res.phase is None:
            i += 1
            continue
        best = Phase("allgather", list(prefix) + res.phase.steps)
    return best


def repair(
    topo: Topology, chunks: int, seeds: int, lanes: bool = True, window_seconds: float = 5.0, time_limit: float = 600.0
) -> Phase:
    """XTree with repair (issue 10, item 2): XTree's tie-break orders one after another
    (:func:`.xtree.tie_break_orders`), each tail re-solved by :func:`improve_tail` with up to
    ``window_seconds``; the shortest result, as soon as one meets the step bound or ``time_limit``
    is spent. Different orders leave different tails, and a tail one step over the bound is often
    repairable when XTree's own is not (K = 4, lane rule: 3x6 and 4x5 at the bound from a few
    orders, none from the first).

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    seeds : int
        Tie-break orders to try.
    lanes : bool
        Impose the node storage rule.
    window_seconds : float
        Seconds for each tail's :func:`improve_tail`.
    time_limit : float
        Seconds in all.

    Returns
    -------
    Phase
        The shortest AllGather found (XTree, seed 000, Algorithm 2, with its tail re-solved).
    """
    from .xtree import tie_break_orders

    t0 = time.perf_counter()
    bound = lower_bound(topo, chunks, "allgather")
    best = None
    for phase in tie_break_orders(topo, chunks, lanes, seeds):
        left = time_limit - (time.perf_counter() - t0)
        phase = improve_tail(topo, chunks, phase, lanes, min(window_seconds, max(left, 0.0)))
        if best is None or phase.num_steps < best.num_steps:
            best = phase
        if best.num_steps <= bound or time.perf_counter() - t0 >= time_limit:
            break
    return best
