"""The stored lane-rule schedules (schedules/data/lane_schedules.json) are at the bound wherever the
README says so, and elsewhere shorter than XTree (issue 37).

README, "Schedules": ``stored`` holds CP-SAT schedules for 2x3, 3x4, 2x5, 2x7, XTree-with-repair ones for
3x5, 3x6, 4x5 and mirrors serving 4x7 and 5x6, and partial ring pipelines for 2 x odd from 9 on
(2x9 17 steps, 2x11 21, 2x13 25, 2x15 29, 2x17 33), all at the bound; "where nothing reaches the bound,
the best known when it beats XTree". Every record is a K = 4 AllGather; its bound is N - 1 (K (N - 1) /
in-degree 4, the diameter term never deciding: see ``headline_sweep.py``), derived here, not by
``lower_bound``.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from headline_sweep import bound

from equimesh.schedules.methods.xtree import xtree
from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.storage import check_storage
from equimesh.schedules.topology import build, parse_ring_dirs
from equimesh.schedules.verify import verify

LIBRARY = Path(__file__).parents[1] / "schedules" / "data" / "lane_schedules.json"
RECORDS = json.loads(LIBRARY.read_text())["schedules"]
# Written from the README: the sizes whose stored schedule is at the bound (6x5 is the transpose 5x6).
AT_BOUND = {
    (2, 3),
    (3, 4),
    (2, 5),
    (2, 7),
    (3, 5),
    (3, 6),
    (4, 5),
    (4, 7),
    (5, 6),
    (6, 5),
    (2, 9),
    (2, 11),
    (2, 13),
    (2, 15),
    (2, 17),
}


def _size(key):
    r, c = key.split()[1].split("x")
    return int(r), int(c)


def test_every_size_the_readme_names_is_stored():
    stored = {_size(rec["key"]) for rec in RECORDS}
    assert {
        (2, 3),
        (3, 4),
        (2, 5),
        (2, 7),
        (3, 5),
        (3, 6),
        (4, 5),
        (4, 7),
        (2, 9),
        (2, 11),
        (2, 13),
        (2, 15),
        (2, 17),
    } <= stored and stored & {(5, 6), (6, 5)}


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r["key"])
def test_stored_schedule(rec):
    kind, size, dirs = rec["key"].split()
    rows, cols = _size(rec["key"])
    t = build(kind, rows, cols, parse_ring_dirs(dirs))
    s = Schedule(
        "allgather",
        "stored",
        4,
        t,
        [Phase("allgather", [np.array(st, dtype=np.int64).reshape(-1, 3) for st in rec["steps"]])],
    )
    verify(s)
    check_storage(s)
    if (rows, cols) in AT_BOUND:
        assert s.num_steps == bound(t, 4, "allgather") == rows * cols - 1
    else:
        assert s.num_steps < xtree(t, 4, lanes=True).num_steps
