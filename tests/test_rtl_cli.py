"""The hardware subcommands: results JSON, and bad input as one line with no traceback."""

import json

import numpy as np

from equimesh.cli import main
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build


def _one_error_line(capsys, argv, code):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_simulate_json(capsys):
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
                "amaranth",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    for key in (
        "bit_exact",
        "cycles",
        "steps",
        "chunk_flits",
        "link_utilization",
        "link_utilization_min",
        "sim_seconds",
        "cycles_per_second",
        "backend",
        "build_seconds",
        "cached",
    ):
        assert key in out
    assert (
        out["backend"] == "amaranth" and out["cycles"] == out["rtl_cycle_counter"] == out["steps"] * 5 + 6
    )  # max(F, 5) + 6
    t = build("equimesh", 2, 3)
    sched = synthesize(t, 2, "allreduce")
    busy = np.zeros(len(t.links))
    for p in sched.phases:
        for s in p.steps:
            np.add.at(busy, np.asarray(s)[:, 0], 3)
    assert out["bit_exact"] and out["steps"] == sched.num_steps and out["chunk_flits"] == 3
    assert out["link_utilization"] == round(busy.mean() / out["cycles"], 4)
    assert out["link_utilization_min"] == round(busy.min() / out["cycles"], 4)


def test_schedule_for_another_topology(tmp_path, capsys):
    path = tmp_path / "s.json"
    synthesize(build("equimesh", 2, 3), 1, "allgather").save(path)
    err = _one_error_line(capsys, ["simulate", "--rows", "3", "--cols", "3", "--schedule", str(path)], 1)
    assert "2x3 equimesh" in err and "3x3 equimesh" in err
    _one_error_line(capsys, ["simulate", "--kind", "mesh", "--rows", "2", "--cols", "3", "--schedule", str(path)], 1)


def test_chunk_flits_below_one(capsys):
    err = _one_error_line(capsys, ["simulate", "--rows", "2", "--cols", "3", "--chunk-flits", "0"], 2)
    assert "--chunk-flits" in err


def test_schedule_the_storage_cannot_execute(tmp_path, capsys):
    # 2x2 mesh, K=3: node 0 keeps chunks 0 and 2 in lane E; sending both in step 0 reads lane E twice.
    t = build("mesh", 2, 2)
    link = {(l.src, l.dst): i for i, l in enumerate(t.links)}
    steps = [[(link[0, 1], 0, 0), (link[0, 2], 0, 2)]]
    have = {v: {(v, c) for c in range(3)} for v in range(4)}
    have[1].add((0, 0))
    have[2].add((0, 2))
    while any(len(h) < 12 for h in have.values()):
        tr, got = [], set()
        for (u, w), i in sorted(link.items()):
            for x in sorted(have[u] - have[w]):
                if (w, x) not in got:
                    got.add((w, x))
                    tr.append((i, *x))
                    break
        for i, r, c in tr:
            have[t.links[i].dst].add((r, c))
        steps.append(tr)
    sched = Schedule("allgather", "hand", 3, t, [Phase("allgather", [np.array(s) for s in steps])])
    path = tmp_path / "bad.json"
    sched.save(path)
    err = _one_error_line(
        capsys, ["simulate", "--kind", "mesh", "--rows", "2", "--cols", "2", "--schedule", str(path)], 1
    )
    assert "lane E of node 0" in err and "cannot execute" in err


def test_missing_simulator_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    err = _one_error_line(capsys, ["simulate", "--rows", "2", "--cols", "3", "--backend", "icarus"], 1)
    assert "apt-get install iverilog" in err


def test_a_design_too_small_for_the_schedule(capsys):
    err = _one_error_line(
        capsys, ["simulate", "--rows", "2", "--cols", "3", "--depth", "3", "--backend", "amaranth"], 1
    )
    assert "the design's tables hold 3 (use a deeper table)" in err
    err = _one_error_line(capsys, ["simulate", "--rows", "2", "--cols", "3", "--slots", "0"], 2)
    assert "--slots: must be 1..16777216 (got 0)" in err
    err = _one_error_line(capsys, ["simulate", "--rows", "2", "--cols", "3", "--slots", str(2**24)], 1)
    assert "a lane holds 1..16777216 flits (got 16777216 slots of 16 flits)" in err  # MemoryError before
    err = _one_error_line(capsys, ["verilog", "--rows", "2", "--cols", "3", "--depth", str(10**12), "--out", "v"], 2)
    assert "--depth: must be 1..1048576" in err
    err = _one_error_line(
        capsys, ["simulate", "--rows", "2", "--cols", "3", "--vcd", "w.fst", "--backend", "icarus"], 2
    )
    assert "FST" in err
