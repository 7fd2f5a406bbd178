"""The overlapped AllReduce (format version 2): file format, verifier, bound, alpha-beta model, synthesis, CLI."""

import json

import numpy as np
import pytest

from equimesh.cli import main
from equimesh.schedules.schedule import (
    OP_GATHER,
    OP_REDUCE,
    Phase,
    Schedule,
    ScheduleFileError,
    load,
    lower_bound,
    schedule_bound,
)
from equimesh.schedules.synth import overlap
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify
from equimesh.sim.analytic.alphabeta import LinkModel, simulate

# 2x2 mesh: 0-1 / 2-3; every node has two neighbours and one opposite node.
T = build("mesh", 2, 2)
LINK = {(l.src, l.dst): i for i, l in enumerate(T.links)}
NEIGHBOURS = {0: (1, 2, 3), 1: (0, 3, 2), 2: (0, 3, 1), 3: (1, 2, 0)}  # root: (a, b, opposite)
R, G = OP_REDUCE, OP_GATHER


def root_transfers(r):
    """One root's reduce in-tree o->a->r, b->r and gather out-tree r->a->o, r->b, in dependency order."""
    a, b, o = NEIGHBOURS[r]
    return [(o, a, r, R), (a, r, r, R), (b, r, r, R), (r, a, r, G), (r, b, r, G), (a, o, r, G)]


def one_per_step(transfers):
    return [np.array([[LINK[u, v], r, 0, op]], dtype=np.int64) for u, v, r, op in transfers]


def overlapped(steps, topo=T, chunks=1):
    return Schedule("allreduce", "hand", chunks, topo, [Phase("allreduce", steps)])


def good():
    return [t for r in range(4) for t in root_transfers(r)]


def test_hand_made_overlapped_schedule_is_valid():
    s = overlapped(one_per_step(good()))
    assert s.overlapped and s.version == 2
    verify(s)


def test_two_ops_in_one_step_on_different_links_are_valid():
    # root 0's gather 0->2 and root 1's partial 2->0 in one step
    t = good()
    i, j = t.index((0, 2, 0, G)), t.index((2, 0, 1, R))
    steps = one_per_step(t)
    steps[i] = np.concatenate([steps[i], steps[j]])
    del steps[j]
    s = overlapped(steps)
    verify(s)
    assert sorted(steps[i][:, 3].tolist()) == [R, G]


@pytest.mark.parametrize(
    "mutate, message",
    [
        # the root sends the sum before its last partial (b->r) has arrived
        (lambda t: [t[0], t[1], t[3], t[2]] + t[4:], "before its sum is complete"),
        # a partial leaves a relay before its child's partial arrived
        (lambda t: [t[1], t[0]] + t[2:], "before this child's partial arrives"),
        # a node never sends its partial (b->r dropped)
        (lambda t: t[:2] + t[3:], "never sends its partial"),
        # a node never receives the sum (a->o dropped)
        (lambda t: t[:5] + t[6:], "never receives"),
        # the root sends its own shard's sum as a partial
        (lambda t: t + [(0, 1, 0, R)], "must not send its own shard's sum"),
        # the sum is gathered into the root
        (lambda t: t + [(1, 0, 0, G)], "already holds its own chunk"),
        # a gather forwarded before the forwarder holds it
        (lambda t: t[:3] + [t[5], t[3], t[4]] + t[6:], "does not hold the chunk"),
        # a node receives the sum twice
        (lambda t: t + [(3, 1, 0, G)], "a second time"),
    ],
)
def test_every_invalid_kind_is_rejected_with_one_line(mutate, message):
    with pytest.raises(ScheduleInvalid, match=message) as e:
        verify(overlapped(one_per_step(mutate(good()))))
    assert "\n" not in str(e.value)


def test_one_link_carries_one_transfer_per_step_across_both_ops():
    t = good()
    # root 0's gather 0->1 and root 1's partial 0->1 in the same step: link 0->1 twice
    i = t.index((0, 1, 0, G))
    j = t.index((0, 1, 1, R))
    steps = one_per_step(t)
    steps[i] = np.concatenate([steps[i], steps[j]])
    del steps[j]
    with pytest.raises(ScheduleInvalid, match="link already carries another chunk"):
        verify(overlapped(steps))


def test_bound_by_hand():
    # docs/architecture.md: max(ceil(2 K N (N-1) / L), ceil(K (N-1) / min out), ceil(K (N-1) / min in))
    assert lower_bound(build("mesh", 8, 8), 4, "allreduce", overlapped=True) == 144  # 2*4*64*63 / 224
    assert lower_bound(build("mesh", 5, 11), 4, "allreduce", overlapped=True) == 127  # 23760 / 188 = 126.4
    assert lower_bound(build("equimesh", 8, 8), 4, "allreduce", overlapped=True) == 126  # 32256 / 256; 252 / 4 = 63
    assert lower_bound(T, 1, "allreduce", overlapped=True) == 3  # 24 / 8; 3 / 2 -> 2
    assert lower_bound(build("mesh", 8, 8), 4, "allreduce") == 252  # phased: 126 + 126
    assert schedule_bound(overlapped(one_per_step(good()))) == 3


def test_alphabeta_gather_waits_for_the_roots_sum():
    # root 0 alone: 3->1 [0, t], 1->0 [t, 2t] and 2->0 [0, t]; the sum is complete at 2t, the
    # gathers 0->1 and 0->2 run [2t, 3t], 1->3 [3t, 4t]. (Without the dependency: 2t.)
    m = 2.0**20
    model = LinkModel(alpha=20e-9, bandwidth=128e9)
    tau = model.alpha + m / 4 / model.bandwidth
    res = simulate(overlapped(one_per_step(root_transfers(0))), [m], model)
    assert res.completion[0] == pytest.approx(4 * tau)


def test_alphabeta_link_serves_both_ops_in_step_order():
    # root 1's partial 0->1 is listed before root 0's gather on the same link 0->1; it is ready only
    # after 2->0 (root 1) arrives, which waits behind root 0's partial 2->0 on link 2->0:
    # 2->0 (r0) [0, t], 2->0 (r1) [t, 2t], 0->1 (r1) [2t, 3t], then 0->1 (gather r0) [3t, 4t].
    m = 2.0**20
    model = LinkModel(alpha=0.0, bandwidth=1e9)
    tau = m / 4 / model.bandwidth
    t = [(2, 0, 0, R), (1, 0, 0, R), (2, 0, 1, R), (0, 1, 1, R), (0, 1, 0, G)]
    res = simulate(overlapped(one_per_step(t)), [m], model)
    assert res.completion[0] == pytest.approx(4 * tau)


def test_version2_file_round_trip(tmp_path):
    s = overlapped(one_per_step(good()))
    p = tmp_path / "ov.json"
    s.save(p)
    d = json.loads(p.read_text())
    assert d["version"] == 2 and "phases" not in d
    # the writer's text holds the same transfers as a json reference
    assert d["steps"] == [[[LINK[u, v], r, 0, "rg"[op]]] for u, v, r, op in good()]
    back = load(p)
    assert back.overlapped and back.dumps() == p.read_text()
    assert all((a == b).all() for a, b in zip(back.phases[0].steps, s.phases[0].steps))
    verify(back)


def test_version2_writer_matches_json_dumps_per_step():
    s = overlap(build("mesh", 3, 3), 2)
    d = json.loads(s.dumps())
    ref = []
    for a in s.phases[0].steps:
        rows = sorted(map(tuple, a.tolist()))
        ref.append([[l, r, c, "rg"[op]] for l, r, c, op in rows])
    assert d["steps"] == ref
    lines = s.dumps().splitlines()
    first = next(i for i, l in enumerate(lines) if l.endswith('"steps": ['))
    assert lines[first + 1] == "    " + json.dumps(ref[0]) + ","


def test_version1_files_stay_version1():
    s = Schedule("allgather", "hand", 1, T, [Phase("allgather", [np.array([[0, 0, 0]])])])
    assert json.loads(s.dumps())["version"] == 1


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["steps"][0][0].__setitem__(3, "x"), "neither 'r'"),
        (lambda d: d["steps"][0].__setitem__(0, d["steps"][0][0][:3]), r"\[link, root, chunk, op\]"),
        (lambda d: d.__setitem__("version", 1), "must be version 2"),
        (lambda d: d.pop("steps"), "needs 'steps'"),
        (lambda d: d.__setitem__("version", 3), "unsupported version"),
    ],
)
def test_loader_rejects_bad_version2_files(tmp_path, edit, message):
    d = json.loads(overlapped(one_per_step(good())).dumps())
    edit(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ScheduleFileError, match=message):
        load(p)


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "torus"])
def test_synthesis_is_valid_and_at_most_the_phased_length(kind):
    t = build(kind, 3, 4)
    s = overlap(t, 2)
    verify(s)
    assert s.overlapped and sum(len(a) for a in s.phases[0].steps) == 2 * 2 * 12 * 11
    assert s.num_steps >= schedule_bound(s)


def test_mesh_overlap_beats_the_phased_degree_bound():
    # 6x6 mesh, K = 8: phases in sequence need >= 2 * ceil(8 * 35 / 2) = 280 steps; the link bound is
    # ceil(2 * 8 * 36 * 35 / 120) = 168. The overlapped schedule must come in well under 280.
    t = build("mesh", 6, 6)
    s = overlap(t, 8)
    verify(s)
    assert schedule_bound(s) == 168
    assert s.num_steps <= 190


def test_cli_schedule_overlap_writes_a_file_verify_accepts(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert (
        main(
            [
                "schedule",
                "--kind",
                "mesh",
                "--rows",
                "3",
                "--cols",
                "3",
                "--chunks",
                "2",
                "--collective",
                "allreduce",
                "--overlap",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    js = json.loads(capsys.readouterr().out)
    assert js["overlapped"] and js["bound"] == lower_bound(build("mesh", 3, 3), 2, "allreduce", overlapped=True)
    assert main(["verify", str(out)]) == 0
    assert json.loads(out.read_text())["version"] == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--collective", "allgather", "--overlap"], "--overlap applies to --collective allreduce only"),
        (["--collective", "allreduce", "--overlap", "--storage", "lanes"], "storage lanes"),
        (["--collective", "allreduce", "--overlap", "--algorithm", "optimal"], "not optimal"),
    ],
)
def test_cli_overlap_bad_usage(capsys, argv, message):
    assert main(["schedule", "--rows", "2", "--cols", "3", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_rtl_commands_reject_an_overlapped_file_with_one_line(tmp_path, capsys):
    p = tmp_path / "ov.json"
    overlapped(one_per_step(good())).save(p)
    assert main(["simulate", "--kind", "mesh", "--rows", "2", "--cols", "2", "--schedule", str(p)]) == 1
    err = capsys.readouterr().err
    assert "overlapped AllReduce (format version 2) cannot run on the RTL" in err and err.count("\n") == 1


def test_evaluate_json_has_top_level_ratio_and_the_overlap_baseline(capsys):
    assert (
        main(
            [
                "evaluate",
                "--rows",
                "3",
                "--cols",
                "4",
                "--collective",
                "allreduce",
                "--sizes",
                "1G",
                "--algorithms",
                "equimesh-xtree,mesh-tacos,mesh-overlap",
                "--chunks",
                "4",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    bw = {r["algorithm"]: r["effective_bandwidth_GBps"][-1] for r in out["results"]}
    best = max(bw["mesh-tacos"], bw["mesh-overlap"])
    assert out["ratio_vs_best_baseline"] == pytest.approx(bw["equimesh-xtree"] / best, abs=1e-4)
    # overlap lifts the mesh above the phased degree bound: 1 GB / (2 K (N-1)/2 chunk times of M/(N K B))
    n, k = 12, 4
    phased_limit = 1 / (2 * k * (n - 1) / 2 * (1 / (n * k * 128e9)))
    assert bw["mesh-overlap"] * 1e9 > phased_limit
    ov = next(r for r in out["results"] if r["algorithm"] == "mesh-overlap")
    assert ov["chunks"]["4"]["bound"] == lower_bound(build("mesh", 3, 4), 4, "allreduce", overlapped=True)


def test_evaluate_rejects_overlap_for_allgather(capsys):
    assert main(["evaluate", "--rows", "3", "--cols", "3", "--algorithms", "mesh-overlap"]) == 2
    err = capsys.readouterr().err
    assert "schedules allreduce only, not allgather" in err and err.count("\n") == 1


def test_cli_verify_rejects_an_invalid_overlapped_file_with_one_line(tmp_path, capsys):
    t = good()
    p = tmp_path / "bad.json"
    overlapped(one_per_step([t[0], t[1], t[3], t[2]] + t[4:])).save(p)
    assert main(["verify", str(p)]) == 1
    err = capsys.readouterr().err
    assert "gather: step 2" in err and "before its sum is complete" in err and err.count("\n") == 1
