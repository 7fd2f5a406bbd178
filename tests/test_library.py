"""Stored exact lane-rule AllGathers (schedules/methods/library.py) and K = 4m as rounds of a K = 4 schedule."""

import json

import numpy as np
import pytest

from equimesh.cli import main as cli
from equimesh.schedules.methods import library as L
from equimesh.schedules.methods.cpsat import exact
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.search.library import store
from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build, parse_ring_dirs
from equimesh.schedules.verify import ScheduleInvalid, verify


def _checked(topo, chunks, phase):
    s = Schedule("allgather", "test", chunks, topo, [phase], {"storage": "lanes"})
    verify(s)
    check_storage(s)
    return s


def test_rounds_of_an_exact_2x3_schedule_reach_the_k8_bound():
    # K = 4 on the 2x3 EquiMesh: 5 steps (the bound 4 * 5 / 4); K = 8: 2 rounds, bound 8 * 5 / 4 = 10
    t = build("equimesh", 2, 3)
    res = exact(t, 4, 5, lanes=True, time_limit=60)
    assert res.steps == 5
    ph = L.rounds(res.phase, 8)
    _checked(t, 8, ph)
    assert ph.num_steps == 10


@pytest.mark.parametrize("key", sorted(L._library()))
def test_every_stored_schedule_is_valid_and_at_the_bound_or_beats_xtree(key):
    from equimesh.schedules.methods.xtree import xtree

    kind, size, dirs = key.split()
    r, c = (int(v) for v in size.split("x"))
    t = build(kind, r, c, ring_dirs=parse_ring_dirs(dirs))
    ph = L.stored(t, 4)
    _checked(t, 4, ph)
    # bound ceil(4 (N - 1) / 4) with 4 links into every node; above it only a best-known schedule
    # shorter than the lane-aware XTree's is stored
    assert ph.num_steps == r * c - 1 or ph.num_steps < xtree(t, 4, lanes=True).num_steps


@pytest.mark.parametrize(
    "kind,rows,cols", [("mirror-equimesh", 2, 3), ("equimesh", 3, 2), ("mirror-equimesh", 3, 2), ("equimesh", 4, 3)]
)
def test_symmetric_images_of_stored_schedules(kind, rows, cols):
    # only equimesh 2x3 and 3x4 are needed for these: transposes and flips carry them over
    t = build(kind, rows, cols)
    assert L.key(t) not in L._library()
    ph = L.stored(t, 4)
    _checked(t, 4, ph)
    assert ph.num_steps == rows * cols - 1


def test_no_image_where_no_symmetry_maps_the_links():
    # the 3x4 mirror is not a flipped or transposed 3x4 EquiMesh (its rings turn the other way)
    src = build("equimesh", 3, 4)
    ph = L.stored(src, 4)
    assert L.image(src, ph, build("mirror-equimesh", 3, 4)) is None
    assert L.image(src, ph, build("equimesh", 4, 3)) is not None


@pytest.mark.parametrize("rows,cols", [(3, 4), (4, 3), (5, 2)])
def test_auto_allgather_k8_at_the_bound_from_the_library(rows, cols):
    t = build("equimesh", rows, cols)
    s = synthesize(t, 8, "allgather")
    verify(s)
    check_storage(s)
    assert s.meta["method"] == "stored"
    assert s.num_steps == 2 * (rows * cols - 1)


@pytest.mark.parametrize("rows,cols,steps", [(2, 3, 10), (4, 3, 22)])
def test_auto_allreduce_k8_at_the_bound(rows, cols, steps):
    # 2x3: the ReduceScatter runs the stored 2x3 schedule flipped onto the mirror, reversed
    # (Algorithm 3); 4x3: the stored 3x4 mirror's schedule, transposed; bound 8 (N - 1) / 4 per phase
    t = build("equimesh", rows, cols)
    s = synthesize(t, 8, "allreduce")
    verify(s)
    check_storage(s)
    assert s.meta["method"] == "stored"
    assert [p.num_steps for p in s.phases] == [steps, steps]


def test_stored_applies_only_where_it_is_valid():
    t = build("equimesh", 2, 3)
    assert L.stored(t, 6) is None  # K not a multiple of 4
    assert L.stored(build("equimesh", 4, 4), 4) is None  # not stored (it has a decomposition)
    assert L.stored(build("mesh", 2, 3), 4) is None
    cut = build("equimesh", 2, 3)
    cut.links = cut.links[1:]  # link ids no longer those stored
    assert L.stored(cut, 4) is None


def test_a_corrupted_entry_is_refused(monkeypatch):
    t = build("equimesh", 2, 3)
    good = L._library()[L.key(t)]
    broken = [list(map(list, s)) for s in good]
    broken[1][0][2] = (broken[1][0][2] + 1) % 4  # the same chunk twice into one node, another never
    monkeypatch.setattr(L, "_library", lambda: {L.key(t): broken})
    with pytest.raises(ScheduleInvalid):
        L.stored(t, 4)


def test_main_solves_and_stores(tmp_path):
    out = tmp_path / "lib.json"
    cli(["search", "library", "--sizes", "2x3", "--time-limit", "30", "--out", str(out)])
    recs = json.loads(out.read_text())["schedules"]
    assert [r["key"] for r in recs] == ["equimesh 2x3 cccc"]  # its mirror is a flipped copy (below)
    t = build("equimesh", 2, 3)
    _checked(t, 4, Phase("allgather", [np.array(s).reshape(-1, 3) for s in recs[0]["steps"]]))


def test_main_adds_schedule_files_and_refuses_those_off_the_bound(tmp_path, capsys):
    t = build("equimesh", 2, 3)
    good = Schedule("allgather", "cpsat", 4, t, [exact(t, 4, 5, lanes=True, time_limit=60).phase])
    good.save(tmp_path / "good.json")
    slow = synthesize(t, 4, "allgather", "xtree")  # lane-aware XTree: 6 steps on the 2x3
    assert slow.num_steps == 6
    slow.save(tmp_path / "slow.json")
    out = tmp_path / "lib.json"
    assert cli(["search", "library", "--add", str(tmp_path / "slow.json"), "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip().endswith("slow.json: 6 steps, not at the bound")
    synthesize(t, 8, "allgather").save(tmp_path / "k8.json")
    assert cli(["search", "library", "--add", str(tmp_path / "k8.json"), "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip().endswith("k8.json: not a K = 4 AllGather on an EquiMesh or its mirror")
    cli(["search", "library", "--add", str(tmp_path / "good.json"), "--out", str(out)])
    assert [r["key"] for r in json.loads(out.read_text())["schedules"]] == ["equimesh 2x3 cccc"]
    capsys.readouterr()
    cli(["search", "library", "--add", str(tmp_path / "good.json"), "--out", str(out)])  # as short as the stored one
    assert capsys.readouterr().out.startswith("equimesh 2x3 cccc: not stored from ")
    assert len(json.loads(out.read_text())["schedules"]) == 1


def test_cli_cpsat_honours_the_lanes_by_default(tmp_path):
    import subprocess
    import sys

    from equimesh.schedules.schedule import load

    out = tmp_path / "s.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "equimesh.cli",
            "schedule",
            "--rows",
            "2",
            "--cols",
            "3",
            "--algorithm",
            "cpsat",
            "--time-limit",
            "60",
            "--json",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["storage"] == "lanes" and res["steps"] == 5
    check_storage(load(out))


def test_repair_reaches_the_bound_where_xtree_does_not():
    # 3x5 (no Hamiltonian decomposition, docs/schedules.md): lane-aware XTree needs 15 steps, the
    # bound is 14; CP-SAT windows on a tie-break order's tail close the gap
    from equimesh.schedules.methods.cpsat import repair
    from equimesh.schedules.methods.xtree import xtree

    t = build("equimesh", 3, 5)
    assert xtree(t, 4, lanes=True).num_steps == 15
    ph = repair(t, 4, seeds=4, window_seconds=30, time_limit=300)  # a loaded machine slows the windows
    _checked(t, 4, ph)
    assert ph.num_steps == 14


def test_library_cli_stores_a_repaired_schedule(tmp_path):
    out = tmp_path / "lib.json"
    cli(
        [
            "search",
            "library",
            "--sizes",
            "3x5",
            "--method",
            "repair",
            "--seeds",
            "4",
            "--time-limit",
            "120",
            "--out",
            str(out),
        ]
    )
    keys = [rec["key"] for rec in json.loads(out.read_text())["schedules"]]
    assert keys == ["equimesh 3x5 cccc"]  # the mirror is its flipped image: not stored again
    t = build("equimesh", 3, 5)
    ph = L.lookup(t, {rec["key"]: rec["steps"] for rec in json.loads(out.read_text())["schedules"]})
    assert ph.num_steps == 14


@pytest.mark.parametrize("rows,cols", [(5, 3), (6, 3), (5, 4), (7, 4), (5, 6)])
def test_repaired_and_mirror_schedules_reach_the_bound_at_the_default_directions(rows, cols):
    # stored by `--repair`: 3x5, 3x6, 4x5 (transposed here); 7x4 and 5x6 run a stored mirror schedule
    # (the mirror of directions D has the links of the EquiMesh with every direction flipped)
    t = build("equimesh", rows, cols)
    s = synthesize(t, 4, "allgather")
    _checked(t, 4, s.phases[0])
    assert s.meta["method"] == "stored" and s.num_steps == rows * cols - 1


def test_mirror_has_the_links_of_the_flipped_directions():
    a = build("mirror-equimesh", 4, 7, ring_dirs=parse_ring_dirs("ccac"))
    b = build("equimesh", 4, 7, ring_dirs=parse_ring_dirs("aaca"))
    assert [l.as_list() for l in a.links] == [l.as_list() for l in b.links]


def test_xtree_with_repair_takes_the_4x4_k1_allgather_to_4_steps():
    # issue 10: XTree alone needs 5 steps on the 4x4 EquiMesh with K = 1; 4 is the optimum (CP-SAT proof, tests/test_schedules.py)
    t = build("equimesh", 4, 4)
    assert synthesize(t, 1, "allgather", "xtree").num_steps == 5
    s = synthesize(t, 1, "allgather", "repair")
    verify(s)
    check_storage(s)
    assert s.num_steps == 4 and s.meta["method"] == "repair"


def test_auto_repairs_small_networks_where_xtree_misses_the_bound():
    # 4x4, K = 2: bound ceil(2 * 15 / 4) = 8; too big for auto's exact model (N K = 32 > 24)
    t = build("equimesh", 4, 4)
    assert synthesize(t, 2, "allgather", "xtree").num_steps > 8
    s = synthesize(t, 2, "allgather")
    verify(s)
    check_storage(s)
    assert s.meta["method"] == "repair" and s.num_steps == 8


@pytest.fixture(scope="module")
def repaired_2x9():
    """2x9 (sides of different parity: no Hamiltonian decomposition): bound 17, lane-aware XTree 20;
    a best-known schedule from XTree with repair and longer tail windows, 18 steps: the library's
    until partial ring pipelining stored one at the bound (2026-11-27), kept as a fixture."""
    from pathlib import Path

    from equimesh.schedules.methods.xtree import xtree
    from equimesh.schedules.schedule import load

    t = build("equimesh", 2, 9)
    ph = load(Path(__file__).parent / "fixtures" / "best_known_2x9.json").phases[0]
    _checked(t, 4, ph)
    assert xtree(t, 4, lanes=True).num_steps == 20 and 17 < ph.num_steps < 20
    return t, ph


def test_2x7_is_stored_at_the_bound():
    # 13 steps = N - 1: every link busy in every step, lane rule kept (CP-SAT, row-flip invariant)
    t = build("equimesh", 2, 7)
    ph = L.stored(t, 4)
    _checked(t, 4, ph)
    assert ph.num_steps == 13


def test_library_cli_stores_a_best_known_schedule_where_the_bound_is_not_reached(tmp_path, monkeypatch, repaired_2x9):
    # repair's result is stored because it beats XTree; a later, longer one does not replace it
    from equimesh.schedules.methods import cpsat
    from equimesh.schedules.methods.xtree import xtree

    t, ph = repaired_2x9
    found = {L.key(t): ph}
    monkeypatch.setattr(cpsat, "repair", lambda topo, *a, **k: found.get(L.key(topo)) or xtree(topo, 4, lanes=True))
    out = tmp_path / "lib.json"
    cli(["search", "library", "--sizes", "2x9", "--method", "repair", "--seeds", "4", "--out", str(out)])
    entries = {rec["key"]: rec["steps"] for rec in json.loads(out.read_text())["schedules"]}
    assert list(entries) == [L.key(t)]  # the mirror's repair did not beat its XTree
    stored = L.lookup(t, entries)
    _checked(t, 4, stored)
    assert stored.num_steps == ph.num_steps
    found[L.key(t)] = xtree(t, 4, lanes=True)
    cli(["search", "library", "--sizes", "2x9", "--method", "repair", "--seeds", "4", "--out", str(out)])
    again = {rec["key"]: rec["steps"] for rec in json.loads(out.read_text())["schedules"]}
    assert L.lookup(t, again).num_steps == ph.num_steps


def test_auto_takes_a_best_known_schedule_only_where_it_is_shorter(monkeypatch, repaired_2x9):
    # a stored 2x9 schedule above the bound: auto runs it at K = 4 (shorter than XTree), and at K = 8
    # takes whichever of its two rounds and XTree's K = 8 schedule is shorter
    from equimesh.schedules.methods.xtree import xtree

    t, ph = repaired_2x9
    monkeypatch.setattr(L, "_library", lambda: {L.key(t): [np.asarray(s).tolist() for s in ph.steps]})
    s4 = synthesize(t, 4, "allgather")
    assert (s4.meta["method"], s4.num_steps) == ("stored", ph.num_steps)
    x8 = xtree(t, 8, lanes=True).num_steps
    s8 = synthesize(t, 8, "allgather")
    assert s8.num_steps == min(2 * ph.num_steps, x8)
    assert s8.meta["method"] == ("stored" if 2 * ph.num_steps < x8 else "xtree")


def test_library_tail_stores_a_shorter_tail_of_a_stored_schedule(tmp_path, monkeypatch):
    # --tail re-solves the stored schedule's end with long windows and keeps the result if shorter
    from equimesh.schedules.methods import cpsat
    from equimesh.schedules.methods.xtree import xtree

    t = build("equimesh", 2, 3)
    slow = xtree(t, 4, lanes=True)  # 6 steps, bound 5
    short = exact(t, 4, 5, lanes=True, time_limit=60).phase
    out = tmp_path / "lib.json"
    store({"format": "equimesh-lane-schedules", "chunks": 4, "schedules": []}, t, slow, out)
    calls = []

    def tail(topo, chunks, phase, lanes, time_limit, windows):
        calls.append((L.key(topo), phase.num_steps, windows))
        return short if L.key(topo) == L.key(t) else phase

    monkeypatch.setattr(cpsat, "improve_tail", tail)
    cli(["search", "library", "--sizes", "2x3", "--method", "tail", "--time-limit", "1", "--out", str(out)])
    assert calls == [(L.key(t), 6, L.TAIL_WINDOWS)]  # the mirror is then an image at the bound
    entries = {rec["key"]: rec["steps"] for rec in json.loads(out.read_text())["schedules"]}
    assert L.lookup(t, entries).num_steps == 5


def _row_flip(cols):
    """The row flip of the 2 x C grid, written out: node v <-> v +- C, ports N <-> S, so own chunk 0
    (home lane N) <-> 2 (S); links as (src, dst, src port, dst port)."""
    port = {"N": "S", "S": "N", "E": "E", "W": "W"}
    node = [(v + cols) % (2 * cols) for v in range(2 * cols)]
    chunk = ["NESW".index(port[p]) for p in "NESW"]
    return node, port, chunk


def test_2x3_link_automorphisms_by_brute_force_are_the_identity_and_the_row_flip():
    # every node permutation with every renaming of the 4 ports: only the row flip maps the links
    # (src, dst, src port, dst port) of the 2x3 EquiMesh onto themselves, and it is the one found
    import itertools

    from equimesh.schedules.methods.cpsat import grid_automorphism

    t = build("equimesh", 2, 3)
    links = {(l.src, l.dst, l.src_port, l.dst_port) for l in t.links}
    autos = [
        (perm, ports)
        for perm in itertools.permutations(range(6))
        for ports in itertools.permutations("NESW")
        if all((perm[a], perm[b], ports["NESW".index(p)], ports["NESW".index(q)]) in links for a, b, p, q in links)
    ]
    node, port, _ = _row_flip(3)
    assert autos == [(tuple(range(6)), tuple("NESW")), (tuple(node), tuple(port[p] for p in "NESW"))]
    assert grid_automorphism(t, 4)[0].tolist() == node


@pytest.mark.parametrize("cols", [3, 5, 7, 9])
def test_grid_automorphism_of_2xC_cccc_is_the_row_flip_and_maps_every_link_to_a_link(cols):
    from equimesh.schedules.methods.cpsat import grid_automorphism

    t = build("equimesh", 2, cols, ring_dirs=parse_ring_dirs("cccc"))
    node, link, chunk = grid_automorphism(t, 8)
    flip, port, chunk4 = _row_flip(cols)
    assert node.tolist() == flip
    assert chunk.tolist() == chunk4 + [4 + c for c in chunk4]  # round 1 (chunks 4-7) as round 0
    assert sorted(link.tolist()) == list(range(len(t.links)))
    for l, im in zip(t.links, link.tolist()):
        assert t.links[im].as_list() == [flip[l.src], flip[l.dst], port[l.src_port], port[l.dst_port]]


def _assert_row_flip_invariant(t, phase):
    node, port, chunk = _row_flip(t.cols)
    index = {(l.src, l.dst, l.src_port, l.dst_port): i for i, l in enumerate(t.links)}
    for s in phase.steps:
        moves = {tuple(tr) for tr in np.asarray(s).tolist()}
        image = {
            (
                index[node[t.links[l].src], node[t.links[l].dst], port[t.links[l].src_port], port[t.links[l].dst_port]],
                node[r],
                chunk[c],
            )
            for l, r, c in moves
        }
        assert image == moves


@pytest.mark.parametrize("cols,invariant", [(3, True), (3, False), (5, True)])
def test_at_bound_reaches_the_bound_on_2x3_and_2x5(cols, invariant):
    # soft lane rule, interleaved LNS on one thread, row-flip invariant (docs/schedules.md "2x7 at the
    # bound"): 2x3 in about 1 s, 2x5 in about 5 s; bound N - 1 with every link busy in every step
    from equimesh.schedules.methods.cpsat import at_bound

    t = build("equimesh", 2, cols)
    res = at_bound(t, 4, time_limit=120, invariant=invariant)
    assert res.steps == res.lower == 2 * cols - 1 and res.proven
    _checked(t, 4, res.phase)
    if invariant:
        _assert_row_flip_invariant(t, res.phase)


def test_library_cli_stores_an_at_bound_schedule(tmp_path):
    out = tmp_path / "lib.json"
    cli(["search", "library", "--sizes", "2x3", "--method", "at-bound", "--time-limit", "60", "--out", str(out)])
    recs = json.loads(out.read_text())["schedules"]
    assert [r["key"] for r in recs] == ["equimesh 2x3 cccc"]  # its mirror is a flipped copy
    t = build("equimesh", 2, 3)
    ph = L.lookup(t, {r["key"]: r["steps"] for r in recs})
    assert ph.num_steps == 5
    _assert_row_flip_invariant(t, ph)


def test_parallel_link_swaps_are_symmetries_and_a_swap_with_its_image_keeps_the_invariance():
    # what at_bound's symmetry breaking rests on: swapping the traffic of two parallel links u -> w
    # together with w's own chunks homed in the lanes they enter gives a valid lane-rule schedule;
    # under the row flip only a pair swapped with its image keeps the schedule invariant, so each
    # pair of an orbit cannot be ordered on its own (one pair per orbit is broken)
    from equimesh.schedules.methods.cpsat import at_bound

    t = build("equimesh", 2, 3)
    phase = at_bound(t, 4, time_limit=60).phase
    node, _, _ = _row_flip(3)

    def swap(ph, u, w):
        a, b = [i for i, l in enumerate(t.links) if (l.src, l.dst) == (u, w)]
        ca, cb = ("NESW".index(t.links[i].dst_port) for i in (a, b))
        relabel = {a: b, b: a}
        return Phase(
            "allgather",
            [
                np.array(
                    [
                        (relabel.get(l, l), r, {ca: cb, cb: ca}.get(c, c) if r == w else c)
                        for l, r, c in np.asarray(s).tolist()
                    ]
                )
                for s in ph.steps
            ],
        )

    pairs = {(l.src, l.dst) for l in t.links if sum((m.src, m.dst) == (l.src, l.dst) for m in t.links) == 2}
    assert pairs == {(0, 1), (0, 3), (3, 0), (3, 4), (1, 2), (2, 5), (5, 2), (4, 5)}  # 4 row-flip orbits
    for u, w in sorted(pairs):
        one = swap(phase, u, w)
        _checked(t, 4, one)
        assert [s.tolist() for s in one.steps] != [np.asarray(s).tolist() for s in phase.steps]
        both = swap(one, node[u], node[w])
        _checked(t, 4, both)
        _assert_row_flip_invariant(t, both)
        with pytest.raises(AssertionError):
            _assert_row_flip_invariant(t, one)
