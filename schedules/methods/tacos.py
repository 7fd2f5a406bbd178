"""TACOS-style baseline: randomized greedy link-chunk matching on the time-expanded network.

Source: seed 000, Section V-A ("TACOS [28]", Won et al., MICRO 2024). TACOS expands the
topology in time and, step by step, matches every link whose source holds a chunk its
destination still lacks to one such chunk, choosing among candidates at random; with
equal links one expansion step is one timestep. This module does exactly that for
AllGather and keeps the shortest of ``seeds`` randomized runs (ties: the first seed).

Approximation, stated plainly: TACOS's link order and chunk choice heuristics beyond
"random among the useful ones" are not reproduced; links are visited in a fresh random
order every step. As in TACOS (and MultiTree), ReduceScatter is the time- and
direction-reverse of an AllGather; on topologies with unidirectional links the AllGather
is synthesized on the mirror topology first (seed 000, Algorithm 3), so the reverse exists.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase, Schedule
from ..topology import Topology
from .reverse import reverse_onto

__all__ = ["SEEDS", "best_allgather", "tacos", "tacos_allgather"]

SEEDS = 4


def tacos_allgather(topo: Topology, chunks: int, seed: int) -> Phase:
    """One randomized greedy run: per step, every link in random order takes a random useful chunk.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    seed : int
        The random generator's seed.

    Returns
    -------
    Phase
        An AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.

    Raises
    ------
    ValueError
        If the topology is not strongly connected.
    """
    n, k = topo.nodes, chunks
    x_count = n * k
    rng = np.random.default_rng(seed)
    src, dst = topo.link_src, topo.link_dst
    have = np.zeros((n, x_count), dtype=bool)
    have[np.repeat(np.arange(n), k), np.arange(x_count)] = True
    steps = []
    while not have.all():
        incoming = np.zeros((n, x_count), dtype=bool)
        tr = []
        for l in rng.permutation(len(src)):
            u, w = src[l], dst[l]
            cand = np.flatnonzero(have[u] & ~have[w] & ~incoming[w])
            if len(cand):
                x = cand[rng.integers(len(cand))]
                incoming[w, x] = True
                tr.append((l, x // k, x % k))
        if not tr:
            raise ValueError(f"{topo.name} is not strongly connected: AllGather cannot complete")
        have |= incoming
        steps.append(np.array(tr, dtype=np.int64).reshape(-1, 3))
    return Phase("allgather", steps)


def best_allgather(topo: Topology, chunks: int, seeds: int = SEEDS) -> Phase:
    """The shortest of ``seeds`` runs.

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    seeds : int
        Runs with seeds ``0 .. seeds - 1``; ties go to the lowest seed.

    Returns
    -------
    Phase
        An AllGather phase: per timestep, the ``(link, root, chunk)`` transfers.
    """
    return min((tacos_allgather(topo, chunks, s) for s in range(seeds)), key=lambda p: p.num_steps)


def tacos(topo: Topology, chunks: int, collective: str) -> Schedule:
    """TACOS-style AllGather, ReduceScatter or AllReduce (ReduceScatter then AllGather).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per shard.
    collective : str
        ``"allgather"``, ``"reducescatter"`` or ``"allreduce"``.

    Returns
    -------
    Schedule
        The schedule; its ``meta`` records the seeds tried.
    """
    phases = []
    if collective in ("reducescatter", "allreduce"):
        m = topo.mirror()
        phases.append(reverse_onto(best_allgather(m, chunks), m, topo))
    if collective in ("allgather", "allreduce"):
        phases.append(best_allgather(topo, chunks))
    return Schedule(collective, "tacos", chunks, topo, phases, {"seeds": SEEDS})
