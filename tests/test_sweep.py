"""``equimesh sweep`` (sim/sweep): plans checked before any task, the store's keys and version check,
resume counted by Dask's own record of executed tasks, a real scheduler and two worker processes, and a
worker killed mid-sweep. Points are cheap: schedule synthesis on 2x3..4x4 and OpTree formulas."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from equimesh.cli import main
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.sweep import plan as plan_mod
from equimesh.sim.sweep import runner
from equimesh.sim.sweep.plan import PlanError, plan_from_dict, point_key
from equimesh.sim.sweep.runner import run_sweep
from equimesh.sim.sweep.store import Store, StoreError

distributed = pytest.importorskip("distributed")

SMALL = {
    "command": "schedule",
    "axes": {
        "kind": ["mesh", "equimesh"],
        "size": ["2x3", "3x3"],
        "K": [1, 2],
        "collective": ["allgather", "allreduce"],
    },
}


def _one_line(capsys, argv, code, text):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert text in err, err


# -- plans -------------------------------------------------------------------------------------------


def test_plan_is_the_product_of_its_axes():
    points = plan_from_dict(SMALL).points()
    assert len(points) == 2 * 2 * 2 * 2
    assert len({point_key(p) for p in points}) == len(points)
    assert {(p["kind"], p["size"], p["K"], p["collective"]) for p in points} == {
        (k, s, K, c)
        for k in ("mesh", "equimesh")
        for s in ("2x3", "3x3")
        for K in (1, 2)
        for c in ("allgather", "allreduce")
    }
    assert all(p["options"] == {"algorithm": "auto"} for p in points)


def test_several_sweeps_and_defaults():
    plan = plan_from_dict({"store": "x.db", "sweep": [SMALL, {"command": "optree", "axes": {"nodes": [16, 64]}}]})
    assert plan.store == "x.db" and len(plan.points()) == 16 + 2
    assert plan.points()[-1] == {"command": "optree", "nodes": 64, "wavelengths": 1, "options": {"stages": 0}}


@pytest.mark.parametrize(
    "doc,text",
    [
        ({"command": "synthesize"}, "unknown command 'synthesize'"),
        ({"command": "schedule", "axes": {"F": [4]}}, "schedule: unknown axis 'F'"),
        ({"command": "schedule", "axes": {"kind": ["ring"]}}, "axis kind: bad value 'ring'"),
        ({"command": "schedule", "axes": {"size": ["4x1"]}}, "axis size: bad value '4x1'"),
        ({"command": "schedule", "axes": {"K": [0]}}, "axis K: bad value 0"),
        ({"command": "traffic", "axes": {"rate": [1.5]}}, "axis rate: bad value 1.5"),
        ({"command": "simulate", "axes": {"pipeline": [3]}}, "axis pipeline: bad value 3"),
        ({"command": "schedule", "axes": {"K": []}}, "axis K has no values"),
        ({"command": "fpga", "options": {"speed": 9}}, "option speed: bad value 9"),
        ({"command": "schedule", "options": {"backend": "x"}}, "unknown option 'backend'"),
        ({"command": "schedule", "axis": {}}, "unknown key 'axis'"),
        ({"command": "schedule", "options": {"algorithm": "fastest"}}, "option algorithm: bad value 'fastest'"),
        ({"command": "evaluate", "options": {"message": "64Q"}}, "option message: bad value '64Q'"),
        ({"command": "evaluate", "options": {"algorithm": "mesh-ring"}}, "option algorithm: bad value 'mesh-ring'"),
        ({"command": "traffic", "options": {"routing": "west-first"}}, "option routing: bad value 'west-first'"),
        ({"command": "llm", "options": {"model": "gpt-9"}}, "option model: bad value 'gpt-9'"),
    ],
)
def test_bad_plan_names_the_culprit(doc, text):
    with pytest.raises(PlanError, match=None) as e:
        plan_from_dict(doc)
    assert text in str(e.value)


def test_bad_plan_on_the_command_line_is_one_line(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('command = "schedule"\n[axes]\nkind = ["mesh", "ring"]\n')
    _one_line(capsys, ["sweep", str(plan), "--store", str(tmp_path / "s.db")], 2, "axis kind: bad value 'ring'")
    assert not (tmp_path / "s.db").exists()  # refused before the store or a cluster
    plan.write_text("command = \n")
    _one_line(capsys, ["sweep", str(plan)], 2, "not TOML")
    _one_line(capsys, ["sweep", "--command", "schedule", "--seed", "2"], 2, "schedule: unknown axis 'seed'")
    _one_line(capsys, ["sweep", "--command", "optree", "--option", "stages"], 2, "--option takes NAME=VALUE")
    _one_line(capsys, ["sweep", str(tmp_path / "none.toml")], 2, "none.toml")
    _one_line(
        capsys,
        ["sweep", "--command", "optree", "--scheduler", "tcp://h:1", "--workers", "2"],
        2,
        "--workers and --worker-memory size the local cluster",
    )
    _one_line(capsys, ["sweep", "--command", "optree", "--timeout", "0"], 2, "--timeout must be > 0 seconds")
    _one_line(capsys, ["sweep", "--show", "--store", str(tmp_path / "none.db")], 1, "no store")


def test_unreachable_scheduler_is_one_line_with_the_address(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(runner, "CONNECT_TIMEOUT", 1.0)
    _one_line(
        capsys,
        [
            "sweep",
            "--command",
            "optree",
            "--nodes",
            "16",
            "--store",
            str(tmp_path / "s.db"),
            "--scheduler",
            "tcp://127.0.0.1:9",
        ],
        1,
        "cannot reach the Dask scheduler at tcp://127.0.0.1:9",
    )


def test_store_of_another_version_is_refused(tmp_path, capsys, monkeypatch):
    db = tmp_path / "s.db"
    Store(db).close()
    with sqlite3.connect(db) as c:
        c.execute("UPDATE meta SET value = '0.0.1' WHERE name = 'equimesh'")
    with pytest.raises(StoreError, match="written by equimesh 0.0.1"):
        Store(db)
    _one_line(capsys, ["sweep", "--show", "--store", str(db)], 1, "written by equimesh 0.0.1")
    (tmp_path / "junk.db").write_text("not sqlite at all, " * 100)
    _one_line(capsys, ["sweep", "--show", "--store", str(tmp_path / "junk.db")], 1, "not a sweep store")


def test_the_key_covers_the_project_version(monkeypatch):
    p = plan_from_dict(SMALL).points()[0]
    k = point_key(p)
    monkeypatch.setattr(plan_mod, "project_version", lambda: "9.9")
    assert point_key(p) != k


# -- running ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        yield c


def _stored(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT key, status, steps, bound, kind, rows, cols, K, collective FROM results").fetchall()


@pytest.fixture(scope="module")
def small(tmp_path_factory, client):
    """The store of SMALL and one failing point, and the counts of its sweep."""
    store = Store(tmp_path_factory.mktemp("small") / "s.db")
    bad = plan_from_dict(
        {"command": "schedule", "axes": {"kind": ["overflow"], "size": ["3x3"]}, "options": {"algorithm": "ring"}}
    ).points()
    return store, run_sweep(plan_from_dict(SMALL).points() + bad, store, client)


def test_results_match_the_library_and_failures_are_stored(tmp_path, small):
    store, counts = small
    assert (counts.done, counts.failed, counts.remaining) == (16, 1, 0)
    rows = store.rows()
    failed = [r for r in rows if r["status"] == "failed"]
    assert (
        len(failed) == 1
        and "ring needs an EquiMesh (got overflow)" in failed[0]["error"]
        and "\n" not in failed[0]["error"]
    )
    for r in rows:
        if r["status"] == "ok":  # the stored steps are those of a direct call of the library
            sched = synthesize(build(r["kind"], r["rows"], r["cols"]), r["K"], r["collective"])
            assert r["steps"] == sched.num_steps
    # the exports hold the same rows; JSON and CSV name the same columns
    assert store.write_json(tmp_path / "s.json") == 17 == store.write_csv(tmp_path / "s.csv")
    assert {r["key"] for r in json.loads((tmp_path / "s.json").read_text())} == {r["key"] for r in rows}
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 18


class _Stop(Exception):
    pass


def test_an_interrupted_sweep_resumes_with_only_the_missing_points(tmp_path, client):
    points = plan_from_dict(SMALL).points()
    db = tmp_path / "s.db"

    def interrupt(counts):
        if counts.done >= 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(points, Store(db), client, progress=interrupt)
    first = len(_stored(db))
    assert 5 <= first < len(points)
    time.sleep(0.5)  # cancelled tasks leave the scheduler
    # Dask's own record of the tasks executed: the resumed sweep runs exactly the missing points
    with distributed.get_task_stream(client) as ts:
        counts = run_sweep(points, Store(db), client)
    executed = [t["key"] for t in ts.data if str(t["key"]).startswith("sweep-point-")]
    assert len(executed) == len(set(executed)) == len(points) - first
    assert (counts.skipped, counts.done) == (first, len(points) - first)
    with distributed.get_task_stream(client) as ts:
        counts = run_sweep(points, Store(db), client)
    assert not [t for t in ts.data if str(t["key"]).startswith("sweep-point-")] and counts.skipped == len(points)
    assert sorted(k for k, *_ in _stored(db)) == sorted(point_key(p) for p in points)


def test_timeout_and_memory_limit_fail_the_point_not_the_sweep(tmp_path, client):
    store = Store(tmp_path / "s.db")
    # XTree itself (not auto's ring pipeline) on a 16x16 EquiMesh with K = 64: far longer than 5 s
    slow = plan_from_dict(
        {"command": "schedule", "axes": {"size": ["16x16"], "K": [64]}, "options": {"algorithm": "xtree"}}
    ).points()
    fast = plan_from_dict({"command": "optree", "axes": {"nodes": [16]}}).points()
    counts = run_sweep(slow + fast, store, client, timeout=5.0)
    assert (counts.done, counts.failed) == (1, 1)
    assert [r["error"] for r in store.rows() if r["status"] == "failed"] == ["timeout after 5 s"]
    store = Store(tmp_path / "m.db")
    counts = run_sweep(
        plan_from_dict({"command": "optree", "axes": {"nodes": [64]}}).points(), store, client, memory_mb=64
    )
    error = store.rows()[0]["error"]
    assert counts.failed == 1 and ("MemoryError" in error or "died" in error), error


def test_a_points_child_dies_with_its_worker(tmp_path):
    """A worker that dies (killed, or a sweep stopped) takes its point's child process with it: the
    child is not left computing. The parent here is a process running one slow point (XTree at 16x16,
    K = 64, as above); it is killed once its child has started."""
    point = plan_from_dict(
        {"command": "schedule", "axes": {"size": ["16x16"], "K": [64]}, "options": {"algorithm": "xtree"}}
    ).points()[0]
    code = (
        "import json, sys\nfrom equimesh.sim.sweep.points import run_isolated\nrun_isolated(json.loads(sys.argv[1]))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, json.dumps(point)])
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    try:
        deadline = time.monotonic() + 60
        while not children.read_text().split():
            assert time.monotonic() < deadline and parent.poll() is None, "the point's child never started"
            time.sleep(0.1)
        child = int(children.read_text().split()[0])
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        assert time.monotonic() < deadline, "the point's child outlived its worker"
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def _staged(monkeypatch, fail_nodes=()):
    """OpTree points given a shared stage per node count (as an fpga design's synthesis is shared by
    its seeds): the stage returns its node count, the point adds its wavelengths, so a point's result
    shows which stage's result it got."""
    from equimesh.sim.sweep import points as points_mod

    def stage(point):
        if point["nodes"] in fail_nodes:
            raise RuntimeError(f"stage of {point['nodes']} failed")
        return {"nodes": point["nodes"]}

    def point_fn(point, shared=None):
        shared = shared or stage(point)
        return {"steps": shared["nodes"] * 100 + point["wavelengths"]}

    monkeypatch.setitem(points_mod.SHARED, "optree", ("optree-stage", stage, ("wavelengths",)))
    monkeypatch.setitem(points_mod.POINT_FUNCTIONS, "optree", point_fn)
    return plan_from_dict({"command": "optree", "axes": {"nodes": [16, 64], "wavelengths": [1, 2, 4]}}).points()


def test_a_shared_stage_runs_once_per_group_and_reaches_each_point(tmp_path, client, monkeypatch):
    points = _staged(monkeypatch)
    store = Store(tmp_path / "s.db")
    with distributed.get_task_stream(client) as ts:
        counts = run_sweep(points, store, client)
    keys = [str(t["key"]) for t in ts.data]
    assert len([k for k in keys if k.startswith("sweep-shared-optree-stage-")]) == 2  # nodes 16 and 64
    assert len([k for k in keys if k.startswith("sweep-point-")]) == 6 and counts.done == 6
    assert sorted(r["steps"] for r in store.rows()) == [1601, 1602, 1604, 6401, 6402, 6404]
    # one after another (bench sweep's baseline): the same results, each stage once
    serial = runner.run_serial(points)
    assert sorted(o["result"]["steps"] for o in serial.values()) == [1601, 1602, 1604, 6401, 6402, 6404]


def test_a_failed_shared_stage_fails_its_points_only(tmp_path, client, monkeypatch):
    points = _staged(monkeypatch, fail_nodes=(64,))
    store = Store(tmp_path / "s.db")
    counts = run_sweep(points, store, client)
    assert (counts.done, counts.failed) == (3, 3)
    assert {r["error"] for r in store.rows() if r["status"] == "failed"} == {"RuntimeError: stage of 64 failed"}
    assert {r["nodes"] for r in store.rows() if r["status"] == "ok"} == {16}


def test_processes_sharing_the_cache_build_one_entry_once(tmp_path, monkeypatch):
    """Two builds of one key at the same time (two workers, one cache): the second waits for the first's
    entry instead of building it again."""
    import threading

    from equimesh.rtl.flow import ecp5

    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path))
    builds = []

    def build(d):
        builds.append(threading.get_ident())
        time.sleep(0.5)
        (d / "report.json").write_text("{}")
        (d / "result.json").write_text('{"fmax_mhz": 1}')

    entries = []
    threads = [
        threading.Thread(target=lambda: entries.append(ecp5._cached("pnr", "k" * 24, "report.json", build)))
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(entries) == 2 and entries[0] == entries[1]
    assert (entries[0] / "result.json").read_text() == '{"fmax_mhz": 1}'


def test_results_page_shows_each_sweeps_stored_points_in_plan_order(tmp_path, client):
    from equimesh.sim.sweep.report import render_page

    plan = plan_from_dict(
        {
            "about": "Intro.",
            "sweep": [
                {
                    "command": "schedule",
                    "name": "Steps",
                    "about": "Against the bound.",
                    "axes": {"kind": ["mesh", "equimesh"], "size": ["2x3", "3x3"]},
                },
                {"command": "optree", "name": "OpTree", "axes": {"nodes": [16, 64]}},
                {
                    "command": "schedule",
                    "name": "Bad",
                    "axes": {"kind": ["overflow"]},
                    "options": {"algorithm": "ring"},
                },
            ],
        }
    )
    store = Store(tmp_path / "s.db")
    run_sweep(plan.sweeps[0].points() + plan.sweeps[2].points(), store, client)  # not the OpTree sweep
    page = render_page(plan, "p.toml", store.rows(), "equimesh sweep p.toml --results r.md", plan.about)
    sections = page.split("\n## ")
    assert [s.splitlines()[0] for s in sections[1:]] == ["Steps", "OpTree", "Bad"] and "Intro." in sections[0]
    assert "2 points of the plan are not in the store yet" in sections[0]
    steps = sections[1]
    assert "Against the bound." in steps and "| kind | size | steps | bound |" in steps
    for kind in ("mesh", "equimesh"):  # each row's steps are those of a direct call of the library
        for r, c in ((2, 3), (3, 3)):
            n = synthesize(build(kind, r, c), 4, "allgather").num_steps
            assert f"| {kind} | {r}x{c} | {n} |" in steps
    assert "2 of its 2 points are not in the store yet" in sections[2] and "|" not in sections[2]
    assert "ring needs an EquiMesh (got overflow)" in sections[3]


def test_results_page_needs_a_plan_file(tmp_path, capsys):
    Store(tmp_path / "s.db").close()
    _one_line(
        capsys,
        ["sweep", "--store", str(tmp_path / "s.db"), "--results", str(tmp_path / "r.md")],
        2,
        "--results writes the page of a plan file",
    )


_ROUTER_DIGESTS = """
import hashlib, sys
from equimesh.rtl.flow.ecp5 import distinct_routers, wrapper_verilog
import equimesh.sim.sweep.points as points
from equimesh.rtl.design import fit
from equimesh.rtl.rom import compile_schedule
p = {"kind": "overflow", "size": "3x3", "K": 4, "collective": "allgather", "F": 16, "pipeline": 2, "options": {}}
topo, sched = points._schedule(p)
for r in distinct_routers(fit(compile_schedule(sched, 16, topo), flit_bits=64, pipeline=2)):
    wrap = wrapper_verilog(r.name, r.ins, r.outs, r.widths)[0]
    print(r.name, hashlib.sha256((r.verilog + wrap).encode()).hexdigest())
"""


def test_an_fpga_points_verilog_is_the_same_in_every_worker_process():
    """The input of synthesis (each distinct router's Verilog and wrapper) does not depend on the process:
    two interpreters with different hash seeds, as two Dask workers, write the same text. (Synthesis and
    nextpnr with a fixed seed are deterministic on the same input: docs/sweeps.md, "Determinism".)"""
    outs = [
        subprocess.run(
            [sys.executable, "-c", _ROUTER_DIGESTS],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == 2  # the overflow mesh's 6- and 5-port routers


# -- a real cluster: a scheduler and two workers as separate processes ---------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    sched_file = d / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [
        subprocess.Popen(
            [*dask, "--scheduler-file", str(sched_file), "--port", "0", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=d,
        )
    ]
    deadline = time.time() + 60
    while not sched_file.exists() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    for _ in range(2):
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=d,
            )
        )
    from distributed import Client

    with Client(address, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=60)
    yield address, procs
    for p in procs:
        p.kill()
        p.wait()


def test_a_plan_runs_on_a_separate_scheduler_and_two_workers(tmp_path, cluster, capsys):
    address, procs = cluster
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[[sweep]]\ncommand = "schedule"\naxes = { kind = ["mesh", "equimesh"], size = ["2x3", "3x3"] }\n'
        '[[sweep]]\ncommand = "optree"\naxes = { nodes = [16, 64, 256], wavelengths = [1, 4] }\n'
    )
    db = tmp_path / "s.db"
    assert main(["sweep", str(plan), "--scheduler", address, "--store", str(db), "--show"]) == 0
    out = capsys.readouterr().out
    assert "10 points in" in out
    rows = Store(db).rows()
    assert len(rows) == 10 and all(r["status"] == "ok" for r in rows)
    workers = {int(r["worker"].rsplit(":", 1)[1]) for r in rows}
    assert workers <= {p.pid for p in procs[1:]} and os.getpid() not in workers


def test_a_killed_worker_loses_no_point_and_stores_none_twice(tmp_path, cluster):
    address, procs = cluster
    from distributed import Client

    points = plan_from_dict(
        {"command": "schedule", "axes": {"kind": ["mesh", "equimesh", "overflow"], "size": ["3x4", "4x4"], "K": [4, 8]}}
    ).points()
    store = Store(tmp_path / "s.db")
    puts = []
    real_put = store.put
    store.put = lambda key, point, outcome: (puts.append(key), real_put(key, point, outcome))
    killed = []

    def kill_one(counts):
        if counts.done >= 3 and not killed:
            killed.append(counts.remaining)
            procs[2].kill()

    with Client(address, set_as_default=False) as c:
        counts = run_sweep(points, store, c, progress=kill_one)
    assert killed and killed[0] > 0  # the worker died mid-sweep
    assert procs[2].wait(timeout=10) == -signal.SIGKILL
    assert sorted(puts) == sorted(point_key(p) for p in points)  # every point stored, each once
    assert (counts.done, counts.failed) == (len(points), 0)
    assert len(store.rows()) == len(points)


def test_show_and_plots_from_a_store(tmp_path, small, capsys):
    store, _ = small
    md = tmp_path / "r.md"
    assert (
        main(["sweep", "--show", "--store", str(store.path), "--plot", str(tmp_path / "plots"), "--markdown", str(md)])
        == 0
    )
    table = [line for line in md.read_text().splitlines() if line.startswith("| ")]
    assert table[0].startswith("| kind | size | K | collective | status | steps | bound |") and len(table) == 1 + 17
    out = capsys.readouterr().out
    assert "17 points in" in out and "ring needs an EquiMesh" in out
    assert sorted(p.name for p in Path(tmp_path / "plots").iterdir()) == ["schedule_steps.png"]


def test_every_standard_plot_is_drawn_from_its_commands_points(tmp_path):
    from equimesh.sim.sweep.plots import plot_store

    store = Store(tmp_path / "s.db")
    for p in plan_from_dict({"command": "fpga", "axes": {"size": ["3x3", "4x4"], "seed": [1, 2]}}).points():
        router = {"name": "r", "ports": 5, "nodes": 9, "luts": 100 * p["seed"], "ffs": 1, "brams": 0, "fmax_mhz": 90.0}
        store.put(point_key(p), p, {"result": {"fmax_mhz": 90.0, "luts": 100, "routers": [router]}})
    for p in plan_from_dict({"command": "traffic", "axes": {"rate": [0.05, 0.1]}}).points():
        store.put(point_key(p), p, {"result": {"latency_mean": 20 * p["rate"]}})
    for p in plan_from_dict({"command": "simulate", "axes": {"size": ["2x3", "3x3"]}}).points():
        store.put(point_key(p), p, {"result": {"cycles": 40, "utilization": 0.5}})
    for p in plan_from_dict({"command": "evaluate", "axes": {"size": ["4x4", "8x8"]}}).points():
        store.put(point_key(p), p, {"result": {"kind": "equimesh", "time_s": 1e-3}})
    store.put("x", {"command": "optree", "nodes": 16, "options": {}}, {"error": "E: no plot of a failure"})
    names = sorted(p.name for p in plot_store(store.rows(), tmp_path))
    assert names == ["cycles.png", "fmax.png", "latency.png", "luts.png", "time.png", "utilization.png"]


def test_bench_sweep_runs_the_points_both_ways(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('command = "optree"\naxes = { nodes = [16, 64], wavelengths = [1, 2] }\n')
    assert main(["bench", "sweep", str(plan), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "4 points (0 failed)" in out and "results that agree between the runs: 4/4" in out


def test_a_traffic_point_measures_its_offered_load_in_flits():
    """A ``traffic`` point's ``rate`` is the offered load in flits per node per cycle. Far below saturation
    the network accepts what is offered: 6 nodes x 4,000 measured cycles at 0.05 flits, 9-flit packets,
    is a binomial count of about 133 packets (standard deviation 11.5), so the accepted load lies within
    0.05 x (1 +- 4 x 11.5 / 133) = 0.033 .. 0.067; a rate taken as packets per node per cycle would
    offer nine times as much."""
    from equimesh.sim.sweep.points import run_point

    point = plan_from_dict(
        {
            "command": "traffic",
            "axes": {"size": ["2x3"], "rate": [0.05]},
            "options": {"warmup": 200, "cycles": 4000},
        }
    ).points()[0]
    out = run_point(point)
    assert "error" not in out, out.get("error")
    r = out["result"]
    assert 0.033 <= r["accepted"] <= 0.067 and 0.033 <= r["injected"] <= 0.067, r
    assert r["copies"] > 90 and r["latency_mean"] > 0


def test_retry_failed_runs_the_plans_failed_points_again(tmp_path, capsys):
    """A failure stored in an earlier run stays the point's result on a plain re-run; with
    ``--retry-failed`` the plan's failed points are deleted and run again, and a failure of a point
    outside the plan stays."""
    plan = tmp_path / "p.toml"
    plan.write_text(f'command = "optree"\nstore = "{tmp_path / "s.db"}"\naxes = {{ nodes = [16, 64] }}\n')
    points = plan_from_dict({"command": "optree", "axes": {"nodes": [16, 64]}}).points()
    other = plan_from_dict({"command": "optree", "axes": {"nodes": [256]}}).points()[0]
    store = Store(tmp_path / "s.db")
    store.put(point_key(points[0]), points[0], {"error": "E: a crash of an earlier run"})
    store.put(point_key(other), other, {"error": "E: not in the plan"})
    store.close()

    def statuses():
        with sqlite3.connect(tmp_path / "s.db") as c:
            return dict(c.execute("SELECT nodes, status FROM results"))

    assert main(["sweep", str(plan), "--workers", "1"]) == 0  # this run computed 64 only, and it passed
    assert statuses() == {16: "failed", 64: "ok", 256: "failed"}
    assert main(["sweep", str(plan), "--workers", "1", "--retry-failed"]) == 0
    assert statuses() == {16: "ok", 64: "ok", 256: "failed"}
    assert "1 failed points to run again" in capsys.readouterr().err
    assert main(["sweep", "--store", str(tmp_path / "s.db"), "--retry-failed"]) == 2
    assert capsys.readouterr().err.strip().endswith("--retry-failed runs a plan's failed points again: give the plan")
