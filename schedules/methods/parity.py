"""Why an EquiMesh whose sides have different parity has no Hamiltonian decomposition.

The ring-pipelined AllGather (:mod:`.ringpipe`) needs the EquiMesh's links split into 4
arc-disjoint directed Hamiltonian cycles (seed 000, Section III-B gives every node in- and
out-degree 4). This module proves, per topology, that none exists, by a sign argument:

1. **Tail/head graph.** Split every node ``v`` into a tail ``v+`` and a head ``v-``; every link
   ``u -> w`` becomes the edge ``u+ w-``. This bipartite multigraph ``B`` is 4-regular. A
   *1-factorization* of ``B`` (its edges in 4 perfect matchings) is the same thing as a split of the
   links into 4 *cycle covers* (every node one in- and one out-link of each colour); matching ``c``
   is a permutation ``tau_c`` of the nodes (``u -> w``).
2. **Sign.** The sign of a 1-factorization is ``prod_c sgn(tau_c) = (-1)^(4N - z)``, ``z`` the
   number of cycles of all 4 covers together. A Hamiltonian decomposition has ``z = 4``: sign +1.
3. **Invariance.** In a *planar* r-regular multigraph every r-edge-colouring has the same sign
   (Ellingham and Goddyn, "List edge colourings of some 1-factorable multigraphs", Combinatorica
   16 (1996), extending Scheim's theorem on planar cubic graphs). ``B`` is planar for every
   EquiMesh tried: mesh links join the two checkerboard colours, so they form two disjoint grids
   (black tails with white heads, white tails with black heads), and the rings join the two
   grids' outer boundaries like a sphere's two hemispheres (``tail_head_planar`` checks it with
   networkx for the topology at hand).
4. **Value.** So one 1-factorization gives the sign of all of them (``factorization_sign``). It
   is -1 at every size with sides of different parity and +1 at every size with sides of equal
   parity, for all 16 ring directions (tests: every size up to 10x10 and all directions; the
   command computes it for the size at hand). A sign of -1 means every split into cycle covers
   has an odd number of cycles, never 4: no Hamiltonian decomposition.

The tests check step 3 without the theorem at small sizes, by enumerating every 1-factorization
(2x3: 1536, 2x5: 147456, up to the colours of node 0's out-links), and show that a random
non-planar 4-regular digraph has factorizations of both signs, so the invariance is a property of
the EquiMesh, not of the computation.

The sign says nothing at 3 x C with C = 1 mod 4 (sign +1, no decomposition by exact search), and
nothing about AllGather schedules at the bound that are not ring-pipelined: CP-SAT found such
schedules at 2x3, 3x4 and 2x5 (:mod:`.library`).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..topology import Topology

__all__ = [
    "DEGREE",
    "factorization_sign",
    "no_decomposition",
    "one_factorization",
    "permutation_sign",
    "tail_head_planar",
]

DEGREE = 4


def _check_regular(topo: Topology) -> None:
    if not ((topo.in_degree == DEGREE).all() and (topo.out_degree == DEGREE).all()):
        raise ValueError(f"the {topo.name} is not {DEGREE}-regular: no 1-factorization into {DEGREE} cycle covers")


def permutation_sign(perm: np.ndarray) -> int:
    """``(-1)^(n - cycles)`` of a permutation given as an array ``i -> perm[i]``.

    Parameters
    ----------
    perm : numpy.ndarray
        Shape (n,): a permutation of 0..n-1.

    Returns
    -------
    int
        +1 or -1.
    """
    seen = np.zeros(len(perm), dtype=bool)
    cycles = 0
    for i in range(len(perm)):
        if not seen[i]:
            cycles += 1
            j = i
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return -1 if (len(perm) - cycles) % 2 else 1


def one_factorization(topo: Topology) -> list[np.ndarray]:
    """4 cycle covers of a 4-regular topology, as link-index arrays ``cover[c][u]`` = the link of
    colour ``c`` leaving ``u``: perfect matchings peeled off the tail/head graph one at a time
    (a regular bipartite multigraph always has one, by Koenig's theorem).

    Parameters
    ----------
    topo : Topology
        In- and out-degree 4 at every node.

    Returns
    -------
    list of numpy.ndarray
        4 int64 arrays of shape (N,); together every link once.

    Raises
    ------
    ValueError
        If the topology is not 4-regular.
    """
    _check_regular(topo)
    n = topo.nodes
    left = [list(range(len(topo.links)))]  # links not yet coloured
    covers = []
    for _ in range(DEGREE):
        rest = left[-1]
        src, dst = topo.link_src[rest], topo.link_dst[rest]
        counts = csr_matrix((np.ones(len(rest)), (src, dst)), shape=(n, n))  # duplicates add up
        match = maximum_bipartite_matching(counts, perm_type="column")
        if (match < 0).any():
            raise AssertionError("a regular bipartite multigraph without a perfect matching")
        cover = np.full(n, -1, dtype=np.int64)
        for i, link in enumerate(rest):
            u = src[i]
            if cover[u] < 0 and dst[i] == match[u]:
                cover[u] = link
        covers.append(cover)
        used = set(cover.tolist())
        left.append([link for link in rest if link not in used])
    return covers


def factorization_sign(topo: Topology) -> int:
    """The sign ``prod_c sgn(tau_c)`` of one 1-factorization of the tail/head graph (module docstring).

    Parameters
    ----------
    topo : Topology
        A 4-regular topology.

    Returns
    -------
    int
        +1 or -1; -1 (with a planar tail/head graph) rules out a Hamiltonian decomposition.

    Raises
    ------
    ValueError
        If the topology is not 4-regular.
    """
    sign = 1
    for cover in one_factorization(topo):
        sign *= permutation_sign(topo.link_dst[cover])
    return sign


def tail_head_planar(topo: Topology) -> bool:
    """Whether the tail/head graph is planar (parallel links do not change planarity).

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    bool
        By ``networkx.check_planarity``.
    """
    import networkx as nx

    graph = nx.Graph()
    graph.add_edges_from(((0, int(u)), (1, int(w))) for u, w in zip(topo.link_src, topo.link_dst))
    return nx.check_planarity(graph)[0]


@functools.lru_cache(maxsize=256)
def _proof(rows: int, cols: int, dirs: str) -> str | None:
    from ..topology import build, parse_ring_dirs

    topo = build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs))
    if factorization_sign(topo) == 1 or not tail_head_planar(topo):
        return None
    return "proven none: every split of its links into 4 cycle covers has an odd number of cycles, docs/schedules.md"


def no_decomposition(topo: Topology) -> str | None:
    """One line proving that the EquiMesh (or its mirror) ``topo`` has no Hamiltonian decomposition,
    or None if the sign argument does not rule one out.

    Parameters
    ----------
    topo : Topology
        Other kinds give None.

    Returns
    -------
    str or None
        The line (it cites docs/schedules.md), computed once per size and ring directions.
    """
    from ..topology import format_ring_dirs

    if topo.kind not in ("equimesh", "mirror-equimesh"):
        return None
    base = topo if topo.kind == "equimesh" else topo.mirror()  # reversal maps decompositions 1:1
    return _proof(base.rows, base.cols, format_ring_dirs(base.ring_dirs))
