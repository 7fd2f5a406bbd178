"""The sign argument of schedules/methods/parity.py: sides of different parity have no Hamiltonian decomposition.

The invariance of the sign (Ellingham-Goddyn for planar regular multigraphs) is checked here
without the theorem by enumerating every 1-factorization at small sizes, and its failure on a
non-planar digraph shows that the test can tell the difference."""

import itertools
import random
from types import SimpleNamespace

import numpy as np
import pytest

from equimesh.schedules.methods.hamiltonian import cccc, decompose, may_decompose
from equimesh.schedules.methods.parity import (
    factorization_sign,
    no_decomposition,
    one_factorization,
    permutation_sign,
    tail_head_planar,
)
from equimesh.schedules.topology import build, parse_ring_dirs

DIRS = ["".join(p) for p in itertools.product("ca", repeat=4)]


def _signs_of_all_factorizations(src: list[int], dst: list[int], n: int) -> dict[int, int]:
    """Every proper 4-colouring of the links (each node: 4 distinct out-colours and 4 distinct
    in-colours), node 0's out-links fixed to colours 0..3; count them by the product of the signs
    of the 4 colour classes as permutations (an independent backtracking enumeration)."""
    links = len(src)
    colour = [-1] * links
    out_used, in_used = [0] * n, [0] * n
    first = [a for a in range(links) if src[a] == 0]
    for c, a in enumerate(first):
        colour[a] = c
        out_used[0] |= 1 << c
        in_used[dst[a]] |= 1 << c
    order = sorted((a for a in range(links) if a not in first), key=lambda a: (min(src[a], dst[a]), src[a], dst[a]))
    counts = {1: 0, -1: 0}

    def sign_of_colouring() -> int:
        s = 1
        for c in range(4):
            perm = [0] * n
            for a in range(links):
                if colour[a] == c:
                    perm[src[a]] = dst[a]
            s *= permutation_sign(np.array(perm))
        return s

    def rec(i: int) -> None:
        if i == len(order):
            counts[sign_of_colouring()] += 1
            return
        a = order[i]
        u, w = src[a], dst[a]
        for c in range(4):
            bit = 1 << c
            if not (out_used[u] | in_used[w]) & bit:
                colour[a] = c
                out_used[u] |= bit
                in_used[w] |= bit
                rec(i + 1)
                out_used[u] &= ~bit
                in_used[w] &= ~bit
        colour[a] = -1

    rec(0)
    return counts


@pytest.mark.parametrize("rows, cols, total", [(2, 3, 1536), (2, 4, 16384), (3, 3, 65536)])
def test_every_1_factorization_has_the_sign_of_one(rows, cols, total):
    t = build("equimesh", rows, cols)
    counts = _signs_of_all_factorizations(t.link_src.tolist(), t.link_dst.tolist(), t.nodes)
    assert counts[1] + counts[-1] == total
    expected = factorization_sign(t)
    assert counts[-expected] == 0
    assert expected == (1 if rows % 2 == cols % 2 else -1)


def test_a_non_planar_digraph_has_factorizations_of_both_signs():
    rng = random.Random(3)
    n, src, dst = 6, [], []
    for _ in range(4):
        perm = list(range(n))
        rng.shuffle(perm)
        src += list(range(n))
        dst += perm
    counts = _signs_of_all_factorizations(src, dst, n)
    assert counts[1] > 0 and counts[-1] > 0
    topo = SimpleNamespace(nodes=n, link_src=np.array(src), link_dst=np.array(dst))
    assert not tail_head_planar(topo)


@pytest.mark.parametrize("rows", range(2, 11))
def test_sign_is_minus_one_exactly_when_the_sides_differ_in_parity(rows):
    for cols in range(2, 11):
        for dirs in DIRS:
            t = build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs))
            assert tail_head_planar(t), (rows, cols, dirs)
            assert factorization_sign(t) == (1 if rows % 2 == cols % 2 else -1), (rows, cols, dirs)
            assert (no_decomposition(t) is None) == (rows % 2 == cols % 2)


def test_one_factorization_is_4_cycle_covers_of_the_links():
    t = build("equimesh", 5, 6)
    covers = one_factorization(t)
    assert sorted(np.concatenate(covers).tolist()) == list(range(len(t.links)))
    for cover in covers:
        assert (t.link_src[cover] == np.arange(t.nodes)).all()
        assert sorted(t.link_dst[cover].tolist()) == list(range(t.nodes))


@pytest.mark.parametrize("rows, cols", [(4, 4), (5, 7), (9, 11), (2, 6)])
def test_a_hamiltonian_decomposition_has_sign_plus_one(rows, cols):
    t = cccc(rows, cols)
    dec = decompose(t)
    sign = 1
    for cycle in dec.cycles:
        perm = np.empty(t.nodes, dtype=np.int64)
        perm[t.link_src[cycle]] = t.link_dst[cycle]
        sign *= permutation_sign(perm)
    assert sign == factorization_sign(t) == 1


def test_the_proof_covers_large_sizes_and_mirrors_and_stops_the_search():
    assert no_decomposition(build("equimesh", 31, 32)) is not None
    assert no_decomposition(build("mirror-equimesh", 7, 6)) is not None
    assert no_decomposition(build("equimesh", 3, 5)) is None  # sign +1: only the exact search rules it out
    assert not may_decompose(build("equimesh", 6, 7))
    assert decompose(build("equimesh", 6, 7), time_limit=0.01) is None
