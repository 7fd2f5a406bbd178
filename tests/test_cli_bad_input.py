"""Bad input to ``verilog``, ``compare``, ``soak``, ``report`` and ``demo``, and files the user may not
read or write: one line on stderr, a non-zero exit (2 usage, 1 input), never a traceback.

Every case here is rejected before any simulation or synthesis starts, so the file runs in seconds.
"""

import errno
import pathlib

import pytest

from equimesh.cli import main
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build


def _one_line(capsys, argv, code, text):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert text in err, err


@pytest.fixture
def not_a_dir(tmp_path):
    """A path below a regular file: no directory can be made there (whoever runs the test)."""
    f = tmp_path / "file"
    f.write_text("")
    return str(f / "out")


SMALL = ["--rows", "2", "--cols", "3", "--chunks", "1"]


@pytest.mark.parametrize(
    "argv,code,text",
    [
        (["verilog", "--rows", "1", "--out", "x"], 2, "--rows: must be 2..64 (got 1)"),
        (["verilog", "--chunks", "0", "--out", "x"], 2, "--chunks: must be 1..16777216 (got 0)"),
        (["verilog", "--chunk-flits", "0", "--out", "x"], 2, "--chunk-flits: must be 1..65536 (got 0)"),
        (["verilog", "--kind", "ring", "--out", "x"], 2, "unknown topology kind"),
        (["verilog", "--rows", "2", "--cols", "3"], 2, "--out"),
        (
            ["verilog", *SMALL, "--packets", "--payload-flits", "0", "--out", "x"],
            2,
            "--payload-flits: must be 1..4096 (got 0)",
        ),
        (["compare", "--rows", "1"], 2, "--rows: must be 2..64 (got 1)"),
        (["compare", "--chunks", "0"], 2, "--chunks: must be 1..16777216 (got 0)"),
        (["compare", "--chunk-flits", "0"], 2, "--chunk-flits: must be 1..65536 (got 0)"),
        (["compare", "--collective", "broadcast"], 2, "invalid choice"),
        (["soak", "--cycles", "0"], 2, "--cycles must be 1..2147483648"),
        (["soak", "--cycles", str(2**31 + 1)], 2, "--cycles must be 1..2147483648"),
        (["soak", "--stall", "0.00001"], 2, "below the sinks' resolution of 2**-16"),
        (["soak", "--stall", "1.5"], 2, "--stall must be in [0, 1)"),
        (["soak", *SMALL[:4], "--fanout", "9"], 2, "--fanout must be 1..5"),
        (["soak", "--rows", "1"], 2, "--rows: must be 2..64 (got 1)"),
        (["soak", "--backend", "modelsim"], 2, "invalid choice"),
        (["simulate", *SMALL, "--pipeline", "3"], 2, "--pipeline: invalid choice: 3"),
        (["verilog", *SMALL, "--pipeline", "-1", "--out", "x"], 2, "--pipeline: invalid choice: -1"),
        (["report"], 2, "--out"),
        (["demo", "--rows", "1"], 2, "--rows: must be 2..64 (got 1)"),
        (["demo", "--chunks", "0"], 2, "--chunks: must be 1..16777216 (got 0)"),
        # The upper limits: a huge size or count is refused before it can exhaust memory or time.
        (["topology", "--rows", "100000"], 2, "--rows: must be 2..64 (got 100000)"),
        (["schedule", "--cols", "65"], 2, "--cols: must be 2..64 (got 65)"),
        (["schedule", "--chunks", str(10**12)], 2, "--chunks: must be 1..16777216"),
        (["simulate", "--chunk-flits", str(10**12)], 2, "--chunk-flits: must be 1..65536"),
        (["soak", "--payload-flits", "4097"], 2, "--payload-flits: must be 1..4096 (got 4097)"),
        (["compare", "--chunks", "four"], 2, "--chunks: invalid int value: 'four'"),
    ],
)
def test_usage_errors(capsys, argv, code, text):
    _one_line(capsys, argv, code, text)


def test_verilog_missing_and_foreign_schedule(capsys, tmp_path):
    _one_line(
        capsys,
        ["verilog", *SMALL, "--schedule", str(tmp_path / "none.json"), "--out", str(tmp_path)],
        1,
        "no such file",
    )
    path = tmp_path / "s.json"
    synthesize(build("equimesh", 2, 3), 1, "allgather").save(path)
    _one_line(
        capsys,
        ["verilog", "--rows", "3", "--cols", "3", "--schedule", str(path), "--out", str(tmp_path)],
        1,
        "2x3 equimesh",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["verilog", *SMALL, "--out"],
        ["compare", *SMALL, "--chunk-flits", "1", "--out"],
        ["demo", *SMALL, "--out"],
        ["report", "--out"],
        [
            "soak",
            "--kind",
            "mesh",
            "--rows",
            "2",
            "--cols",
            "2",
            "--fanout",
            "3",
            "--cycles",
            "10",
            "--backend",
            "icarus",
            "--build-dir",
        ],
        ["fpga", *SMALL, "--out"],  # refused before the place and route, not after it
    ],
)
def test_output_directory_that_cannot_be_made(capsys, not_a_dir, argv):
    _one_line(capsys, argv + [not_a_dir], 1, f"cannot write {not_a_dir}" if argv[0] != "report" else "cannot write")


def test_soak_without_the_simulator(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _one_line(
        capsys,
        [
            "soak",
            "--kind",
            "mesh",
            "--rows",
            "2",
            "--cols",
            "2",
            "--fanout",
            "3",
            "--cycles",
            "10",
            "--backend",
            "icarus",
        ],
        2,
        "apt-get install iverilog",
    )


# ----- permission denied -----------------------------------------------------------------
# The tests run as root on some machines, where chmod does not deny anything, so the OS's
# PermissionError is raised for the one path under test by a patched read_text / write_text.


def _deny(monkeypatch, method, victim):
    real = getattr(pathlib.Path, method)

    def denied(self, *a, **kw):
        if pathlib.Path(self) == pathlib.Path(victim):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *a, **kw)

    monkeypatch.setattr(pathlib.Path, method, denied)


def test_unreadable_schedule_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    synthesize(build("equimesh", 2, 3), 1, "allgather").save(path)
    _deny(monkeypatch, "read_text", path)
    _one_line(capsys, ["verify", str(path)], 1, "cannot read: Permission denied")
    _one_line(capsys, ["simulate", *SMALL, "--schedule", str(path)], 1, "cannot read: Permission denied")
    _one_line(
        capsys,
        ["verilog", *SMALL, "--schedule", str(path), "--out", str(tmp_path / "v")],
        1,
        "cannot read: Permission denied",
    )


def test_unreadable_routing_table(capsys, tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    assert main(["routing", "--kind", "mesh", "--rows", "2", "--cols", "2", "--out", str(path)]) == 0
    capsys.readouterr()
    _deny(monkeypatch, "read_text", path)
    _one_line(
        capsys,
        ["routing", "--kind", "mesh", "--rows", "2", "--cols", "2", "--routing", str(path)],
        1,
        "Permission denied",
    )


def test_unwritable_schedule_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    _deny(monkeypatch, "write_text", path)
    _one_line(capsys, ["schedule", *SMALL, "--out", str(path)], 1, f"cannot write {path}: Permission denied")


def _mutated(tmp_path, name, edit, argv_kind=("schedule", "--rows", "2", "--cols", "3", "--chunks", "2")):
    """A valid schedule file, loaded as JSON, changed by ``edit`` and written back as ``name``."""
    import json

    good = tmp_path / "good.json"
    assert main([*argv_kind, "--out", str(good)]) == 0
    d = json.loads(good.read_text())
    edit(d)
    path = tmp_path / name
    path.write_text(json.dumps(d))
    return str(path)


def _set_first_transfer(value):
    def edit(d):
        d["steps"][0][0] = value

    return edit


@pytest.mark.parametrize(
    "edit,text",
    [
        (_set_first_transfer([10**30, 0, 0]), "integer triples"),  # OverflowError before
        (_set_first_transfer([0.0, 0, 0]), "integer triples"),  # was read as link 0
        (_set_first_transfer([True, 0, 0]), "integer triples"),  # was read as link 1
        (_set_first_transfer(["0", 0, 0]), "integer triples"),
        (lambda d: d.update(chunks=10**30), "'chunks' must be an integer 1..16777216"),
        (lambda d: d["topology"].update(rows=2.0), "topology 'rows' must be an integer"),
        (lambda d: d["topology"].update(kind="foo"), "unknown topology kind 'foo'"),
        (lambda d: d["topology"].update(rows=10**12, nodes=3 * 10**12), "topology rows and cols must be 1..64"),
    ],
)
def test_malformed_schedule_values_are_one_line(capsys, tmp_path, edit, text):
    path = _mutated(tmp_path, "bad.json", edit)
    capsys.readouterr()
    _one_line(capsys, ["verify", path], 1, text)


def test_json_the_parser_cannot_take_is_one_line(capsys, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    long = tmp_path / "long.json"
    long.write_text('{"chunks": ' + "9" * 5000 + "}")
    notutf8 = tmp_path / "bytes.json"
    notutf8.write_bytes(b"\xff\xfe{}")
    for f in (deep, long):
        _one_line(capsys, ["verify", str(f)], 1, "not valid JSON")
        _one_line(capsys, ["routing", "--rows", "2", "--cols", "3", "--routing", str(f)], 1, "not valid JSON")
    for argv in (["verify"], ["routing", "--rows", "2", "--cols", "3", "--routing"], ["llm", "--models-file"]):
        _one_line(capsys, [*argv, str(notutf8)], 1, "bytes.json: cannot read: 'utf-8' codec can't decode")
    _one_line(capsys, ["compare", "--rows", "2", "--cols", "3", "--fmax-from", str(deep)], 1, "not valid JSON")
    _one_line(capsys, ["llm", "--models-file", str(long)], 1, "not valid JSON")  # a traceback before


def test_fmax_file_with_a_zero_clock_is_one_line(capsys, tmp_path):
    import json

    f = tmp_path / "fmax.json"
    f.write_text(
        json.dumps(
            {
                "kind": "equimesh",
                "rows": 2,
                "cols": 3,
                "chunk_flits": 8,
                "flit_bits": 64,
                "pipeline": 2,
                "routers": [{"name": "router_5port", "fmax_mhz": 0}],
            }
        )
    )
    _one_line(
        capsys,
        ["compare", "--rows", "2", "--cols", "3", "--kinds", "equimesh", "--fmax-from", str(f)],
        1,
        "fmax_mhz must be a positive number of MHz (got 0)",
    )


@pytest.mark.parametrize(
    "argv,text",
    [
        (["compare", "--clock-mhz", "nan"], "--clock-mhz must be > 0"),
        (["schedule", "--rows", "2", "--cols", "3", "--time-limit", "nan"], "--time-limit must be > 0"),
        (["soak", "--rows", "2", "--cols", "3", "--payload-flits", "0"], "--payload-flits: must be 1..4096 (got 0)"),
        (["evaluate", "--rows", "2", "--cols", "3", "--sizes", ""], "--sizes has an empty item (got '')"),
        (["evaluate", "--rows", "2", "--cols", "3", "--algorithms", ","], "--algorithms has an empty item (got ',')"),
        # Comma lists: an empty item is refused, not dropped; a bad number is one line (tracebacks before).
        (["evaluate", "--rows", "2", "--cols", "3", "--sizes", "1MB,,4MB"], "--sizes has an empty item"),
        (["bench", "schedules", "--chunks", "x"], "--chunks: invalid int value: 'x'"),
        (["bench", "optimal", "--chunks", "1,x"], "--chunks: invalid int value: 'x'"),
        (["bench", "schedules", "--sizes", "4x4,,8x8"], "--sizes has an empty item (got '4x4,,8x8')"),
        (
            ["bench", "schedules", "--sizes", "65x2"],
            "--sizes entries look like RxC with sides 2..64, e.g. 8x8 (got '65x2')",
        ),
        (["bench", "relay", "--kinds", "mesh,"], "--kinds has an empty item"),
        (["traffic", "--rows", "2", "--cols", "3", "--src", "0", "--dests", "1,,2"], "--dests has an empty item"),
    ],
)
def test_option_values_found_by_fuzzing(capsys, argv, text):
    _one_line(capsys, argv, 2, text)


def test_vcd_naming_a_directory(capsys, tmp_path):
    _one_line(capsys, ["simulate", *SMALL, "--backend", "amaranth", "--vcd", str(tmp_path)], 2, "is a directory")


def test_argparse_errors_name_the_subcommand_once(capsys):
    _one_line(capsys, ["schedule", "--rows", "x"], 2, "equimesh: schedule: argument --rows: invalid int value")
    _one_line(capsys, ["topology", "--foo"], 2, "equimesh: unrecognized arguments: --foo")


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--model", "tiled", "--pipeline", "0"], "the tiled model needs pipeline 1 or 2"),
        (["--threads", "2", "--model", "flat"], "--threads needs the tiled model (this run uses the flat model)"),
        (["--threads", "2", "--backend", "amaranth"], "--model and --threads go with --backend verilator"),
    ],
)
def test_traffic_model_and_threads_that_cannot_run(capsys, tmp_path, extra, message):
    """Refused before anything is built or written (the --vcd file is not created either)."""
    vcd = tmp_path / "w.vcd"
    _one_line(capsys, ["traffic", "--rows", "2", "--cols", "2", "--fanout", "2", *extra], 2, message)
    _one_line(
        capsys,
        ["traffic", "--rows", "2", "--cols", "2", "--fanout", "2", "--model", "tiled", "--vcd", str(vcd)],
        2,
        "writes no waveform",
    )
    assert not vcd.exists()


def test_traffic_source_without_destinations(capsys):
    _one_line(capsys, ["traffic", "--rows", "2", "--cols", "3", "--src", "1"], 2, "--src needs --dests or --bitmap")
