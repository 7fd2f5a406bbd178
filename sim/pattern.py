"""The deterministic test data: every flit word is a hash of (input node, root, chunk, flit, word).

AllGather: node ``v``'s shard is ``data(v, v, c)``. AllToAll: node ``v``'s chunk field ``c`` (for
node ``c // K``) is ``data(v, v, c)``, and node ``c // K`` ends holding it. ReduceScatter / AllReduce:
node ``v``'s input for ``(root, c)`` is ``data(v, root, c)``; the result is the
wrapping 32-bit sum over ``v``. Words are full 32-bit values, so sums carry
and wrap.
"""

from __future__ import annotations

import numpy as np

from ..rtl.flit import WORD_BITS

__all__ = ["expected_chunks", "input_chunks"]

_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64: golden-ratio increment, then the finaliser
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & _M
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9) & _M
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB) & _M
    return x ^ (x >> np.uint64(31))


def input_chunks(node, root, chunk, chunk_flits: int, flit_bits: int) -> np.ndarray:
    """uint32 array [len(node), chunk_flits, words] of many input chunks (arrays of equal length).

    Word ``j`` of flit ``f`` is the low 32 bits of splitmix64 of (node, root, chunk, f, j).

    Parameters
    ----------
    node, root, chunk : array_like of int
        Equal lengths: the input node, and the ``(root, chunk)`` of each chunk.
    chunk_flits : int
        F, flits per chunk.
    flit_bits : int
        Bits per flit; words = flit_bits / 32.

    Returns
    -------
    numpy.ndarray
        uint32, shape (len(node), F, flit_bits / 32).
    """
    w = flit_bits // WORD_BITS
    node, root, chunk = (np.asarray(a, dtype=np.uint64).reshape(-1, 1, 1) for a in (node, root, chunk))
    f = np.arange(chunk_flits, dtype=np.uint64)[None, :, None]
    j = np.arange(w, dtype=np.uint64)[None, None, :]
    with np.errstate(over="ignore"):
        key = (((node * np.uint64(1 << 12) + root) * np.uint64(1 << 12) + chunk) * np.uint64(1 << 16) + f) * np.uint64(
            64
        ) + j
        return (_mix(key) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def expected_chunks(collective: str, nodes: int, root, chunk, chunk_flits: int, flit_bits: int) -> np.ndarray:
    """uint32 [len(root), chunk_flits, words]: what every holder of each ``(root, chunk)`` must hold.

    Parameters
    ----------
    collective : str
        ``"allgather"`` and ``"alltoall"``: the root's own chunk (the root is the source); otherwise the
        wrapping 32-bit sum over all nodes' inputs.
    nodes : int
        N.
    root, chunk : array_like of int
        Equal lengths.
    chunk_flits : int
        F, flits per chunk.
    flit_bits : int
        Bits per flit.

    Returns
    -------
    numpy.ndarray
        uint32, shape (len(root), F, flit_bits / 32).
    """
    root, chunk = np.asarray(root), np.asarray(chunk)
    if collective in ("allgather", "alltoall"):
        return input_chunks(root, root, chunk, chunk_flits, flit_bits)
    out = np.zeros((len(root), chunk_flits, flit_bits // WORD_BITS), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for v in range(nodes):
            out += input_chunks(np.full(len(root), v), root, chunk, chunk_flits, flit_bits)
    return out
