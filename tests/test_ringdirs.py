"""Default ring directions per size (schedules/data/ring_dirs.json): the stored choice is really shorter
than cccc, every command's default topology takes it, and an explicit choice still wins."""

import json

import pytest

from equimesh.cli import main
from equimesh.cli import main as cli
from equimesh.schedules.search import ringdirs
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import _size_ring_dirs, build, default_ring_dirs, format_ring_dirs, parse_ring_dirs

TABLE = _size_ring_dirs()


def _nodes(key: str) -> int:
    r, c = map(int, key.split("x"))
    return r * c


SMALL = sorted((k for k in TABLE if _nodes(k) <= 40), key=_nodes)


def test_the_table_only_holds_sizes_without_a_known_decomposition():
    assert TABLE, "no size with a better choice than cccc is stored"
    for key in TABLE:
        r, c = map(int, key.split("x"))
        assert ringdirs.needs_search(r, c), key
    assert format_ring_dirs(default_ring_dirs(8, 8)) == "cccc"
    assert format_ring_dirs(default_ring_dirs(2, 3)) == "cccc"  # stored schedule at the bound with cccc


@pytest.mark.parametrize("key", SMALL[:3])
def test_a_stored_choice_gives_a_shorter_allgather_than_cccc(key):
    r, c = map(int, key.split("x"))
    steps = {
        d: synthesize(build("equimesh", r, c, ring_dirs=parse_ring_dirs(d)), 4, "allgather").num_steps
        for d in ("cccc", TABLE[key])
    }
    assert steps[TABLE[key]] < steps["cccc"]
    assert build("equimesh", r, c).ring_dirs == parse_ring_dirs(TABLE[key])  # the default
    assert build("mirror-equimesh", r, c).ring_dirs == parse_ring_dirs(TABLE[key])  # its mirror's rings reversed


def test_the_cli_default_and_an_explicit_choice(capsys):
    key = SMALL[0]
    r, c = key.split("x")
    runs = {}
    for extra in ([], ["--ring-dirs", "cccc"]):
        assert main(["schedule", "--rows", r, "--cols", c, "--chunks", "4", "--json", *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        runs[out["ring_dirs"]] = out["steps"]
    assert set(runs) == {TABLE[key], "cccc"} and runs[TABLE[key]] < runs["cccc"]


def test_refreshing_some_sizes_keeps_the_others(tmp_path):
    # a wrong entry for 2x3 (cccc reaches the bound there: 5 steps, the paper's example) is dropped;
    # every other size's entry stays as it was
    out = tmp_path / "ring_dirs.json"
    data = json.loads(ringdirs.RING_DIRS_TABLE.read_text())
    data["best"]["2x3"], data["steps"]["2x3"] = "aaaa", [6, 5]
    out.write_text(json.dumps(data))
    cli(["search", "ringdirs", "--sizes", "2x3", "--out", str(out)])
    after = json.loads(out.read_text())
    assert "2x3" not in after["best"] and "2x3" not in after["steps"]
    assert after["best"] == TABLE
