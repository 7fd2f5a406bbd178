"""``equimesh verilog`` writes a FuseSoC CAPI2 core of the generated sources (issue 12, item 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from equimesh.cli import main

NAME = "equimesh:network:equimesh_equimesh_2x3"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("verilog")
    assert (
        main(
            [
                "verilog",
                "--kind",
                "equimesh",
                "--rows",
                "2",
                "--cols",
                "3",
                "--chunks",
                "1",
                "--chunk-flits",
                "2",
                "--out",
                str(out / "v"),
                "--tables-dir",
                str(out / "tables"),
            ]
        )
        == 0
    )
    return out


def fusesoc(*args, cwd):
    (cwd / "fusesoc.conf").write_text("")  # no user configuration or libraries
    return subprocess.run(
        [str(Path(sys.executable).parent / "fusesoc"), "--config", "fusesoc.conf", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def test_fusesoc_accepts_the_core(generated):
    proc = fusesoc("--cores-root", "v", "core-info", NAME, cwd=generated)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Name:        {NAME}:0.1.0" in proc.stdout and "Parse error" not in proc.stdout + proc.stderr
    assert "default" in proc.stdout and "lint" in proc.stdout


def test_fusesoc_rejects_a_broken_core(generated, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (generated / "v" / "equimesh_equimesh_2x3.core").read_text()
    (bad / "x.core").write_text(text.replace("    files:\n      - equimesh_top.v", "    files: equimesh_top.v"))
    proc = fusesoc("--cores-root", "bad", "core-info", NAME, cwd=tmp_path)
    assert proc.returncode != 0


def test_the_core_lists_every_generated_file_and_they_exist(generated):
    core_dir = generated / "v"
    core = yaml.safe_load((core_dir / "equimesh_equimesh_2x3.core").read_text())
    sets = core["filesets"]
    assert sets["rtl"]["files"] == ["equimesh_top.v"] and sets["rtl"]["file_type"] == "verilogSource"
    assert sets["lint"]["files"] == ["lint.vlt"]
    # 6 routers: one table and 4 lanes each (every EquiMesh router has 4 lane ports).
    tables = sets["tables"]["files"]
    assert len(tables) == 6 * 5 and {Path(f).name for f in tables} == {p.name for p in (generated / "tables").iterdir()}
    for f in sets["rtl"]["files"] + sets["lint"]["files"] + tables:
        assert (core_dir / f).is_file(), f
    assert core["targets"]["default"]["toplevel"] == "equimesh_top"
    assert "module equimesh_top(" in (core_dir / "equimesh_top.v").read_text()
