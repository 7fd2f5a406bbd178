"""The tiled compiled model of a packet traffic top (:mod:`~equimesh.sim.tiles`): one Verilated
:class:`~equimesh.rtl.packet_tile.PacketTile` (a node's router, endpoints and counters) per port set (one
for an EquiMesh or a torus, nine for a mesh), one C++ object per node. Each node's forwarding entries,
node number and seeds are inputs, held from the power-on edge.

The harness (:func:`~equimesh.sim.verilator.harness_cpp`, the same program interpreter as the flat
model's) sees a class ``Net`` with the flat :class:`~equimesh.rtl.packet_network.TrafficTop`'s ports:

* a rising clock copies every link's ``valid``, ``payload`` and ``ready`` from the sender's and
  receiver's outputs (all register outputs: :mod:`~equimesh.rtl.packet_tile`) to the other side's
  inputs, then clocks every tile;
* the top's inputs are kept and applied to the tiles before the next evaluation: ``stop``, ``rate``,
  ``stall``, ``table_len`` and ``backlog`` to every tile, the table's write port to the tiles of ``table_group``,
  each its field of ``table_data`` and ``table_limit``;
* the top's outputs are read from the tiles: a node's counters from its tile, ``link_flits__i`` from
  the sender's counter of link ``i``, ``ejected`` and the error counts as sums over the tiles,
  ``copy_done`` as the tiles' lanes in node order.

So the model runs every :class:`~equimesh.sim.program.Program` the flat model runs and returns the
same records (a test compares them word for word).
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import partial

from ..rtl.cache import cache_root, json_record
from ..rtl.packet_network import PacketNetwork, PacketSetup, TrafficLoad, TrafficTop
from ..rtl.packet_router import port_domain
from ..rtl.packet_tile import EJECT_DOMAIN, GATED_DOMAIN, NODE_INPUTS, PacketTile, tile_inputs
from ..rtl.verilog import flat_ports
from ..schedules.routing import ForwardingTable
from .program import words_of
from .tiles import PRELUDE, c_array, compile_tiles, tile_classes, tile_record
from .verilator import Model, harness_cpp, rtl_digest

__all__ = ["build_tiled", "gated_domains", "tiled_declarations"]

_BROADCAST = ("stop", "rate", "stall", "table_len", "backlog")  # the top's inputs every tile takes as they are
_TABLE_PORT = ("table_we", "table_addr", "table_data", "table_limit")  # a tile's generator table write port
_TABLE = _TABLE_PORT + ("table_group",)  # the top's table inputs (the group selects the tiles)
_PER_NODE = ("created", "sent", "count", "key_sum", "key_sq_sum")  # the top's ``<name>__<node>`` outputs
_SUMS = ("ejected", "header_errors", "payload_errors")  # the top's sums over the nodes
# The tile ports every class has, by name (the harness finds them through ``COMMON``).
_COMMON = _BROADCAST + _TABLE_PORT + _PER_NODE + _SUMS + ("copy_done",)


def _class_name(ports: list[str]) -> str:
    return f"Vtile_{''.join(ports)}"


def _wiring(classes: dict, nodes: list, links: list, lanes: list, top: tuple) -> list[str]:
    """The network as C++ tables: each node's class (``CLASS``), the tile port of every common name per
    class (``COMMON``, :data:`_COMMON`), the signals each link copies (``COPIES``: destination node and
    port, source node and port), every node's own inputs (``INIT``: node, port, words, values) and how
    each output of the top is read (``OUT_RULE``: kind, node, port; kinds 0 a node's port, 1 a sum over
    the nodes of a common port, 2 ``copy_done``, the lanes in node order)."""
    names = list(classes)
    index = {c: {n: i for i, n in enumerate(ins + outs)} for c, (_, ins, outs, _) in classes.items()}
    copies = []
    for s, sp, d, dp in links:
        ts, td = index[nodes[s][0]], index[nodes[d][0]]
        copies += [(d, td[f"i_{dp}__{f}"], s, ts[f"o_{sp}__{f}"]) for f in ("valid", "payload")]
        copies.append((s, ts[f"o_{sp}__ready"], d, td[f"i_{dp}__ready"]))
    init = []
    for v, (c, values) in enumerate(nodes):
        for name, value in values.items():
            for k, x in enumerate(value if isinstance(value, list) else [value]):
                port = f"{name}__{k}" if isinstance(value, list) else name
                n = words_of(classes[c][3][port])
                init += [v, index[c][port], n] + [(x >> (32 * j)) & 0xFFFFFFFF for j in range(n)]
    rules = []
    for n in top[1]:
        base, _, k = n.rpartition("__")
        if n in _SUMS:
            rules.append((1, 0, _COMMON.index(n)))
        elif n == "copy_done":
            rules.append((2, 0, 0))
        elif base in _PER_NODE:
            rules.append((0, int(k), index[nodes[int(k)][0]][base]))
        elif base == "link_flits":
            s, sp, _, _ = links[int(k)]
            c = nodes[s][0]
            rules.append((0, s, index[c][f"link_flits__{classes[c][0].index(sp)}"]))
        elif base == "copy_stamp":
            v, j = lanes[int(k)]
            rules.append((0, v, index[nodes[v][0]][f"copy_stamp__{j}"]))
        else:
            raise ValueError(f"the tiled model has no rule for the top's output {n}")
    return [
        c_array("CLASS", [names.index(c) for c, _ in nodes]),
        c_array("COMMON", [tuple(index[c][n] for n in _COMMON) for c in names]),
        c_array("COPIES", copies),
        c_array("INIT", init, "uint32_t"),
        c_array("OUT_RULE", rules),
        c_array("LANES", [len(classes[c][0]) for c in names]),
        c_array("IN_WORDS", [words_of(top[2][n]) for n in top[0]]),
        c_array("OUT_WORDS", [words_of(top[2][n]) for n in top[1]]),
    ]


def gated_domains(ports: list[str]) -> list[tuple[str, list[str]]]:
    """A packet tile's gated clock domains and the 1-bit ports that wake each (rtl/packet_tile.py):
    ``net`` while the tile is busy or a link into it is valid, each network input's domain while that
    input is busy or its link is valid, the injection input's while it is busy, and the local lanes'
    while one is valid.

    Parameters
    ----------
    ports : list of str
        The tile's network ports.

    Returns
    -------
    list of tuple
        ``(domain, ports)`` per domain, ``net`` first (:func:`~equimesh.sim.tiles.tile_classes`).
    """
    return [
        (GATED_DOMAIN, ["busy", *(f"i_{p}__valid" for p in ports)]),
        *((port_domain(p), [f"busy_{p}", f"i_{p}__valid"]) for p in ports),
        (port_domain("inject"), ["busy_inject"]),
        (EJECT_DOMAIN, ["busy_eject"]),
    ]


def tiled_declarations(
    classes: dict, nodes: list, links: list, lanes: list, top: tuple, load: TrafficLoad
) -> list[str]:
    """The C++ of class ``Net`` and its port functions, for :func:`~equimesh.sim.verilator.harness_cpp`.

    Parameters
    ----------
    classes : dict
        Class name -> ``(ports, ins, outs, widths)`` of its tile (network ports, then flat ports).
    nodes : list
        Per node: ``(class name, {tile input: int or list of int})``, its per-node inputs.
    links : list
        Per link of the top, in order: ``(src, src port, dst, dst port)``.
    lanes : list
        Per lane of the top, in order: ``(node, index of the lane in its tile)``.
    top : tuple
        The flat top's ``(ins, outs, widths)``.
    load : TrafficLoad
        The top's table-load geometry.

    Returns
    -------
    list of str
        The lines.
    """
    slot = {n: top[0].index(n) for n in _BROADCAST + _TABLE}
    at = {n: _COMMON.index(n) for n in _COMMON}
    gated = {c: gated_domains(k[0]) for c, k in classes.items()}
    lines = PRELUDE + tile_classes({c: k[1:] for c, k in classes.items()}, gated)
    lines += _wiring(classes, nodes, links, lanes, top)
    lines.append(f"static const int NODES = {len(nodes)}, GROUP = {load.group}, FIELD_WORDS = {load.field_bits // 32};")
    lines += [
        "struct Net {",
        "    uint8_t clk = 0, last = 0; bool dirty = true; std::vector<Tile> t;",
        "    std::vector<std::vector<uint32_t>> in;",
        "    Shares sh; std::vector<Copy> done;  // copy_done, as pointers",
        "    explicit Net(VerilatedContext* ctx) {",
        "        sh.init(NODES, ctx);",
        "        for (int v = 0; v < NODES; v++) { VerilatedContext* c = sh.context(v); switch (CLASS[v]) {",
        *[f"            case {i}: t.push_back(make_{c}(c)); break;" for i, c in enumerate(classes)],
        "        } }",
        "        for (size_t i = 0; i < sizeof(INIT) / 4;) { Tile& x = t[INIT[i]]; int p = INIT[i + 1], n = INIT[i + 2];",
        "            wr(x.p[p], x.b[p], &INIT[i + 3]); i += 3 + n; }",
        "        for (int w : IN_WORDS) in.emplace_back(w, 0u);",
        "        for (auto& c : COPIES) sh.link(c[0], t[c[0]].p[c[1]], t[c[2]].p[c[3]], t[c[0]].b[c[1]], t[c[2]]);",
        f"        for (int v = 0; v < NODES; v++) {{ int p = COMMON[CLASS[v]][{at['copy_done']}];",
        "            done.push_back({nullptr, t[v].p[p], t[v].b[p]}); }",
        "        sh.start(t);",
        "    }",
        "    void set(int v, int c, const uint32_t* w) { Tile& x = t[v]; int p = COMMON[CLASS[v]][c]; wr(x.p[p], x.b[p], w); }",
        "    void apply() {  // the top's inputs, as TrafficTop hands them to each node",
        f"        const uint32_t we = in[{slot['table_we']}][0], group = in[{slot['table_group']}][0];",
        "        std::vector<uint32_t> field(FIELD_WORDS + 2);",
        "        for (int v = 0; v < NODES; v++) {",
        *[f"            set(v, {at[n]}, in[{slot[n]}].data());" for n in _BROADCAST],
        "            uint32_t mine = we && uint32_t(v / GROUP) == group;",
        f"            set(v, {at['table_we']}, &mine);",
        f"            set(v, {at['table_addr']}, in[{slot['table_addr']}].data());",
        "            int f = v % GROUP;",
        f"            std::memcpy(field.data(), &in[{slot['table_data']}][f * FIELD_WORDS], FIELD_WORDS * 4);",
        "            if (NODES % 32) field[FIELD_WORDS - 1] &= (1u << (NODES % 32)) - 1;",
        f"            set(v, {at['table_data']}, field.data());",
        f"            set(v, {at['table_limit']}, &in[{slot['table_limit']}][f]);",
        "        }",
        "        dirty = false;",
        "    }",
        "    void eval() {  // the tiles' outputs are registers: only a rising edge changes them",
        "        if (dirty) apply();",
        "        if (clk && !last) sh.cycle();",
        "        last = clk;",
        "    }",
        "    void final() { sh.stop(); for (auto& x : t) x.fin(x.m); t.clear(); sh.drop(); }",
        "};",
        "static void set_in(Net* n, int i, const uint32_t* w) {",
        "    std::memcpy(n->in[i].data(), w, IN_WORDS[i] * 4); n->dirty = true; }",
        "static void get_out(Net* n, int i, uint32_t* w) {",
        "    const int* r = OUT_RULE[i];",
        "    if (r[0] == 0) { Tile& x = n->t[r[1]]; rd(x.p[r[2]], x.b[r[2]], w); return; }",
        "    if (r[0] == 1) { uint32_t s = 0, y;",
        "        for (int v = 0; v < NODES; v++) { Tile& x = n->t[v]; int p = COMMON[CLASS[v]][r[2]]; rd(x.p[p], 4, &y); s += y; }",
        "        w[0] = s; return; }",
        "    std::memset(w, 0, OUT_WORDS[i] * 4); int bit = 0; uint32_t d[8];",
        "    for (int v = 0; v < NODES; v++) { const auto& c = n->done[v]; int k = LANES[CLASS[v]]; rd(c.s, c.b, d);",
        "        if (!d[0] && k <= 32) { bit += k; continue; }",
        "        for (int j = 0; j < k; j++, bit++) if (d[j / 32] >> (j % 32) & 1) w[bit / 32] |= 1u << (bit % 32); }",
        "}",
    ]
    return lines


def _top_ports(table: ForwardingTable, payload_flits: int, depth: int, pipeline: int, flit_bits: int, params: str):
    """The ports of the :class:`~equimesh.rtl.packet_network.TrafficTop` the tiled model stands in for
    (:func:`~equimesh.rtl.verilog.flat_ports`), cached: at 32x32 the top takes seconds to build."""
    key = hashlib.sha256("\0".join([rtl_digest(), json.dumps(table.to_json()), params]).encode()).hexdigest()[:24]

    def export() -> dict:
        net = PacketNetwork(table, payload_flits, pipeline=pipeline, flit_bits=flit_bits)
        top = TrafficTop(net, depth, check=True)
        net._MustUse__silence = top._MustUse__silence = True  # only their ports are read
        ins, outs, widths = flat_ports(top)
        return {"ins": ins, "outs": outs, "widths": widths}

    rec = json_record(cache_root() / "verilog" / f"traffic-ports-{key}.json", ("ins", "outs", "widths"), export)
    return rec["ins"], rec["outs"], rec["widths"]


def build_tiled(
    table: ForwardingTable, payload_flits: int, depth: int, pipeline: int, flit_bits: int, log=None
) -> tuple[Model, dict[str, int]]:
    """The cached tiled model of the packet traffic top (see module docstring) and its ports' widths:
    the same ports as :class:`~equimesh.rtl.packet_network.TrafficTop` built with ``check``.

    Parameters
    ----------
    table : ForwardingTable
        The forwarding table (its topology gives the nodes and links).
    payload_flits : int
        Payload flits per packet.
    depth : int
        Entries of each generator's bitmap table.
    pipeline : int
        The routers' pipeline depth, 1 or 2.
    flit_bits : int
        Width of a flit's body.
    log : callable, optional
        Takes a progress line (the build's start).

    Returns
    -------
    tuple[Model, dict[str, int]]
        The model (:class:`~equimesh.sim.verilator.Model`) and the top's port widths; a failed build
        raises :class:`~equimesh.sim.verilator.VerilatorError` naming its log.
    """
    t0 = time.perf_counter()
    topo = table.topology
    setup = PacketSetup(table, payload_flits, flit_bits=flit_bits)  # as the PacketNetwork's
    params = json.dumps([setup.fmt.nodes, payload_flits, setup.depth, flit_bits, depth, pipeline])
    tins, touts, twidths = _top_ports(table, payload_flits, depth, pipeline, flit_bits, params)
    classes, class_ports, nodes = {}, {}, []
    for v in range(topo.nodes):
        ports = topo.ports(v)
        c = _class_name(ports)
        if c not in classes:  # the node's own inputs held from the power-on edge on
            make = partial(PacketTile, setup, ports, depth, pipeline)
            domains = tuple(d for d, _ in gated_domains(ports))
            classes[c], class_ports[c] = tile_record(make, [params, ports], NODE_INPUTS, domains), ports
        nodes.append((c, tile_inputs(setup, v, ports)))
    links = [(lk.src, lk.src_port, lk.dst, lk.dst_port) for lk in topo.links]
    lanes = [(v, k) for v in range(topo.nodes) for k in range(len(topo.ports(v)))]  # PacketNetwork.lanes
    decls = tiled_declarations(
        {c: (class_ports[c], r["ins"], r["outs"], r["widths"]) for c, r in classes.items()},
        nodes,
        links,
        lanes,
        (tins, touts, twidths),
        TrafficLoad(topo.nodes),
    )
    cpp = harness_cpp(tins, touts, twidths, None, net=decls)
    return compile_tiles({c: r["verilog"] for c, r in classes.items()}, cpp, tins, touts, t0, log), twidths
