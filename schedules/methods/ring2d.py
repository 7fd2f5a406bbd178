"""Dimension-decomposed 2D ring baseline (seed 000's "2DMesh", refs. [13], [32]; seed 003).

AllGather runs along columns (Y), then along rows (X); ReduceScatter is its
time- and direction-reverse, i.e. RS-X then RS-Y, so AllReduce is RS-X, RS-Y,
AG-Y, AG-X.

On a mesh a "ring" is a line: each chunk is broadcast both ways along the
line (store and forward, one chunk per link per step, each link a FIFO), so
both directions of every line link are busy. On a torus dimension the chunk
goes both ways around the ring and stops halfway. A chunk starts its X phase
at a node as soon as it has arrived there (no barrier between phases).
Only mesh and torus links are used (EquiMesh rings and overflow duplicates stay idle).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..schedule import Phase
from ..topology import Topology

__all__ = ["ring2d"]


def ring2d(topo: Topology, chunks: int) -> Phase:
    """The dimension-decomposed 2D ring AllGather: along columns (Y), then rows (X) (module docstring).

    Seed 000's "2DMesh" baseline (refs. [13], [32]); seed 003 for the torus. Each chunk is
    forwarded store and forward, one chunk per link per step, each link a FIFO; a chunk starts
    its X phase at a node as soon as it has arrived there. The node storage lanes are not modelled.

    Parameters
    ----------
    topo : Topology
        Mesh or torus links are used only (ports N E S W, no EquiMesh rings or overflow duplicates).
    chunks : int
        K, the chunks per shard.

    Returns
    -------
    Phase
        An AllGather phase of ``[link, root, chunk]`` rows, sorted in each step.
    """
    R, C = topo.rows, topo.cols
    link = {}
    for i, l in enumerate(topo.links):
        if l.src_port in "NESW" and l.dst_port in "NESW" and l.src_port != l.dst_port:
            link.setdefault((l.src, l.dst), i)
    wrap = topo.kind == "torus"

    def line_targets(pos: int, n: int):
        """For a chunk at position pos of a line/ring of n: hops to go in the + and - directions."""
        if wrap and n > 2:
            return (n - 1) - (n - 1) // 2, (n - 1) // 2
        return n - 1 - pos, pos

    queues: dict[int, deque] = {}
    pending = 0

    def push(node: int, item, dim: str, direction: int, hops: int):
        nonlocal pending
        if hops <= 0:
            return
        r, c = divmod(node, C)
        if dim == "Y":
            r2 = (r + direction) % R
            nxt = r2 * C + c
        else:
            c2 = (c + direction) % C
            nxt = r * C + c2
        queues.setdefault(link[(node, nxt)], deque()).append((item, dim, direction, hops))
        pending += 1

    def start(node: int, item, dim: str):
        r, c = divmod(node, C)
        n, pos = (R, r) if dim == "Y" else (C, c)
        plus, minus = line_targets(pos, n)
        push(node, item, dim, +1, plus)
        push(node, item, dim, -1, minus)

    for v in range(topo.nodes):
        for k in range(chunks):
            start(v, (v, k), "Y")
            start(v, (v, k), "X")
    steps = []
    while pending:
        sent = []
        for l in sorted(queues):
            q = queues[l]
            if q:
                sent.append((l, q.popleft()))
        pending -= len(sent)
        step = []
        for l, (item, dim, direction, hops) in sent:
            w = topo.links[l].dst
            step.append((l, item[0], item[1]))
            push(w, item, dim, direction, hops - 1)
            if dim == "Y":
                start(w, item, "X")
        steps.append(np.array(sorted(step), dtype=np.int64).reshape(-1, 3))
    return Phase("allgather", steps)
