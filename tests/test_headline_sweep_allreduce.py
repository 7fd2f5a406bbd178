"""The README's lane-rule allreduce claim at every size, K = 4 and 8 (see ``headline_sweep.py``)."""

import pytest
from headline_sweep import CHUNKS, CLAIMED_AT_BOUND, SIZES, check, chunk


def test_the_chunks_cover_the_claimed_sizes():
    assert sorted(s for i in range(CHUNKS) for s in chunk(i)) == sorted(SIZES)
    assert len(SIZES) == CLAIMED_AT_BOUND == 15 * 15 + 1


@pytest.mark.parametrize("k", [4, 8])
@pytest.mark.parametrize("i", range(CHUNKS))
def test_at_the_bound(i, k):
    assert check(chunk(i), k, "allreduce") == []
