"""Flits and links.

A flit is ``flit_bits`` wide (default 64) and is read as ``flit_bits / 32``
32-bit words: ReduceScatter adds flits word by word, wrapping at 2**32, so the
hardware sum is bit-exact against an integer model (seed 000, Section II-B).
A link is a registered ``valid`` bit and a flit; one flit per cycle. A link that
also carries packets adds the receiver's ``ready``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["WORD_BITS", "add_flits", "flit_layout", "link_signature"]

WORD_BITS = 32


def flit_layout(flit_bits: int = 64) -> data.StructLayout:
    """The layout of one flit: ``words``, ``flit_bits / 32`` unsigned 32-bit words, word 0 in the low bits.

    Parameters
    ----------
    flit_bits : int
        A positive multiple of 32 (default 64).

    Returns
    -------
    amaranth.lib.data.StructLayout

    Raises
    ------
    ValueError
        If ``flit_bits`` is not a positive multiple of 32.
    """
    if flit_bits < WORD_BITS or flit_bits % WORD_BITS:
        raise ValueError(f"flit width must be a positive multiple of {WORD_BITS} bits (got {flit_bits})")
    return data.StructLayout({"words": data.ArrayLayout(unsigned(WORD_BITS), flit_bits // WORD_BITS)})


def link_signature(flit_bits: int = 64, ready: bool = False) -> wiring.Signature:
    """One direction of a link, seen from its sender: ``flit`` is meaningful when ``valid`` is high.

    ``ready``: the receiver's ready, for a link that also carries packets (valid/ready flow control,
    ``rtl/packet_router.py``); scheduled flits never wait for it.

    Parameters
    ----------
    flit_bits : int
        The flit width, a positive multiple of 32.
    ready : bool
        Add the receiver's ``ready`` (``In(1)``).

    Returns
    -------
    amaranth.lib.wiring.Signature
        ``valid`` (``Out(1)``), ``flit`` (``Out(flit_layout(flit_bits))``) and, with ``ready``, ``ready``.
    """
    members = {"valid": Out(1), "flit": Out(flit_layout(flit_bits))}
    if ready:
        members["ready"] = In(1)
    return wiring.Signature(members)


def add_flits(flits, flit_bits: int):
    """Word-wise wrapping 32-bit sum of several flits (a list of flit views); returns a flit value.

    The ReduceScatter sum, bit-exact against an integer model (seed 000, Section II-B).

    Parameters
    ----------
    flits : list
        At least one view of :func:`flit_layout` (``.words`` indexable).
    flit_bits : int
        The flit width, a multiple of 32.

    Returns
    -------
    amaranth.hdl.Value
        ``flit_bits`` wide: per word the sum modulo 2**32, word 0 in the low bits.
    """
    words = []
    for j in range(flit_bits // WORD_BITS):
        acc = flits[0].words[j]
        for f in flits[1:]:
            acc = (acc + f.words[j])[:WORD_BITS]
        words.append(acc)
    return Cat(*words)
