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


@pytest.mark.parametrize("argv,code,text", [
    (["verilog", "--rows", "1", "--out", "x"], 2, "rows and cols must be >= 2"),
    (["verilog", "--chunks", "0", "--out", "x"], 2, "--chunks must be >= 1"),
    (["verilog", "--chunk-flits", "0", "--out", "x"], 2, "--chunk-flits must be >= 1"),
    (["verilog", "--kind", "ring", "--out", "x"], 2, "unknown topology kind"),
    (["verilog", "--rows", "2", "--cols", "3"], 2, "--out"),
    (["verilog", *SMALL, "--packets", "--payload-flits", "0", "--out", "x"], 2, "--payload-flits must be >= 1"),
    (["compare", "--rows", "1"], 2, "rows and cols must be >= 2"),
    (["compare", "--chunks", "0"], 2, "--chunks must be >= 1"),
    (["compare", "--chunk-flits", "0"], 2, "--chunk-flits must be >= 1"),
    (["compare", "--collective", "broadcast"], 2, "invalid choice"),
    (["soak", "--cycles", "0"], 2, "--cycles must be 1..2147483648"),
    (["soak", "--cycles", str(2**31 + 1)], 2, "--cycles must be 1..2147483648"),
    (["soak", "--stall", "0.00001"], 2, "below the sinks' resolution of 2**-16"),
    (["soak", "--stall", "1.5"], 2, "--stall must be in [0, 1)"),
    (["soak", *SMALL[:4], "--fanout", "9"], 2, "--fanout must be 1..5"),
    (["soak", "--rows", "1"], 2, "rows and cols must be >= 2"),
    (["soak", "--backend", "modelsim"], 2, "invalid choice"),
    (["simulate", *SMALL, "--pipeline", "3"], 2, "--pipeline: invalid choice: 3"),
    (["verilog", *SMALL, "--pipeline", "-1", "--out", "x"], 2, "--pipeline: invalid choice: -1"),
    (["report"], 2, "--out"),
    (["demo", "--rows", "1"], 2, "rows and cols must be >= 2"),
    (["demo", "--chunks", "0"], 2, "--chunks must be >= 1"),
])
def test_usage_errors(capsys, argv, code, text):
    _one_line(capsys, argv, code, text)


def test_verilog_missing_and_foreign_schedule(capsys, tmp_path):
    _one_line(capsys, ["verilog", *SMALL, "--schedule", str(tmp_path / "none.json"), "--out", str(tmp_path)], 1,
              "no such file")
    path = tmp_path / "s.json"
    synthesize(build("equimesh", 2, 3), 1, "allgather").save(path)
    _one_line(capsys, ["verilog", "--rows", "3", "--cols", "3", "--schedule", str(path), "--out", str(tmp_path)], 1,
              "2x3 equimesh")


@pytest.mark.parametrize("argv", [
    ["verilog", *SMALL, "--out"],
    ["compare", *SMALL, "--chunk-flits", "1", "--out"],
    ["demo", *SMALL, "--out"],
    ["report", "--out"],
    ["soak", "--kind", "mesh", "--rows", "2", "--cols", "2", "--fanout", "3", "--cycles", "10",
     "--backend", "icarus", "--build-dir"],
])
def test_output_directory_that_cannot_be_made(capsys, not_a_dir, argv):
    _one_line(capsys, argv + [not_a_dir], 1, f"cannot write {not_a_dir}" if argv[0] != "report" else "cannot write")


def test_soak_without_the_simulator(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    _one_line(capsys, ["soak", "--kind", "mesh", "--rows", "2", "--cols", "2", "--fanout", "3", "--cycles", "10",
                       "--backend", "icarus"], 2, "apt-get install iverilog")


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
    _one_line(capsys, ["verilog", *SMALL, "--schedule", str(path), "--out", str(tmp_path / "v")], 1,
              "cannot read: Permission denied")


def test_unreadable_routing_table(capsys, tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    assert main(["routing", "--kind", "mesh", "--rows", "2", "--cols", "2", "--out", str(path)]) == 0
    capsys.readouterr()
    _deny(monkeypatch, "read_text", path)
    _one_line(capsys, ["routing", "--kind", "mesh", "--rows", "2", "--cols", "2", "--routing", str(path)], 1,
              "Permission denied")


def test_unwritable_schedule_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "s.json"
    _deny(monkeypatch, "write_text", path)
    _one_line(capsys, ["schedule", *SMALL, "--out", str(path)], 1, f"cannot write {path}: Permission denied")
