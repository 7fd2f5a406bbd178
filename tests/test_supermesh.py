"""Supermesh (seed 001): topology kind, formulas, generator and all-to-all choice against hand-worked cases."""

import json

import pytest

from equimesh.cli import main
from equimesh.schedules import supermesh as sm
from equimesh.schedules.schedule import lower_bound
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def test_topology_kind_ports():
    t = build("supermesh", 3, 3)
    assert t.ports(0) == ["R1", "R2", "C1", "C2"]
    link = next(l for l in t.links if (l.src, l.dst) == (0, 2))
    assert (link.src_port, link.dst_port) == ("R2", "R0")
    link = next(l for l in t.links if (l.src, l.dst) == (7, 1))  # row 2 -> row 0 of column 1
    assert (link.src_port, link.dst_port) == ("C0", "C2")
    # 3 rows x C(3,2) + 3 cols x C(3,2) = 18 bidirectional pairs
    assert len(t.links) == 36 and t.diameter == 2
    assert build("supermesh", 4, 4).crosspoints == 16 * 7**2  # 6 network ports + L


@pytest.mark.parametrize("algorithm", ["xtree", "mirrorxtree"])
@pytest.mark.parametrize("collective", ["allgather", "allreduce"])
def test_xtree_on_supermesh_verifies(algorithm, collective):
    t = build("supermesh", 4, 4)
    s = synthesize(t, 4, collective, algorithm)
    verify(s)
    # K(N-1)/degree = 4*15/6 -> 10 per phase
    assert lower_bound(t, 4, "allgather") == 10


def test_link_counts_and_bisection_by_hand():
    assert sm.short_reach_links(6) == 15
    assert sm.short_reach_links(6, 6) == 6 * 15 + 6 * 15
    assert sm.short_reach_links(4, 3) == 3 * 6 + 4 * 3
    assert sm.bisection_width(6) == 9
    assert sm.bisection_width(6, 4) == min(4 * 36 / 4, 6 * 16 / 4) == 24


def test_gbw_and_special_cases_by_hand():
    assert sm.gbw(10, 10, 6, 1, 1) == min(25 * 60, 25 * 60, 9 * 20) == 180
    # SM(1,n,p,x,y) = min{w(n)p, w(p)(xn+y)}; SM(m,1,p,x,y) = min{w(m)p, w(p)(x+ym)}
    assert sm.gbw(1, 4, 4, 1, 1) == min(4 * 4, 4 * (4 + 1)) == 16
    assert sm.gbw(4, 1, 4, 1, 1) == min(4 * 4, 4 * (1 + 4)) == 16
    assert sm.gbw(6, 6, 1, 0, 0) == 54


def test_generator_counts_cuts_and_hops():
    t = sm.supermesh3d(10, 10, 6, 1, 1)
    assert t.nodes == 600
    assert len(t.a) == 6 * 900 + 20 * 15 == sm.links_3d(10, 10, 6, 1, 1)
    assert [t.cut(d) for d in range(3)] == [1500, 1500, 180]
    assert t.hops() == 4
    assert sm.supermesh3d(6, 6, 3, 1, 0).hops() == 4
    assert sm.supermesh3d(6, 6).hops() == 2 and sm.supermesh3d(6).hops() == 1


def test_cost_model():
    assert sm.exchange_cost([[1, 2], [0.5]], sync=1) == 2 + 1


# The slides' printed M, R, C and choice for each S(8) example.
SLIDES = {
    "irregular": (9, 5, 5, "DA2A"),
    "1-relation": (5, 1, 1, "IA2A"),
    "2-relation": (5, 2, 2, "IA2A"),
    "4-relation": (8, 4, 4, "DA2A"),
    "all-to-all": (8, 7, 7, "DA2A"),
    "copy": (8, 1, 1, "IA2A"),
    "scatter": (8, 7, 1, "DA2A"),
    "gather": (8, 1, 7, "DA2A"),
}


@pytest.mark.parametrize("name", sorted(SLIDES))
def test_slide_examples(name):
    a = sm.all_to_all(sm.slide_examples()[name])
    assert (a.M, a.R, a.C, a.choice) == SLIDES[name]
    assert a.da2a_cost == a.M


def test_irregular_example_sums_and_ia2a_cost():
    a = sm.all_to_all(sm.slide_examples()["irregular"])
    assert (a.max_r, a.max_c) == (35, 38)
    assert a.ia2a_cost == (35 + 38) / 8


def test_cli(capsys, tmp_path):
    assert main(["supermesh", "topology", "--m", "6", "--n", "6", "--p", "3", "--x", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == 108 and out["hops"] == 4
    f = tmp_path / "m.txt"
    f.write_text("0 5\n5 0\n")
    assert main(["supermesh", "a2a", "--matrix", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["M"], out["R"], out["C"], out["choice"]) == (5, 3, 3, "DA2A")


@pytest.mark.parametrize(
    "argv, text, code",
    [
        (["topology", "--m", "1"], "m must be >= 2", 2),
        (["topology", "--m", "4", "--p", "2"], "x + y >= 1", 2),
        (["topology", "--m", "4", "--x", "5"], "row planes x", 2),
        (["a2a", "--example", "copy", "--sync", "-1"], "--sync must be >= 0", 2),
    ],
)
def test_cli_bad_input(capsys, argv, text, code):
    assert main(["supermesh", *argv]) == code
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1


def test_cli_bad_matrix(capsys, tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("0 1 2\n1 0\n")
    assert main(["supermesh", "a2a", "--matrix", str(f)]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_packet_routing_refuses_supermesh_in_one_line(capsys):
    assert main(["routing", "--kind", "supermesh", "--rows", "3", "--cols", "3"]) != 0
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_schedule_and_verify_supermesh(capsys, tmp_path):
    f = tmp_path / "sm.json"
    assert (
        main(
            [
                "schedule",
                "--kind",
                "supermesh",
                "--rows",
                "3",
                "--cols",
                "4",
                "--chunks",
                "2",
                "--collective",
                "allreduce",
                "--out",
                str(f),
            ]
        )
        == 0
    )
    assert main(["verify", str(f)]) == 0
    assert "3x4 supermesh" in capsys.readouterr().out
