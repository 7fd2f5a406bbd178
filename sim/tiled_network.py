"""The tiled compiled model of a schedule network (:mod:`~equimesh.sim.tiles`): one Verilated
:class:`~equimesh.rtl.router_tile.RouterTile` (a router and its links' statistics) per router module
(:func:`~equimesh.rtl.network.router_name`: one for an EquiMesh, two for a torus, up to nine for a
mesh), one C++ object per node.

A router's Verilog depends only on its design parameters (the schedule table and the lanes are memories
the host loads), so the tiles have no node constants. Every signal between tiles is a register output:
a link's ``valid`` and ``flit`` leave the sender's link registers (``sched_valid``, ``sched_flit``), and
a router's ``done`` is a register. The model needs pipeline 1 or 2, where the host's read-back
``host_data`` is a register too (``rd_q``).

The harness (:func:`~equimesh.sim.verilator.harness_cpp`) sees a class ``Net`` with the flat
:class:`~equimesh.rtl.network.Network`'s ports:

* a rising clock copies every link's ``valid`` and ``flit`` to the receiver's inputs and the
  network's ``done`` (every router's) to every tile's ``net_done``, then clocks every tile;
* the top's inputs are applied to the routers as :class:`~equimesh.rtl.network.Network` wires them:
  ``start``, ``steps`` and the addresses to all, the write enables to the routers of ``group``, each
  its field of the ``tab_data``, ``load_we`` and ``load_data`` buses;
* the outputs are read from the tiles: ``host_data`` as the routers' lanes in node order, ``busy``
  and ``link_valid`` from each link's sender, ``cycles`` from node 0's tile, ``done`` as every router's.

So the model runs every :class:`~equimesh.sim.program.Program` the flat model runs and returns the
same records (a test compares them word for word).
"""

from __future__ import annotations

import time
from collections import Counter
from functools import partial
from itertools import accumulate

from ..rtl.design import Design
from ..rtl.network import Network, buses, load_group, router_name
from ..rtl.router_tile import RouterTile
from ..rtl.verilog import flat_ports
from .program import words_of
from .tiles import PRELUDE, c_array, compile_tiles, tile_classes, tile_record
from .verilator import Model, harness_cpp

__all__ = ["build_tiled_network", "network_declarations"]

_BROADCAST = ("steps", "tab_addr", "load_addr", "host_addr")  # the top's inputs every router takes as they are


def _field(bus, i: int) -> tuple[str, int]:
    """The top port holding field ``i`` of ``bus`` and the field's first bit in it."""
    name, _ = bus.ports()[i // bus.per_port]
    return name, (i % bus.per_port) * bus.field_bits


def _wiring(design: Design, classes: dict, names: list[str], top: tuple) -> list[str]:
    """The network as C++ tables.

    ``CLASS``: each tile's class. ``START``, ``NET_DONE``, ``DONE``: each tile's ``start``,
    ``net_done`` and ``done`` ports. ``TARGET``: every tile input the top drives (tile, port, words,
    gated by the group, first segment, segments), and ``IN_SEG`` their segments (top input, bit in it,
    bit in the tile's port, width). ``OUT_SEG``: the top's outputs as segments of tile outputs (top
    output, bit in it, tile, port, bit in the port, width), by output; ``OUT_RANGE``: each output's
    first segment and count. ``LINK``: each link's receiver and sender ports (``valid``, ``flit``)."""
    t, ml, fb, size = design.topology, design.max_lanes, design.flit_bits, load_group(design)
    tins, touts, _ = top
    bus = buses(design)
    index = {c: {n: i for i, n in enumerate(r["ins"] + r["outs"])} for c, r in classes.items()}
    port = [index[c] for c in names]  # per tile: port name -> index
    width = [classes[c]["widths"] for c in names]
    targets, in_seg, out_seg = [], [], []

    def target(tile: int, name: str, segments: list, gated: int = 0) -> None:
        targets.append((tile, port[tile][name], words_of(width[tile][name]), gated, len(in_seg), len(segments)))
        in_seg.extend(segments)

    def top_field(b: str, i: int, tile_lo: int, w: int) -> tuple:
        name, lo = _field(bus[b], i)
        return (tins.index(name), lo, tile_lo, w)

    for v in range(t.nodes):
        n, k = len(design.lanes(v)), v % size
        for name in _BROADCAST:
            target(v, name, [(tins.index(name), 0, 0, width[v][name])])
        target(v, "tab_we", [(tins.index("tab_we"), 0, 0, 1)], gated=1)
        target(v, "tab_data", [top_field("tab_data", k, 0, width[v]["tab_data"])])
        target(v, "load_we", [top_field("load_we", k, 0, n)], gated=1)
        target(v, "load_data", [top_field("load_data", k * ml + i, i * fb, fb) for i in range(n)])
        for i in range(n):
            name, lo = _field(bus["host_data"], v * ml + i)
            out_seg.append((touts.index(name), lo, v, port[v]["host_data"], i * fb, fb))
    links = []
    for i, lk in enumerate(t.links):
        src, dst = port[lk.src], port[lk.dst]
        links.append((lk.dst, dst[f"i_{lk.dst_port}__valid"], lk.src, src[f"o_{lk.src_port}__valid"]))
        links.append((lk.dst, dst[f"i_{lk.dst_port}__flit"], lk.src, src[f"o_{lk.src_port}__flit"]))
        out_seg.append((touts.index("link_valid"), i, lk.src, src[f"o_{lk.src_port}__valid"], 0, 1))
        name, lo = _field(bus["busy"], i)
        busy = f"busy__{design.ports(lk.src).index(lk.src_port)}"
        out_seg.append((touts.index(name), lo, lk.src, src[busy], 0, 32))
    out_seg.append((touts.index("cycles"), 0, 0, port[0]["cycles"], 0, 32))
    out_seg.sort(key=lambda s: s[0])
    per_output = Counter(s[0] for s in out_seg)
    count = [per_output[i] for i in range(len(touts))]
    ranges = list(zip(accumulate(count, initial=0), count))  # (first segment, segments) per output
    return [
        c_array("CLASS", [list(classes).index(c) for c in names]),
        c_array("TARGET", targets),
        c_array("IN_SEG", in_seg),
        c_array("OUT_SEG", out_seg),
        c_array("OUT_RANGE", ranges),
        c_array("LINK", links),
        c_array("DONE", [port[v]["done"] for v in range(t.nodes)]),
        c_array("START", [port[v]["start"] for v in range(t.nodes)]),
        c_array("NET_DONE", [port[v]["net_done"] for v in range(t.nodes)]),
        c_array("IN_WORDS", [words_of(top[2][n]) for n in tins]),
        c_array("OUT_WORDS", [words_of(top[2][n]) for n in touts]),
    ]


def network_declarations(design: Design, classes: dict, names: list[str], top: tuple) -> list[str]:
    """The C++ of class ``Net`` and its port functions, for :func:`~equimesh.sim.verilator.harness_cpp`.

    Parameters
    ----------
    design : Design
        The network design.
    classes : dict
        Class name -> the tile's record (``ins``, ``outs``, ``widths``).
    names : list of str
        Each node's class.
    top : tuple
        The flat top's ``(ins, outs, widths)``.

    Returns
    -------
    list of str
        The lines.
    """
    tins, touts, _ = top
    widest = max(words_of(w) for r in classes.values() for w in r["widths"].values())  # a tile port, in words
    lines = PRELUDE + tile_classes({c: (r["ins"], r["outs"], r["widths"]) for c, r in classes.items()})
    lines += _wiring(design, classes, names, top)
    lines += [
        f"static const int NODES = {design.nodes}, GROUP = {load_group(design)}, BUF_WORDS = {widest};",
        f"static const int START_IN = {tins.index('start')}, GROUP_IN = {tins.index('group')},"
        f" DONE_OUT = {touts.index('done')};",
        "struct Net {",
        "    uint8_t clk = 0, last = 0, start = 0, done = 0, applied = 0; bool dirty = true;",
        "    std::vector<Tile> t; std::vector<std::vector<uint32_t>> in; Shares sh;",
        "    std::vector<const uint8_t*> dones; std::vector<uint32_t> buf;",
        "    explicit Net(VerilatedContext* ctx) {",
        "        sh.init(NODES, ctx);",
        "        for (int v = 0; v < NODES; v++) switch (CLASS[v]) {",
        *[f"            case {i}: t.push_back(make_{c}(sh.context(v))); break;" for i, c in enumerate(classes)],
        "        }",
        "        for (int w : IN_WORDS) in.emplace_back(w, 0u);",
        "        for (const auto& k : LINK) sh.link(k[0], t[k[0]].p[k[1]], t[k[2]].p[k[3]], t[k[0]].b[k[1]], t[k[2]]);",
        "        for (int v = 0; v < NODES; v++) dones.push_back((const uint8_t*)t[v].p[DONE[v]]);",
        "        buf.resize(BUF_WORDS); sh.start(t);",
        "    }",
        "    void put(int v, int p, const uint32_t* w) { wr(t[v].p[p], t[v].b[p], w); }",
        "    void apply() {  // the top's inputs, as Network wires them to each router",
        "        for (const auto& g : TARGET) {",
        "            std::fill(buf.begin(), buf.begin() + g[2], 0u);",
        "            if (!g[3] || in[GROUP_IN][0] == uint32_t(g[0] / GROUP))",
        "                for (int s = g[4]; s < g[4] + g[5]; s++) { const int* x = IN_SEG[s];",
        "                    bits(buf.data(), x[2], in[x[0]].data(), x[1], x[3]); }",
        "            put(g[0], g[1], buf.data());",
        "        }",
        "        uint32_t s = start;",
        "        for (int v = 0; v < NODES; v++) put(v, START[v], &s);",
        "        applied = start; dirty = false;",
        "    }",
        "    void eval() {  // the tiles' outputs are registers: only a rising edge changes them",
        "        if (dirty || start != applied) apply();",
        "        if (clk && !last) {",
        "            for (int v = 0; v < NODES; v++) *(uint8_t*)t[v].p[NET_DONE[v]] = done;",
        "            sh.cycle();",
        "            done = 1; for (auto p : dones) done &= *p;",
        "        }",
        "        last = clk;",
        "    }",
        "    void final() { sh.stop(); for (auto& x : t) x.fin(x.m); t.clear(); sh.drop(); }",
        "};",
        "static void set_in(Net* n, int i, const uint32_t* w) {",
        "    std::memcpy(n->in[i].data(), w, IN_WORDS[i] * 4); n->dirty = true;",
        "    if (i == START_IN) n->start = uint8_t(w[0] & 1); }",
        "static void get_out(Net* n, int i, uint32_t* w) {",
        "    std::memset(w, 0, OUT_WORDS[i] * 4);",
        "    if (i == DONE_OUT) { w[0] = n->done; return; }",
        "    for (int k = OUT_RANGE[i][0]; k < OUT_RANGE[i][0] + OUT_RANGE[i][1]; k++) {",
        "        const int* s = OUT_SEG[k]; Tile& x = n->t[s[2]];",
        "        rd(x.p[s[3]], x.b[s[3]], n->buf.data()); bits(w, s[1], n->buf.data(), s[4], s[5]); }",
        "}",
    ]
    return lines


def build_tiled_network(design: Design, log=None) -> tuple[Model, dict[str, int]]:
    """The cached tiled model of ``design``'s network top (see module docstring) and its ports' widths:
    the same ports as :class:`~equimesh.rtl.network.Network`.

    Parameters
    ----------
    design : Design
        The network design; pipeline 1 or 2.
    log : callable, optional
        Takes a progress line (the build's start).

    Returns
    -------
    tuple[Model, dict[str, int]]
        The model (:class:`~equimesh.sim.verilator.Model`) and the top's port widths; a failed build
        raises :class:`~equimesh.sim.verilator.VerilatorError` naming its log.
    """
    t0 = time.perf_counter()
    net = Network(design, instances=True)  # one Router per module: only the ports are read
    for unused in (net, net.stats, *net.designs.values()):
        unused._MustUse__silence = True
    tins, touts, twidths = flat_ports(net)
    classes, names = {}, []
    for v in range(design.nodes):
        c = f"Vtile_{router_name(design, v)}"
        if c not in classes:
            params = [c, design.ports(v), design.lanes(v), design.slots, design.chunk_flits, design.depth]
            params += [design.reduce, design.flit_bits, design.pipeline]
            classes[c] = tile_record(partial(RouterTile, design, v), params)
        names.append(c)
    decls = network_declarations(design, classes, names, (tins, touts, twidths))
    cpp = harness_cpp(tins, touts, twidths, None, net=decls)
    return compile_tiles({c: r["verilog"] for c, r in classes.items()}, cpp, tins, touts, t0, log), twidths
