"""The time column of ``equimesh compare`` (issue 15): cycles / the slowest router's Fmax, read from the
JSON of ``equimesh fpga --json``, and the one-line refusals of files for other designs. Pure Python:
hand-written Fmax files and comparison results, hand-computed times."""

import json

import pytest

from equimesh.cli import main
from equimesh.sim.compare import CompareError, add_time, clocks, read_fpga

RESULT = {  # what compare() returns, reduced to the keys the time column reads
    "mesh": {"cycles": 2000, "routers": ["router_3port_ES", "router_4port_ESW", "router_5port"]},
    "equimesh": {"cycles": 1000, "routers": ["router_5port"]},
    "overflow": {"cycles": 1020, "routers": ["router_5port", "router_6port"]},
}


def _fpga(tmp_path, kind, fmax: dict, rows=8, cols=8, chunk_flits=16, flit_bits=64, pipeline=2):
    path = tmp_path / f"{kind}.json"
    path.write_text(
        json.dumps(
            {
                "kind": kind,
                "rows": rows,
                "cols": cols,
                "chunk_flits": chunk_flits,
                "flit_bits": flit_bits,
                "pipeline": pipeline,
                "part": "LFE5U-25F",
                "package": "CABGA381",
                "speed": 6,
                "seeds": 3,
                "routers": [{"name": n, "fmax_mhz": f} for n, f in fmax.items()],
            }
        )
    )
    return path


def test_time_is_cycles_over_the_slowest_router(tmp_path):
    files = [
        _fpga(tmp_path, "mesh", {"router_3port_ES": 120.0, "router_4port_ESW": 110.0, "router_5port": 100.0}),
        _fpga(tmp_path, "equimesh", {"router_5port": 125.0}),
        _fpga(tmp_path, "overflow", {"router_5port": 100.0, "router_6port": 80.0}),
    ]
    res = json.loads(json.dumps(RESULT))
    add_time(res, clocks(read_fpga(files, list(res), 8, 8, 16), res))
    # 2000 cycles at 100 MHz = 20000 ns; 1000 at 125 MHz = 8000 ns; 1020 at 80 MHz = 12750 ns.
    assert [res[k]["clock_mhz"] for k in res] == [100.0, 125.0, 80.0]
    assert [res[k]["time_ns"] for k in res] == [20000.0, 8000.0, 12750.0]
    assert [res[k]["time_vs_equimesh"] for k in res] == [2.5, 1.0, 1.5938]


def test_a_given_clock_and_kinds_without_one(tmp_path):
    res = json.loads(json.dumps(RESULT))
    add_time(res, {"equimesh": 200.0})
    assert res["equimesh"]["time_ns"] == 5000.0 and res["equimesh"]["time_vs_equimesh"] == 1.0
    assert res["mesh"]["time_ns"] is None and res["mesh"]["time_vs_equimesh"] is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"rows": 4, "cols": 4}, "Fmax of a 4x4 equimesh at 16 flits/chunk, 64-bit flits; compared: 8x8"),
        ({"chunk_flits": 8}, "at 8 flits/chunk"),
        ({"flit_bits": 32}, "32-bit flits"),
        ({"pipeline": 0}, "Fmax of routers with pipeline depth 0; the compared ones have 2"),
    ],
)
def test_a_file_for_another_design_is_refused(tmp_path, change, message):
    path = _fpga(tmp_path, "equimesh", {"router_5port": 125.0}, **change)
    with pytest.raises(CompareError, match=message):
        read_fpga([path], ["mesh", "equimesh"], 8, 8, 16)


def test_the_files_pipeline_depth_must_be_the_compared_one(tmp_path):
    path = _fpga(tmp_path, "equimesh", {"router_5port": 160.0}, pipeline=1)
    assert read_fpga([path], ["equimesh"], 8, 8, 16, pipeline=1) == {"equimesh": {"router_5port": 160.0}}
    with pytest.raises(CompareError, match="pipeline depth 1; the compared ones have 2"):
        read_fpga([_fpga(tmp_path, "mesh", {"router_5port": 160.0}, pipeline=1)], ["mesh"], 8, 8, 16, pipeline=2)


def test_refusals_of_kind_routers_and_format(tmp_path):
    with pytest.raises(CompareError, match="Fmax of the torus, which is not compared"):
        read_fpga([_fpga(tmp_path, "torus", {"router_5port": 90.0})], ["mesh", "equimesh"], 8, 8, 16)
    eq = _fpga(tmp_path, "equimesh", {"router_5port": 125.0})
    with pytest.raises(CompareError, match="a second Fmax file for the equimesh"):
        read_fpga([eq, eq], ["equimesh"], 8, 8, 16)
    fmax = read_fpga([_fpga(tmp_path, "overflow", {"router_5port": 100.0})], ["overflow"], 8, 8, 16)
    with pytest.raises(CompareError, match="the Fmax file of the overflow has no router router_6port"):
        clocks(fmax, RESULT)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "mesh"}')
    with pytest.raises(CompareError, match="not the JSON of 'equimesh fpga --json'"):
        read_fpga([bad], ["mesh"], 8, 8, 16)


def test_cli_refuses_before_running_anything(tmp_path, capsys):
    """The files are checked before any simulation: a wrong one costs one line and exit 1 at once."""
    path = _fpga(tmp_path, "equimesh", {"router_5port": 125.0}, rows=4, cols=4)
    code = main(["compare", "--rows", "8", "--cols", "8", "--fmax-from", str(path), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "compared: 8x8" in err[0]
    assert main(["compare", "--clock-mhz", "0"]) == 2
    assert main(["compare", "--fmax-from", str(tmp_path / "none.json"), "--out", str(tmp_path)]) == 1
    assert "none.json: no such file" in capsys.readouterr().err
