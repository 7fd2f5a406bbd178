"""The deterministic test data: every flit word is a hash of (input node, root, chunk, flit, word).

AllGather: node ``v``'s shard is ``data(v, v, c)``. ReduceScatter / AllReduce:
node ``v``'s input for ``(root, c)`` is ``data(v, root, c)``; the result is the
wrapping 32-bit sum over ``v``. Words are full 32-bit values, so sums carry
and wrap.
"""

from __future__ import annotations

import numpy as np

from ..rtl.flit import WORD_BITS

_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64: golden-ratio increment, then the finaliser
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & _M
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9) & _M
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB) & _M
    return x ^ (x >> np.uint64(31))


def words(node, root, chunk, chunk_flits: int, flit_bits: int) -> np.ndarray:
    """uint32 array [chunk_flits, words] of one input chunk."""
    w = flit_bits // WORD_BITS
    f = np.arange(chunk_flits, dtype=np.uint64)[:, None]
    j = np.arange(w, dtype=np.uint64)[None, :]
    key = ((((np.uint64(node) * np.uint64(1 << 12) + np.uint64(root)) * np.uint64(1 << 12) + np.uint64(chunk))
            * np.uint64(1 << 16) + f) * np.uint64(64) + j)
    with np.errstate(over="ignore"):
        return (_mix(key) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def pack(flit_words: np.ndarray) -> int:
    """One flit (uint32 words, word 0 in the low bits) as an integer."""
    return sum(int(x) << (WORD_BITS * j) for j, x in enumerate(flit_words))


def expected_chunk(collective: str, nodes: int, root: int, chunk: int, chunk_flits: int, flit_bits: int) -> np.ndarray:
    """What every holder of (root, chunk) must hold at the end."""
    if collective == "allgather":
        return words(root, root, chunk, chunk_flits, flit_bits)
    with np.errstate(over="ignore"):
        return sum((words(v, root, chunk, chunk_flits, flit_bits) for v in range(nodes)),
                   np.zeros((chunk_flits, flit_bits // WORD_BITS), dtype=np.uint32))
