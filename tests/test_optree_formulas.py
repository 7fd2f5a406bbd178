"""OpTree's closed forms (seed 002) by hand (issue 37): every expected value is worked out in a comment
from the formula the docstring cites, at the points where a rounding or a loop bound decides."""

import pytest

from equimesh.schedules.optree import (
    OpTreeError,
    k_star,
    ne_steps,
    osm_steps,
    proof_stage_steps,
    ring_steps,
    theorem1_steps,
    wrht_steps,
)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: osm_steps(1, 1), "the ring needs N >= 2 nodes (got 1)"),
        (lambda: osm_steps(2, 0), "the ring needs w >= 1 wavelengths (got 0)"),
        (lambda: theorem1_steps(8, 1, 0), "the tree needs k >= 1 stages (got 0)"),
        (lambda: proof_stage_steps(8, 1, 1, 2), "the tree radix must be m >= 2 (got 1)"),
        (lambda: proof_stage_steps(8, 1, 2, 0), "the tree needs k >= 1 stages (got 0)"),
    ],
)
def test_errors_are_exact(call, message):
    with pytest.raises(OpTreeError) as e:
        call()
    assert str(e.value) == message


def test_the_smallest_valid_ring():
    # N = 2, w = 1: ceil(4 / 8) = 1; k = 1 is the one-stage model
    assert osm_steps(2, 1) == 1 and theorem1_steps(2, 1, 1) == 1


# Theorem 1: ceil((2k - 1) N^(1 + 1/k) / (8w)). N = 64: k = 1: 4096 / 8 = 512; k = 2: 3 * 512 / 8 = 192;
# k = 3: 5 * 256 / 8 = 160; w = 2, k = 2: 96. N = 10, k = 1: 100 / 8 = 12.5 -> 13.
@pytest.mark.parametrize(
    "n,w,k,steps", [(64, 1, 1, 512), (64, 1, 2, 192), (64, 1, 3, 160), (64, 2, 2, 96), (10, 1, 1, 13)]
)
def test_theorem1(n, w, k, steps):
    assert theorem1_steps(n, w, k) == steps


# Lemma 3: k* = [(ln N + sqrt(ln N (ln N - 2))) / 2]. N = 7: ln 7 = 1.946 < 2 -> 1. N = 8: ln 8 = 2.079,
# sqrt(2.079 * 0.079) = 0.406, (2.079 + 0.406) / 2 = 1.243: ceiling 2, rounding 1. N = 1024: ln = 6.931,
# sqrt(6.931 * 4.931) = 5.846, 6.389: ceiling 7 (the paper's), rounding 6.
@pytest.mark.parametrize("n,ceiling,rounded", [(7, 1, 1), (8, 2, 1), (1024, 7, 6)])
def test_k_star(n, ceiling, rounded):
    assert (k_star(n), k_star(n, round)) == (ceiling, rounded)


def test_table1_ring_ne_osm():
    # Ring N - 1; NE ceil(N / 2); OSM ceil(N^2 / 8w): 25 / 8 -> 4, 256 / 16 = 16, 289 / 16 -> 19
    assert (ring_steps(8), ne_steps(7), ne_steps(8)) == (7, 4, 4)
    assert (osm_steps(5, 1), osm_steps(16, 2), osm_steps(17, 2)) == (4, 16, 19)
    assert all(type(v) is int for v in (osm_steps(5, 1), theorem1_steps(10, 1, 1)))


# Theorem 1's proof: stage 1 ceil(m^2 / 8w) ceil(N / m); stage j >= 2 m^(j-1) ceil(N / m^j) ceil(m^2 / 4w).
# N = 64, w = 1, m = 4: 2 * 16 = 32; 4 * 4 * 4 = 64; 16 * 1 * 4 = 64. N = 10, m = 3: 2 * 4 = 8; 3 * 2 * 3 = 18.
@pytest.mark.parametrize("n,w,m,k,steps", [(64, 1, 4, 3, [32, 64, 64]), (10, 1, 3, 2, [8, 18]), (10, 1, 3, 1, [8])])
def test_proof_stage_steps(n, w, m, k, steps):
    assert proof_stage_steps(n, w, m, k) == steps


# ----- OpTree: WRHT (seed 002, Table 1) at N = m^theta -----------------------------------------------
# m = 2w + 1, theta = ceil(log_m N): gather 1 + ceil((m^theta - m) / (m - 1)), plus (theta - 1) m^(theta-1)
# or theta m^(theta-1) broadcast steps.
# N = 9, w = 4: m = 9, theta = 1 (9 = 9^1): gather 1, broadcast 0 or 1 -> (1, 2).
# N = 10, w = 4: theta = 2: gather 1 + ceil(72 / 8) = 10, + 9 or 18 -> (19, 28).
# N = 25, w = 2: m = 5, theta = 2: gather 1 + ceil(20 / 4) = 6, + 5 or 10 -> (11, 16).
# N = 26, w = 2: theta = 3: gather 1 + ceil(120 / 4) = 31, + 50 or 75 -> (81, 106).
# N = 3, w = 1: m = 3, theta = 1 -> (1, 2); N = 4: theta = 2, gather 1 + ceil(6 / 2) = 4 -> (7, 10).
@pytest.mark.parametrize(
    "n,w,steps",
    [(9, 4, (1, 2)), (10, 4, (19, 28)), (25, 2, (11, 16)), (26, 2, (81, 106)), (3, 1, (1, 2)), (4, 1, (7, 10))],
)
def test_wrht_steps_at_powers_of_m(n, w, steps):
    assert wrht_steps(n, w) == steps
