"""Partial ring pipelining: two chunk classes on Hamiltonian cycles, the other two solved exactly.

Where the EquiMesh has no Hamiltonian decomposition (the sign argument of :mod:`.parity`: every size
whose sides differ in parity) and no split either (:func:`.split.two_cycles`: 2 x C with C odd from 5
on), two arc-disjoint directed Hamiltonian cycles H0 and H1 still exist. They take two of the four
chunk classes and run the ring-pipelined AllGather of :mod:`.ringpipe` on them: N - 1 steps, every
link of H0 and H1 busy in every step. The links left, D, have in- and out-degree 2 at every node;
the other two classes are a K = 2 AllGather on D, and the bound of the whole, N - 1 steps, needs one
at D's own bound ``ceil(2 (N - 1) / 2) = N - 1``: every link of D busy in every step too. CP-SAT's
exact lane-rule model (:mod:`.cpsat`, the time-expanded model of seed 000 Section III-A) solves
that smaller problem (2 classes on 2N links instead of 4 on 4N) where the whole model stalls.

The lane rule (:mod:`.storage`) holds class by class. Root r's chunk k has home lane ``ports[k]``;
the chunk of class c is the one whose home lane is the port H_c enters r through, and the two
chunks of D are those whose home lanes are D's two in-ports at r. A lane is then only ever read by
its own class: H_c's lane for the chunk that just arrived on H_c (one per step, as in
:mod:`.ringpipe`), D's lanes as the model of D allows (it sees D's in-ports as the only lanes).

The search is offline (``python -m equimesh.schedules.library --partial SEEDS``): each seed draws
another pair of cycles, and the first whose D has an AllGather at the bound is stored in
``data/lane_schedules.json`` like every other stored schedule (checked again on every use).
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase
from ..topology import Link, Topology
from .cpsat import exact

__all__ = ["DRAW_SECONDS", "RINGS", "cycles", "merge", "rest", "rest_symmetry", "solve"]

RINGS = 2  # chunk classes on Hamiltonian cycles; the other 4 - RINGS are solved on D
DRAW_SECONDS = 30.0  # CP-SAT's limit for drawing the cycles (2 x C up to 15: optimal in seconds)


def cycles(topo: Topology, time_limit: float, seed: int, link: np.ndarray | None = None) -> np.ndarray | None:
    """``colour[link]``: 0 and 1 for two arc-disjoint Hamiltonian cycles (CP-SAT ``AddCircuit`` each),
    2 for the rest D (in- and out-degree 2); None if none is found.

    D is drawn as close to a *bidirectional ring* as it can be: the most node pairs joined both ways
    in D. On a bidirectional Hamiltonian ring the two classes would run ring pipelines, one each way;
    the sign argument rules that out, so the best D is such a ring with one small defect, and its
    AllGather at the bound is found much faster (docs/schedules.md: 2x13 in 28 s, where D with
    fewer pairs took 254 s or more than 300). ``seed`` draws among the best. With ``link``, the link
    images of a symmetry of the grid, the symmetry maps H0 onto H1 and D onto itself.

    Parameters
    ----------
    topo : Topology
        A 4-regular EquiMesh.
    time_limit : float
        Seconds for CP-SAT (one worker, randomized search).
    seed : int
        CP-SAT's random seed.
    link : numpy.ndarray or None
        Shape (L,): link images of a symmetry.

    Returns
    -------
    numpy.ndarray or None
        int64, shape (L,), values 0, 1, 2.
    """
    from ortools.sat.python import cp_model

    from .split import arcs

    m = cp_model.CpModel()
    x = [[m.NewBoolVar("") for _ in range(RINGS + 1)] for _ in topo.links]
    for row in x:
        m.AddExactlyOne(row)
    for c in range(RINGS):
        m.AddCircuit(arcs(m, topo, [row[c] for row in x], range(len(topo.links))))
    for v in range(topo.nodes):
        m.Add(sum(x[l][RINGS] for l in topo.in_links[v]) == 4 - RINGS)
    if link is not None:
        for l, image in enumerate(link.tolist()):
            for c, c2 in enumerate((1, 0, 2)):
                m.Add(x[image][c2] == x[l][c])
    between: dict[tuple[int, int], list[int]] = {}
    for l, (u, w) in enumerate(zip(topo.link_src.tolist(), topo.link_dst.tolist())):
        between.setdefault((u, w), []).append(l)
    both = []
    for (u, w), ids in between.items():
        if u < w and (w, u) in between:
            b = m.NewBoolVar("")
            for pair in (ids, between[w, u]):
                m.Add(b <= sum(x[l][RINGS] for l in pair))
            both.append(b)
    m.Maximize(sum(both))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.randomize_search = True
    if solver.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return np.array([[solver.Value(v) for v in row] for row in x]).argmax(axis=1)


def rest(topo: Topology, colour: np.ndarray) -> tuple[Topology, np.ndarray]:
    """D as a topology of its own, and the ids in ``topo`` of its links. Its lanes are D's in-ports:
    each link keeps its destination port and leaves through one of its source's D in-ports (a
    source port has no lane, so this only names the ports each router of D has).

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        From :func:`cycles`.

    Returns
    -------
    tuple of (Topology, numpy.ndarray)
        D (same kind and size, 2N links) and the int64 ids in ``topo`` of its links, in order.
    """
    ids = np.nonzero(colour == RINGS)[0]
    inports: dict[int, list[str]] = {}
    for l in ids.tolist():
        inports.setdefault(topo.links[l].dst, []).append(topo.links[l].dst_port)
    links = [
        Link(topo.links[l].src, topo.links[l].dst, inports[topo.links[l].src][0], topo.links[l].dst_port)
        for l in ids.tolist()
    ]
    return Topology(topo.kind, topo.rows, topo.cols, links), ids


def merge(topo: Topology, colour: np.ndarray, sub: Topology, ids: np.ndarray, rest_phase: Phase) -> Phase:
    """The K = 4 AllGather: the ring pipeline on H0 and H1 (module docstring) and ``rest_phase``, the
    K = 2 AllGather of D at its bound N - 1, step by step, each chunk renamed to the index of its
    home lane.

    Parameters
    ----------
    topo : Topology
    colour : numpy.ndarray
        From :func:`cycles`.
    sub : Topology
        D, from :func:`rest`.
    ids : numpy.ndarray
        D's link ids in ``topo``.
    rest_phase : Phase
        D's K = 2 AllGather in N - 1 steps.

    Returns
    -------
    Phase
        The K = 4 AllGather in N - 1 steps (not checked here).
    """
    from .hamiltonian import order

    n = topo.nodes
    chunk_at = {(v, p): k for v in range(n) for k, p in enumerate(topo.ports(v))}
    steps = [[] for _ in range(n - 1)]  # D's AllGather is at its bound N - 1 too
    for c in range(RINGS):
        ring = order(topo, np.nonzero(colour == c)[0])
        nodes = topo.link_src[ring]
        chunk = np.array(
            [chunk_at[v, topo.links[l].dst_port] for v, l in zip(topo.link_dst[ring].tolist(), ring.tolist())]
        )
        chunk = np.roll(chunk, 1)  # the class-c chunk of the node at each position
        for s in range(n - 1):
            src = (np.arange(n) - s) % n
            steps[s].append(np.stack([ring, nodes[src], chunk[src]], axis=1))
    for s, tr in enumerate(rest_phase.steps):
        a = np.asarray(tr, dtype=np.int64).reshape(-1, 3)
        k = [chunk_at[int(r), sub.ports(int(r))[int(j)]] for r, j in zip(a[:, 1], a[:, 2])]
        steps[s].append(np.stack([ids[a[:, 0]], a[:, 1], np.array(k, dtype=np.int64)], axis=1))
    return Phase("allgather", [np.concatenate(s).reshape(-1, 3) for s in steps])


def rest_symmetry(topo: Topology, sym: tuple, sub: Topology, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A symmetry ``(node, link, chunk)`` of ``topo`` (:func:`.cpsat.grid_automorphism`, chunk images
    by home port) that maps D onto itself, as images ``(link, chunk)`` on ``sub`` (for
    :func:`.cpsat.exact`): D's chunk j at r, kept in D's port ``sub.ports(r)[j]``, goes to the chunk
    of the node r maps to that is kept in the port that port turns into.

    Parameters
    ----------
    topo : Topology
    sym : tuple
        ``(node, link, chunk)`` from :func:`.cpsat.grid_automorphism` with K = 4.
    sub : Topology
        D.
    ids : numpy.ndarray
        D's link ids in ``topo``.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        int64 link images (shape (2N,)) and chunk images (shape (2N,), ``x = root * 2 + j``).
    """
    node, link, chunk4 = sym
    at = {int(l): i for i, l in enumerate(ids.tolist())}
    sub_link = np.array([at[int(link[l])] for l in ids.tolist()], dtype=np.int64)
    K = 4 - RINGS
    sub_chunk = np.empty(topo.nodes * K, dtype=np.int64)
    for r in range(topo.nodes):
        to = int(node[r])
        for j, p in enumerate(sub.ports(r)):
            turned = topo.ports(to)[int(chunk4[topo.ports(r).index(p)])]
            sub_chunk[r * K + j] = to * K + sub.ports(to).index(turned)
    return sub_link, sub_chunk


def solve(topo: Topology, seeds: int, time_limit: float, log=print) -> Phase | None:
    """The first K = 4 AllGather at the bound N - 1 over ``seeds`` pairs of cycles, CP-SAT spending up
    to ``time_limit`` seconds on each D (2 workers); None if none of them has one.

    Where the grid has a symmetry (:func:`.cpsat.grid_automorphism`; at 2 x C the row flip), the
    cycles are drawn so that it maps H0 onto H1 and D onto itself, and D's schedule is one that it
    maps onto itself: half the variables, and at 2x9 about 10 times faster (docs/schedules.md).

    Parameters
    ----------
    topo : Topology
    seeds : int
        Pairs of cycles to draw.
    time_limit : float
        Seconds of CP-SAT per D (drawing the cycles: at most :data:`DRAW_SECONDS`).
    log : callable
        ``log(line)``, one line per seed.

    Returns
    -------
    Phase or None
        A lane-rule K = 4 AllGather in N - 1 steps (not checked here).
    """
    from .cpsat import grid_automorphism

    n = topo.nodes
    sym = grid_automorphism(topo, 4)
    for seed in range(seeds):
        colour = cycles(topo, min(time_limit, DRAW_SECONDS), seed, None if sym is None else sym[1])
        if colour is None:
            log(
                f"{topo.name}: no two arc-disjoint Hamiltonian cycles {'' if sym is None else 'that the symmetry swaps '}found"
            )
            return None
        sub, ids = rest(topo, colour)
        res = exact(
            sub,
            4 - RINGS,
            n - 1,
            lanes=True,
            time_limit=time_limit,
            workers=2,
            symmetry=None if sym is None else rest_symmetry(topo, sym, sub, ids),
        )
        log(
            f"{topo.name}: seed {seed}: D {'at the bound' if res.steps == n - 1 else 'none at the bound'} "
            f"({res.seconds:.1f} s{'' if res.steps == n - 1 or res.lower > n - 1 else ', time limit'})"
        )
        if res.steps == n - 1:
            return merge(topo, colour, sub, ids, res.phase)
    return None
