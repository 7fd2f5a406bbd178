"""cocotb 2 on Icarus Verilog: multicasts through the generated Verilog of the 4x4 EquiMesh packet network,
every flit checked by the Python scoreboard (bench: ``equimesh.sim.traffic_cocotb``). The counters-only
soak on Icarus, which the million-cycle ``equimesh soak`` relies on, is checked against the compiled
model and the Amaranth scoreboard in ``tests/test_packets_compiled.py``."""

import shutil

import pytest

from equimesh.rtl.packet import PacketFormat
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.topology import build
from equimesh.sim.traffic import make_traffic, run_verilog

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")


def _clean(r):
    assert r["errors"] == []
    assert not r["deadlock"]
    assert (r["duplicates"], r["lost"], r["corrupted"], r["misdelivered"]) == (0, 0, 0, 0)
    assert r["delivered"] == r["expected"] > 0


def test_multicast_4x4_equimesh_on_icarus(tmp_path):
    topo = build("equimesh", 4, 4)
    fmt = PacketFormat(topo.nodes, 4)
    traffic = make_traffic(fmt, "multicast", fanout=5, rate=0.3, seed=3)
    # 50 injection cycles: the generators queue about 230 packets, which take about 1,600 cycles to
    # deliver (150 injection cycles queued 700, for 4,400 cycles of the same saturated traffic).
    r = run_verilog(forwarding_table(topo), traffic, 4, tmp_path, mode="trace", cycles=50, stall=0.3)
    _clean(r)
    assert r["packets"] >= 50
