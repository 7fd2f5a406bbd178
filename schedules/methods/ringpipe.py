"""Ring-pipelined AllGather on a Hamiltonian decomposition (4 arc-disjoint directed Hamiltonian cycles).

The classic ring AllGather (seed 003, ring collectives) run on each of the 4
cycles of :mod:`.hamiltonian` at once: chunk ``k`` of every shard travels
cycle ``k mod 4``, in round ``k // 4``. In step ``s`` of a round
(``0 <= s < N - 1``) the node at position ``i`` of a cycle sends the chunk of
the root at position ``i - s`` to the node at ``i + 1``; after ``N - 1``
steps every node holds the round's 4 chunks of every root. Every link is busy
in every step, so ``K = 4m`` chunks take ``m (N - 1)`` steps: exactly the
bound ``ceil(K (N - 1) / 4)`` of seed 000, Section III-A.

The node storage rule (``storage.py``) holds by construction: in step 0 of a
round a node sends its own chunks ``4j .. 4j+3`` from their home lanes
``ports[k mod 4]`` (4 different lanes); in later steps cycle ``c`` forwards
what arrived on its own in-link, and the 4 in-links of a node enter through 4
different ports, so each lane is read for one chunk per step.

For ``K`` not a multiple of 4 the last round leaves cycles idle
(``ceil(K / 4) (N - 1)`` steps), which is above the bound.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Phase
from ..topology import Topology
from .hamiltonian import Decomposition

__all__ = ["ring_allgather"]


def ring_allgather(topo: Topology, chunks: int, dec: Decomposition) -> Phase:
    """The ring-pipelined AllGather of ``chunks`` chunks per shard on the cycles of ``dec``.

    Chunk k travels cycle ``k mod 4`` in round ``k // 4``; each round takes N - 1 steps, so
    K = 4m takes m (N - 1) steps, the bound of seed 000, Section III-A.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    dec : Decomposition
        Arc-disjoint directed Hamiltonian cycles of ``topo`` (:mod:`.hamiltonian`).

    Returns
    -------
    Phase
        An AllGather of ceil(K / 4) (N - 1) steps, each step's rows ordered by link id; it
        honours the node storage rule.
    """
    n = topo.nodes
    src = topo.link_src
    rounds = -(-chunks // len(dec.cycles))
    # per cycle: link at position i and the node at position i (its source)
    links = np.stack(dec.cycles)  # (4, n)
    nodes = src[links]  # (4, n)
    pos = np.arange(n)
    steps = []
    for j in range(rounds):
        live = [c for c in range(len(dec.cycles)) if 4 * j + c < chunks]
        lk = links[live].reshape(-1)
        by_link = np.argsort(lk)  # steps listed by link id, as the file writer orders them
        lk = lk[by_link]
        ch = np.repeat(np.array([4 * j + c for c in live], dtype=np.int64), n)[by_link]
        for s in range(n - 1):
            root = nodes[live][:, (pos - s) % n].reshape(-1)[by_link]
            steps.append(np.stack([lk, root, ch], axis=1))
    return Phase("allgather", steps)
