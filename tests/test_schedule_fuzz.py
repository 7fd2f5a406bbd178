"""Fuzzed schedule files (issue 37): valid small files corrupted at random -- a transfer dropped,
duplicated, moved to another step, its link, root, chunk or op changed, or a header field changed.
Every corrupted file is either rejected in one line (the loader's :class:`ScheduleFileError` or the
verifier's :class:`ScheduleInvalid`) or valid under :func:`replay`, a brute-force step-by-step replay
written here from the format's definition. A file whose header is intact and which the replay finds
valid must be accepted (no false rejection).

The bulk runs through the Python API (``from_dict`` and ``verify``: what ``equimesh verify`` runs);
one test checks that the command gives the same verdict, in one line and exit 1.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from equimesh.cli import main
from equimesh.schedules.schedule import ScheduleFileError, from_dict
from equimesh.schedules.synth import overlap, synthesize
from equimesh.schedules.topology import build
from equimesh.schedules.verify import ScheduleInvalid, verify

EXAMPLES = 1000


# ----- the replay: the format's definition, transfer by transfer -------------------------------------
def _int(v, lo, hi):
    return type(v) is int and lo <= v < hi


def _transfers(steps, n_links, n, k, typed=False):
    """[(step, link, root, chunk[, op])], or None if a transfer is not well-formed or out of range."""
    if not isinstance(steps, list):
        return None
    out = []
    for s, step in enumerate(steps):
        if not isinstance(step, list):
            return None
        for t in step:
            if not isinstance(t, list) or len(t) != (4 if typed else 3):
                return None
            if not (_int(t[0], 0, n_links) and _int(t[1], 0, n) and _int(t[2], 0, k)):
                return None
            if typed and t[3] not in ("r", "g"):
                return None
            out.append((s, *t))
    return out


def _one_per_link(transfers):
    seen = set()
    for s, link, *_ in transfers:
        if (s, link) in seen:
            return False
        seen.add((s, link))
    return True


def _allgather_ok(transfers, links, n, k, held_after=None):
    """Every (root, chunk) reaches every other node exactly once; a sender holds it before the step.
    ``held_after[root, chunk]``: the step after which the root holds its chunk (-1: from the start)."""
    if not _one_per_link(transfers):
        return False
    arrived = {}  # (node, root, chunk) -> step
    for v in range(n):
        for c in range(k):
            arrived[v, v, c] = -1 if held_after is None else held_after[v, c]
    for s, link, root, chunk, *_ in transfers:
        dst = links[link][1]
        if (dst, root, chunk) in arrived:  # the root itself, or a second arrival
            return False
        arrived[dst, root, chunk] = s
    for s, link, root, chunk, *_ in transfers:
        if arrived.get((links[link][0], root, chunk), s) >= s:
            return False
    return len(arrived) == n * n * k


def _reducescatter_ok(transfers, links, n, k):
    """Every node but the root sends each (root, chunk) exactly once, strictly after every partial it
    receives for it has arrived; the root sends none."""
    if not _one_per_link(transfers):
        return False
    sent = {}
    for s, link, root, chunk, *_ in transfers:
        src = links[link][0]
        if src == root or (src, root, chunk) in sent:
            return False
        sent[src, root, chunk] = s
    if len(sent) != (n - 1) * n * k:
        return False
    for s, link, root, chunk, *_ in transfers:
        dst = links[link][1]
        if dst != root and sent[dst, root, chunk] <= s:
            return False
    return True


def replay(d) -> bool:
    """Is ``d`` a valid schedule file by the format's definition (docs/schedules.md, seed 000 Section III)?"""
    try:
        t = d["topology"]
        n, k, coll, version = t["rows"] * t["cols"], d["chunks"], d["collective"], d["version"]
        links = [tuple(l) for l in t["links"]]
        if (
            d["format"] != "equimesh-schedule"
            or version not in (1, 2)
            or type(k) is not int
            or k < 1
            or t["nodes"] != n
            or type(t["rows"]) is not int
            or type(t["cols"]) is not int
        ):
            return False
        if links != [
            tuple(l.as_list()) for l in build(t["kind"], t["rows"], t["cols"], _dirs(t.get("ring_dirs"))).links
        ]:
            return False
        if t["kind"] not in ("equimesh", "mirror-equimesh") and "ring_dirs" in t:
            return False
    except Exception:  # noqa: BLE001 -- a header that is not even readable
        return False
    nl = len(links)
    if coll == "allreduce" and version == 2 and "phases" not in d:
        tr = _transfers(d.get("steps"), nl, n, k, typed=True)
        if tr is None or not _one_per_link(tr):
            return False
        red = [x for x in tr if x[4] == "r"]
        gat = [x for x in tr if x[4] == "g"]
        if not _reducescatter_ok(red, links, n, k):
            return False
        complete = {(v, c): -1 for v in range(n) for c in range(k)}
        for s, link, root, chunk, _ in red:
            if links[link][1] == root:
                complete[root, chunk] = max(complete[root, chunk], s)
        return _allgather_ok(gat, links, n, k, complete)
    if coll == "allreduce":
        ph = d.get("phases")
        if "steps" in d or not (isinstance(ph, list) and len(ph) == 2 and all(isinstance(p, dict) for p in ph)):
            return False
        if [p.get("collective") for p in ph] != ["reducescatter", "allgather"]:
            return False
        rs, ag = (_transfers(p.get("steps"), nl, n, k) for p in ph)
        return (
            rs is not None and ag is not None and _reducescatter_ok(rs, links, n, k) and _allgather_ok(ag, links, n, k)
        )
    if coll not in ("allgather", "reducescatter"):
        return False
    tr = _transfers(d.get("steps"), nl, n, k)
    if tr is None:
        return False
    return _allgather_ok(tr, links, n, k) if coll == "allgather" else _reducescatter_ok(tr, links, n, k)


def _dirs(text):
    if text is None:
        return None
    return {e: ch == "a" for e, ch in zip(("top", "bottom", "left", "right"), text)}


# ----- the valid files and their corruption ----------------------------------------------------------
def _base(form):
    t = build("equimesh", 2, 3)
    if form == "overlapped":
        s = overlap(t, 2)
    else:
        s = synthesize(t, 2, form, "xtree" if form == "allgather" else "mirrorxtree", lanes=False)
    return json.loads(s.dumps())


FORMS = ("allgather", "reducescatter", "allreduce", "overlapped")
BASES = {f: _base(f) for f in FORMS}


def _step_lists(d):
    return [p["steps"] for p in d["phases"]] if "phases" in d else [d["steps"]]


HEADER = [
    ("chunks", st.integers(-1, 4)),
    ("version", st.sampled_from([0, 1, 2, 3, "1"])),
    ("collective", st.sampled_from(["allgather", "reducescatter", "allreduce", "broadcast"])),
    ("format", st.sampled_from(["equimesh-schedule", "other"])),
]
TOPO = [
    ("kind", st.sampled_from(["mesh", "equimesh", "mirror-equimesh", "torus", "overflow"])),
    ("rows", st.integers(1, 4)),
    ("cols", st.integers(1, 4)),
    ("nodes", st.integers(4, 8)),
    ("ring_dirs", st.sampled_from(["cccc", "accc", "aaaa", "cacc", "xyz"])),
]


@st.composite
def corrupted(draw, form):
    d = copy.deepcopy(BASES[form])
    lists = _step_lists(d)
    what = draw(
        st.sampled_from(["drop", "duplicate", "move", "link", "root", "chunk", "op", "header", "topology", "port"])
    )
    header = what in ("header", "topology", "port")
    if what == "header":
        key, values = draw(st.sampled_from(HEADER))
        d[key] = draw(values)
    elif what == "topology":
        key, values = draw(st.sampled_from(TOPO))
        d["topology"][key] = draw(values)
    elif what == "port":
        i = draw(st.integers(0, len(d["topology"]["links"]) - 1))
        j = draw(st.integers(0, 3))
        d["topology"]["links"][i][j] = draw(st.sampled_from([0, 1, 5, "N", "E", "S", "W"]))
    else:
        steps = draw(st.sampled_from([s for s in lists if any(s)]))
        s = draw(st.sampled_from([i for i, x in enumerate(steps) if x]))
        i = draw(st.integers(0, len(steps[s]) - 1))
        tr = steps[s][i]
        if what == "drop":
            del steps[s][i]
        elif what == "duplicate":
            steps[draw(st.integers(0, len(steps) - 1))].append(list(tr))
        elif what == "move":
            del steps[s][i]
            to = s + draw(st.sampled_from([-2, -1, 1, 2]))
            if to < 0:
                to = 0
            while len(steps) <= to:
                steps.append([])
            steps[to].append(tr)
        elif what == "op" and len(tr) == 4:
            tr[3] = draw(st.sampled_from(["r", "g", "x", 1]))
        else:
            col = {"link": 0, "root": 1, "chunk": 2}.get(what, 2)
            tr[col] = draw(st.one_of(st.integers(-1, 30), st.sampled_from([True, 1.0, "1", None])))
    return d, header


def _outcome(d):
    """None if accepted, else the one-line message."""
    try:
        verify(from_dict(d, "fuzz.json"))
    except (ScheduleFileError, ScheduleInvalid) as e:
        assert "\n" not in str(e)
        return str(e)
    return None


@pytest.mark.parametrize("form", FORMS)
def test_the_bases_are_valid(form):
    assert replay(BASES[form]) and _outcome(BASES[form]) is None


@pytest.mark.parametrize("form", FORMS)
def test_corrupted_files_are_rejected_or_valid(form):
    @settings(
        max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(corrupted(form))
    def check(case):
        d, header = case
        message = _outcome(d)
        valid = replay(d)
        if message is None:
            assert valid, "accepted, but the replay finds it invalid"
        elif not header:
            assert not valid, f"the replay finds it valid, but it was rejected: {message}"

    check()


def test_the_command_agrees(tmp_path, capsys):
    """A dropped transfer through ``equimesh verify``: one line, exit 1."""
    d = copy.deepcopy(BASES["allgather"])
    del d["steps"][-1][0]
    p = tmp_path / "s.json"
    p.write_text(json.dumps(d))
    assert not replay(d)
    assert main(["verify", str(p)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "never receives" in err, err
