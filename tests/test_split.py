"""Split schedules (schedules/methods/split.py): 3 Hamiltonian cycles + a 2-cycle + a cycle through the rest,
and the lane-rule AllGather in N steps (the bound plus one) built on them."""

import functools

import numpy as np
import pytest

from equimesh.cli import main as cli
from equimesh.schedules.methods import split as S
from equimesh.schedules.schedule import Schedule, lower_bound
from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import SynthesisError, synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify


def _checked(topo, chunks, phase):
    s = Schedule("allgather", "test", chunks, topo, [phase], {"storage": "lanes"})
    verify(s)
    check_storage(s)


@functools.cache
def _solved(kind, rows, cols):
    topo = build(kind, rows, cols)
    return topo, S.solve(topo, 120)


def _cycle_nodes(topo, links):
    """The nodes of a 1-in-1-out link set if it is one cycle, else None (walked independently)."""
    nxt = {int(topo.link_src[l]): int(topo.link_dst[l]) for l in links}
    if len(nxt) != len(links):
        return None
    start = next(iter(nxt))
    seen, v = [start], nxt[start]
    while v != start:
        if v in seen or v not in nxt:
            return None
        seen.append(v)
        v = nxt[v]
    return seen if len(seen) == len(links) else None


@pytest.mark.parametrize("kind,rows,cols", [("equimesh", 3, 12), ("mirror-equimesh", 3, 12), ("equimesh", 5, 6)])
def test_split_is_three_hamiltonian_cycles_a_two_cycle_and_a_cycle_through_the_rest(kind, rows, cols):
    topo, rec = _solved(kind, rows, cols)
    assert rec is not None and len(rec["pairs"]) == 1
    colour = np.array([int(c) for c in rec["colours"]])
    assert len(colour) == len(topo.links)
    _assert_split(topo, colour, rec["pairs"])


@pytest.mark.parametrize("kind,rows,cols", [("equimesh", 3, 12), ("mirror-equimesh", 3, 12), ("equimesh", 5, 6)])
def test_split_schedule_takes_n_steps_keeps_the_lane_rule_and_rounds_take_n_each(kind, rows, cols):
    topo, rec = _solved(kind, rows, cols)
    colour = np.array([int(c) for c in rec["colours"]])
    phase = S.construct_record(topo, colour, rec)
    assert phase.num_steps == topo.nodes == lower_bound(topo, 4, "allgather") + 1
    _checked(topo, 4, phase)
    from equimesh.schedules.methods.library import rounds

    eight = rounds(phase, 8)
    assert eight.num_steps == 2 * topo.nodes
    _checked(topo, 8, eight)


@pytest.mark.parametrize("kind,rows,cols", [("equimesh", 3, 12), ("mirror-equimesh", 3, 12)])
def test_a_solved_tail_puts_the_split_schedule_at_the_bound(kind, rows, cols):
    # docs/schedules.md "Tails": the last 4 steps re-solved in 3, every link busy in every step
    topo, rec = _solved(kind, rows, cols)
    colour = np.array([int(c) for c in rec["colours"]])
    phase = S.construct_record(topo, colour, rec)
    tail = S.solve_tail(topo, colour, rec, 60)
    assert tail is not None and len(tail) == 3
    kept = phase.steps[: S.tail_start(topo, rec["pairs"])]
    assert [s.tolist() for s in kept] == [s.tolist() for s in phase.steps[: len(kept)]]
    full = type(phase)("allgather", kept + tail)
    assert full.num_steps == lower_bound(topo, 4, "allgather") == topo.nodes - 1
    assert all(len(s) == len(topo.links) for s in tail)
    _checked(topo, 4, full)


def test_where_the_sign_is_plus_1_the_split_has_two_2_cycles_and_its_tail_meets_the_bound():
    # docs/schedules.md "Two 2-cycles": 3x9 has no Hamiltonian decomposition and, sign +1, no split
    # with one 2-cycle; the construction keeps every link busy up to its tail start, the tail takes 4 steps
    topo, rec = _solved("equimesh", 3, 9)
    assert rec is not None and len(rec["pairs"]) == 2 and len(rec["tail"]) == 4
    colour = np.array([int(c) for c in rec["colours"]])
    _assert_split(topo, colour, rec["pairs"])
    prefix = S.construct_record(topo, colour, rec, until=S.tail_start(topo, rec["pairs"]))
    assert all(len(s) == len(topo.links) for s in prefix.steps)
    full = type(prefix)("allgather", prefix.steps + [S.parse_transfers(t) for t in rec["tail"]])
    assert full.num_steps == lower_bound(topo, 4, "allgather") == topo.nodes - 1
    _checked(topo, 4, full)


@pytest.mark.parametrize("rows,cols", [(3, 9), (9, 3), (3, 13), (13, 3)])
def test_the_stored_two_2_cycle_splits_put_allgather_and_allreduce_at_the_bound(rows, cols):
    # 3x9 and 3x13 stored (EquiMesh and mirror), 9x3 and 13x3 their images under the transpose
    topo = build("equimesh", rows, cols)
    for collective, chunks in (("allgather", 4), ("allgather", 8), ("allreduce", 4)):
        sched = synthesize(topo, chunks, collective)
        verify(sched)
        check_storage(sched)
        assert sched.num_steps == lower_bound(topo, chunks, collective), (collective, chunks)


def test_choose_with_a_tail_serves_where_the_construction_fails_near_its_end():
    # as at 16x13: every choice runs its first N - 4 steps, none all N; the tail completes one
    import unittest.mock

    topo, rec = _solved("equimesh", 3, 12)
    colour = np.array([int(c) for c in rec["colours"]])
    real = S.construct

    def failing_at_the_end(*args, until=None):
        if until is None:
            raise S.SplitFailed("a lane read twice in the last step")
        return real(*args, until=until)

    with unittest.mock.patch.object(S, "construct", failing_at_the_end):
        assert S.choose(topo, colour, rec["pairs"]) is None
        got = S.choose(topo, colour, rec["pairs"], tail_seconds=60)
    assert S.choose(topo, colour, rec["pairs"], tail_seconds=60)["tail"] == got["tail"]  # tail first
    assert got is not None and len(got["tail"]) == 3
    prefix = S.construct_record(topo, colour, got, until=S.tail_start(topo, got["pairs"]))
    full = type(prefix)("allgather", prefix.steps + [S.parse_transfers(t) for t in got["tail"]])
    assert full.num_steps == lower_bound(topo, 4, "allgather")
    _checked(topo, 4, full)


def test_a_stored_tail_is_used_and_checked():
    from equimesh.schedules.topology import parse_ring_dirs

    topo = build("equimesh", 3, 12, ring_dirs=parse_ring_dirs("ccac"))  # stored with its own split
    key = S.key(topo)
    assert key in S._data()["tails"]
    assert S.split_allgather(topo, 4).num_steps == topo.nodes - 1
    bad = dict(S._data())
    tail = list(bad["tails"][key])
    first = tail[0].split()
    first[1] = str((int(first[1]) + 1) % topo.nodes)  # one transfer now carries another root's chunk
    bad["tails"] = {**bad["tails"], key: [" ".join(first)] + tail[1:]}
    import unittest.mock

    with unittest.mock.patch.object(S, "_data", lambda: bad):
        with pytest.raises(ScheduleInvalid):
            S.split_allgather(topo, 4)


def test_choices_that_do_not_work_are_refused_not_returned():
    # the simulation raises for choices that leave a chunk undelivered or read a lane twice; every
    # choice it accepts gives a schedule that the verifier and the storage check accept
    topo, rec = _solved("equimesh", 5, 6)
    colour = np.array([int(c) for c in rec["colours"]])
    refused = accepted = 0
    for inject, chunk_of, first in S.choices():
        try:
            phase = S.construct(topo, colour, rec["pairs"], inject, chunk_of, first)
        except S.SplitFailed:
            refused += 1
            continue
        accepted += 1
        _checked(topo, 4, phase)
    assert refused and accepted


def test_auto_runs_the_stored_split_where_it_is_shorter_and_names_it():
    topo = build("equimesh", 3, 12)
    assert S.split_allgather(topo, 4) is not None  # stored in data/splits.json
    sched = synthesize(topo, 4, "allgather")
    assert sched.meta["method"] == "split" and sched.num_steps == 35 == lower_bound(topo, 4, "allgather")
    assert synthesize(topo, 8, "allgather", algorithm="split").num_steps == 70 == lower_bound(topo, 8, "allgather")


@pytest.mark.parametrize(
    "rows,cols,chunks,words",
    [(4, 4, 4, "none stored"), (3, 12, 6, "multiple of 4"), (2, 9, 4, "none exists at 2 x C with C odd")],
)
def test_split_where_it_does_not_apply_says_why(rows, cols, chunks, words):
    with pytest.raises(SynthesisError, match=words):
        synthesize(build("equimesh", rows, cols), chunks, "allgather", algorithm="split")


@pytest.mark.parametrize("key", sorted(rec["key"] for rec in S._data()["splits"]))
def test_every_stored_split_gives_a_valid_schedule_in_n_steps_or_with_its_tail_n_minus_1(key):
    kind, size, dirs = key.split()
    rows, cols = (int(v) for v in size.split("x"))
    from equimesh.schedules.topology import parse_ring_dirs

    topo = build(kind, rows, cols, ring_dirs=parse_ring_dirs(dirs))
    phase = S.split_allgather(topo, 4)  # construct, verify and check the lane rule
    assert phase.num_steps == topo.nodes - (key in S._data()["tails"])
    _checked(topo, 4, phase)


@pytest.mark.parametrize(
    "rows,cols,dirs,src", [(5, 16, "cccc", "16x5"), (14, 7, "cacc", "7x14"), (10, 7, "accc", "7x10")]
)
def test_a_split_stored_for_the_transposed_size_serves_the_image_of_its_ring_directions(rows, cols, dirs, src):
    from equimesh.schedules.topology import parse_ring_dirs

    topo = build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs))
    assert S.stored_split(topo) is None and any(f" {src} " in rec["key"] for rec in S._data()["splits"])
    phase = S.split_allgather(topo, 4)
    src = next(rec["key"] for rec in S._data()["splits"] if f" {src} " in rec["key"])
    assert phase.num_steps == topo.nodes - (src in S._data()["tails"]) <= lower_bound(topo, 4, "allgather") + 1
    _checked(topo, 4, phase)
    assert S.split_allgather(build("equimesh", rows, cols, ring_dirs=parse_ring_dirs("aaaa")), 4) is None


@pytest.mark.parametrize("rows,cols", [(4, 7), (7, 4), (5, 6), (6, 5)])
def test_the_mirror_split_puts_the_allreduce_at_the_bound_where_the_allgather_is_stored(rows, cols):
    # the AllGather is a stored schedule at the bound; the ReduceScatter runs the mirror's split
    topo = build("equimesh", rows, cols)
    mirror = build("mirror-equimesh", rows, cols, ring_dirs=topo.ring_dirs)
    assert S.stored_split(mirror) is not None and S.key(mirror) in S._data()["tails"]
    sched = synthesize(topo, 4, "allreduce")
    verify(sched)
    check_storage(sched)
    assert sched.num_steps == lower_bound(topo, 4, "allreduce") == 2 * (topo.nodes - 1)


def test_auto_at_k8_takes_the_shorter_of_two_split_rounds_and_xtree():
    from equimesh.schedules.methods.xtree import xtree

    topo = build("equimesh", 3, 12)
    x8 = xtree(topo, 8, lanes=True).num_steps
    s8 = synthesize(topo, 8, "allgather")
    sp = S.split_allgather(topo, 8).num_steps
    assert s8.num_steps == min(sp, x8)
    assert s8.meta["method"] == ("split" if sp <= lower_bound(topo, 8, "allgather") + 1 or sp < x8 else "xtree")


# ----- split tiles -----------------------------------------------------------------------------------


def _tile_sizes(most=16):
    """(kind, rows, cols) of every size up to ``most`` per side that a stored tile covers."""
    return sorted(
        {
            (t["kind"], *map(int, size.split("x")))
            for t in S._data()["tiles"]
            for size in t["sizes"]
            if max(map(int, size.split("x"))) <= most
        }
    )


def _assert_split(topo, colour, pairs):
    """Independent of is_split: walk every colour (docs/schedules.md "Split schedules"): 3
    Hamiltonian cycles, and in colour 3 the 2-cycles ``pairs`` and one cycle through the rest."""
    n = topo.nodes
    for c in range(3):
        assert sorted(_cycle_nodes(topo, np.nonzero(colour == c)[0])) == list(range(n))
    three = np.nonzero(colour == 3)[0]
    ends = {v for p in pairs for v in p}
    assert len(ends) == 2 * len(pairs)
    two = [l for l in three if topo.link_src[l] in ends]
    assert sorted((int(topo.link_src[l]), int(topo.link_dst[l])) for l in two) == sorted(
        [(u, w) for u, w in pairs] + [(w, u) for u, w in pairs]
    )
    assert sorted(_cycle_nodes(topo, [l for l in three if l not in two])) == sorted(set(range(n)) - ends)


@pytest.mark.parametrize("kind,rows,cols", _tile_sizes())
def test_every_size_a_tile_covers_gets_a_split_schedule_at_the_bound(kind, rows, cols):
    topo = S.default(kind, rows, cols)
    colour, rec = S.stored_split(topo)
    _assert_split(topo, colour, rec["pairs"])
    phase = S.split_allgather(topo, 4)
    bound = lower_bound(topo, 4, "allgather")
    assert topo.nodes == bound + 1 and phase.num_steps == bound  # every tile size up to 16x16 has a tail
    _checked(topo, 4, phase)


def test_tiles_cover_every_size_with_an_even_side_4_to_16_and_an_odd_side_9_to_15():
    # docs/schedules.md "Split tiles": period 4 up to E = 14 (but 14x11, 14x15), period 2 (the 14x9 and
    # 16x9 tiles) the rest, and 16x7 by a cut period
    want = {
        (kind, e, o) for kind in ("equimesh", "mirror-equimesh") for e in range(4, 17, 2) for o in (9, 11, 13, 15)
    } | {(kind, 16, 7) for kind in ("equimesh", "mirror-equimesh")}
    have = set(_tile_sizes())
    assert want <= have and {(k, o, e) for k, e, o in want} <= have


@pytest.mark.parametrize("index", range(len(S._data()["tiles"])))
def test_every_stored_tile_is_a_split_with_the_2_cycle_its_sizes_name(index):
    # the mirror search starts from the reversed EquiMesh tile and its 2-cycle (tile_pair)
    rec = S._data()["tiles"][index]
    tile = S.default(rec["kind"], rec["rows"], rec["cols"])
    _assert_split(tile, np.array([int(c) for c in rec["colours"]]), [S.tile_pair(rec)])


def test_a_tile_extends_far_beyond_its_own_size():
    topo = S.default("equimesh", 29, 6)  # from the 6x13 tile: band repeated 4 times, transposed
    colour, rec = S.stored_split(topo)
    _assert_split(topo, colour, rec["pairs"])
    _checked(topo, 4, S.split_allgather(topo, 4))


def test_tile_search_finds_a_tile_that_extends_both_ways_round():
    rec = S.make_tile("equimesh", 4, 13, 60, reach=17)
    assert rec is not None and set(rec["sizes"]) == {"4x9", "9x4", "4x13", "13x4", "4x17", "17x4"}
    tile = S.default("equimesh", 4, 13)
    colour = np.array([int(c) for c in rec["colours"]])
    for i, j in S.hamiltonian.band_pairs(tile, None, S.hamiltonian.BAND):
        assert colour[i] == colour[j]  # the band repeats
    mirror = S.make_tile("mirror-equimesh", 4, 13, 60, reach=17, known=rec)  # first tried reversed
    assert mirror is not None and {"4x13", "13x4"} <= set(mirror["sizes"])


def test_a_tile_with_a_band_of_period_2_extends_in_steps_of_2():
    # splits admit a band of 2 columns (Hamiltonian decompositions do not: hamiltonian.py)
    rec = S.make_tile("equimesh", 4, 9, 60, reach=13, period=2)
    assert rec is not None and rec["period"] == 2
    assert {"4x11", "11x4", "4x13", "13x4"} <= set(rec["sizes"])  # 9 + 2, 9 + 4: both ways round
    tile = S.default("equimesh", 4, 9)
    colour = np.array([int(c) for c in rec["colours"]])
    for i, j in S.hamiltonian.band_pairs(tile, None, S.hamiltonian.BAND, 2):
        assert colour[i] == colour[j]
    for size, choice in rec["sizes"].items():
        topo = S.default("equimesh", *map(int, size.split("x")))
        _assert_split(topo, S.tile_colours(tile, colour, topo, 2), choice["pairs"])


def test_no_split_tile_with_the_band_along_the_even_side():
    # every 2-cycle before or after the band (docs/schedules.md "Split tiles")
    topo = S.default("equimesh", 3, 12)
    same = S.hamiltonian.band_pairs(topo, None, S.hamiltonian.BAND)
    pairs = [
        (u, w)
        for u in range(topo.nodes)
        for w in range(u + 1, topo.nodes)
        if topo.distances[u, w] == 1 == topo.distances[w, u]
        and all(v % 12 < S.hamiltonian.BAND or v % 12 >= S.hamiltonian.BAND + 2 * S.hamiltonian.PERIOD for v in (u, w))
    ]
    assert pairs
    assert all(S.find(topo, [pair], 60, same=same)[1] == "none" for pair in pairs)


def test_tiles_apply_only_to_the_ring_directions_they_were_made_for():
    from equimesh.schedules.topology import parse_ring_dirs

    assert S.split_allgather(S.default("equimesh", 8, 13), 4) is not None
    assert S.split_allgather(build("equimesh", 8, 13, ring_dirs=parse_ring_dirs("acca")), 4) is None


@pytest.mark.parametrize("option,value", [("--sizes", "3y9"), ("--tiles", "16x"), ("--tails", "1x4")])
def test_the_offline_split_tool_refuses_a_malformed_size_in_one_line(option, value, capsys):
    assert cli(["search", "split", option, value, "--out", "/nonexistent/splits.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"equimesh: {option} entries look like RxC with sides 2..64, e.g. 8x8 (got {value!r})"]


@pytest.mark.parametrize("rows,cols", [(2, 9), (9, 2), (2, 11)])
def test_2_x_odd_has_no_split_with_two_cycles_in_one_colour_for_any_ring_directions(rows, cols):
    # docs/schedules.md "Split schedules": 3 Hamiltonian cycles and a cover of two cycles of any
    # lengths (a 2-cycle on any pair, parallel links included, is a special case); solve gives up at once
    import itertools

    from equimesh.schedules.topology import parse_ring_dirs

    for dirs in ("".join(p) for p in itertools.product("ca", repeat=4)):
        topo = build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs))
        assert S.two_cycles(topo, 60) == "none", dirs
    assert S.solve(build("equimesh", rows, cols), 600) is None


@pytest.mark.parametrize("rows,cols,dirs", [(3, 8, "cccc"), (2, 3, "acca"), (3, 12, "ccac")])
def test_two_cycles_finds_the_splits_that_exist(rows, cols, dirs):
    from equimesh.schedules.topology import parse_ring_dirs

    assert S.two_cycles(build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs)), 60) == "found"
