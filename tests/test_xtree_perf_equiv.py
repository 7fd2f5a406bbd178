"""XTree's vectorized internals against plain reference versions; links-only schedules against
digests recorded with the implementation before the speed-up (commit e093175): same inputs, same
schedule; lane-aware schedules against the step counts before lanes were matched first."""

import hashlib

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from equimesh.schedules.methods import xtree as xt
from equimesh.schedules.schedule import Schedule
from equimesh.schedules.storage import check_storage
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def _reference_candidates(U, start, limit):
    """Per link: words start, start+1, ... (wrapping) while fewer than ``limit`` bits were taken;
    each word's set bits ascending."""
    L, W = U.shape
    rows, cols = [], []
    for link in range(L):
        taken = 0
        for j in range(W):
            if taken >= limit:
                break
            k = (int(start[link]) + j) % W
            word = int(U[link, k])
            for b in range(64):
                if word >> b & 1:
                    rows.append(link)
                    cols.append(k * 64 + b)
                    taken += 1
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


def _random_words(rng, L, W):
    density = rng.random() * rng.random((L, 1, 1))
    bits = rng.random((L, W, 64)) < density
    return np.packbits(bits, axis=2, bitorder="little").view(np.uint64).reshape(L, W)


@pytest.mark.parametrize("seed", range(40))
def test_candidates_match_reference(seed):
    rng = np.random.default_rng(seed)
    W = int(rng.integers(1, 9)) if seed % 10 else 260  # 260 words: the int32 prefix sums
    L = int(rng.integers(1, 40)) if seed % 10 else 3
    U = _random_words(rng, L, W)
    start = rng.integers(0, W, L)
    UT = np.ascontiguousarray(U.T)
    for limit in (1, 16, int(rng.integers(1, 64 * W + 1)), 64 * W, 64 * W + 5):
        got = xt._candidates(UT, np.bitwise_count(UT), start, limit)
        want = _reference_candidates(U, start, limit)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), limit


def _reference_match(rows, cols, L, ncols, cap, perm):
    """The matrix built by sorting: rows in the order ``perm``, each row's columns in input order,
    repeated ``cap`` times with offsets ``i * ncols``."""
    inv = np.empty(L, dtype=np.int64)
    inv[perm] = np.arange(L)
    r = np.concatenate([inv[rows]] * cap)
    c = np.concatenate([cols + ncols * i for i in range(cap)])
    o = np.argsort(r, kind="stable")
    r, c = r[o], c[o]
    indptr = np.zeros(L + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=L), out=indptr[1:])
    m = csr_matrix((np.ones(len(r), dtype=np.int8), c, indptr), shape=(L, ncols * cap))
    match = maximum_bipartite_matching(m, perm_type="column")[inv]
    return np.where(match >= 0, match % ncols, -1)


@pytest.mark.parametrize("seed", range(20))
def test_match_matches_reference(seed):
    rng = np.random.default_rng(seed)
    L, ncols, cap = int(rng.integers(1, 60)), int(rng.integers(1, 80)), int(rng.integers(1, 4))
    per = np.minimum(rng.integers(0, 6, L), ncols)
    rows = np.repeat(np.arange(L), per)
    cols = np.concatenate([rng.choice(ncols, size=p, replace=False) for p in per]).astype(np.int64)
    perm = rng.permutation(L)
    assert np.array_equal(xt._match(rows, cols, L, ncols, cap, perm), _reference_match(rows, cols, L, ncols, cap, perm))


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "overflow"])
def test_incremental_useful_chunks_match_recomputation(kind):
    topo = build(kind, 4, 5)
    rng = np.random.default_rng(1)
    st = xt._State(topo, 3, False, rng)
    src, dst = topo.link_src, topo.link_dst
    for _ in range(6):
        # deliver a random useful chunk on a random half of the links (to each node once)
        seen, nodes, chunks = set(), [], []
        for l in rng.permutation(len(src))[: len(src) // 2]:
            bits = np.flatnonzero(np.unpackbits(st.UT[:, l].view(np.uint8), bitorder="little"))
            if len(bits):
                x = int(st.chunk_at[rng.choice(bits)])
                if (dst[l], x) not in seen:
                    seen.add((dst[l], x))
                    nodes.append(dst[l])
                    chunks.append(x)
        st.give(np.array(nodes, dtype=np.int64), np.array(chunks, dtype=np.int64))
        U = st.P[src] & ~st.P[dst]
        assert np.array_equal(st.UT, U.T)
        assert np.array_equal(st.pcT, np.bitwise_count(U.T))
        held = np.unpackbits(st.P.view(np.uint8), axis=1, bitorder="little").sum(axis=0)
        assert np.array_equal(st.held, held)


def _digest(phase):
    h = hashlib.sha256()
    for s in phase.steps:
        a = np.asarray(s, dtype=np.int64).reshape(-1, 3)
        h.update(np.int64(len(a)).tobytes())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


# (kind, rows, cols, K, lanes, steps, digest of the schedule) from the implementation before the speed-up
BEFORE = [
    ("equimesh", 2, 3, 4, False, 5, "90f34f05c3badeec"),
    ("equimesh", 4, 4, 4, False, 15, "0eaa5e9ac7c49f85"),
    ("mesh", 5, 5, 1, False, 12, "8dbe1656447628e6"),
    ("torus", 3, 5, 2, False, 8, "df170e96d5d7b66a"),
    ("overflow", 8, 8, 4, False, 64, "b9f59465672158ac"),
    ("equimesh", 16, 16, 4, False, 255, "5b5f0a9a45ecb7bb"),
]


@pytest.mark.parametrize("kind,rows,cols,chunks,lanes,steps,digest", BEFORE)
def test_schedule_unchanged_by_the_speedup(kind, rows, cols, chunks, lanes, steps, digest):
    ph = xt.xtree(build(kind, rows, cols), chunks, lanes=lanes)
    assert (ph.num_steps, _digest(ph)) == (steps, digest)


# (kind, rows, cols, K, steps before lanes were matched first, steps now) with the storage rule
LANES = [
    ("equimesh", 2, 3, 4, 6, 6),
    ("equimesh", 4, 4, 4, 17, 16),
    ("equimesh", 3, 5, 4, 16, 15),
    ("overflow", 4, 5, 4, 20, 19),
    ("torus", 4, 4, 5, 20, 19),
    ("mesh", 3, 3, 3, 13, 12),
    ("equimesh", 4, 4, 1, 5, 5),  # growth limit 4: one matching, as before
]


@pytest.mark.parametrize("kind,rows,cols,chunks,before,now", LANES)
def test_lanes_first_steps_fit_storage_and_do_not_get_longer(kind, rows, cols, chunks, before, now):
    topo = build(kind, rows, cols)
    ph = xt.xtree(topo, chunks, lanes=True)
    s = Schedule("allgather", "xtree", chunks, topo, [ph], {"storage": "lanes"})
    verify(s)
    check_storage(s)
    assert ph.num_steps == now <= before
