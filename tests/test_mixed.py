"""One router for both modes (seed 004 Section 4 on the routers of seed 000 Section III): packets,
a scheduled collective requested while packets are in flight, more packets after it.

References: the schedule semantics (bit-exact lanes, link busy cycles, the cycle formula) and the
packet scoreboard of sim/traffic.py, both independent of the routers."""

import json
import shutil
import subprocess

import pytest
from amaranth.hdl import Signal

from equimesh.cli import main
from equimesh.rtl import network
from equimesh.rtl.packet import PacketFormat
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.backends import run_image
from equimesh.sim.harness import RtlAssertionFailed
from equimesh.sim.mixed import simulate_mixed
from equimesh.sim.traffic import make_traffic


def _run(
    kind, rows, cols, collective, *, rate=0.1, stall=0.2, start_at=60, cycles=200, pattern="multicast", pipeline=1
):
    topo = build(kind, rows, cols)
    image = compile_schedule(synthesize(topo, 2, collective), 4, topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 3), pattern, fanout=2, rate=rate, packets=2)
    return image, simulate_mixed(
        image, forwarding_table(topo), traffic, 3, start_at=start_at, cycles=cycles, stall=stall, pipeline=pipeline
    )


def _clean(p):
    assert not p["deadlock"] and p["errors"] == []
    assert p["delivered"] == p["expected"] > 0
    assert p["duplicates"] == p["lost"] == p["corrupted"] == p["misdelivered"] == 0


@pytest.mark.parametrize(
    "kind,collective", [("equimesh", "allgather"), ("equimesh", "allreduce"), ("mesh", "allreduce")]
)
def test_schedule_requested_mid_traffic(kind, collective):
    image, r = _run(kind, 2, 3, collective)
    s, p = r["schedule"], r["packets"]
    assert s["in_flight_at_request"] > 0  # the request really met packets in flight
    assert s["drain_cycles"] > 0 and s["done"]
    assert s["bit_exact"], s.get("first_mismatch")
    assert s["link_busy_matches_schedule"]
    assert s["cycles"] == image.steps * max(image.chunk_flits, 4) + 5  # pipeline 1 (docs/rtl.md)
    assert s["packet_flits_during_schedule"] == 0
    assert p["injected_before"] > 0 and p["injected_after"] > 0  # packets flow before and after
    _clean(p)


def test_pipeline_2_both_paths_on_one_router():
    """The router `equimesh fpga --packets --pipeline 2` places: the write-registered schedule path
    (steps x max(F, 5) + 6 cycles, docs/rtl.md) and the packet path with its spill registers."""
    image, r = _run("equimesh", 2, 3, "allreduce", pipeline=2)
    s, p = r["schedule"], r["packets"]
    assert s["in_flight_at_request"] > 0 and s["drain_cycles"] > 0 and s["done"]
    assert s["bit_exact"], s.get("first_mismatch")
    assert s["link_busy_matches_schedule"] and s["packet_flits_during_schedule"] == 0
    assert s["cycles"] == image.steps * 5 + 6  # F = 4 < 5
    _clean(p)


def test_pipeline_0_packets_resume_in_the_cycle_the_schedule_ends():
    """Pipeline 0: the packet path's outputs are combinational, so a packet header can be on a link in the
    very cycle ``done`` rises. The receivers must take it there (the schedule window that masks their
    inputs is down in that cycle): every copy arrives, none is cut. Steps x max(F, 2) + 3 cycles
    (docs/architecture.md, Timing model)."""
    image, r = _run("equimesh", 2, 3, "allreduce", pipeline=0)
    s, p = r["schedule"], r["packets"]
    assert s["in_flight_at_request"] > 0 and s["drain_cycles"] > 0 and s["done"]
    assert s["bit_exact"], s.get("first_mismatch")
    assert s["link_busy_matches_schedule"] and s["packet_flits_during_schedule"] == 0
    assert s["cycles"] == image.steps * 4 + 3  # F = 4
    assert p["injected_after"] > 0
    _clean(p)


def test_same_timing_as_the_schedule_only_network():
    """No packet in flight at the request: the schedule launches at once and matches the network built
    without packets cycle for cycle and link for link."""
    topo = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(topo, 2, "allgather"), 4, topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 3), "allgather-multiwrite", packets=1)
    r = simulate_mixed(image, forwarding_table(topo), traffic, 3, start_at=0, cycles=1)
    alone = run_image(image, "amaranth")
    s = r["schedule"]
    assert s["in_flight_at_request"] == 0 and s["drain_cycles"] == 0
    assert s["cycles"] == alone.cycles and s["bit_exact"] and alone.bit_exact
    assert s["link_utilization"] == round(alone.stats.mean, 4)
    assert r["packets"]["injected_after"] == r["packets"]["packets"] == topo.nodes  # all wait for `done`
    _clean(r["packets"])


def test_backpressured_allgather_packets_around_the_schedule():
    image, r = _run("equimesh", 2, 3, "allgather", pattern="allgather-multiwrite", stall=0.5, start_at=5)
    assert r["schedule"]["bit_exact"] and r["schedule"]["link_busy_matches_schedule"]
    _clean(r["packets"])


def test_launch_without_drain_is_caught(monkeypatch):
    """A network that starts the schedule at once, ignoring packets in flight, trips the router's assertion."""

    def launch_at_once(self, m, routers):
        m.d.comb += self.launch.eq(self.start)
        return Signal()

    monkeypatch.setattr(network.Network, "_launch", launch_at_once)
    with pytest.raises(RtlAssertionFailed, match="while the schedule runs|a packet on a link the schedule drives"):
        _run("equimesh", 2, 3, "allgather")


# ----- the commands: `equimesh mixed`, `equimesh verilog --packets` ---------------------------------


def test_mixed_command_json(capsys):
    argv = [
        "mixed",
        "--kind",
        "equimesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--chunks",
        "2",
        "--chunk-flits",
        "4",
        "--payload-flits",
        "3",
        "--fanout",
        "2",
        "--rate",
        "0.1",
        "--cycles",
        "150",
        "--start-at",
        "50",
        "--collective",
        "allreduce",
        "--backend",
        "amaranth",
        "--json",
    ]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    s, p = r["schedule"], r["packets"]
    assert r["collective"] == "allreduce" and s["bit_exact"] and s["link_busy_matches_schedule"]
    # the request met packets in flight (seeded traffic), so the launch waited for them to drain
    assert s["in_flight_at_request"] > 0 and s["drain_cycles"] > 0 and s["launched_at"] > s["requested_at"] == 50
    assert s["cycles"] == r["steps"] * 5 + 6 and s["packet_flits_during_schedule"] == 0  # steps x max(F, 5) + 6
    assert p["delivered"] == p["expected"] == 2 * p["packets"] > 0  # fanout 2


@pytest.mark.parametrize(
    "extra,code,text",
    [
        (["--start-at", "-1"], 2, "--start-at must be 0..2147483648"),
        (["--start-at", str(10**12)], 2, "--start-at must be 0..2147483648 (got 1000000000000)"),  # ran for ever before
        (["--payload-flits", "0"], 2, "--payload-flits: must be 1..4096 (got 0)"),
        (["--fanout", "6"], 2, "--fanout must be 1..5"),
        (["--routing", "zigzag"], 1, "zigzag"),
        (["--vcd", "w.vcd", "--backend", "icarus"], 2, "--vcd goes with --backend verilator or amaranth"),
        (
            ["--vcd", "w.fst", "--backend", "amaranth"],
            2,
            "the amaranth backend writes VCD only; FST needs --backend verilator",
        ),
    ],
)
def test_mixed_bad_input_is_one_line(capsys, extra, code, text):
    assert main(["mixed", "--kind", "equimesh", "--rows", "2", "--cols", "3"] + extra) == code
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1 and "Traceback" not in err


def test_verilog_with_packets_compiles(tmp_path, capsys):
    """The network carrying both modes converts to Verilog that Icarus elaborates, with packet ports."""
    out = tmp_path / "v"
    assert (
        main(
            [
                "verilog",
                "--kind",
                "equimesh",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "2",
                "--chunk-flits",
                "4",
                "--packets",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "also carry packets" in capsys.readouterr().out
    text = (out / "equimesh_top.v").read_text()
    assert "inject__0__valid" in text and "eject__0__ready" in text and "launch" in text
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog not installed")
    proc = subprocess.run(
        ["iverilog", "-g2012", "-o", str(tmp_path / "top.vvp"), str(out / "equimesh_top.v")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[:2000]
