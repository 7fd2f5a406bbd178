"""The Supermesh formulas (seed 001) by hand (issue 37): defaults, the size checks at their edges, the exact
messages, and link counts and global bandwidth worked out in comments from the slides' definitions."""

import numpy as np
import pytest

from equimesh.schedules.supermesh import (
    SupermeshError,
    bisection_width,
    check_sizes,
    exchange_cost,
    gbw,
    links_3d,
    short_reach_links,
)


@pytest.mark.parametrize(
    "args,message",
    [
        ((0,), "m, n and p must be >= 1 (got m = 0, n = 1, p = 1)"),
        ((1,), "SM(1,1) has one node per plane: m must be >= 2 (got m = 1)"),
        ((2, 1, 1, 3), "row planes x must be in 0..m and column planes y in 0..n (got x = 3, y = 0)"),
        ((2, 1, 1, 0, 2), "row planes x must be in 0..m and column planes y in 0..n (got x = 0, y = 2)"),
        ((2, 1, 2), "with p = 2 planes at least one row or column plane (x + y >= 1) must join them"),
    ],
)
def test_size_errors_are_exact(args, message):
    with pytest.raises(SupermeshError) as e:
        check_sizes(*args)
    assert str(e.value) == message


def test_the_smallest_sizes_and_the_defaults():
    check_sizes(2)  # SM(2): two nodes, one plane, no plane groups
    check_sizes(1, 2)  # SM(1,2): m n = 2
    check_sizes(2, 1, 1, 2, 1)  # x = m, y = n
    # SM(2) = SM(2,1,1,0,0): C(2,2) = 1 link; SM(3): 3; SM(3,2): 2 C(3,2) + 3 C(2,2) = 9
    assert (short_reach_links(2), short_reach_links(3), short_reach_links(3, 2)) == (1, 3, 9)
    assert links_3d(3) == 3 and links_3d(3, 2) == 9


def test_links_3d():
    # p planes of SM(m,n) plus C(p,2) per plane group, x n + y m groups:
    # SM(3,2,2,1,0): 2 * 9 + (1 * 2) * 1 = 20; SM(3,2,3,1,1): 3 * 9 + (2 + 3) * 3 = 42
    assert (links_3d(3, 2, 2, 1, 0), links_3d(3, 2, 3, 1, 1)) == (20, 42)


def test_global_bandwidth():
    # w(x) = x^2 / 4. SM(4) = w(4) = 4; SM(4,2) = min(w(4) 2, w(2) 4) = min(8, 4) = 4;
    # SM(3,3) = min(w(3) 3, w(3) 3) = 6.75; SM(4,1,2,1,1) = min(w(4) 2, w(2) (1 + 4)) = min(8, 5) = 5
    assert (gbw(4), gbw(4, 2), gbw(3, 3), gbw(4, 1, 2, 1, 1)) == (4, 4, 6.75, 5)
    assert (bisection_width(4), bisection_width(4, 2)) == (4, 4)


def test_exchange_cost():
    # per round max(busiest link, sync): rounds [1, 3] and [2]: 3 + 2 = 5; with sync 2.5: 3 + 2.5; an idle round: sync
    rounds = [np.array([1.0, 3.0]), np.array([2.0])]
    assert (exchange_cost(rounds), exchange_cost(rounds, 2.5), exchange_cost([np.zeros(0)], 1.0)) == (5.0, 5.5, 1.0)


def test_defaults_that_only_matter_with_planes_or_columns():
    # p = 2 planes with the default x = y = 0 have nothing joining them
    with pytest.raises(SupermeshError):
        links_3d(3, 2, 2)
    with pytest.raises(SupermeshError):
        gbw(4, 1, 2)
    # SM(6) = SM(6,1): w(6) = 9 (a second column would make it min(w(6) 2, w(2) 6) = 6)
    assert gbw(6) == 9
    # one round whose busiest link carries 0.5 and no sync: 0.5
    assert exchange_cost([np.array([0.5])]) == 0.5
