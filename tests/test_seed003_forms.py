"""Seed 003's closed forms (its Section 5 cost table, Sections 2-4, Appendix A) against the alpha-beta
simulator: three sizes per (topology, collective), small M for the alpha terms, large M for the
bandwidth terms, within 2 %. The formulas are written here from the seed, not taken from the code."""

import math

import pytest

from equimesh.sim.analytic.alphabeta import LinkModel
from equimesh.sim.analytic.seed003 import CASES, Case, simulate_case, sizes_for

A, B = 20e-9, 128e9  # seed 000, Table I
SMALL, LARGE = 8.0, 1e11


def seed003(topology, collective, algorithm, shape, m):
    """Seed 003, Section 5 table (star rows: Section 2; torus: 3.2-3.5 and Appendix A; mesh: 4.2)."""
    n = math.prod(shape)
    w = m / B
    if topology == "star":
        lg = math.ceil(math.log2(n))
        return {
            "ring": {
                "allgather": (n - 1) * A + (n - 1) / n * w,
                "reducescatter": (n - 1) * A + (n - 1) / n * w,
                "allreduce": 2 * (n - 1) * A + 2 * (n - 1) / n * w,
            },
            "rabenseifner": {"allreduce": 2 * lg * A + 2 * (n - 1) / n * w},
            "binomial": {"broadcast": lg * A + w, "reduce": lg * A + w},
            "chain": {"broadcast": (n - 1) * A + w},
        }[algorithm][collective]
    hops = sum(d - 1 for d in shape)
    if algorithm == "rabenseifner":
        return 2 * sum(math.ceil(math.log2(d)) for d in shape) * A + 2 * (n - 1) / n * w
    if algorithm == "bidir":
        return sum(d // 2 for d in shape) * A + w
    return {
        "allgather": hops * A + (n - 1) / n * w,
        "reducescatter": hops * A + (n - 1) / n * w,
        "allreduce": 2 * hops * A + 2 * (n - 1) / n * w,
        "broadcast": hops * A + w,
        "reduce": hops * A + w,
    }[collective]


# A binomial tree's root sends all M through its one port once per child, ceil(log2 N) times: its
# bandwidth term is ceil(log2 N) M / B, not the table's M / B (docs/paper.md); its alpha term is checked.
REGIMES = [
    (c, s, r)
    for c in CASES
    for s in sizes_for(c)
    for r in ("alpha", "beta")
    if not (c.algorithm == "binomial" and r == "beta")
]


@pytest.mark.parametrize(
    "case,shape,regime",
    REGIMES,
    ids=[f"{c.topology}-{c.collective}-{c.algorithm}-{'x'.join(map(str, s))}-{r}" for c, s, r in REGIMES],
)
def test_simulator_matches_seed003(case, shape, regime):
    m = SMALL if regime == "alpha" else LARGE
    sim = simulate_case(case, shape, m, LinkModel(A, B), regime)
    assert sim == pytest.approx(seed003(case.topology, case.collective, case.algorithm, shape, m), rel=0.02)


def test_every_topology_and_collective_is_covered():
    got = {(c.topology, c.collective) for c in CASES}
    want = {
        (t, c)
        for t in ("star", "torus", "mesh")
        for c in ("allgather", "reducescatter", "allreduce", "broadcast", "reduce")
    }
    assert want <= got


def test_binomial_bandwidth_term_is_log2n_times_m_over_b():
    # hand: 16 nodes, one segment, rounds 1, 2, 4, 8 apart: 4 (alpha + M/B)
    sim = simulate_case(Case("star", "broadcast", "binomial", ""), (16,), LARGE, LinkModel(A, B), "beta")
    assert sim == pytest.approx(4 * (A + LARGE / B), rel=1e-9)


def test_seed003_printed_numbers():
    # Appendix A, point 4: N = 512 (8x8x8), alpha = 0.5 us, BW = 900 GB/s, M = 16 MB:
    # ring-per-dim AR 21 us alpha + 35.5 us BW = 57 us; Rabenseifner-per-dim 9 us alpha + 35.5 us BW = 45 us
    a, bw, m, n = 0.5e-6, 900e9, 16e6, 512
    bw_term = 2 * (n - 1) / n * m / bw
    assert 2 * 3 * 7 * a == pytest.approx(21e-6) and bw_term == pytest.approx(35.5e-6, rel=0.01)
    assert 2 * 3 * 3 * a == pytest.approx(9e-6)
