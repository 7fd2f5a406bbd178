"""Default ring directions per size: the choice of Algorithm 1's ``anticlockwise`` flags with the
shortest lane-rule AllGather (seed 000, Section III-B: each edge's ring may run either way).

With the default ``cccc`` every EquiMesh that has a Hamiltonian decomposition runs the
ring-pipelined AllGather at the bound (:mod:`.ringpipe`), so the directions only matter where none
exists: sides of different parity (:mod:`.parity`), and 3 x C with C = 1 mod 4. There, ``auto`` runs XTree, whose
step count depends on the directions by a step or two, or a split schedule (:mod:`.split`; its tiles
are made for ``cccc``). Trying all 16 choices at every command
would multiply the synthesis time by 16, so it is done once, here, for K = 4 (the chunk count of
the headline results), and the sizes where another choice is strictly shorter are stored in
``data/ring_dirs.json``; :func:`~.topology.default_ring_dirs` reads them. ``--ring-dirs auto``
still searches all 16 for any other K or collective.

Regenerate: ``python -m equimesh.schedules.ringdirs [--max-side 16]`` (about 20 minutes on 2 cores),
or ``--sizes 4x7,...`` for some sizes only (after new stored schedules: :mod:`.library` runs a stored
schedule under any directions that a symmetry or the mirror maps it onto).
"""

from __future__ import annotations

import itertools

from .hamiltonian import cccc, may_decompose
from ..topology import EDGES, build, parse_ring_dirs

CHUNKS = 4
CHOICES = ["".join(p) for p in itertools.product("ca", repeat=len(EDGES))]   # cccc first


def needs_search(rows: int, cols: int) -> bool:
    """Sizes where ``cccc`` has no decomposition: sides of different parity
    (:func:`~.hamiltonian.may_decompose` is false), and 3 x C with C = 1 mod 4 (exact search)."""
    return not may_decompose(cccc(rows, cols)) or (3 in (rows, cols) and rows * cols // 3 % 4 == 1)


def best_choice(rows: int, cols: int) -> tuple[str, dict[str, int]]:
    """The choice with the fewest AllGather steps, and the steps of every choice. On a tie, the
    fewest AllReduce steps, that is the fewest ReduceScatter steps (it runs on the mirror, the
    opposite directions), then the first in :data:`CHOICES` (``cccc`` first)."""
    from ..synth import synthesize

    def topo(d: str):
        return build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(d))
    steps = {d: synthesize(topo(d), CHUNKS, "allgather").num_steps for d in CHOICES}
    fewest = min(steps.values())
    tied = [d for d in CHOICES if steps[d] == fewest]
    if len(tied) == 1:
        return tied[0], steps
    reducescatter = {d: synthesize(topo(d), CHUNKS, "reducescatter").num_steps for d in tied}
    return min(tied, key=lambda d: reducescatter[d]), steps
