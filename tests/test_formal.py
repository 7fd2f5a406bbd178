"""Formal proofs (issue 40, ``docs/formal.md``): the properties of the 4x4 EquiMesh router's blocks at the
default pipeline (crossbar, schedule router, input buffer, relay, the whole packet router), each unbounded
and with its covers reached (``tests/test_formal_checks.py``: the mutations each property catches, the
runner and the CLI).

The proofs at pipelines 0 and 1 and with two bitmap flits (8x8, 32-bit flits) are marked ``prove`` and run
by ``make prove`` (which also runs ``equimesh prove`` at 4x4 and 8x8).

A PASS is read back from the shared cache when the property's RTLIL, depths, runner and tools are
unchanged (``rtl/formal/sby.py``); any change to the RTL proves again. ``tests/test_formal_checks.py``
runs the solver on an empty cache.
"""

from __future__ import annotations

import pytest

from equimesh.cli import main
from equimesh.rtl.formal import BLOCKS, Params, block, prove

CI = [("crossbar", "xbar_select"), ("router", "done_timing"), ("router", "link_schedule"), ("router", "lane_addr")]
PACKET = [(b, p) for b in ("input_buffer", "relay", "packet_router") for p in block(b).PROPERTIES]
CI += PACKET


def _prove(name, prop, params, tmp_path, timeout=300):
    return prove(name, prop, params, timeout, waveforms=tmp_path / "waveforms")


@pytest.mark.parametrize("name,prop", CI, ids=[f"{b}-{p}" for b, p in CI])
def test_unbounded_4x4(name, prop, tmp_path):
    v = _prove(name, prop, Params(), tmp_path)
    assert (v.status, v.unbounded) == ("PASS", True), v.note
    assert v.covers[0] == v.covers[1] >= 1  # every precondition is reachable: not a vacuous proof


OTHER = [(b, p, pl) for pl in (0, 1) for b, p in CI]


@pytest.mark.prove
@pytest.mark.parametrize("name,prop,pipeline", OTHER, ids=[f"{b}-{p}-p{pl}" for b, p, pl in OTHER])
def test_other_pipelines(name, prop, pipeline, tmp_path):
    v = _prove(name, prop, Params(pipeline=pipeline), tmp_path, timeout=1800)
    assert v.status == "PASS" and (v.unbounded or not block(name).PROPERTIES[prop].unbounded), v.note
    assert v.covers[0] == v.covers[1] >= 1


@pytest.mark.prove
@pytest.mark.parametrize("name,prop", PACKET, ids=[f"{b}-{p}" for b, p in PACKET])
def test_two_bitmap_words(name, prop, tmp_path):
    """8x8 with 32-bit flits: the bitmap is split over two flits (rtl/packet.py), the relay's multi-word path
    (the input buffer, the relay and the whole packet router)."""
    params = Params(rows=8, cols=8, flit_bits=32)
    assert -(-params.nodes // params.flit_bits) == 2
    v = _prove(name, prop, params, tmp_path, timeout=1800)
    assert (v.status, v.unbounded) == ("PASS", True), v.note
    assert v.covers[0] == v.covers[1] >= 1


@pytest.mark.prove
def test_verilog_packets_writes_every_block(tmp_path):
    """With ``--packets`` the packet blocks' tasks come too: one per property of every block (``prove``: it
    converts 15 wrappers, the packet router's with its invariant; ``tests/test_formal_checks.py`` reruns a
    task of the schedule router's)."""
    out = tmp_path / "v"
    argv = ["verilog", "--rows", "2", "--cols", "3", "--chunks", "1", "--chunk-flits", "2", "--packets"]
    assert main([*argv, "--payload-flits", "1", "--formal", "--out", str(out)]) == 0
    tasks = sorted(p.stem for p in (out / "formal").glob("*.sby"))
    assert tasks == sorted(f"{b}_{p}" for b in BLOCKS for p in block(b).PROPERTIES)
    assert all((out / "formal" / f"{t}.il").read_text().count("$check") > 0 for t in tasks)
