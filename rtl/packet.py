"""MultiWrite packet format (seed 004, Sections 4.1, 4.2 and 6.4).

A flit is ``flit_bits`` wide (a design parameter, 64 by default, the same at
every network size; :class:`~equimesh.rtl.design.Design` ``flit_bits``) plus
two framing bits, ``first`` and ``last``, which travel beside it like a link's
``valid``. A packet is ``1 + bitmap_flits + payload_flits`` flits on one link,
never interleaved with another packet on that link:

* flit 0, the header (``first`` = 1): ``opcode`` (WRITE or MULTIWRITE, seed 004
  Section 4.2: MultiWrite is a write with its own opcode), ``src`` (the
  injecting node) and ``seq`` (the source's sequence number; with ``src`` it
  names the write, and doubles as its address in the endpoints here), and
  ``stamp``, the cycle the source's router took the header, mod ``2**stamp_bits``
  (the rest of the flit, at most 32 bits; the endpoints measure latency with it);
* flits 1..``bitmap_flits``: the destination bitmap, ``flit_bits`` nodes per
  flit (flit ``1 + j`` holds bit ``i`` = node ``j * flit_bits + i``), so
  ``bitmap_flits = ceil(nodes / flit_bits)``. Seed 004 Section 6.4: beyond the
  64 ranks of its fixed header field the bitmap moves into the payload; a
  network of at most ``flit_bits`` nodes is the case of one bitmap flit, and
  every size goes through the same code. Relays rewrite each copy's bitmap
  flits to the destinations reached through that copy's egress port, and its
  opcode to WRITE when one destination is left (seed 004, Section 4.3.3, rule 2);
* then ``payload_flits`` payload words; the last one has ``last`` = 1.
"""

from __future__ import annotations

from amaranth.hdl import Shape, unsigned
from amaranth.lib import data, enum
from amaranth.utils import bits_for

__all__ = [
    "FLIT_BITS",
    "MAX_PAYLOAD_FLITS",
    "Opcode",
    "PacketError",
    "PacketFormat",
    "SEQ_BITS",
    "STAMP_BITS",
    "bitmap_overhead",
    "fixed_fields",
]

SEQ_BITS = 24  # a source's packets are numbered mod 2**24: no wrap within a 1M-cycle soak
FLIT_BITS = 64  # the default flit width (seed 004 Section 4.1: "for instance 64 bits")


class Opcode(enum.Enum, shape=1):
    """A header's operation (seed 004, Section 4.1), one bit.

    Attributes
    ----------
    WRITE : 0
        One destination, a standard write; a relay forwards it as it is.
    MULTIWRITE : 1
        A destination set in the bitmap; relays replicate it (Section 4.3).
    """

    WRITE = 0  # one destination (seed 004: a standard write)
    MULTIWRITE = 1  # a destination set; relays replicate it


class PacketError(ValueError):
    """A packet that cannot be built for this network (bad bitmap, missing destination, flit too narrow)."""


MAX_PAYLOAD_FLITS = 1 << 12  # every input buffer holds a whole packet


STAMP_BITS = 32  # at most: a header's injection cycle, for latency (mod 2**stamp_bits)


def fixed_fields(nodes: int) -> dict:
    """The header's fields every flit width must hold (flit 0 of a packet on ``nodes`` nodes).

    Parameters
    ----------
    nodes : int
        Nodes of the network (the ``src`` field's range).

    Returns
    -------
    dict
        ``opcode`` (:class:`Opcode`), ``src`` and ``seq`` (:data:`SEQ_BITS`) by name, as shapes of a
        ``StructLayout``.
    """
    return {"opcode": Opcode, "src": unsigned(bits_for(nodes - 1)), "seq": unsigned(SEQ_BITS)}


class PacketFormat:
    """Layouts of one network's packets.

    Parameters
    ----------
    nodes : nodes of the network (bits of the destination bitmap).
    payload_flits : payload flits per packet, >= 1.
    flit_bits : width of a flit's body (the header, a bitmap word or a payload word).
    """

    def __init__(self, nodes: int, payload_flits: int, flit_bits: int = FLIT_BITS):
        if nodes < 2:
            raise PacketError(f"a network needs at least 2 nodes (got {nodes})")
        if not 1 <= payload_flits <= MAX_PAYLOAD_FLITS:
            raise PacketError(f"a packet has 1..{MAX_PAYLOAD_FLITS} payload flits (got {payload_flits})")
        need = Shape.cast(data.StructLayout(fixed_fields(nodes))).width
        if flit_bits < need:
            raise PacketError(
                f"a {flit_bits}-bit flit cannot hold the header of a {nodes}-node network: "
                f"the minimum flit width is {need} bits"
            )
        self.stamp_bits = min(STAMP_BITS, flit_bits - need)
        self.header = data.StructLayout({**fixed_fields(nodes), "stamp": unsigned(self.stamp_bits)})
        self.nodes = nodes
        self.payload_flits = payload_flits
        self.width = flit_bits
        self.src_bits = bits_for(nodes - 1)
        self.bitmap_flits = -(-nodes // flit_bits)
        self.flit = data.StructLayout(
            {
                "first": 1,
                "last": 1,
                "body": data.UnionLayout({"header": self.header, "payload": unsigned(flit_bits)}),
            }
        )

    @property
    def packet_flits(self) -> int:
        return 1 + self.bitmap_flits + self.payload_flits

    # ----- Python side: the generator's packets and the scoreboard's checks -----
    def bitmap(self, dests, src: int) -> int:
        """The bitmap of a destination list; rejects nodes outside the network and the source itself."""
        m = 0
        for d in dests:
            if not 0 <= d < self.nodes:
                raise PacketError(f"destination {d} does not exist (nodes are 0..{self.nodes - 1})")
            if d == src:
                raise PacketError(f"node {src} cannot be a destination of its own packet")
            m |= 1 << d
        if m == 0:
            raise PacketError("a packet needs at least one destination")
        return m

    def check_bitmap(self, bitmap: int, src: int) -> None:
        if bitmap >> self.nodes:
            raise PacketError(
                f"bitmap {bitmap:#x} is wider than the network: bit {bitmap.bit_length() - 1} set, "
                f"but nodes are 0..{self.nodes - 1}"
            )
        self.bitmap([d for d in range(self.nodes) if bitmap >> d & 1], src)

    def bitmap_words(self, bitmap: int) -> list[int]:
        """The bitmap flits' bodies: word ``j`` holds nodes ``j * width`` .. ``(j + 1) * width - 1``."""
        mask = (1 << self.width) - 1
        return [(bitmap >> (j * self.width)) & mask for j in range(self.bitmap_flits)]

    def payload_word(self, src: int, seq: int, index: int) -> int:
        """Payload flit ``index`` (1-based) of packet (src, seq): ``index``, ``src`` and ``seq`` repeated over
        the word, so a corrupted bit is caught. ``rtl/packet_endpoints.py`` builds the same word in hardware."""
        unit_bits = 8 + self.src_bits + SEQ_BITS
        unit = (index & 0xFF) | (src << 8) | (seq << (8 + self.src_bits))
        word, shift = 0, 0
        while shift < self.width:
            word |= unit << shift
            shift += unit_bits
        return word & ((1 << self.width) - 1)

    def header_bits(self, opcode: Opcode, src: int, seq: int, stamp: int = 0) -> int:
        return (
            self.header.const({"opcode": opcode, "src": src, "seq": seq, "stamp": stamp & ((1 << self.stamp_bits) - 1)})
            .as_value()
            .value
        )

    def decode_header(self, word: int) -> dict:
        v = self.header.const(word & ((1 << Shape.cast(self.header).width) - 1))
        return {"opcode": Opcode(v.opcode), "src": int(v.src), "seq": int(v.seq)}

    def packet(self, opcode: Opcode, src: int, seq: int, bitmap: int) -> list[tuple[int, int, int]]:
        """Every flit of one packet as ``(first, last, body)``: the header, the bitmap words, the payload."""
        bodies = [
            self.header_bits(opcode, src, seq),
            *self.bitmap_words(bitmap),
            *(self.payload_word(src, seq, i) for i in range(1, self.payload_flits + 1)),
        ]
        return [(int(k == 0), int(k == len(bodies) - 1), b) for k, b in enumerate(bodies)]


def bitmap_overhead(nodes: int, payload_bytes: int) -> float:
    """The bitmap's share of a MultiWrite's payload when the bitmap travels in the payload (seed 004,
    Section 6.4: 1,024 bits of a 4,096-byte payload, 3.13 %): ``nodes`` bits over ``8 * payload_bytes``.

    Parameters
    ----------
    nodes : int
        Bits of the destination bitmap (one per node).
    payload_bytes : int
        Bytes of the payload.

    Returns
    -------
    float
        The fraction, ``nodes / (8 * payload_bytes)``.
    """
    return nodes / (8 * payload_bytes)
