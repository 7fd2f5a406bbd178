"""The mixed run (packets, a collective requested mid-traffic, packets again) on the generated Verilog
under cocotb 2 + Icarus Verilog, against the Amaranth simulator: the same dict, number for number.

The Amaranth result is itself checked against independent references in tests/test_mixed.py (schedule
semantics, packet scoreboard); here both backends feed the same :class:`~equimesh.sim.mixed.MixedRun`,
so equality means the Verilog behaves cycle for cycle as the Amaranth model."""

import shutil

import pytest

from equimesh.rtl.packet import PacketFormat
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.mixed import simulate_mixed
from equimesh.sim.mixed_cocotb import run_mixed_verilog
from equimesh.sim.traffic import make_traffic

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")

PACKET_KEYS = ("delivered", "expected", "duplicates", "lost", "flit_hops", "cycles", "latency_mean", "latency_p99")


def _both(tmp_path, collective, pattern, **run):
    topo = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(topo, 2, collective), 4, topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 3), pattern, fanout=2, rate=0.1, packets=1)
    table = forwarding_table(topo)
    ref = simulate_mixed(image, table, traffic, 3, **run)
    got = run_mixed_verilog(image, table, traffic, 3, tmp_path, **run)
    return image, ref, got


@pytest.mark.parametrize("collective", ["allgather", "allreduce"])
def test_icarus_equals_amaranth_mid_traffic(tmp_path, collective):
    """As tests/test_mixed.py's ``_run``: the request meets packets in flight, which drain first."""
    image, ref, got = _both(tmp_path, collective, "multicast", start_at=60, cycles=150, stall=0.2)
    s = got["schedule"]
    assert s == ref["schedule"]
    assert s["in_flight_at_request"] > 0 and s["drain_cycles"] > 0
    assert s["done"] and s["bit_exact"], s.get("first_mismatch")
    assert s["link_busy_matches_schedule"]
    assert s["cycles"] == s["expected_cycles"] == image.steps * max(image.chunk_flits, 5) + 6
    assert s["packet_flits_during_schedule"] == 0
    p, q = got["packets"], ref["packets"]
    assert {k: p[k] for k in PACKET_KEYS} == {k: q[k] for k in PACKET_KEYS}
    assert p == q  # and everything else (packets, completion, injected before/after, errors)
    assert not p["deadlock"] and p["errors"] == []
    assert p["delivered"] == p["expected"] > 0 and p["duplicates"] == p["lost"] == p["corrupted"] == 0
    assert p["injected_before"] > 0 and p["injected_after"] > 0
    assert got["simulator"] == "icarus" and got["sim_cycles"] == p["cycles"]


def test_icarus_launches_in_the_request_cycle(tmp_path):
    """Nothing in flight at the request: ``launch`` follows ``start`` combinationally in the same cycle
    (a bench that samples before its inputs settle would see the launch one cycle late)."""
    _, ref, got = _both(tmp_path, "allgather", "allgather-multiwrite", start_at=0, cycles=1)
    assert got["schedule"] == ref["schedule"]
    assert got["schedule"]["launched_at"] == 1 and got["schedule"]["drain_cycles"] == 0
    assert got["schedule"]["bit_exact"]
    assert got["packets"] == ref["packets"]
