"""The verifier rejects a hand-made bad schedule of every kind it checks, and the CLI reports one line."""

import json
import subprocess
import sys

import numpy as np
import pytest

from equimesh.schedules.schedule import Phase, Schedule, ScheduleFileError, load
from equimesh.schedules.storage import StorageConflict, check_storage
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify

# 2x2 mesh: 0-1 / 2-3. Link ids follow the mesh builder: look them up by endpoints.
T = build("mesh", 2, 2)
LINK = {(l.src, l.dst): i for i, l in enumerate(T.links)}


def ag(*steps, chunks=1):
    return Schedule(
        "allgather",
        "hand",
        chunks,
        T,
        [Phase("allgather", [np.array(s, dtype=np.int64).reshape(-1, 3) for s in steps])],
    )


def rs(*steps, chunks=1):
    return Schedule(
        "reducescatter",
        "hand",
        chunks,
        T,
        [Phase("reducescatter", [np.array(s, dtype=np.int64).reshape(-1, 3) for s in steps])],
    )


def good_ag_steps():
    # every node sends its chunk to both neighbours, then the diagonal goes via 1 and 2
    L = LINK
    s0 = [
        [L[0, 1], 0, 0],
        [L[0, 2], 0, 0],
        [L[1, 0], 1, 0],
        [L[1, 3], 1, 0],
        [L[2, 0], 2, 0],
        [L[2, 3], 2, 0],
        [L[3, 1], 3, 0],
        [L[3, 2], 3, 0],
    ]
    s1 = [[L[1, 0], 3, 0], [L[3, 1], 2, 0], [L[3, 2], 1, 0], [L[1, 3], 0, 0]]
    return s0, s1


def test_good_allgather_passes():
    s0, s1 = good_ag_steps()
    verify(ag(s0, s1))


def test_rejects_link_used_twice():
    s0, s1 = good_ag_steps()
    s1 = s1 + [[LINK[1, 3], 2, 0]]
    with pytest.raises(ScheduleInvalid, match="link already carries"):
        verify(ag(s0, s1))


def test_rejects_causality():
    s0, s1 = good_ag_steps()
    # node 1 forwards node 3's chunk in step 0, before it has it
    s0 = [t for t in s0 if t[0] != LINK[1, 0]] + [[LINK[1, 0], 3, 0]]  # node 1 forwards 3 before it has it
    s1 = [t for t in s1 if t[0] != LINK[1, 0]] + [[LINK[1, 0], 1, 0]]
    with pytest.raises(ScheduleInvalid, match="step 0, link .* root 3, chunk 0: sender 1 does not hold"):
        verify(ag(s0, s1))


def test_rejects_duplicate_delivery():
    s0, s1 = good_ag_steps()
    with pytest.raises(ScheduleInvalid, match="second time"):
        verify(ag(s0, s1, [[LINK[1, 0], 3, 0]]))


def test_rejects_missing_delivery():
    s0, s1 = good_ag_steps()
    with pytest.raises(ScheduleInvalid, match="never receives"):
        verify(ag(s0, s1[1:]))


def test_rejects_sending_to_root():
    s0, s1 = good_ag_steps()
    with pytest.raises(ScheduleInvalid, match="is the root"):
        verify(ag(s0, s1, [[LINK[1, 0], 0, 0]]))


def good_rs_steps():
    # reduce to each root along a spanning in-tree: leaves first, then the middle node
    L = LINK
    s0 = [[L[3, 1], 0, 0], [L[2, 3], 1, 0], [L[1, 0], 2, 0], [L[0, 2], 3, 0]]
    s1 = [
        [L[1, 0], 0, 0],
        [L[2, 0], 0, 0],
        [L[3, 1], 1, 0],
        [L[0, 1], 1, 0],
        [L[0, 2], 2, 0],
        [L[3, 2], 2, 0],
        [L[2, 3], 3, 0],
        [L[1, 3], 3, 0],
    ]
    return s0, s1


def test_good_reducescatter_passes():
    verify(rs(*good_rs_steps()))


def test_rejects_reducescatter_sent_before_children():
    s0, s1 = good_rs_steps()
    # child 3's partial of root 0 reaches node 1 in step 2, after node 1 already sent in step 1
    s0b = [t for t in s0 if t != [LINK[3, 1], 0, 0]]
    with pytest.raises(ScheduleInvalid, match="node 1 sends its partial at step 1, before this child"):
        verify(rs(s0b, s1, [[LINK[3, 1], 0, 0]]))


def test_rejects_reducescatter_not_spanning():
    s0, s1 = good_rs_steps()
    with pytest.raises(ScheduleInvalid, match="does not span"):
        verify(rs(s0, s1[1:]))


def test_rejects_reducescatter_root_sends():
    s0, s1 = good_rs_steps()
    with pytest.raises(ScheduleInvalid, match="step 2, link .* root 0, chunk 0: node 0 is the root and must not send"):
        verify(rs(s0, s1, [[LINK[0, 1], 0, 0]]))


def test_rejects_reducescatter_double_send():
    s0, s1 = good_rs_steps()
    with pytest.raises(ScheduleInvalid, match="second time"):
        verify(rs(s0, s1, [[LINK[3, 2], 0, 0]]))


def test_allreduce_checks_both_phases():
    s0, s1 = good_ag_steps()
    r0, r1 = good_rs_steps()
    ok = Schedule(
        "allreduce",
        "hand",
        1,
        T,
        [Phase("reducescatter", [np.array(r0), np.array(r1)]), Phase("allgather", [np.array(s0), np.array(s1)])],
    )
    verify(ok)
    bad = Schedule(
        "allreduce",
        "hand",
        1,
        T,
        [Phase("reducescatter", [np.array(r0), np.array(r1)]), Phase("allgather", [np.array(s0)])],
    )
    with pytest.raises(ScheduleInvalid, match="phase 1"):
        verify(bad)


def test_storage_rejects_two_chunks_from_one_lane():
    # node 0 has two ports (E, S); with K=3 its own chunks 0 and 2 share home lane E (storage.py)
    s = ag([[LINK[0, 1], 0, 0], [LINK[0, 2], 0, 2]], chunks=3)
    with pytest.raises(StorageConflict, match="lane"):
        check_storage(s)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "equimesh.cli", *args], capture_output=True, text=True)


def test_cli_verify_bad_file_one_line(tmp_path):
    s0, s1 = good_ag_steps()
    p = tmp_path / "s.json"
    ag(s0, s1[1:]).save(p)
    r = _run("verify", str(p))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "never receives" in r.stderr and "Traceback" not in r.stderr
    ag(s0, s1).save(p)
    assert _run("verify", str(p)).returncode == 0


@pytest.mark.parametrize(
    "content,msg",
    [
        ("{not json", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"format": "other"}', "format"),
    ],
)
def test_malformed_files(tmp_path, content, msg):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ScheduleFileError, match=msg):
        load(p)
    r = _run("verify", str(p))
    assert r.returncode == 1 and msg in r.stderr and "Traceback" not in r.stderr


def test_self_inconsistent_file(tmp_path):
    s0, s1 = good_ag_steps()
    d = json.loads(ag(s0, s1).dumps())
    d["steps"][0].append([999, 0, 0])
    p = tmp_path / "x.json"
    p.write_text(json.dumps(d))
    r = _run("verify", str(p))
    assert r.returncode == 1 and "link 999 does not exist" in r.stderr
    r = _run("verify", str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "no such file" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["schedule", "--rows", "1"],
        ["schedule", "--chunks", "0"],
        ["schedule", "--kind", "ring"],
        ["schedule", "--algorithm", "bogus"],
        ["topology", "--cols", "1"],
        ["schedule", "--ring-dirs", "xx"],
    ],
)
def test_cli_usage_errors(args):
    r = _run(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_cli_schedule_json_roundtrip(tmp_path):
    out = tmp_path / "ar.json"
    r = _run("schedule", "--rows", "3", "--cols", "3", "--collective", "allreduce", "--json", "--out", str(out))
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert {"steps", "bound", "efficiency", "seconds", "phases"} <= set(d)
    assert _run("verify", str(out)).returncode == 0
