"""cocotb bench for the MultiWrite network's generated Verilog (run by :func:`equimesh.sim.traffic.run_verilog`).

Two modes, chosen by the manifest that ``EQUIMESH_TRAFFIC`` names:

* ``trace``: every cycle the bench reads the inject and eject monitors and
  feeds the same :class:`~equimesh.sim.traffic.Run` (scoreboard + watchdog) as
  the Amaranth harness.
* ``soak``: the bench only advances the clock in blocks and reads the hardware
  checkers' counters at the end (:func:`~equimesh.sim.traffic.soak_verdict`);
  the watchdog is "no flit ejected during a block while copies are outstanding".
* ``count``: for finite traffic (AllGather): the bench watches only the ejected-flit
  counter, every cycle, until every copy is in (the completion cycle), then
  reads the checkers as in ``soak``.

``soak`` and ``count`` follow the compiled model's program
(:func:`~equimesh.sim.traffic.packet_segments`) edge for edge, so both give the same result.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from ..rtl.packet import PacketFormat
from .traffic import BLOCK, DRAIN_LIMIT, WATCHDOG, Run, Traffic, read_counters, soak_verdict, traffic_load

__all__ = ["drive_load", "traffic"]


def _get(dut, name: str) -> int:
    return int(getattr(dut, name).value)


async def drive_load(dut, load) -> None:
    """Apply a :class:`~equimesh.sim.program.Drive`'s inputs, one rising edge per frame.

    Parameters
    ----------
    dut : cocotb.handle.HierarchyObject
        The top-level module under simulation.
    load : Drive
        The frames to apply (:func:`~equimesh.sim.traffic.traffic_load`, or a program's load segment).
    """
    for f in range(load.frames):
        await FallingEdge(dut.clk)
        for name, vals in load.values.items():
            getattr(dut, name).value = int.from_bytes(vals[f].tobytes(), "little")
        await RisingEdge(dut.clk)


async def _reset(dut) -> None:
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.stop.value = 0
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0


@cocotb.test()
async def traffic(dut):
    """The cocotb test of a packet run: load the generators' tables, then run the manifest's mode (``trace``,
    ``soak`` or ``count``; the module docstring) and write the results where the manifest
    (``EQUIMESH_TRAFFIC``) says.

    Parameters
    ----------
    dut : cocotb.handle.HierarchyObject
        The top-level module under simulation.
    """
    with open(os.environ["EQUIMESH_TRAFFIC"]) as f:
        cfg = json.load(f)
    fmt = PacketFormat(cfg["nodes"], cfg["payload_flits"], cfg["flit_bits"])
    traffic = Traffic(cfg["pattern"], cfg["roms"], cfg["counts"], cfg["rate"], tuple(cfg["silent"]), cfg["backlog"])
    n_links, lanes = cfg["links"], cfg["lanes"]
    await _reset(dut)
    await drive_load(dut, traffic_load(fmt, traffic, cfg["stall"]))  # then cycle 0, as every backend counts
    dut.stop.value = 0
    t0 = time.perf_counter()
    if cfg["mode"] == "trace":
        run = Run(fmt, traffic, lanes, cfg["cycles"])
        mons = [
            [getattr(dut, f"{kind}_mon__{i}__{f}") for f in ("valid", "ready", "payload")]
            for kind, count in (("inject", fmt.nodes), ("eject", len(lanes)))
            for i in range(count)
        ]
        while True:
            await FallingEdge(dut.clk)
            dut.stop.value = int(run.stop)
            vals = []
            for v, r, p in mons:  # payloads are X until written: read them only on a transfer
                take = int(v.value) & int(r.value)
                vals.append((take, take, int(p.value) if take else 0))
            if run.observe(vals[: fmt.nodes], vals[fmt.nodes :]):
                break
        result = run.results([_get(dut, f"link_flits__{i}") for i in range(n_links)])
    else:  # the same segments as the compiled model's program (traffic.packet_segments)
        cycles, deadlock, last = 0, False, _get(dut, "ejected")
        if cfg["mode"] == "count":
            target, since = cfg["target_flits"], 0
            while last < target:  # `ejected` as the next edge samples it, as the compiled harness checks
                if cycles - since >= WATCHDOG:
                    deadlock = True
                    break
                await RisingEdge(dut.clk)
                await ReadOnly()
                cycles += 1
                now = _get(dut, "ejected")
                if now != last:
                    last, since = now, cycles
        else:
            while cycles < cfg["cycles"]:
                n = min(BLOCK, cfg["cycles"] - cycles)
                await ClockCycles(dut.clk, n)
                await ReadOnly()
                cycles += n
                now = _get(dut, "ejected")
                if now == last:
                    deadlock = True
                    break
                last = now
            await FallingEdge(dut.clk)
            dut.stop.value = 1
            since = cycles  # drain: until WATCHDOG edges eject nothing, edge by edge (the drain is short)
            while cycles - since < WATCHDOG and cycles < cfg["cycles"] + DRAIN_LIMIT:
                await RisingEdge(dut.clk)
                await ReadOnly()
                cycles += 1
                now = _get(dut, "ejected")
                if now != last:
                    last, since = now, cycles
            deadlock = deadlock or cycles - since < WATCHDOG
        completion = cycles if cfg["mode"] == "count" else since  # the edge that took the last flit
        result = soak_verdict(
            fmt,
            traffic,
            cycles=completion,
            deadlock=deadlock,
            **read_counters(lambda name: _get(dut, name), fmt.nodes, n_links),
        )
        result["completion"] = completion
    result["sim_seconds"] = round(time.perf_counter() - t0, 1)
    with open(cfg["result"], "w") as f:
        json.dump(result, f)
