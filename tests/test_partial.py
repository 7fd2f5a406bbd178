"""Partial ring pipelining (schedules/methods/partial.py): two classes on Hamiltonian cycles, two solved on the rest."""

import json

import numpy as np
import pytest

from equimesh.cli import main as cli
from equimesh.schedules.methods import partial
from equimesh.schedules.methods.cpsat import exact, grid_automorphism
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def _checked(topo, phase):
    s = Schedule("allgather", "test", 4, topo, [phase], {"storage": "lanes"})
    verify(s)
    check_storage(s)
    return s


@pytest.mark.parametrize("kind", ["equimesh", "mirror-equimesh"])
@pytest.mark.parametrize("rows,cols", [(2, 3), (2, 5), (3, 4)])
def test_partial_reaches_the_bound_where_no_decomposition_exists(kind, rows, cols):
    # sides of different parity: no Hamiltonian decomposition (parity.py), yet N - 1 steps
    t = build(kind, rows, cols)
    ph = partial.solve(t, seeds=2, time_limit=60, log=lambda _: None)
    _checked(t, ph)
    assert ph.num_steps == rows * cols - 1


def test_the_cycles_are_hamiltonian_and_the_rest_has_degree_two():
    t = build("equimesh", 2, 5)
    sym = grid_automorphism(t, 4)
    colour = partial.cycles(t, 30, seed=0, link=sym[1])
    for c in (0, 1):
        links = np.nonzero(colour == c)[0]
        nxt = dict(zip(t.link_src[links].tolist(), t.link_dst[links].tolist()))
        seen, v = [], 0
        for _ in range(t.nodes):
            seen.append(v)
            v = nxt[v]
        assert v == 0 and sorted(seen) == list(range(t.nodes))  # one cycle through every node
    rest = colour == 2
    assert (np.bincount(t.link_dst[rest], minlength=t.nodes) == 2).all()
    assert (np.bincount(t.link_src[rest], minlength=t.nodes) == 2).all()
    # the row flip swaps H0 and H1 and keeps D
    assert (colour[sym[1]] == np.array([1, 0, 2])[colour]).all()


def test_the_rest_symmetry_maps_D_links_and_chunks_onto_D():
    t = build("equimesh", 2, 7)
    sym = grid_automorphism(t, 4)
    colour = partial.cycles(t, 30, seed=0, link=sym[1])
    sub, ids = partial.rest(t, colour)
    link, chunk = partial.rest_symmetry(t, sym, sub, ids)
    node = sym[0]
    assert sorted(link.tolist()) == list(range(len(sub.links)))
    assert sorted(chunk.tolist()) == list(range(2 * t.nodes))
    for l, image in enumerate(link.tolist()):
        assert sub.link_src[image] == node[sub.link_src[l]] and sub.link_dst[image] == node[sub.link_dst[l]]
    # every router of D has its two in-ports as its only ports (its lanes)
    for v in range(t.nodes):
        assert sorted(sub.ports(v)) == sorted(sub.links[l].dst_port for l in sub.in_links[v])


def test_merge_keeps_every_lane_to_its_own_class():
    # each chunk travels only links of the class its home lane belongs to: H0, H1 or D
    t = build("equimesh", 2, 5)
    colour = partial.cycles(t, 30, seed=0)
    sub, ids = partial.rest(t, colour)
    res = exact(sub, 2, t.nodes - 1, lanes=True, time_limit=60)
    ph = partial.merge(t, colour, sub, ids, res.phase)
    _checked(t, ph)
    home_class = {}  # (root, chunk) -> the class of the link entering its home lane
    for l, link in enumerate(t.links):
        home_class[link.dst, t.ports(link.dst).index(link.dst_port)] = int(colour[l])
    for step in ph.steps:
        for l, root, chunk in np.asarray(step).reshape(-1, 3).tolist():
            assert colour[l] == home_class[root, chunk]


def test_library_cli_stores_a_partial_schedule(tmp_path):
    out = tmp_path / "lib.json"
    cli(
        [
            "search",
            "library",
            "--sizes",
            "2x5",
            "--method",
            "partial",
            "--seeds",
            "2",
            "--time-limit",
            "60",
            "--out",
            str(out),
        ]
    )
    recs = json.loads(out.read_text())["schedules"]
    assert [r["key"] for r in recs] == ["equimesh 2x5 cccc"]  # the mirror is a flipped copy
    t = build("equimesh", 2, 5)
    ph = Phase("allgather", [np.array(s).reshape(-1, 3) for s in recs[0]["steps"]])
    assert _checked(t, ph).num_steps == 9


@pytest.mark.parametrize("rows,cols", [(2, 9), (11, 2), (2, 13), (15, 2)])
def test_two_by_odd_is_at_the_bound_from_the_library(rows, cols):
    # stored from partial.solve (docs/schedules.md); the transposes are images
    t = build("equimesh", rows, cols)
    for chunks in (4, 8):
        s = synthesize(t, chunks, "allgather")
        verify(s)
        check_storage(s)
        assert s.num_steps == chunks // 4 * (rows * cols - 1)
    s = synthesize(t, 4, "allreduce")
    verify(s)
    check_storage(s)
    assert [p.num_steps for p in s.phases] == [rows * cols - 1] * 2
