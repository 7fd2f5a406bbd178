"""The build of a tiled compiled model: each distinct node tile Verilated once, one C++ object per node.

A flat Verilator model writes every router's logic out once per instance: at 8x8 the code no longer
fits the instruction cache, and at 16x16 and 32x32 its compile takes tens of minutes and gigabytes
(docs/packets.md, "Speed of the compiled packet run"). A tiled model Verilates each distinct tile
module once, with its own ``--prefix``, and makes the network of ``nodes`` objects of those classes,
which share their code. A C++ class ``Net`` (written by the model's module: the packet traffic top in
:mod:`~equimesh.sim.tiled_traffic`, the schedule network in :mod:`~equimesh.sim.tiled_network`)
stands in for the flat top under :func:`~equimesh.sim.verilator.harness_cpp`'s program interpreter.

The contract a tile keeps (docs/architecture.md, "Tiled models"): every signal that crosses from one
tile to another is a register output. A rising clock then copies each link's signals from the
sender's outputs to the receiver's inputs and clocks every tile once: the tile samples, at the edge,
its neighbours' outputs of the cycle before, as the flat top does. Only the rising edge evaluates a
tile: the harness clears Verilator's record of the clock (:data:`EDGE_RECORD`) instead of evaluating
the falling edge, and calls the model's evaluation itself, without ``eval()``'s wrapper (which takes
two locks per call for dynamic objects and messages a tile does not have: 7 % of an 8x8 packet run's
``perf`` profile, 3 % of its user time). A
tile may have gated clock domains (:func:`tile_classes`), each clocked only in some cycles.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from amaranth.back import verilog

from ..rtl.cache import cache_root, json_record, valid_entry
from ..rtl.verilog import TOP, flat_ports, without_zero_init
from .program import words_of
from .verilator import (
    CXX_OPT,
    CXX_OPT_SLOW,
    SIM_TOP,
    VERILATOR_FLAGS,
    Model,
    VerilatorError,
    find_verilator,
    port_member,
    power_on_top,
    publish_model,
    rtl_digest,
    without_assertions,
)

__all__ = [
    "CPU_QUOTA",
    "CPU_QUOTA_V1",
    "EDGE_RECORD",
    "IDLE_MARGIN",
    "IDLE_SAMPLE",
    "NODES_PER_THREAD",
    "PRELUDE",
    "TILE_CXX_OPT",
    "TILE_FLAGS",
    "TILE_RECORD",
    "auto_threads",
    "c_array",
    "compile_tiles",
    "edge_record",
    "idle_cores",
    "quota_cores",
    "tile_classes",
    "tile_record",
]

# Verilator's record of the clock's value at the last evaluation (its edge detector): a tile's evaluation at
# the falling edge would only record the 0 and evaluate the input logic once more, so the harness clears
# the record instead and evaluates each tile once per cycle, at the rising edge.
EDGE_RECORD = "__Vtrigprevexpr___TOP__clk__0"


def edge_record(clock: str) -> str:
    """Verilator's record of a clock input's value at the last evaluation.

    Parameters
    ----------
    clock : str
        The clock input, e.g. ``net_clk``.

    Returns
    -------
    str
        The model's member (:data:`EDGE_RECORD` is ``clk``'s).
    """
    return EDGE_RECORD.replace("__clk__", f"__{clock}__")


# Build flags of a tile (measured on the 8x8 EquiMesh packet run of docs/packets.md): a tile is small, so
# the flat model's compile-time savings are not needed. Merging conditional assignments (without
# -fno-merge-cond): 22,700 -> 29,300 cycles/s; the tiles' C++ at -O2: 32,600 (-O3: no faster).
TILE_FLAGS = tuple(f for f in VERILATOR_FLAGS if f != "-fno-merge-cond")
TILE_CXX_OPT = "-O2"

# The C++ every Net starts with: port access by size (``wr``, ``rd``), a bit-field copy between word
# arrays (``bits``), a tile (model, rising edge, end, and a pointer and size per port) and a link copy.
PRELUDE = [
    '#include "verilated.h"',
    "#include <algorithm>",
    "#include <atomic>",
    "#include <chrono>",
    "#include <condition_variable>",
    "#include <cstdint>",
    "#include <cstdio>",
    "#include <cstdlib>",
    "#include <cstring>",
    "#include <mutex>",
    "#include <thread>",
    "#include <unordered_map>",
    "#include <vector>",
    "static void wr(void* p, int bytes, const uint32_t* w) {",
    "    if (bytes == 1) *(uint8_t*)p = uint8_t(w[0]); else if (bytes == 2) *(uint16_t*)p = uint16_t(w[0]);",
    "    else if (bytes == 4) *(uint32_t*)p = w[0]; else if (bytes == 8) *(uint64_t*)p = w[0] | uint64_t(w[1]) << 32;",
    "    else std::memcpy(p, w, bytes); }",
    "static void rd(const void* p, int bytes, uint32_t* w) {",
    "    if (bytes == 1) w[0] = *(const uint8_t*)p; else if (bytes == 2) w[0] = *(const uint16_t*)p;",
    "    else if (bytes == 4) w[0] = *(const uint32_t*)p;",
    "    else if (bytes == 8) { uint64_t x = *(const uint64_t*)p; w[0] = uint32_t(x); w[1] = uint32_t(x >> 32); }",
    "    else std::memcpy(w, p, bytes); }",
    "static void bits(uint32_t* d, int dlo, const uint32_t* s, int slo, int n) {  // d[dlo +: n] = s[slo +: n]",
    "    for (int i = 0; i < n;) { int a = slo + i, b = dlo + i, k = std::min({32 - a % 32, 32 - b % 32, n - i});",
    "        uint32_t m = k == 32 ? ~0u : (1u << k) - 1, x = s[a / 32] >> (a % 32) & m;",
    "        d[b / 32] = (d[b / 32] & ~(m << (b % 32))) | x << (b % 32); i += k; } }",
    "struct Tile {  // a model, its rising edge (bit d of ``on``: gated domain d clocked too), end, a pointer and size per port",
    "    void* m; void (*edge)(void*, uint32_t on); void (*fin)(void*); std::vector<void*> p; std::vector<int> b;",
    "    std::vector<const uint8_t*> wake; std::vector<int> ends;  // domain d is clocked when one of its wake ports is high:",
    "    uint64_t woke = 0, woke_more = 0;  // the first gated domain's edges, the others'    wake[ends[d - 1] .. ends[d]]",
    "    uint32_t first = ~0u;  // the first edge clocks every domain: their power-on resets",
    "    // ``last``: the gated domains of the last edge (always all for a tile without any). A tile's link outputs",
    "    // are registers of its gated domains: after an edge that clocked none of them, they are as they were.",
    "    uint32_t last = ~0u;",
    "    void clock() {  // the first domain's edges include the others': they wait for it",
    "        const uint8_t* const* w = wake.data(); const int* e = ends.data(); int n = int(ends.size());",
    "        uint32_t on = 0, more = 0;",
    "        for (int d = 0, i = 0; d < n && (d == 0 || on); d++) {",
    "            uint32_t x = first >> d & 1; for (; i < e[d]; i++) x |= *w[i]; on |= x << d; more += x; }",
    "        first = 0; woke += on & 1; woke_more += more - (on & 1); if (n) last = on; edge(m, on); } };",
    "struct Copy { void* d; const void* s; int b; };",
    "struct Copies {  // links' signals, copied from one tile's outputs to another's inputs, a sender's after its gated edge",
    "    struct Group { const uint32_t* fresh; std::vector<Copy> bytes, words, other; };  // one sender's",
    "    std::vector<Group> groups; std::unordered_map<const uint32_t*, size_t> of;",
    "    void add(void* d, const void* s, int b, const uint32_t* fresh) {",
    "        auto at = of.emplace(fresh, groups.size()).first->second; if (at == groups.size()) groups.push_back({fresh, {}, {}, {}});",
    "        Group& g = groups[at]; (b == 1 ? g.bytes : b % 4 == 0 ? g.words : g.other).push_back({d, s, b}); }",
    "    void run() const {",
    "        for (auto& g : groups) if (*g.fresh) {",
    "            for (auto& c : g.bytes) *(uint8_t*)c.d = *(const uint8_t*)c.s;",
    "            for (auto& c : g.words) for (int i = 0; i < c.b / 4; i++) ((uint32_t*)c.d)[i] = ((const uint32_t*)c.s)[i];",
    "            for (auto& c : g.other) std::memcpy(c.d, c.s, c.b); }",
    "    }",
    "};",
    "template <class F> static void spin_until(F ok) {  // a short spin, then yield the core",
    "    for (int spins = 0; !ok();) if (++spins > 4096) std::this_thread::yield(); }",
    "struct Shares {  // EQUIMESH_THREADS threads (default 1): thread k clocks share k of the tiles, k = 0 the caller",
    "    int threads = 1, nodes = 0; std::vector<int> lo; std::vector<VerilatedContext*> ctxs;",
    "    std::vector<Copies> links; std::vector<Tile>* t = nullptr; std::vector<std::thread> pool;",
    "    std::atomic<uint32_t> gen{0}, finished{0}; std::atomic<uint64_t> copied{0}; std::atomic<bool> quit{false};",
    "    // Solo windows: the caller clocks every share while the other threads sleep (``parked``). The caller",
    "    // times each window of ``window`` cycles; the way it keeps (``mode``: threads or solo) runs every",
    "    // window but a probe of the other way, after the first timed window and then every PROBE windows, and",
    "    // the probe wins when it is 10 % faster: threads that wait for a core lose to one thread.",
    "    static const int PROBE = 32; int window = 0, in_window = 0, windows = 0; bool solo = false, mode = false;",
    "    double took[2] = {0, 0}; uint64_t solo_cycles = 0; std::chrono::steady_clock::time_point since;",
    "    std::mutex mu; std::condition_variable cv; std::atomic<bool> parked{false};",
    "    void init(int n, VerilatedContext* ctx) {  // before the tiles: each share's models get a context of their own",
    "        nodes = n; window = std::max(64, 16384 / n);",
    '        if (const char* e = std::getenv("EQUIMESH_THREADS")) threads = std::max(1, std::min(std::atoi(e), n));',
    "        ctxs.push_back(ctx); for (int k = 1; k < threads; k++) ctxs.push_back(new VerilatedContext);",
    "        for (int k = 0; k <= threads; k++) { int v = 0; while (v < n && share(v) < k) v++; lo.push_back(v); }",
    "        links.resize(threads); }",
    "    int share(int v) const { return int(int64_t(v) * threads / nodes); }",
    "    VerilatedContext* context(int v) const { return ctxs[share(v)]; }",
    "    void link(int to, void* d, const void* s, int b, const Tile& from) { links[share(to)].add(d, s, b, &from.last); }",
    "    void start(std::vector<Tile>& tiles) { t = &tiles; since = std::chrono::steady_clock::now();",
    "        for (int k = 1; k < threads; k++) pool.emplace_back([this, k] {",
    "        for (uint32_t seen = 0;;) { uint32_t g = 0;",
    "            spin_until([&] { return (g = gen.load(std::memory_order_acquire)) != seen || quit.load() || parked.load(); });",
    "            if (g == seen && quit.load()) return;",
    "            if (g == seen) { std::unique_lock<std::mutex> l(mu); cv.wait(l, [&] { return !parked.load() || quit.load(); }); continue; }",
    "            seen = g; step(k, g); finished.fetch_add(1, std::memory_order_acq_rel); } }); }",
    "    void clock(int k) { for (int v = lo[k]; v < lo[k + 1]; v++) (*t)[v].clock(); }",
    "    // Cycle g of share k: its links copied (the senders' outputs are read before any changes), then,",
    "    // once every share has copied, its tiles clocked.",
    "    void step(int k, uint32_t g) {",
    "        links[k].run(); copied.fetch_add(1, std::memory_order_acq_rel);",
    "        spin_until([&] { return copied.load(std::memory_order_acquire) >= uint64_t(g) * threads; }); clock(k); }",
    "    uint64_t cycles = 0;",
    "    void cycle() {  // one rising edge of every tile",
    "        cycles++;",
    "        if (threads == 1) { links[0].run(); clock(0); return; }",
    "        if (solo) {  // every link copied before any tile is clocked, as in the threads' cycle",
    "            for (auto& l : links) l.run();",
    "            for (int k = 0; k < threads; k++) clock(k);",
    "            solo_cycles++;",
    "        } else {",
    "            finished.store(0, std::memory_order_relaxed); step(0, gen.fetch_add(1, std::memory_order_acq_rel) + 1);",
    "            spin_until([&] { return finished.load(std::memory_order_acquire) == uint32_t(threads - 1); });",
    "        }",
    "        if (++in_window < window) return;",
    "        auto now = std::chrono::steady_clock::now(); double d = std::chrono::duration<double>(now - since).count();",
    "        since = now; in_window = 0;",
    "        if (windows++ == 0) return;  // the first window warms the caches up: not timed",
    "        // The kept way's time is smoothed (one slow window does not decide), a probe's is its own.",
    "        if (solo == mode) took[mode] = took[mode] > 0 ? (took[mode] + d) / 2 : d;",
    "        else if ((took[solo] = d) < 0.9 * took[mode]) mode = solo;",
    "        bool next = took[!mode] == 0 || windows % PROBE == 0 ? !mode : mode;",
    "        if (next == solo) return;",
    "        { std::lock_guard<std::mutex> l(mu); parked = solo = next; }",
    "        if (!solo) cv.notify_all(); }",
    "    void stop() { { std::lock_guard<std::mutex> l(mu); quit = true; } cv.notify_all();",
    "        for (auto& th : pool) th.join(); pool.clear();",
    '        if (threads > 1) std::fprintf(stderr, "solo_cycles %llu\\n", (unsigned long long)solo_cycles);',
    "        uint64_t woke = 0, more = 0, tiles = 0, others = 0;",
    "        for (auto& x : *t) if (!x.ends.empty()) { woke += x.woke; more += x.woke_more; tiles++; others += x.ends.size() - 1; }",
    '        if (tiles) std::fprintf(stderr, "gated_edges %llu %llu %llu %llu\\n", (unsigned long long)woke,',
    "            (unsigned long long)(cycles * tiles), (unsigned long long)more, (unsigned long long)(cycles * others)); }",
    "    void drop() { for (size_t k = 1; k < ctxs.size(); k++) delete ctxs[k]; ctxs.resize(1); }  // after the tiles",
    "};",
]


NODES_PER_THREAD = 32  # ``--threads auto``: a thread per this many nodes (docs/packets.md, "Threads")
IDLE_SAMPLE = 0.1  # seconds over which ``--threads auto`` measures the idle cores
IDLE_MARGIN = 0.25  # a core counts as idle from 75 % idle on (a thread without a core stalls every cycle)
CPU_QUOTA = "/sys/fs/cgroup/cpu.max"  # a cgroup v2 CPU quota: "<quota> <period>" in microseconds, or "max ..."
CPU_QUOTA_V1 = "/sys/fs/cgroup/cpu"  # cgroup v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us, here


def quota_cores() -> float:
    """The cores of this process's cgroup CPU quota: v2's :data:`CPU_QUOTA` (``"<quota> <period>"`` in
    microseconds, ``"max"`` for none), else v1's :data:`CPU_QUOTA_V1` (``cpu.cfs_quota_us``, ``-1`` for
    none, over ``cpu.cfs_period_us``); infinite without a quota or where neither can be read.

    Returns
    -------
    float
        Quota over period, e.g. 1.5 for a container started with ``--cpus 1.5``.
    """
    try:
        with open(CPU_QUOTA) as f:
            quota, period = f.read().split()[:2]
        return float("inf") if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int(Path(CPU_QUOTA_V1, "cpu.cfs_quota_us").read_text())
        period = int(Path(CPU_QUOTA_V1, "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return float("inf")
    return quota / period if quota > 0 and period > 0 else float("inf")


def idle_cores() -> float:
    """The cores left idle over :data:`IDLE_SAMPLE` seconds, from the kernel's CPU time counters
    (``/proc/stat``: the cores times the idle and I/O-wait ticks over all ticks; the cores this
    process may use where the counters cannot be read), at most the cores of the process's cgroup
    CPU quota (:func:`quota_cores`, e.g. a container started with ``--cpus``), which the counters of
    the whole machine do not show.

    Returns
    -------
    float
        Idle cores, e.g. 1.0 on a 2-core machine with one busy core.
    """
    limit = quota_cores()

    def times() -> tuple[int, int]:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]  # user .. steal (guest is inside user)
        return sum(ticks), ticks[3] + ticks[4]

    try:
        total0, idle0 = times()
        time.sleep(IDLE_SAMPLE)
        total1, idle1 = times()
    except (OSError, ValueError, IndexError):
        return min(float(len(os.sched_getaffinity(0))), limit)
    return min((os.cpu_count() or 1) * (idle1 - idle0) / max(1, total1 - total0), limit)


def auto_threads(kind: str, nodes: int) -> int:
    """The threads of ``--threads auto``: on the tiled model one per :data:`NODES_PER_THREAD` nodes, at
    least one and at most the cores this process may use that are idle now (:func:`idle_cores`, each
    counted from :data:`IDLE_MARGIN` short of a whole core); one on a whole-top model (packets and
    schedules alike). A thread spins at the barrier of every cycle, so a thread without a core of its
    own stalls them all until the model's timed solo windows (``Shares`` in :data:`PRELUDE`;
    docs/packets.md, "Threads") find one thread faster; with both cores idle two threads gained
    1.3-1.8x at 8x8 and 1.4-1.9x at 16x16.

    Parameters
    ----------
    kind : str
        The model kind (:func:`~equimesh.sim.traffic.packet_model`,
        :func:`~equimesh.sim.backends.model_kind`).
    nodes : int
        Nodes of the network.

    Returns
    -------
    int
        The thread count.
    """
    if kind != "tiled" or nodes < 2 * NODES_PER_THREAD:
        return 1
    cores = min(len(os.sched_getaffinity(0)), int(idle_cores() + IDLE_MARGIN))
    return max(1, min(cores, nodes // NODES_PER_THREAD))


TILE_RECORD = ("ins", "outs", "widths", "verilog")  # a cached tile's Verilog record


def tile_record(make, params: list, held: tuple[str, ...] = (), gated: tuple[str, ...] = ()) -> dict:
    """The cached Verilog of one tile: its component as module :data:`~equimesh.rtl.verilog.TOP` under
    the power-on top (:func:`~equimesh.sim.verilator.power_on_top`), and its flattened ports.

    Parameters
    ----------
    make : callable
        Builds the tile's component; called only when the cache has no record.
    params : list
        Everything the tile's Verilog depends on besides the RTL's source (JSON-ready).
    held : tuple of str
        Inputs set once per node (the node's constants): each input whose name, before any ``__``,
        is one of them reaches the tile through a register loaded at the power-on edge.
    gated : tuple of str
        The tile's clock domains besides ``sync``, each clocked by an input of its own
        (:func:`~equimesh.sim.verilator.power_on_top`).

    Returns
    -------
    dict
        ``ins``, ``outs``, ``widths`` (:func:`~equimesh.rtl.verilog.flat_ports`) and ``verilog``.
    """
    what = json.dumps(["tile", params, list(held), list(gated)])
    key = hashlib.sha256((rtl_digest() + "\0" + what).encode()).hexdigest()[:24]

    def export() -> dict:
        component = make()
        ins, outs, widths = flat_ports(component)
        text = without_zero_init(verilog.convert(component, name=TOP, emit_src=False))
        kept = tuple(n for n in ins if n.partition("__")[0] in held)
        top = power_on_top(ins, outs, widths, kept, gated)
        return {"ins": ins, "outs": outs, "widths": widths, "verilog": text + top}

    return json_record(cache_root() / "verilog" / f"tile-{key}.json", TILE_RECORD, export)


def _bytes(width: int) -> int:
    """Bytes of a Verilator port member of ``width`` bits (CData, SData, IData, QData or VlWide)."""
    return 1 if width <= 8 else 2 if width <= 16 else 4 if width <= 32 else 8 if width <= 64 else 4 * words_of(width)


def tile_classes(classes: dict, gated: dict | None = None) -> list[str]:
    """The C++ that makes a ``Tile`` of each Verilated tile class (a function ``make_<class>``): its
    model, its rising edge, and a pointer and a size per port.

    Parameters
    ----------
    classes : dict
        Class name -> ``(ins, outs, widths)`` of its tile; the tile's ports are ``ins + outs`` in order.
    gated : dict, optional
        Class name -> a list of ``(domain, ports)``: the tile's domain ``domain`` (clock input
        ``<domain>_clk``) is clocked only in the cycles in which one of the 1-bit ``ports`` is high (a
        packet tile's ``net`` and its inputs' domains, :mod:`~equimesh.rtl.packet_tile`); every other
        domain of a tile, in every cycle. The first is the one whose edges ``gated_edges`` counts, and
        no other is woken in a cycle in which the first is not (the harness then looks no further).

    Returns
    -------
    list of str
        The lines.
    """
    lines = []
    for c, (ins, outs, w) in classes.items():
        ptrs = ", ".join(f"(void*)&m->{port_member(n)}" for n in ins + outs)
        sizes = ", ".join(str(_bytes(w[n])) for n in ins + outs)
        domains = (gated or {}).get(c, [])
        edge = f"y->rootp->{EDGE_RECORD} = 0; y->clk = 1;"
        for d, (domain, _) in enumerate(domains):
            edge += f" y->rootp->{edge_record(f'{domain}_clk')} = 0; y->{domain}_clk = on >> {d} & 1;"
        wake = [f"&m->{port_member(n)}" for _, ports in domains for n in ports]
        ends = [sum(len(ports) for _, ports in domains[: d + 1]) for d in range(len(domains))]
        lines += [
            f'#include "{c}.h"',
            f'#include "{c}___024root.h"',
            f"void {c}___024root___eval({c}___024root* vlSelf);  // the model's evaluation, as eval() calls it",
            f"static Tile make_{c}(VerilatedContext* ctx) {{",
            f"    auto* m = new {c}{{ctx}}; m->clk = 0; m->eval(); Tile t; t.m = m;",
            f"    t.edge = [](void* x, uint32_t on) {{ auto* y = ({c}*)x; {edge} {c}___024root___eval(y->rootp); }};",
            f"    t.fin = [](void* x) {{ auto* y = ({c}*)x; y->final(); delete y; }};",
            f"    t.p = {{{ptrs}}}; t.b = {{{sizes}}};",
            f"    t.wake = {{{', '.join(wake)}}}; t.ends = {{{', '.join(map(str, ends))}}}; return t; }}",
        ]
    return lines


def c_array(name: str, rows: list, ctype: str = "int") -> str:
    """A C++ static array of ``rows``: ints, or tuples of ints (a two-dimensional array).

    Parameters
    ----------
    name : str
    rows : list of int or list of tuple of int
    ctype : str
        The element type.

    Returns
    -------
    str
        One line of C++.
    """
    if rows and isinstance(rows[0], tuple):
        body = ", ".join("{" + ", ".join(map(str, r)) + "}" for r in rows)
        return f"static const {ctype} {name}[][{len(rows[0])}] = {{{body}}};"
    return f"static const {ctype} {name}[] = {{{', '.join(map(str, rows))}}};"


def _run(cmd: list[str], cwd: Path, log, env: dict) -> None:
    proc = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)


def _verilate(cmd: list[str], c: str, cwd: Path, log, env: dict) -> None:
    """Verilate tile class ``c`` and check that its model has the clock's edge record the harness
    clears (:data:`EDGE_RECORD`, an internal of Verilator 5's scheduler)."""
    _run(cmd, cwd, log, env)
    header = (cwd / c / f"{c}___024root.h").read_text()
    for clock in sorted(set(re.findall(r"^  input (\w*clk);$", (cwd / f"{c}.v").read_text(), re.M))):
        if edge_record(clock) not in header:
            raise VerilatorError(
                f"this Verilator's models keep no {edge_record(clock)}, which the tiled model clears: use --model flat"
            )


def _archive(exe: str, flags: list[str], c: str, tmp: Path, env: dict) -> None:
    """Verilate tile class ``c`` (``tmp/<c>.v``) into the C++ archive ``tmp/<c>/<c>__ALL.a``; its log
    ``tmp/<c>.log``."""
    with open(tmp / f"{c}.log", "w") as logf:
        _verilate(
            [exe, "--cc", "--prefix", c, "--top-module", SIM_TOP, "--Mdir", c, *flags, f"{c}.v"], c, tmp, logf, env
        )
        _run(["make", "-C", c, "-f", f"{c}.mk", f"{c}__ALL.a"], tmp, logf, env)


def compile_tiles(
    verilogs: dict[str, str], cpp: str, ins: list[str], outs: list[str], started: float, log=None
) -> Model:
    """The cached executable of a tiled model, building it if needed: each class's Verilog (module
    :data:`~equimesh.sim.verilator.SIM_TOP`) Verilated with ``--prefix <class>``, the first with the
    harness and Verilator's runtime, linked with the others' archives.

    Parameters
    ----------
    verilogs : dict of str to str
        Class name -> the Verilog of its tile, power-on top included.
    cpp : str
        The harness (:func:`~equimesh.sim.verilator.harness_cpp` with a ``Net``).
    ins, outs : list of str
        The ports of the top the harness stands in for, in the program's order.
    started : float
        ``time.perf_counter()`` when the model's build began (its export included).
    log : callable, optional
        Takes a progress line (the build's start).

    Returns
    -------
    Model
        The model; a failed build raises :class:`~equimesh.sim.verilator.VerilatorError` naming its log.
    """
    exe, version = find_verilator()
    flags = list(TILE_FLAGS)
    verilogs = {c: without_assertions(v) for c, v in verilogs.items()}
    key = hashlib.sha256(
        "\0".join([*verilogs.values(), cpp, version, " ".join(flags), TILE_CXX_OPT, CXX_OPT_SLOW]).encode()
    ).hexdigest()[:24]
    root = cache_root() / "models"
    entry = root / key
    if valid_entry(entry, key):
        return Model(entry, ins, outs, 0.0, True)
    if log:
        log(f"building the tiled Verilator model ({len(verilogs)} tile modules; cache {entry})")
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"build-{key}-", dir=root))
    jobs = str(os.cpu_count() or 1)
    make = f"OPT_FAST={TILE_CXX_OPT} OPT_SLOW={CXX_OPT_SLOW} OPT_GLOBAL={CXX_OPT} CFG_CXXFLAGS_PCH_I=-include"
    if shutil.which("ccache"):
        make += " OBJCACHE=ccache"
    env = dict(os.environ, MAKEFLAGS=make)
    names = list(verilogs)
    try:
        (tmp / "harness.cpp").write_text(cpp)
        for c in names:
            (tmp / f"{c}.v").write_text(verilogs[c])
        try:
            # Every tile but the first: a C++ archive of its own, the classes side by side (Verilator
            # is single-threaded); then the first with the harness, linked with the others' archives.
            with ThreadPoolExecutor(max_workers=int(jobs)) as pool:
                list(pool.map(lambda c: _archive(exe, flags, c, tmp, env), names[1:]))
            first = names[0]
            with open(tmp / f"{first}.log", "w") as logf:
                _verilate(
                    [exe, "--cc", "--exe", "--prefix", first, "--top-module", SIM_TOP, "--Mdir", first, "-o", "model"]
                    + [*flags, f"{first}.v", "harness.cpp"]
                    + ["-CFLAGS", " ".join(f"-I../{c}" for c in names[1:]) or "-I."]
                    + ["-LDFLAGS", " ".join(f"../{c}/{c}__ALL.a" for c in names[1:]) or "-L."],
                    first,
                    tmp,
                    logf,
                    env,
                )
                _run(["make", "-j", jobs, "-C", first, "-f", f"{first}.mk", "model"], tmp, logf, env)
            if not (tmp / first / "model").exists():
                raise subprocess.CalledProcessError(0, "make")
        except subprocess.CalledProcessError as e:
            keep = root / f"failed-{key}.log"
            keep.write_text("".join(p.read_text() for p in sorted(tmp.glob("*.log"))))
            raise VerilatorError(
                f"Verilator failed to build the tiled model (exit {e.returncode}); log: {keep}"
            ) from None
        shutil.move(str(tmp / names[0] / "model"), tmp / "model")
        for c in names:
            shutil.rmtree(tmp / c)
        return publish_model(tmp, entry, key, (version, flags), (ins, outs), started)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
