"""Hamiltonian decompositions, the ring-pipelined AllGather, the CP-SAT exact model and `auto`."""

import json
import subprocess
import sys

import numpy as np
import pytest

from equimesh.schedules.methods import hamiltonian as H
from equimesh.schedules.methods.cpsat import exact
from equimesh.schedules.methods.ringpipe import ring_allgather
from equimesh.schedules.schedule import Schedule, lower_bound
from equimesh.schedules.storage import check_storage
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build, parse_ring_dirs
from equimesh.schedules.verify import verify


def _walk_is_hamiltonian(topo, cycle):
    """Independent of hamiltonian.check: follow the links and count distinct nodes."""
    seen, node = [], topo.links[cycle[0]].src
    for l in cycle:
        link = topo.links[l]
        assert link.src == node
        seen.append(node)
        node = link.dst
    return node == seen[0] and len(set(seen)) == topo.nodes == len(cycle)


def _assert_decomposition(topo, dec):
    assert sorted(np.concatenate(dec.cycles).tolist()) == list(range(len(topo.links)))
    assert all(_walk_is_hamiltonian(topo, c) for c in dec.cycles)


@pytest.mark.parametrize("rows,cols", [(2, 2), (3, 3), (4, 4), (2, 6)])
def test_exact_search_finds_decompositions(rows, cols):
    t = build("equimesh", rows, cols)
    res = H.solve(t, 30)
    assert res.status == "found"
    _assert_decomposition(t, res.decomposition)


@pytest.mark.parametrize(
    "rows,cols,dirs", [(2, 3, "cccc"), (2, 3, "acca"), (3, 4, "cccc"), (3, 5, "cccc"), (3, 13, "cccc")]
)
def test_exact_search_proves_none(rows, cols, dirs):
    # docs/schedules.md, "Hamiltonian decompositions": none at 2x3, 3x4, 3x5 (measured independently);
    # 3x13 follows the 3 x C pattern found here (docs/schedules.md)
    res = H.solve(build("equimesh", rows, cols, ring_dirs=parse_ring_dirs(dirs)), 30)
    assert res.status == "none" and res.decomposition is None


@pytest.mark.parametrize("cols", [5, 9])
def test_three_by_one_mod_four_has_none_for_any_ring_directions(cols):
    """3 x C with C = 1 mod 4 has sign +1 (the parity argument allows a decomposition), but the exact
    search finds none for any of Algorithm 1's 16 ring-direction choices (docs/schedules.md)."""
    import itertools

    for dirs in itertools.product("ca", repeat=4):
        res = H.solve(build("equimesh", 3, cols, ring_dirs=parse_ring_dirs("".join(dirs))), 60)
        assert res.status == "none", "".join(dirs)


def test_check_rejects_broken_decompositions():
    t = build("equimesh", 4, 4)
    dec = H.solve(t, 30).decomposition
    c = [cy.copy() for cy in dec.cycles]
    c[0][[0, 1]] = c[0][[1, 0]]  # not a closed walk any more
    with pytest.raises(H.DecompositionError):
        H.check(t, c)
    c = [cy.copy() for cy in dec.cycles]
    c[1] = c[0].copy()  # a link used twice, another never
    with pytest.raises(H.DecompositionError, match="exactly once"):
        H.check(t, c)


@pytest.mark.parametrize("rows,cols", [(16, 16), (32, 32), (12, 16), (4, 16), (13, 15), (16, 14), (7, 15)])
def test_stored_tiles_extend_to_large_sizes(rows, cols):
    t = build("equimesh", rows, cols)
    dec = H.from_tile(t)
    assert dec is not None and dec.method == "tile"
    _assert_decomposition(t, dec)


@pytest.mark.parametrize("rows,cols", [(9, 11), (11, 11), (13, 9), (11, 15), (9, 17)])
def test_sizes_without_a_tile_of_their_own_are_cut_from_a_longer_tile(rows, cols):
    """The exact search timed out at these odd sizes; one band period cut out of the 13- or 15-side
    tile gives them (checked by the independent walk here)."""
    direct = (H.tile_side(rows)[0], H.tile_side(cols)[0])
    assert direct not in H._tiles() and direct[::-1] not in H._tiles()
    t = build("equimesh", rows, cols)
    dec = H.from_tile(t)
    assert dec is not None and dec.method == "tile"
    _assert_decomposition(t, dec)


def test_tile_extension_needs_whole_periods():
    tile = build("equimesh", 12, 12)
    with pytest.raises(H.DecompositionError, match="does not extend"):
        H.extend(tile, np.zeros(len(tile.links), dtype=np.int64), 2, 2, build("equimesh", 14, 12))
    with pytest.raises(H.DecompositionError, match="does not extend"):  # at most one period cut out
        H.extend(tile, np.zeros(len(tile.links), dtype=np.int64), 2, 2, build("equimesh", 4, 12))


def test_mirror_decomposition_by_reversal():
    t = build("mirror-equimesh", 4, 6)
    dec = H.decompose(t)
    _assert_decomposition(t, dec)


def test_no_decomposition_for_degraded_or_other_kinds():
    from equimesh.schedules.failures import DegradedTopology

    t = build("equimesh", 4, 4)
    l = t.links[0]
    assert H.decompose(DegradedTopology(t, [(l.src, l.dst, l.src_port, l.dst_port)])) is None
    assert H.decompose(build("mesh", 4, 4)) is None


@pytest.mark.parametrize("rows,cols,k,steps", [(2, 2, 4, 3), (4, 4, 4, 15), (4, 4, 8, 30), (3, 3, 12, 24)])
def test_ring_allgather_at_bound_with_lanes(rows, cols, k, steps):
    # K = 4m: m rounds of N - 1 steps, every link busy in every step
    t = build("equimesh", rows, cols)
    ph = ring_allgather(t, k, H.decompose(t))
    s = Schedule("allgather", "ring", k, t, [ph])
    verify(s)
    check_storage(s)
    assert ph.num_steps == steps == lower_bound(t, k, "allgather")
    assert all(len(st) == len(t.links) for st in ph.steps)


@pytest.mark.parametrize(
    "rows,cols,method,steps",
    [
        (4, 4, "ring", 15),  # ring on the cycles and, reversed, on the mirror's
        (2, 3, "stored", 5),  # seed 000's 2x3 example, K = 4: depth 5 (the bound); no decomposition exists
    ],
)
def test_auto_allreduce_at_bound_with_lanes(rows, cols, method, steps):
    t = build("equimesh", rows, cols)
    s = synthesize(t, 4, "allreduce")
    verify(s)
    check_storage(s)
    assert s.meta["method"] == method
    assert [p.num_steps for p in s.phases] == [steps, steps]


def test_auto_falls_back_to_xtree_on_the_mesh():
    s = synthesize(build("mesh", 3, 3), 4, "allgather")
    assert s.meta["method"] == "xtree"


def test_cpsat_exact_k1_4x4_four_steps_with_lanes():
    # seed 000 Fig. 6 / issue 10: 4 steps is reachable on the 4x4 EquiMesh (cccc) with K = 1; XTree takes 5
    t = build("equimesh", 4, 4)
    res = exact(t, 1, 5, lanes=True, time_limit=60)
    assert res.steps == 4 and res.proven
    s = Schedule("allgather", "cpsat", 1, t, [res.phase])
    verify(s)
    check_storage(s)


def test_cpsat_exact_proves_a_step_count_infeasible():
    # on the 4x4 EquiMesh with K = 1, direction choice aaaa needs 5 steps (links only)
    t = build("equimesh", 4, 4, ring_dirs=parse_ring_dirs("aaaa"))
    res = exact(t, 1, 4, lanes=False, time_limit=120)
    assert res.phase is None and res.lower == 5


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "equimesh.cli", *args], capture_output=True, text=True)


def test_cli_reports_method_and_rejects_ring_where_it_does_not_apply():
    r = _cli("schedule", "--rows", "4", "--cols", "4", "--chunks", "8", "--json")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert out["method"] == "ring" and out["steps"] == out["bound"] == 30
    for args, why, use in (
        (
            ["--rows", "2", "--cols", "3"],
            "no Hamiltonian decomposition",
            "use --algorithm auto (it runs a stored schedule at the bound here)",
        ),
        (
            ["--rows", "2", "--cols", "9"],
            "no Hamiltonian decomposition",
            "use --algorithm auto (it runs a stored schedule at the bound here)",
        ),
        (["--rows", "2", "--cols", "19"], "no Hamiltonian decomposition", "auto or xtree"),
        (["--chunks", "3"], "multiple of 4", "auto or xtree"),
        (["--kind", "mesh"], "needs an EquiMesh", "auto or xtree"),
    ):
        r = _cli("schedule", "--algorithm", "ring", *args)
        assert r.returncode == 1
        assert why in r.stderr and use in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_cpsat_windows_shorten_lane_xtree_on_2x3():
    from equimesh.schedules.methods.cpsat import improve_tail, start_lanes
    from equimesh.schedules.methods.xtree import xtree

    t = build("equimesh", 2, 3)
    ph = xtree(t, 4, lanes=True)
    assert ph.num_steps == 6  # README: lane-aware XTree, 2x3, K = 4
    lanes = start_lanes(t, 4, ph.steps[:2])
    assert (lanes >= 0).sum() == 6 * 4 + sum(len(s) for s in ph.steps[:2])
    better = improve_tail(t, 4, ph, lanes=True, time_limit=60)
    s = Schedule("allgather", "cpsat", 4, t, [better])
    verify(s)
    check_storage(s)
    assert better.num_steps == 5


def test_transposed_decomposition():
    a, b = build("equimesh", 4, 6), build("equimesh", 6, 4)
    colour = H.colours_of(H.solve(a, 30).decomposition, len(a.links))
    _assert_decomposition(b, H.from_colours(b, H.transpose(a, colour, b), "tile"))
