"""The README's headline sweep (issue 37), shared by ``test_headline_sweep_allgather.py`` and
``test_headline_sweep_allreduce.py`` (two files, so that ``pytest -n auto --dist loadfile`` runs them on
two workers).

The README ("AllGather the RTL can run (lane rule), K = 4 and 8" and "AllReduce ..., lane rule") claims
efficiency 1.000 -- steps equal to the bound -- at every R x C EquiMesh with 2 <= R, C <= 16 and at
32x32: 225 + 1 = 226 sizes per K and collective. Each size's schedule is synthesized as
``equimesh bench schedules --kinds equimesh --chunks K --algorithms auto --lanes`` does
(``synthesize(build("equimesh", R, C), K, collective, "auto", lanes=True)``), then checked by ``verify``
and ``check_storage``, and its step count compared with a bound derived here, not by ``lower_bound``:

Seed 000, Section III-A: an AllGather takes at least max(D, ceil(K (N - 1) / min in-degree)) steps (every
node receives K (N - 1) chunks, at most one per in-link per step; the farthest chunk needs D hops); a
ReduceScatter the same with the out-degree (every node sends K (N - 1) partials). The EquiMesh holds the
R x C mesh's links (checked below), so D <= R + C - 2, and K (N - 1) / 4 >= N - 1 = RC - 1 > R + C - 2
for K >= 4 and R, C >= 2 ((R - 1)(C - 1) >= 1): the degree term decides. Every node has in- and
out-degree 4 (Algorithm 1: a corner has 2 mesh links and 2 rings, an edge node 3 and 1, an inner node 4
and none; counted below). So the bound is K (N - 1) / 4 steps for AllGather and twice that for
AllReduce (ReduceScatter, then AllGather).
"""

from __future__ import annotations

from collections import Counter

from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import Topology, build
from equimesh.schedules.verify import verify

SIZES = [(r, c) for r in range(2, 17) for c in range(2, 17)] + [(32, 32)]
# The README's claim: at the bound at all 225 sizes up to 16x16 and at 32x32, for each K and collective.
CLAIMED_AT_BOUND = 226
CHUNKS = 8  # tests per (collective, K)


def chunk(i: int) -> list[tuple[int, int]]:
    return SIZES[i::CHUNKS]


def bound(t: Topology, k: int, collective: str) -> int:
    """The step bound of the module docstring for the EquiMesh ``t``, from the definition and a count of
    its links."""
    rows, cols = t.rows, t.cols
    pairs = {(l.src, l.dst) for l in t.links}
    for r in range(rows):  # the mesh's links: D <= R + C - 2
        for c in range(cols):
            v = r * cols + c
            for w in ([v + 1] if c + 1 < cols else []) + ([v + cols] if r + 1 < rows else []):
                assert (v, w) in pairs and (w, v) in pairs
    n = rows * cols
    deg_in, deg_out = Counter(l.dst for l in t.links), Counter(l.src for l in t.links)
    assert set(deg_in.values()) == set(deg_out.values()) == {4} and len(deg_in) == len(deg_out) == n
    per_phase = -(-k * (n - 1) // 4)
    assert per_phase > rows + cols - 2  # the diameter term cannot decide
    return per_phase * (2 if collective == "allreduce" else 1)


def check(sizes, k: int, collective: str) -> list[str]:
    """Every size's schedule verified, storage-checked and at the bound; the misses, as text."""
    off = []
    for r, c in sizes:
        t = build("equimesh", r, c)
        s = synthesize(t, k, collective, "auto", lanes=True)
        verify(s)
        check_storage(s)
        want = bound(t, k, collective)
        if s.num_steps != want:
            off.append(f"{r}x{c}: {s.num_steps} steps, bound {want}")
    return off
