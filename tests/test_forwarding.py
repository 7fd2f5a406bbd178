"""schedules/search/forwarding.py: forwarding-only AllGathers at the bound, decided exactly by CP-SAT."""

import numpy as np
import pytest

from equimesh.schedules.methods.hamiltonian import decompose
from equimesh.schedules.search.forwarding import check, solve
from equimesh.schedules.topology import build


def test_feasible_where_a_decomposition_exists_and_checked_independently():
    topo = build("equimesh", 2, 4)
    assert decompose(topo) is not None
    status, walk = solve(topo, time_limit=60)
    assert status in ("FEASIBLE", "OPTIMAL")
    check(topo, walk)  # every token a Hamiltonian path from its root, every step every link once


def test_infeasible_on_the_2x3_equimesh():
    """The paper's 2x3 has an AllGather at the bound (stored, 5 steps) but none that only forwards."""
    assert solve(build("equimesh", 2, 3), time_limit=60)[0] == "INFEASIBLE"


def test_check_rejects_broken_walks():
    topo = build("equimesh", 2, 4)
    walk = solve(topo, time_limit=60)[1]
    bad = walk.copy()
    a, b = next(
        (a, b)
        for a in range(len(walk))
        for b in range(len(walk))
        if topo.link_src[walk[a, 2]] != topo.link_src[walk[b, 2]]
    )
    bad[[a, b], 2] = bad[[b, a], 2]  # two tokens at different nodes swap links in step 3
    with pytest.raises(ValueError, match="not a walk"):
        check(topo, bad)
    bad = walk.copy()
    bad[0, 0] = bad[1, 0]  # a link taken twice in step 1
    with pytest.raises(ValueError, match="every link once"):
        check(topo, bad)
    with pytest.raises(ValueError, match="tokens x"):
        check(topo, np.zeros((3, 3), dtype=np.int64))
