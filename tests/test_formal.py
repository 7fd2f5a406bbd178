"""Formal proofs (issue 40, ``docs/formal.md``): the properties of the 4x4 EquiMesh router's blocks at the
default pipeline (crossbar, schedule router, input buffer, relay), each unbounded and with its covers reached (``tests/test_formal_checks.py``: the
mutations each property catches, the runner and the CLI).

The proofs at pipelines 0 and 1, with two bitmap flits (8x8, 32-bit flits) and of the whole packet
router are marked ``prove`` and run by ``make prove`` (which also runs ``equimesh prove`` at 4x4 and 8x8).
"""

from __future__ import annotations

import pytest

from equimesh.rtl.formal import Params, block, prove

CI = [("crossbar", "xbar_select"), ("router", "done_timing"), ("router", "link_schedule"), ("router", "lane_addr")]
PACKET = [("input_buffer", p) for p in block("input_buffer").PROPERTIES] + [
    ("relay", p) for p in block("relay").PROPERTIES
]
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
@pytest.mark.parametrize("prop", list(block("packet_router").PROPERTIES))
def test_packet_router_bounded(prop, tmp_path):
    """The whole packet router, bounded (docs/formal.md: why induction is not attempted), with one payload
    flit: with two, ``no_interleave`` needs more than 10 minutes at depth 13."""
    v = _prove("packet_router", prop, Params(payload_flits=1), tmp_path, timeout=1800)
    assert v.status == "PASS" and v.depth >= 12, v.note
    assert v.covers[0] == v.covers[1] >= 1


@pytest.mark.prove
@pytest.mark.parametrize("name,prop", PACKET, ids=[f"{b}-{p}" for b, p in PACKET])
def test_two_bitmap_words(name, prop, tmp_path):
    """8x8 with 32-bit flits: the bitmap is split over two flits (rtl/packet.py), the relay's multi-word path."""
    params = Params(rows=8, cols=8, flit_bits=32)
    assert -(-params.nodes // params.flit_bits) == 2
    v = _prove(name, prop, params, tmp_path, timeout=1800)
    assert (v.status, v.unbounded) == ("PASS", True), v.note
    assert v.covers[0] == v.covers[1] >= 1
