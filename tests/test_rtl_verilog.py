"""Generated Verilog: one module per distinct router, independent of the schedule; the table images;
a clean Verilator -Wall lint."""

import re
import subprocess

import pytest
from amaranth.lib import data

from equimesh.cli import main
from equimesh.rtl.design import Design
from equimesh.rtl.packet_network import PacketNetwork, PacketSetup
from equimesh.rtl.rom import compile_schedule
from equimesh.rtl.verilog import TOP, network_verilog, top_verilog
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.verilator import find_verilator


def test_one_module_per_distinct_router_instantiated_per_node():
    t = build("mesh", 3, 3)
    text = network_verilog(Design(t, 2, 16, 16, True)).text
    # Hand count: 4 corners (2 lanes each, 4 different port sets), 4 edge routers (3 lanes, 4 sets),
    # 1 interior router (4 lanes).
    routers = re.findall(r"^module (router_\w+)\(", text, re.M)
    assert len(routers) == len(set(routers)) == 9
    instances = re.findall(r"^\s+(router_\w+) r(\d+) \(", text, re.M)
    assert sorted(int(v) for _, v in instances) == list(range(9))
    assert {name for name, _ in instances} == set(routers)
    eq = network_verilog(Design(build("equimesh", 3, 3), 2, 16, 16, True)).text
    assert re.findall(r"^module (router_\w+)\(", eq, re.M) == ["router_5port"]
    assert len(re.findall(r"^\s+router_5port r\d+ \(", eq, re.M)) == 9


def test_packet_routers_are_one_module_per_port_set_with_their_node_tied_at_the_instance():
    """A packet router's node and forwarding masks are inputs (not constants of its logic): the network
    instantiates one module per port set and ties each instance to its node's entries."""
    eq = build("equimesh", 2, 3)
    setup = PacketSetup(forwarding_table(eq), payload_flits=2)
    text = top_verilog(PacketNetwork(forwarding_table(eq), 2, instances=True))
    assert re.findall(r"^module (packet_router_\w+)\(", text, re.M) == ["packet_router_5port_NESW"]
    assert len(re.findall(r"^\s+packet_router_5port_NESW router_\d+ \(", text, re.M)) == 6
    # Node 4's instance gets its own bit and its reach masks (N, E, S, W in bits 0-5, 6-11, ...).
    ties = setup.forwarding(4, eq.ports(4))
    assert ties["own"] == 1 << 4
    assert [(ties["reach"] >> (6 * k)) & 63 for k in range(4)] == [setup.table.reach[4][p] for p in "NESW"]
    mesh = build("mesh", 2, 2)
    names = re.findall(
        r"^module (packet_router_\w+)\(", top_verilog(PacketNetwork(forwarding_table(mesh), 2, instances=True)), re.M
    )
    assert len(set(names)) == len(names) == 4  # 4 corners (ES, SW, NE, NW): every port set differs
    both = network_verilog(Design(eq, 2, 16, 16, True), PacketSetup(forwarding_table(eq), 2)).modules
    assert both == ["router_5port_pkt"]


def test_the_verilog_does_not_depend_on_the_schedule(tmp_path, capsys):
    for name, coll in (("ag", "allgather"), ("ar", "allreduce")):
        assert (
            main(
                [
                    "verilog",
                    "--rows",
                    "2",
                    "--cols",
                    "3",
                    "--chunks",
                    "2",
                    "--chunk-flits",
                    "2",
                    "--depth",
                    "32",
                    "--slots",
                    "16",
                    "--collective",
                    coll,
                    "--out",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
    # AllGather designs have no adders; with --collective allreduce the same sizes add them.
    ag, ar = ((tmp_path / n / f"{TOP}.v").read_text() for n in ("ag", "ar"))
    assert ag != ar
    assert (
        main(
            [
                "verilog",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "4",
                "--chunk-flits",
                "2",
                "--depth",
                "32",
                "--slots",
                "16",
                "--collective",
                "allreduce",
                "--out",
                str(tmp_path / "ar4"),
            ]
        )
        == 0
    )
    assert (tmp_path / "ar4" / f"{TOP}.v").read_text() == ar
    assert "tab_we = 1" in (tmp_path / "ar" / "load.md").read_text()


def test_table_images_decode_to_the_compiled_schedule(tmp_path, capsys):
    t = build("mesh", 3, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 3, t)
    assert (
        main(
            [
                "verilog",
                "--kind",
                "mesh",
                "--rows",
                "3",
                "--cols",
                "3",
                "--chunks",
                "2",
                "--chunk-flits",
                "3",
                "--collective",
                "allreduce",
                "--out",
                str(tmp_path),
                "--tables-dir",
                str(tmp_path / "t"),
            ]
        )
        == 0
    )
    slots = 16  # the fitted design's lanes
    for r in image.routers:
        lines = (tmp_path / "t" / f"table_r{r.node}.hex").read_text().split()
        assert len(lines) == image.steps
        for s, line in enumerate(lines):
            entry = data.Const(image.layout(r.node, slots), int(line, 16))  # Amaranth's own layout decoding
            for i in range(len(r.lanes)):
                op = entry.lane[i]
                assert (op.rd_en, op.rd_slot, op.wr_en, op.wr_slot, op.wr_acc, op.wr_mask) == (
                    r.rd_en[s, i],
                    r.rd_slot[s, i],
                    r.wr_en[s, i],
                    r.wr_slot[s, i],
                    r.wr_acc[s, i],
                    r.wr_mask[s, i],
                )
                assert (entry.out[i].valid, entry.out[i].lane) == (r.out_valid[s, i], r.out_lane[s, i])


@pytest.mark.parametrize(
    "kind,rows,cols,reduce", [("equimesh", 2, 3, True), ("overflow", 3, 4, False), ("mesh", 3, 3, True)]
)
def test_verilator_lint_is_clean_with_the_documented_waivers(tmp_path, kind, rows, cols, reduce):
    from equimesh.rtl.verilog import LINT_WAIVERS

    exe, _ = find_verilator()
    (tmp_path / f"{TOP}.v").write_text(network_verilog(Design(build(kind, rows, cols), 3, 16, 16, reduce)).text)
    (tmp_path / "lint.vlt").write_text(LINT_WAIVERS)
    proc = subprocess.run(
        [exe, "--lint-only", "-Wall", "--top-module", TOP, "lint.vlt", f"{TOP}.v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "%" not in proc.stderr, proc.stderr[:2000]


def test_synthesis_text_drops_only_the_zero_memory_initialisers():
    """Hand-written Amaranth-style Verilog: the all-zero initial blocks of two memories go, a memory
    with a non-zero word and every other line stay."""
    from equimesh.rtl.verilog import without_zero_init

    text = (
        "module m;\n  reg [63:0] mem [1:0];\n  initial begin\n    mem[0] = 64'h0000000000000000;\n"
        "    mem[1] = 64'h0000000000000000;\n  end\n  reg [7:0] \\table  [1:0];\n  initial begin\n"
        "    \\table [0] = 8'h00;\n    \\table [1] = 8'h00;\n  end\n  reg [7:0] rom [1:0];\n"
        "  initial begin\n    rom[0] = 8'h00;\n    rom[1] = 8'h5a;\n  end\nendmodule\n"
    )
    out = without_zero_init(text)
    assert out == (
        "module m;\n  reg [63:0] mem [1:0];\n  reg [7:0] \\table  [1:0];\n  reg [7:0] rom [1:0];\n"
        "  initial begin\n    rom[0] = 8'h00;\n    rom[1] = 8'h5a;\n  end\nendmodule\n"
    )


def test_compiled_text_drops_the_assertions_and_nothing_else():
    """Hand-written yosys-style Verilog: both assertions (the message written on failure, then the
    ``assert``) go; a ``$write`` that is not an assertion's, and every other line, stay."""
    from equimesh.sim.verilator import without_assertions

    keep_head = "module m(clk);\n  always @(posedge clk) begin\n    if (1'h1) begin\n"
    text = (
        keep_head
        + '      if (!\\$12 )\n        $write("router: two inputs drive output N");\n      assert (\\$12 );\n'
        + "    end\n    if (en) begin\n"
        + '      if (!\\$7 )\n        $write("relay: grant without a waiting header");\n      assert (\\$7 );\n'
        + '      if (!ok)\n        $write("not an assertion");\n'
        + "    end\n  end\nendmodule\n"
    )
    assert without_assertions(text) == (
        keep_head + "    end\n    if (en) begin\n"
        '      if (!ok)\n        $write("not an assertion");\n'
        "    end\n  end\nendmodule\n"
    )


def test_every_assertion_of_a_packet_tile_is_dropped():
    """The real Verilog of a packet tile: every ``$write`` Amaranth wrote for an ``Assert`` goes with its
    ``assert`` (as many of each as the text had), and the text still has its registers."""
    from amaranth.back import verilog

    from equimesh.rtl.packet_network import PacketSetup
    from equimesh.rtl.packet_tile import PacketTile
    from equimesh.schedules.routing import forwarding_table
    from equimesh.schedules.topology import build
    from equimesh.sim.verilator import without_assertions

    setup = PacketSetup(forwarding_table(build("mesh", 2, 3), "xy"), payload_flits=2)
    text = verilog.convert(PacketTile(setup, ["E", "S"], 4, 1), name="tile", emit_src=False)
    asserts = text.count("assert (")
    assert asserts > 20 and text.count("$write(") == asserts
    out = without_assertions(text)
    assert "$write(" not in out and "assert (" not in out
    assert out.count("always @(posedge clk)") == text.count("always @(posedge clk)")
