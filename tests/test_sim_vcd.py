"""Waveforms: the VCD's link valid signals, read back with vcdvcd, give the simulator's busy counts."""

import re

from vcdvcd import VCDVCD

from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.harness import simulate
from equimesh.sim.waveform import SCOPE, link_name, write_gtkw


def _high_cycles(tv, period, end):
    """Cycles a 1-bit signal spends at 1, from its (time, value) changes."""
    total, since = 0, None
    for time, value in list(tv) + [(end, "x")]:
        if since is not None:
            total += time - since
            since = None
        if value == "1":
            since = time
    assert total % period == 0
    return total // period


def test_vcd_link_busy_cycles_match_the_counters(tmp_path):
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 3, t)
    vcd_path, gtkw_path = tmp_path / "run.vcd", tmp_path / "run.gtkw"
    res = simulate(image, vcd=str(vcd_path))
    write_gtkw(gtkw_path, vcd_path, t)
    assert res.bit_exact
    vcd = VCDVCD(str(vcd_path))
    rises = [time for time, value in vcd[f"{SCOPE}.clk"].tv if value == "1"]
    period = rises[1] - rises[0]
    assert all(b - a == period for a, b in zip(rises, rises[1:]))
    for i in range(len(t.links)):
        busy = _high_cycles(vcd[f"{SCOPE}.{link_name(t, i)}"].tv, period, vcd.endtime)
        assert busy == res.stats.busy[i] == image.link_transfers[i] * 3
    # The save file groups each router's out-links, and names every link once.
    text = gtkw_path.read_text()
    groups = re.findall(r"@800200\n-router (\d+)\n@28\n(.*?)@1000200", text, re.S)
    assert [int(v) for v, _ in groups] == list(range(t.nodes))
    for v, body in groups:
        names = body.split()
        assert names == [f"{SCOPE}.{link_name(t, i)}" for i in t.out_links[int(v)]]
        for name in names:
            assert name in vcd.references_to_ids
