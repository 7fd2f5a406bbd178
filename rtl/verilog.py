"""Verilog export: one module per distinct router, instantiated by the network top.

A network's Verilog depends only on its :class:`~equimesh.rtl.design.Design`
(docs/architecture.md, "Schedule tables in hardware"): routers with equal ports are one
module (``router_5port``, ``router_4port_ESW``, ...), and every schedule that fits
the design runs on the same file after the host loads the tables and lanes.
Converted text is cached on disk by the design and the source of this package.

For flows that want the tables in the bitstream, :func:`write_tables` writes each
router's table and initial lanes as ``$readmemh`` images; :func:`load_sequence`
documents the host's load sequence (``load.md``); :func:`fusesoc_core` describes
the generated files as a FuseSoC CAPI2 core, so FuseSoC and edalize flows can use them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import amaranth
from amaranth.back import verilog

from .design import Design
from .network import Network, top_ports
from .packet_network import PacketSetup
from .rom import NetworkImage
from .timing import LATENCY, MIN_PERIOD

__all__ = [
    "LINT_WAIVERS",
    "NetworkVerilog",
    "TOP",
    "core_name",
    "flat_ports",
    "fusesoc_core",
    "load_sequence",
    "network_verilog",
    "top_verilog",
    "without_zero_init",
    "write_proofs",
    "write_tables",
]

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


# An all-zero initial block of one memory, as Amaranth's Verilog writes it: `mem[0] = 64'h0000;` per word.
_ZERO_INIT = re.compile(r"\n  initial begin\n(?:    \S+ ?\[\d+\] = \d+'h0+;\n)+  end\n")


def without_zero_init(text: str) -> str:
    """``text`` without the all-zero initial blocks of its memories.

    The lanes and schedule tables are memories the host loads (SRAM macros in the cell counts), so
    their power-on contents do not change the synthesized logic. Amaranth writes one zero assignment
    per word, which yosys' frontend parses word by word: a 16x16 router's 16k words took 6 minutes,
    against 19 s without them, for the same 2631 cells. Synthesis reads this text, and so does the
    Verilator model, built with ``--x-initial 0`` (every variable starts at zero, the state the blocks
    describe; Verilator copies initial blocks into every instance: 21 GB at 32x32). Icarus and the
    Amaranth simulator keep the zeros, so every backend starts from the same state.

    Parameters
    ----------
    text : str
        Verilog as Amaranth writes it.

    Returns
    -------
    str
        The same text with every ``initial begin ... end`` block of only zero words removed.
    """
    return _ZERO_INIT.sub("\n", text)


def _source_digest() -> str:
    """What the generated text depends on besides the design: this package's source and Amaranth."""
    h = hashlib.sha256(amaranth.__version__.encode())
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class NetworkVerilog:
    """The Verilog of a whole network, its router module names, and the top's plain ports.

    Attributes
    ----------
    text : str
        The Verilog: the router modules, then the top :data:`TOP`.
    modules : list of str
        The router module names (:func:`.network.router_name`).
    ins, outs : list of str
        The top's plain input and output port names.
    widths : dict of str to int
        Every port's bit width.
    """

    text: str
    modules: list[str]
    ins: list[str]
    outs: list[str]
    widths: dict[str, int]


def top_verilog(top) -> str:
    """The Verilog of ``top`` as module :data:`TOP`, after the module of each of its router instances
    (``top.designs``: module name -> router, empty for a top whose routers are submodules).

    Parameters
    ----------
    top : amaranth.lib.wiring.Component
        Usually a :class:`.network.Network` built with ``instances=True``.

    Returns
    -------
    str
        The converted modules joined by newlines, without source locations.
    """
    parts = [verilog.convert(r, name=name, emit_src=False) for name, r in getattr(top, "designs", {}).items()]
    return "\n".join(parts + [verilog.convert(top, name=TOP, emit_src=False)])


def network_verilog(design: Design, packets: PacketSetup | None = None, cache: Path | None = None) -> NetworkVerilog:
    """Every distinct router module, then the top ``equimesh_top``.

    With ``cache`` (a directory) the result is kept there, keyed by the design and the source.

    Parameters
    ----------
    design : Design
    packets : PacketSetup or None
        With packets the routers carry MultiWrite packets; such results are not cached.
    cache : Path or None
        A directory for ``<design key>-<source digest>.v`` and ``.json``, written atomically.

    Returns
    -------
    NetworkVerilog
    """
    path = None
    if cache is not None and packets is None:
        path = Path(cache) / f"{design.key()}-{_source_digest()}"
        try:
            ports = json.loads(path.with_suffix(".json").read_text())
            return NetworkVerilog(
                path.with_suffix(".v").read_text(), ports["modules"], ports["ins"], ports["outs"], ports["widths"]
            )
        except (OSError, ValueError, KeyError):
            pass
    net = Network(design, packets, instances=True)
    out = NetworkVerilog(top_verilog(net), list(net.designs), *top_ports(net))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic: a concurrent reader sees no file or a whole one; the ports file is published last.
        for suffix, text in (
            (".v", out.text),
            (".json", json.dumps({"modules": out.modules, "ins": out.ins, "outs": out.outs, "widths": out.widths})),
        ):
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path.with_suffix(suffix))
    return out


def load_sequence(design: Design, image: NetworkImage, widths: dict[str, int]) -> str:
    """The host's load sequence for this design, as Markdown (written beside the Verilog).

    Parameters
    ----------
    design : Design
    image : NetworkImage
        The schedule written with it (its step count and run cycles are quoted).
    widths : dict of str to int
        The top's port widths (:class:`NetworkVerilog` ``widths``); ``tab_data`` must be present.

    Returns
    -------
    str
        The text of ``load.md``: tables, lanes, start, ``done`` timing in cycles, read-back.
    """
    t, ml = design.topology, design.max_lanes
    eb = widths["tab_data"] // t.nodes
    return f"""# Loading and running `{TOP}`

Design: {design.describe()}. Every schedule that fits it (at most {design.depth} steps, at most
{design.slots} chunk slots per lane, {"any collective" if design.reduce else "AllGather only"}) runs on this Verilog;
the schedule compiler (`equimesh.rtl.rom`) writes the tables, the host loads them (docs/architecture.md,
"Schedule tables in hardware").

Buses carry one field per node (or per lane slot, {ml} per node), node 0 in the low bits.

1. Tables: for each step `s` of the schedule, in one clock cycle: `tab_we = 1`, `tab_addr = s`,
   field `v` of `tab_data` ({eb} bits) = entry `s` of router `v` (`table_r<v>.hex`, line `s`).
2. Lanes (may overlap step 1, one flit per lane per cycle): `load_addr = a`, bit `v*{ml}+i` of `load_we`
   set for lane `i` of node `v`, field `v*{ml}+i` of `load_data` ({design.flit_bits} bits) = its flit `a`
   (`lane_r<v>_<port>.hex`, line `a`).
3. Clear `tab_we` and `load_we`. Hold `steps` at the schedule's length ({image.steps} for the schedule
   written here) and pulse `start` for one cycle.
4. `done` rises `steps x max(chunk_flits, {MIN_PERIOD[design.pipeline]}) + {LATENCY[design.pipeline]}` cycles after the edge
   that took `start` ({design.run_cycles(image.steps)} here; router pipeline depth {design.pipeline}). `cycles` then holds that count and `busy` (32 bits per link,
   link 0 in the low bits) each link's busy cycles.
5. Read back: set `host_addr = a`; {design.host_latency} cycle(s) later field `v*{ml}+i` of `host_data` is flit `a` of lane `i`
   of node `v`.

Flows that want the tables in the bitstream skip steps 1 and 2 and initialise the memories
`r<v>.\\table` and `r<v>.lane_<port>.mem` of each router instance from the `$readmemh` images
(`--tables-dir`); steps 3 to 5 are unchanged.
Lane order of node `v` is the order of its ports that carry links (N E S W X0 ...).
"""


def write_tables(image: NetworkImage, design: Design, lane_words, out_dir: str | Path) -> list[Path]:
    """Each router's schedule table and initial lanes as ``$readmemh`` files (one entry per line): the
    memories ``equimesh_top.r<v>.\\table`` and ``equimesh_top.r<v>.lane_<port>.mem``.

    Parameters
    ----------
    image : NetworkImage
    design : Design
        Gives the slots per lane of the table entries and the flit width.
    lane_words : callable
        ``lane_words(node, lane_index)``: the lane's initial flits as ints, flit 0 first.
    out_dir : str or Path
        Created if missing.

    Returns
    -------
    list of Path
        Per router ``table_r<v>.hex``, then ``lane_r<v>_<port>.hex`` per lane.
    """
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in image.routers:
        digits = (image.layout(r.node, design.slots).size + 3) // 4
        p = d / f"table_r{r.node}.hex"
        p.write_text("".join(f"{w:0{digits}x}\n" for w in image.rom_words(r.node, design.slots)))
        paths.append(p)
        for i, port in enumerate(r.lanes):
            p = d / f"lane_r{r.node}_{port}.hex"
            p.write_text("".join(f"{w:0{design.flit_bits // 4}x}\n" for w in lane_words(r.node, i)))
            paths.append(p)
    return paths


def write_proofs(design: Design, out: Path, payload_flits: int | None = None) -> list[Path]:
    """The formal wrappers of the design's blocks (``docs/formal.md``), one ``.il`` and one ``.sby`` per
    property, so that a user reruns the proofs in their own flow (node 0's router; with
    ``payload_flits`` also the packet blocks).

    Parameters
    ----------
    design : Design
    out : Path
        The directory the files go to.
    payload_flits : int or None
        Flits per packet payload; if given, every formal block, else only ``crossbar`` and ``router``.

    Returns
    -------
    list of Path
        The written files.
    """
    from .formal import BLOCKS, Params, block, prefixes
    from .formal.sby import write_task

    t = design.topology
    p = Params(
        kind=t.kind,
        rows=t.rows,
        cols=t.cols,
        pipeline=design.pipeline,
        chunk_flits=design.chunk_flits,
        slots=design.slots,
        table_depth=design.depth,
        flit_bits=design.flit_bits,
        reduce=design.reduce,
        payload_flits=payload_flits or 1,
    )
    paths = []
    for name in BLOCKS if payload_flits else ("crossbar", "router"):
        mod = block(name)
        for prop, spec in mod.PROPERTIES.items():
            w = mod.build(p, prop)
            paths += write_task(w.top, w.ports, prefixes(mod, prop), w.depth, spec.unbounded, out, f"{name}_{prop}")
    return paths


def core_name(design: Design) -> str:
    """The FuseSoC core's name part (and file stem): ``equimesh_<kind>_<R>x<C>``.

    Parameters
    ----------
    design : Design

    Returns
    -------
    str
        Dashes of the kind become underscores, e.g. ``equimesh_mirror_equimesh_4x4``.
    """
    t = design.topology
    return f"equimesh_{t.kind.replace('-', '_')}_{t.rows}x{t.cols}"


def fusesoc_core(design: Design, core_dir: Path, verilog_file: Path, lint_file: Path, images: list[Path] = ()) -> str:
    """A FuseSoC CAPI2 core (``fusesoc.readthedocs.io``, "CAPI2") of a generated network: the Verilog
    with ``equimesh_top`` as top level, the Verilator waivers for lint targets, and the ``$readmemh``
    images as data files. Paths are relative to ``core_dir``, where the core file goes.

    Parameters
    ----------
    design : Design
    core_dir : Path
        Where the core file goes.
    verilog_file, lint_file : Path
        The Verilog and the Verilator waiver file.
    images : list of Path
        ``$readmemh`` images (fileset ``tables``), if any.

    Returns
    -------
    str
        The core file's YAML text, with targets ``default`` and ``lint`` (Verilator, lint-only).
    """

    def rel(p: Path) -> str:
        return Path(os.path.relpath(p, core_dir)).as_posix()

    lines = [
        "CAPI=2:",
        f"name: equimesh:network:{core_name(design)}:0.1.0",
        f'description: "equimesh network, {design.describe()}"',
        "",
        "filesets:",
        "  rtl:",
        "    files:",
        f"      - {rel(verilog_file)}",
        "    file_type: verilogSource",
        "  lint:",
        "    files:",
        f"      - {rel(lint_file)}",
        "    file_type: vlt",
    ]
    if images:
        lines += ["  tables:", "    files:", *(f"      - {rel(p)}" for p in images), "    file_type: user"]
    filesets = "[rtl" + (", tables" if images else "") + "]"
    lines += [
        "",
        "targets:",
        "  default:",
        f"    filesets: {filesets}",
        f"    toplevel: {TOP}",
        "  lint:",
        "    default_tool: verilator",
        "    filesets: [rtl, lint]",
        f"    toplevel: {TOP}",
        "    tools:",
        "      verilator:",
        "        mode: lint-only",
        "",
    ]
    return "\n".join(lines)


def flat_ports(top) -> tuple[list[str], list[str], dict[str, int]]:
    """Every port of an Amaranth top, arrays and nested signatures flattened the way its Verilog names
    them (``sent__0``, ``inject_mon__0__valid``): input names, output names, every port's bit width.
    For tops whose ports are all plain this is ``rtl/network.py``'s ``top_ports``.

    Parameters
    ----------
    top : amaranth.lib.wiring.Component

    Returns
    -------
    tuple of (list of str, list of str, dict of str to int)
        Input names, output names, and every port's bit width, in signature order.
    """
    from amaranth.hdl import Shape
    from amaranth.lib.wiring import In

    ins, outs, widths = [], [], {}
    for path, member, _ in top.signature.flatten(top):
        name = "__".join(str(p) for p in path)
        (ins if member.flow == In else outs).append(name)
        widths[name] = Shape.cast(member.shape).width
    return ins, outs, widths
