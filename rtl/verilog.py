"""Verilog export: the network top, one file per distinct router, and the ROMs as $readmemh files.

Routers are "distinct" by port count (including ``L``), as in the crosspoint
count of seed 000, Section II-A: every router of one port count is the same
design and differs only in its ROM and lane contents. The per-router file is
the design of the first node with that port count (its own ROM included), for
synthesis and inspection; the network top is self-contained.
"""

from __future__ import annotations

from pathlib import Path

from amaranth.back import verilog

from .network import Network
from .packet_network import PacketSetup
from .rom import NetworkImage
from .router import Router

TOP = "equimesh_top"

# Verilator waivers for what Amaranth's Verilog output always contains (docs/rtl.md, "Lint").
LINT_WAIVERS = """`verilator_config
// Per-field alias wires of Amaranth data layouts, and the inputs of tied-off router ports, are never read.
lint_off -rule UNUSEDSIGNAL
// Yosys writes register reset values as declaration initialisers.
lint_off -rule PROCASSINIT
// Amaranth widens adder operands to the result width (exact: the same arithmetic as the Amaranth model).
lint_off -rule WIDTHEXPAND
// The submodules of the network top are written into its file.
lint_off -rule DECLFILENAME
"""


def router_designs(image: NetworkImage, lane_init, flit_bits: int,
                   packets: PacketSetup | None = None) -> dict[int, Router]:
    """One representative :class:`Router` per port count (carrying packets too with ``packets``)."""
    out: dict[int, Router] = {}
    for r in image.routers:
        ports = len(r.lanes) + 1
        if ports not in out:
            out[ports] = Router(r.ports, r.lanes, image.slots, image.chunk_flits, image.rom_words(r.node),
                                image.reduce, flit_bits, lane_init[r.node],
                                None if packets is None else packets.router(r.node))
    return dict(sorted(out.items()))


def router_name(ports: int) -> str:
    return f"router_{ports}port"


def export(image: NetworkImage, lane_init, out_dir: str | Path, flit_bits: int,
           rom_dir: str | Path | None = None, packets: PacketSetup | None = None) -> list[Path]:
    """Write the Verilog (and ROM hex files); return the paths written. ``packets``: routers that
    also carry MultiWrite packets (``rtl/router.py``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    top = Network(image, lane_init, flit_bits, packets)
    path = out / f"{TOP}.v"
    path.write_text(verilog.convert(top, name=TOP, emit_src=False))
    written.append(path)
    for ports, router in router_designs(image, lane_init, flit_bits, packets).items():
        path = out / f"{router_name(ports)}.v"
        path.write_text(verilog.convert(router, name=router_name(ports), emit_src=False))
        written.append(path)
    path = out / "lint.vlt"
    path.write_text(LINT_WAIVERS)
    written.append(path)
    if rom_dir is not None:
        written += write_roms(image, rom_dir)
    return written


def write_roms(image: NetworkImage, rom_dir: str | Path) -> list[Path]:
    """Each router's ROM as a ``$readmemh`` file, one entry per line, step 0 first."""
    d = Path(rom_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in image.routers:
        digits = (image.layout(r.node).size + 3) // 4
        p = d / f"rom_r{r.node}.hex"
        p.write_text("".join(f"{w:0{digits}x}\n" for w in image.rom_words(r.node)))
        paths.append(p)
    return paths
