"""Exact AllGather schedules: a time-expanded integer program solved with HiGHS (scipy ``milp``).

For a step count ``T`` the program has binary variables

* ``y[l, x, t]``: link ``l`` carries chunk ``x = root * K + chunk`` in step ``t``;
* ``h[v, x, t]``: node ``v`` holds chunk ``x`` after step ``t``,

with the semantics of docs/architecture.md: a link carries at most one chunk per step, a
sender holds the chunk before the step, a node holds a chunk only if it is its
root or received it, and every node holds every chunk after step ``T - 1``.
With ``lanes=True`` it also encodes the node storage rule of ``storage.py``
(per step, each lane is read for at most one distinct chunk), so the solver
answers what the hardware can reach.

:func:`optimal` searches ``T`` upward from the bound of seed 000, Section
III-A: the first feasible ``T`` is the proven optimum; an infeasible ``T`` is a
proof that fewer steps cannot work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from ..schedule import Phase, lower_bound
from ..storage import home_lanes, lane_table, link_lanes
from ..topology import Topology

__all__ = ["OptimalResult", "optimal"]


@dataclass
class OptimalResult:
    """The outcome of :func:`optimal`.

    Attributes
    ----------
    phase : Phase or None
        The optimal AllGather, when decided.
    steps : int or None
        Its step count, the proven optimum.
    infeasible_below : int
        Every step count below this is proven infeasible.
    seconds : float
        Wall-clock time.
    status : str
        ``"optimal"`` or ``"timeout"``.
    """

    phase: Phase | None
    steps: int | None  # proven optimum, when decided
    infeasible_below: int  # every step count below this is proven infeasible
    seconds: float
    status: str  # "optimal" or "timeout"


class _Rows:
    """Accumulates sparse constraint rows ``lo <= A x <= hi``."""

    def __init__(self):
        self.r, self.c, self.v, self.lo, self.hi = [], [], [], [], []

    def add(self, cols, vals, lo, hi):
        row = len(self.lo)
        self.r.extend([row] * len(cols))
        self.c.extend(cols)
        self.v.extend(vals)
        self.lo.append(lo)
        self.hi.append(hi)

    def constraint(self, nvars):
        a = coo_matrix((self.v, (self.r, self.c)), shape=(len(self.lo), nvars)).tocsr()
        return LinearConstraint(a, np.array(self.lo, float), np.array(self.hi, float))


def _solve(topo: Topology, chunks: int, steps: int, lanes: bool, time_limit: float):
    n, K, T = topo.nodes, chunks, steps
    X = n * K
    L = len(topo.links)
    src, dst = topo.link_src, topo.link_dst
    root_of = np.arange(X) // K
    ny = L * X * T
    y = lambda l, x, t: (l * X + x) * T + t  # noqa: E731
    h0 = ny
    h = lambda v, x, t: h0 + (v * X + x) * T + t  # noqa: E731
    nv = h0 + n * X * T
    rows = _Rows()
    for l in range(L):
        for t in range(T):
            rows.add([y(l, x, t) for x in range(X)], [1] * X, -np.inf, 1)
    for l in range(L):
        u, w = src[l], dst[l]
        for x in range(X):
            for t in range(T):
                if w == root_of[x]:
                    rows.add([y(l, x, t)], [1], 0, 0)
                    continue
                if u == root_of[x]:
                    continue
                if t == 0:
                    rows.add([y(l, x, t)], [1], 0, 0)
                else:
                    rows.add([y(l, x, t), h(u, x, t - 1)], [1, -1], -np.inf, 0)
    for v in range(n):
        ins = topo.in_links[v]
        for x in range(X):
            for t in range(T):
                if v == root_of[x]:
                    rows.add([h(v, x, t)], [1], 1, 1)
                    continue
                cols = [h(v, x, t)] + [y(l, x, t) for l in ins]
                vals = [1] + [-1] * len(ins)
                if t > 0:
                    cols.append(h(v, x, t - 1))
                    vals.append(-1)
                rows.add(cols, vals, -np.inf, 0)
            if v != root_of[x]:
                rows.add([h(v, x, T - 1)], [1], 1, 1)
                # docs/architecture.md: every node other than the root receives each chunk exactly once
                rows.add([y(l, x, t) for l in ins for t in range(T)], [1] * (len(ins) * T), 1, 1)
    if lanes:
        # inlane(u, lane, x, t): u holds x in `lane` before step t (it arrived there, or it is u's home lane).
        # send(u, x, t) >= y on any out-link; read(u, lane, x, t) >= send + inlane - 1; sum_x read <= 1.
        index, _ = lane_table(topo)
        home = home_lanes(topo, K)
        _, dst_lane = link_lanes(topo)
        nxt = nv
        for u in range(n):
            outs = topo.out_links[u]
            my_lanes = [index[(u, p)] for p in topo.ports(u)]
            for t in range(T):
                read_cols = {ln: [] for ln in my_lanes}
                for x in range(X):
                    s = nxt
                    nxt += 1
                    for l in outs:
                        rows.add([s, y(l, x, t)], [1, -1], 0, np.inf)
                    for ln in my_lanes:
                        if u == root_of[x]:
                            if home[u, x % K] == ln:
                                read_cols[ln].append(s)
                            continue
                        arrive = [y(l, x, tt) for l in topo.in_links[u] if dst_lane[l] == ln for tt in range(t)]
                        if not arrive:
                            continue
                        r = nxt
                        nxt += 1
                        rows.add([r, s] + arrive, [1, -1] + [-1] * len(arrive), -1, np.inf)
                        read_cols[ln].append(r)
                for ln, cols in read_cols.items():
                    if len(cols) > 1:
                        rows.add(cols, [1] * len(cols), -np.inf, 1)
        nv = nxt
    cons = rows.constraint(nv)
    integrality = np.ones(nv)
    res = milp(
        np.zeros(nv),
        constraints=[cons],
        integrality=integrality,
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit, "disp": False},
    )
    if res.status == 0:
        sol = np.round(res.x[:ny]).astype(np.int64).reshape(L, X, T)
        steps_out = []
        for t in range(T):
            l_idx, x_idx = np.nonzero(sol[:, :, t])
            steps_out.append(np.stack([l_idx, x_idx // K, x_idx % K], axis=1).astype(np.int64))
        return "feasible", Phase("allgather", steps_out)
    if res.status == 2:
        return "infeasible", None
    return "timeout", None


def optimal(
    topo: Topology, chunks: int, lanes: bool = False, time_limit: float = 60.0, start: int | None = None
) -> OptimalResult:
    """Search step counts upward from the bound; return the first feasible schedule (the optimum).

    The bound is that of seed 000, Section III-A; each step count is one integer program
    (module docstring) solved with HiGHS within the time left.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    lanes : bool
        Encode the node storage rule (:mod:`..storage`).
    time_limit : float
        Seconds in all.
    start : int or None
        The first step count to try; None: the bound.

    Returns
    -------
    OptimalResult
        With ``status == "timeout"`` no schedule, and ``infeasible_below`` the first undecided count.
    """
    t0 = time.perf_counter()
    T = start if start is not None else lower_bound(topo, chunks, "allgather")
    lo = T
    while True:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return OptimalResult(None, None, lo, time.perf_counter() - t0, "timeout")
        status, phase = _solve(topo, chunks, T, lanes, left)
        if status == "feasible":
            return OptimalResult(phase, T, T, time.perf_counter() - t0, "optimal")
        if status == "timeout":
            return OptimalResult(None, None, lo, time.perf_counter() - t0, "timeout")
        T += 1
        lo = T
