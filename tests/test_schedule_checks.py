"""The verifier's range check and the schedule file's load checks: each bad input is one line.

Every case starts from a hand-made valid 2x2 mesh schedule (tests/test_verify.py's) and breaks
one thing, so the rejection can only come from the check the test names.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from test_verify import T, ag, good_ag_steps, good_rs_steps

from equimesh.schedules.schedule import Phase, Schedule, ScheduleFileError, from_dict, load
from equimesh.schedules.verify import ScheduleInvalid, verify

# ----- the verifier's range check (in-memory schedules skip the file loader's checks) -----


@pytest.mark.parametrize(
    "column,value,msg",
    [
        (0, -1, "link -1 is out of range \\(0..7\\)"),  # a negative id would index the last link
        (0, 8, "link 8 is out of range \\(0..7\\)"),
        (1, -4, "root -4 is out of range \\(0..3\\)"),  # -4 would wrap around to node 0
        (1, 4, "root 4 is out of range \\(0..3\\)"),
        (2, 1, "chunk 1 is out of range \\(0..0\\)"),
        (2, -1, "chunk -1 is out of range \\(0..0\\)"),
    ],
)
@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_verify_rejects_out_of_range_ids(collective, column, value, msg):
    steps = [np.array(s, dtype=np.int64) for s in (good_ag_steps() if collective == "allgather" else good_rs_steps())]
    steps[1][0, column] = value
    with pytest.raises(ScheduleInvalid, match=f"step 1, .*: {msg}"):
        verify(Schedule(collective, "hand", 1, T, [Phase(collective, steps)]))


def test_negative_link_id_is_not_the_last_link():
    # The 2x2 mesh's last link id is 7: -1 means that link to numpy, and the schedule would pass.
    s0, s1 = good_ag_steps()
    i = next(j for j, t in enumerate(s1) if t[0] == len(T.links) - 1)
    s1 = [list(t) for t in s1]
    s1[i][0] = -1
    with pytest.raises(ScheduleInvalid, match="link -1 is out of range"):
        verify(ag(s0, s1))


# ----- load checks ---------------------------------------------------------------------


def good_file() -> dict:
    return json.loads(ag(*good_ag_steps()).dumps())


def good_allreduce_file() -> dict:
    r0, r1 = good_rs_steps()
    s0, s1 = good_ag_steps()
    sched = Schedule(
        "allreduce",
        "hand",
        1,
        T,
        [Phase("reducescatter", [np.array(r0), np.array(r1)]), Phase("allgather", [np.array(s0), np.array(s1)])],
    )
    return json.loads(sched.dumps())


def _set(d, path, value):
    *head, last = path
    for k in head:
        d = d[k]
    if value is _DELETE:
        del d[last]
    else:
        d[last] = value
    return d


_DELETE = object()

CASES = [  # (id, base, path into the file, new value, one-line message)
    ("root-too-big", good_file, ("steps", 0, 0, 1), 4, "root 4 is not a node \\(0..3\\)"),
    ("root-negative", good_file, ("steps", 1, 0, 1), -1, "root -1 is not a node"),
    ("chunk-too-big", good_file, ("steps", 0, 0, 2), 1, "chunk 1 is out of range \\(0..0\\)"),
    ("chunk-negative", good_file, ("steps", 0, 0, 2), -1, "chunk -1 is out of range"),
    ("link-negative", good_file, ("steps", 0, 0, 0), -1, "link -1 does not exist"),
    ("version-3", good_file, ("version",), 3, "unsupported version 3"),
    ("version-string", good_file, ("version",), "1", "unsupported version '1'"),
    ("version-missing", good_file, ("version",), _DELETE, "unsupported version None"),
    ("missing-chunks", good_file, ("chunks",), _DELETE, "missing key 'chunks'"),
    ("missing-collective", good_file, ("collective",), _DELETE, "missing key 'collective'"),
    ("missing-steps", good_file, ("steps",), _DELETE, "missing key 'steps'"),
    ("missing-topology-links", good_file, ("topology", "links"), _DELETE, "topology is missing key 'links'"),
    ("unknown-collective", good_file, ("collective",), "broadcast", "unknown collective 'broadcast'"),
    ("allreduce-no-phases", good_allreduce_file, ("phases",), _DELETE, "needs 'phases'"),
    ("allreduce-empty-phases", good_allreduce_file, ("phases",), [], "needs 'phases'"),
    ("nodes-mismatch", good_file, ("topology", "nodes"), 5, "nodes=5 but rows x cols = 2x2"),
    (
        "link-short",
        good_file,
        ("topology", "links", 0),
        [0, 1, "E"],
        "links must be \\[src, dst, src_port, dst_port\\]",
    ),
    ("link-not-list", good_file, ("topology", "links", 0), 7, "links must be \\[src, dst, src_port, dst_port\\]"),
    ("link-bad-node", good_file, ("topology", "links", 0), [0, 9, "E", "W"], "link 0 \\[0, 9\\] does not join"),
    ("link-self-loop", good_file, ("topology", "links", 0), [1, 1, "E", "W"], "link 0 \\[1, 1\\] does not join"),
    ("link-not-int", good_file, ("topology", "links", 0), ["a", 1, "E", "W"], "links must be \\[src, dst"),
]


@pytest.mark.parametrize("base,path,value,msg", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_load_rejects_with_one_line(tmp_path, base, path, value, msg):
    d = base()
    _set(d, path, value)
    with pytest.raises(ScheduleFileError, match=msg) as e:
        from_dict(d, "s.json")
    assert "\n" not in str(e.value)
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ScheduleFileError, match=msg):
        load(p)


def test_allreduce_phases_in_wrong_order():
    d = good_allreduce_file()
    d["phases"].reverse()
    with pytest.raises(ScheduleFileError, match="phase 0 must be 'reducescatter'"):
        from_dict(d)
    d = good_allreduce_file()
    d["phases"][1]["collective"] = "reducescatter"
    with pytest.raises(ScheduleFileError, match="phase 1 must be 'allgather'"):
        from_dict(d)


def test_good_files_load_and_verify():
    # The bases of the cases above are valid: each rejection comes from the one change.
    for base in (good_file, good_allreduce_file):
        verify(from_dict(base()))


def test_cli_verify_reports_a_load_check_in_one_line(tmp_path):
    d = good_file()
    d["steps"][0][0][1] = 4
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    r = subprocess.run([sys.executable, "-m", "equimesh.cli", "verify", str(p)], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "root 4 is not a node" in r.stderr
    assert "Traceback" not in r.stderr
