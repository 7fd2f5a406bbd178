"""cocotb testbench for the generated Verilog (run by sim/verilog_sim.py through cocotb_tools.runner).

It executes the same program as the compiled harness (sim/program.py; the
binary file of sim/verilator.py): each drive frame sets inputs after a falling
edge and records outputs after the rising edge; the run pulses ``start`` and
then waits for ``done`` without sampling any cycle in between (the network's
statistics block counts the links). It writes the same result file the
compiled harness writes; the Python side judges it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

from .program import words_of

__all__ = ["PERIOD_NS", "run_program"]

PERIOD_NS = 10


def _int(words) -> int:
    return int.from_bytes(np.asarray(words, dtype="<u4").tobytes(), "little")


@cocotb.test()
async def run_program(dut):
    """The cocotb test that executes a program file (``EQUIMESH_PROGRAM``, the binary of
    :mod:`equimesh.sim.verilator`) on the Verilog top whose ports ``EQUIMESH_PORTS`` lists, and writes the
    same result file the compiled harness writes (the module docstring).

    Parameters
    ----------
    dut : cocotb.handle.HierarchyObject
        The top-level module under simulation.
    """
    ports = json.loads(Path(os.environ["EQUIMESH_PORTS"]).read_text())
    ins, outs, widths = ports["ins"], ports["outs"], ports["widths"]
    words = {n: words_of(widths[n]) for n in widths}
    prog = np.fromfile(os.environ["EQUIMESH_PROGRAM"], dtype="<u4")
    pos = 3  # magic, version, segments
    result: list[int] = []
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    dut.rst.value = 1
    dut.start.value = 0
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(int(prog[2])):
        kind = int(prog[pos])
        if kind == 1:
            limit = int(prog[pos + 1])
            pos += 2
            dut.start.value = 1
            await RisingEdge(dut.clk)
            t_start, w0 = get_sim_time(unit="ns"), time.perf_counter()
            await FallingEdge(dut.clk)
            dut.start.value = 0
            timeout = 0
            if not int(dut.done.value):
                fired = await First(RisingEdge(dut.done), Timer(limit * PERIOD_NS, unit="ns"))
                timeout = int(not isinstance(fired, RisingEdge))
            cycles = round((get_sim_time(unit="ns") - t_start) / PERIOD_NS) + 1
            ns = int((time.perf_counter() - w0) * 1e9)
            result += [cycles, ns & 0xFFFFFFFF, ns >> 32, timeout]
            await FallingEdge(dut.clk)
            continue
        frames, n = int(prog[pos + 1]), int(prog[pos + 2])
        driven = [ins[int(i)] for i in prog[pos + 3 : pos + 3 + n]]
        pos += 3 + n
        nc = int(prog[pos])
        caps = [outs[int(i)] for i in prog[pos + 1 : pos + 1 + nc]]
        pos += 1 + nc
        frame_words = sum(words[p] for p in driven)
        block = prog[pos : pos + frames * frame_words].reshape(frames, frame_words) if frame_words else None
        pos += frames * frame_words
        for f in range(frames):
            col = 0
            for p in driven:
                getattr(dut, p).value = _int(block[f, col : col + words[p]])
                col += words[p]
            await RisingEdge(dut.clk)
            if caps:
                await ReadOnly()
                for c in caps:
                    value = int(getattr(dut, c).value)
                    result += np.frombuffer(value.to_bytes(4 * words[c], "little"), dtype="<u4").tolist()
            await FallingEdge(dut.clk)
    np.asarray(result, dtype="<u4").tofile(os.environ["EQUIMESH_RESULT"])
