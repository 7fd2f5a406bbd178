"""OpTree (seed 002): formulas against hand-worked values, the constructive schedule, the verifier, the CLI."""

import json

import numpy as np
import pytest

from equimesh.cli import main
from equimesh.schedules import optree as ot
from equimesh.sim.analytic import optree_timing as report


def test_theorem1_and_table1_by_hand():
    # (2k-1) N^(1+1/k) / 8w: N=16, w=2, k=2 -> 3*64/16 = 12; k=1 is OSM 256/16 = 16
    assert ot.theorem1_steps(16, 2, 2) == 12
    assert ot.theorem1_steps(16, 2, 1) == 16
    # 13 * 1024 * 2^(10/7) / 512 = 69.99 -> 70
    assert ot.theorem1_steps(1024, 64, 7) == 70
    assert ot.ring_steps(1024) == 1023 and ot.ne_steps(1024) == 512
    assert ot.osm_steps(1024, 64) == 2048  # 1024^2 / 512, not the printed 128
    # m = 129, theta = 2: 1 + (129^2 - 129)/128 + 129 = 259, or + 2*129 = 388
    assert ot.wrht_steps(1024, 64) == (259, 388)
    # m = 9, theta = 4: 1 + (6561 - 9)/8 + 3*729 = 3007
    assert ot.wrht_steps(1024, 4)[0] == 3007


def test_lemma3_k_star():
    # ln 1024 = 6.931, sqrt(6.931 * 4.931) = 5.846, half the sum 6.389
    assert ot.k_star(1024) == 7
    assert ot.k_star(1024, round) == 6
    assert ot.k_star(7) == 1  # ln 7 < 2: no stationary point


def test_proof_stage_steps_motivation():
    # N=16, w=2, m=4: stage 1 ceil(16/16)*4 = 4, stage 2 4*1*ceil(16/8) = 8
    assert ot.proof_stage_steps(16, 2, 4, 2) == [4, 8]


def test_factorizations():
    assert ot.factorizations(16, 3) == [(4, 2, 2)]
    assert sorted(ot.factorizations(12, 2)) == [(4, 3), (6, 2)]
    assert ot.factorizations(13, 2) == []


def test_stage_loads_by_hand():
    # stage 1: 4 subsets, each a 4-node virtual ring with load 1 (distance 1) + 1 (antipodal split): 8
    # stage 2: 4 items per pair, a 4-node line with floor(4^2/4) = 4 paths on the middle segment: 16
    assert ot.stage_loads(16, (4, 4)) == [8, 16]
    assert ot.stage_loads(4, (2, 2)) == [1, 2]


def test_motivation_schedules():
    two = ot.build(16, 2, (4, 4))
    ot.verify(two)
    assert two.stage_steps == [4, 8] and two.num_steps == 12
    assert len(two.src) == 16 * 15  # every node receives every other item once


def test_small_schedule_by_hand():
    # N=4, w=1: stage 1 the antipodal pairs 0<->2, 1<->3 fill each fiber once (1 step);
    # stage 2 sends 2 items each way inside {0,1} and {2,3} (2 steps)
    s = ot.build(4, 1, (2, 2))
    ot.verify(s)
    assert s.stage_steps == [1, 2]


def test_table1_size_verifies():
    s = ot.build(1024, 64, ot.best_radices(1024, 64, 7))
    ot.verify(s)
    # integer radices 4,4,4,2,2,2,2: N m/8 for the ring stage, N m/4 for the others, over w
    assert s.num_steps == (1024 * 4 // 8 + 2 * 1024 * 4 // 4 + 4 * 1024 * 2 // 4) // 64 == 72


def _copy(s, **changes):
    d = {k: getattr(s, k).copy() for k in ("step", "wavelength", "src", "dst", "fiber", "item")}
    d.update(changes)
    return ot.OpTreeSchedule(
        s.nodes, s.wavelengths, s.radices, stage_steps=s.stage_steps, stage_loads=s.stage_loads, **d
    )


def test_verifier_rejects_shared_wavelength():
    s = ot.build(16, 2, (4, 4))
    # put every lightpath of step 0 on wavelength 0: some of them overlap
    wl = s.wavelength.copy()
    wl[s.step == 0] = 0
    with pytest.raises(ot.OpTreeInvalid, match="shares a segment"):
        ot.verify(_copy(s, wavelength=wl))


def test_verifier_rejects_wrap_around_overlap():
    # two clockwise arcs that only meet across node 0: 14->2 and 1->3 share segment 1
    s = ot.OpTreeSchedule(
        16,
        1,
        (16,),
        np.array([0, 0]),
        np.array([0, 0]),
        np.array([14, 1]),
        np.array([2, 3]),
        np.array([ot.CW, ot.CW]),
        np.array([14, 1]),
        [1],
        [1],
    )
    with pytest.raises(ot.OpTreeInvalid, match="shares a segment"):
        ot.verify(s)


def test_verifier_rejects_missing_and_early_items():
    s = ot.build(16, 2, (4, 4))
    keep = np.ones(len(s.src), bool)
    keep[-1] = False
    with pytest.raises(ot.OpTreeInvalid, match="ends without"):
        ot.verify(_copy(s, **{k: getattr(s, k)[keep] for k in ("step", "wavelength", "src", "dst", "fiber", "item")}))
    step = s.step + 1
    step[s.step == s.step.max()] = 0  # last stage-2 step moved before everything
    with pytest.raises(ot.OpTreeInvalid, match="before it holds"):
        ot.verify(_copy(s, step=step))
    with pytest.raises(ot.OpTreeInvalid, match="out of range"):
        ot.verify(_copy(s, wavelength=s.wavelength + 2))


def test_performance_difference_truncates_like_table3():
    assert report.performance_difference(259, 70) == 72.97
    assert report.performance_difference(1023, 1120) == -9.48
    assert report.performance_difference(512, 70) == 86.32  # 86.328 truncated


def test_paper_checks_flag_osm():
    rows = {c.what: c for c in report.paper_checks()}
    osm = rows["Table 1 osm (N=1024, w=64)"]
    assert (osm.printed, osm.computed, osm.agrees) == (128, 2048, False)


def test_cli_json(capsys):
    assert main(["optree", "--nodes", "16", "--wavelengths", "2", "--stages", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == {"ring": 15, "ne": 8, "wrht": 11, "osm": 16, "optree": 12}
    assert out["constructive_steps"] == 12 and out["k_star"] == 3


@pytest.mark.parametrize(
    "argv, text",
    [
        (["--nodes", "16", "--wavelengths", "0"], "--wavelengths must be >= 1"),
        (["--nodes", "1", "--wavelengths", "2"], "--nodes must be >= 2"),
        (["--nodes", "12", "--wavelengths", "2", "--stages", "4"], "does not split into 4 radices"),
        (["--nodes", "13", "--wavelengths", "2"], "does not split into 2 radices"),
    ],
)
def test_cli_bad_input(capsys, argv, text):
    assert main(["optree", *argv]) == 2
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1


@pytest.mark.parametrize("nodes", [2, 6, 9, 12, 18, 30, 64])
@pytest.mark.parametrize("w", [1, 3])
def test_every_tree_verifies(nodes, w):
    for k in range(1, 7):
        for f in ot.factorizations(nodes, k):
            s = ot.build(nodes, w, f)
            ot.verify(s)
            assert s.num_steps >= s.floor_steps


def test_one_stage_motivation_meets_osm():
    # the one-stage model on 16 nodes: ceil(16^2 / 8) = 32 wavelengths, 2 at a time
    s = ot.build(16, 2, (16,))
    ot.verify(s)
    assert s.num_steps == 16


def test_ring_stage_meets_its_load_for_small_trees():
    for nodes in range(2, 64):
        for k in (1, 2, 3):
            for f in ot.factorizations(nodes, k):
                s = ot.build(nodes, 1, f)
                assert s.stage_steps[0] == s.stage_loads[0], (nodes, f)
