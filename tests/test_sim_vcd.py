"""Waveforms on every backend: the link valid signals, read back from the VCD with vcdvcd, give the busy
counts of the statistics block and of the schedule; the GTKWave save file names signals the VCD has."""

import json
import re

import pytest
from vcdvcd import VCDVCD

from equimesh.cli import main
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.waveform import SCOPES, link_name


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


@pytest.mark.parametrize("backend", ["amaranth", "verilator", "icarus"])
def test_vcd_link_busy_cycles_match_the_counters(tmp_path, capsys, backend):
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 3, t)
    vcd_path = tmp_path / "run.vcd"
    assert (
        main(
            [
                "simulate",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "2",
                "--chunk-flits",
                "3",
                "--collective",
                "allreduce",
                "--backend",
                backend,
                "--vcd",
                str(vcd_path),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    scope = SCOPES[backend]
    vcd = VCDVCD(str(vcd_path))
    rises = [time for time, value in vcd[f"{scope}.clk"].tv if value == "1"]
    period = rises[1] - rises[0]
    assert all(b - a == period for a, b in zip(rises, rises[1:]))
    for i in range(len(t.links)):
        busy = _high_cycles(vcd[f"{scope}.{link_name(t, i)}"].tv, period, vcd.endtime)
        assert busy == image.link_transfers[i] * 3
        assert round(busy / out["cycles"], 4) == out["link_utilization_per_link"][i]
    # The save file groups each router's out-links, and names every link once.
    text = (tmp_path / "run.gtkw").read_text()
    groups = re.findall(r"@800200\n-router (\d+)\n@28\n(.*?)@1000200", text, re.S)
    assert [int(v) for v, _ in groups] == list(range(t.nodes))
    for v, body in groups:
        names = body.split()
        assert names == [f"{scope}.{link_name(t, i)}" for i in t.out_links[int(v)]]
        for name in names:
            assert name in vcd.references_to_ids


def test_fst_on_the_compiled_model(tmp_path, capsys):
    """A .fst name gives Verilator's FST writer (it compiles against the LZ4 headers, which make setup
    installs): the run succeeds and the file is an FST (its first block is the header block, type 0).
    vcdvcd reads VCD only, so the contents are checked by the VCD test above."""
    fst = tmp_path / "run.fst"
    assert (
        main(
            [
                "simulate",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "2",
                "--chunk-flits",
                "3",
                "--vcd",
                str(fst),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["bit_exact"] and out["backend"] == "verilator"
    data = fst.read_bytes()
    assert len(data) > 300 and data[0] == 0
