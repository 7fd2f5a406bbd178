"""MultiWrite packet format (seed 004, Section 4.1 and 4.2).

A packet is ``1 + payload_flits`` flits on one link, never interleaved with
another packet on that link:

* flit 0, the header (``first`` = 1): ``opcode`` (WRITE or MULTIWRITE, seed 004
  Section 4.2: MultiWrite is a write with its own opcode), ``src`` (the
  injecting node), ``seq`` (the source's sequence number; with ``src`` it names
  the write, and doubles as its address in the endpoints here), and ``bitmap``
  (bit i = node i, seed 004 Section 4.1: "a fixed-size field ... to hold a
  bitmap"). Relays rewrite ``bitmap`` per copy to the destinations reached
  through that copy's egress port; a copy whose bitmap has one bit is a plain
  write (seed 004, Section 4.3.3, rule 2).
* flits 1..payload_flits (``first`` = 0): ``payload`` words; the last one has
  ``last`` = 1.

Width. The flit (phit) is as wide as the header, and the bitmap has exactly one
bit per node of the network, so the header grows with the network: 16 bits of
bitmap on a 4x4, 64 on an 8x8 (the 64-bit field of seed 004 Section 6.4 covers
8x8 and 5x11). A network larger than a chosen phit would instead carry the
bitmap over ``ceil(nodes / bitmap_bits)`` header flits; this model keeps one
header flit and widens it, so a relay decides its copies in one cycle.
"""

from __future__ import annotations

from amaranth.hdl import Shape, unsigned
from amaranth.lib import data, enum
from amaranth.utils import bits_for

SEQ_BITS = 24  # a source's packets are numbered mod 2**24: no wrap within a 1M-cycle soak


class Opcode(enum.Enum, shape=1):
    WRITE = 0       # one destination (seed 004: a standard write)
    MULTIWRITE = 1  # a destination set; relays replicate it


class PacketError(ValueError):
    """A packet that cannot be built for this network (bad bitmap, missing destination)."""


MAX_PAYLOAD_FLITS = 1 << 12  # every input buffer holds a whole packet


class PacketFormat:
    """Layouts of one network's packets. ``nodes`` sets the bitmap width; ``payload_flits`` >= 1."""

    def __init__(self, nodes: int, payload_flits: int):
        if nodes < 2:
            raise PacketError(f"a network needs at least 2 nodes (got {nodes})")
        if not 1 <= payload_flits <= MAX_PAYLOAD_FLITS:
            raise PacketError(f"a packet has 1..{MAX_PAYLOAD_FLITS} payload flits (got {payload_flits})")
        self.nodes = nodes
        self.payload_flits = payload_flits
        self.src_bits = bits_for(nodes - 1)
        self.header = data.StructLayout({
            "opcode": Opcode,
            "src": unsigned(self.src_bits),
            "seq": unsigned(SEQ_BITS),
            "bitmap": unsigned(nodes),
        })
        self.width = Shape.cast(self.header).width
        self.flit = data.StructLayout({
            "first": 1,
            "last": 1,
            "body": data.UnionLayout({"header": self.header, "payload": unsigned(self.width)}),
        })

    @property
    def packet_flits(self) -> int:
        return 1 + self.payload_flits

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
            raise PacketError(f"bitmap {bitmap:#x} is wider than the network: bit {bitmap.bit_length() - 1} set, "
                              f"but nodes are 0..{self.nodes - 1}")
        self.bitmap([d for d in range(self.nodes) if bitmap >> d & 1], src)

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

    def header_bits(self, opcode: Opcode, src: int, seq: int, bitmap: int) -> int:
        return self.header.const({"opcode": opcode, "src": src, "seq": seq, "bitmap": bitmap}).as_value().value

    def decode_header(self, word: int) -> dict:
        v = self.header.const(word)
        return {"opcode": Opcode(v.opcode), "src": int(v.src), "seq": int(v.seq), "bitmap": int(v.bitmap)}
