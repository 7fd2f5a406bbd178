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
    # 25 injection cycles at rate 0.3: the 16 generators create about 120 packets (50 cycles made about
    # 230, delivered in about 1,600 cycles of saturated traffic; 150 made 700, in 4,400 cycles).
    r = run_verilog(forwarding_table(topo), traffic, 4, tmp_path, mode="trace", cycles=25, stall=0.3)
    _clean(r)
    assert r["packets"] >= 50
