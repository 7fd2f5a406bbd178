"""The mixed run (:mod:`equimesh.sim.mixed`) on the generated Verilog: cocotb 2 on Icarus Verilog (or Verilator).

:func:`run_mixed_verilog` converts :func:`~equimesh.sim.mixed.mixed_top` to
Verilog, builds it with ``cocotb_tools.runner`` and runs :func:`mixed` (the
cocotb test of this module) on it. The bench feeds the same simulator-independent
:class:`~equimesh.sim.mixed.MixedRun` as :func:`~equimesh.sim.mixed.simulate_mixed`,
so both backends give the same dict, number for number.

Timing, cycle for cycle as the Amaranth bench (which sets the inputs and samples
the outputs at the next clock edge): at every falling edge the bench drives
``stop`` and ``start`` from :meth:`MixedRun.drive`, waits for ``ReadOnly`` (the
inputs applied and the logic settled), and samples ``launch``, ``done``,
``link_valid`` and the monitors (payloads only on a transfer: they can be X).
Before the traffic the bench loads the tables and lanes (the program's load
segment, generators stopped), as every backend does. When the run is over it
lets the last edge happen, reads the link counters, then the lanes through the
host read port (``host_addr`` set, ``host_data`` valid ``design.host_latency`` edges later) and
hands those values to :meth:`MixedRun.results`.

The manifest that ``EQUIMESH_MIXED`` names is JSON (traffic, run parameters);
the :class:`~equimesh.rtl.rom.NetworkImage` travels beside it as a pickle
(written and read by the same checkout in the same run).
"""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import cocotb
import numpy as np

from ..rtl.packet import PacketError, PacketFormat
from ..rtl.timing import DEFAULT_PIPELINE
from .traffic import Traffic
from .traffic_cocotb import drive_load

__all__ = ["NAME", "mixed", "run_mixed_verilog"]

NAME = "equimesh_mixed"


def _jsonable(o):
    if hasattr(o, "item"):  # numpy scalars (link_stats' bools and floats)
        return o.item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


@cocotb.test()
async def mixed(dut):
    """The cocotb test of a mixed run: load, then drive ``stop`` and ``start`` and sample ``launch``,
    ``done``, ``link_valid`` and the monitors every cycle into a :class:`~equimesh.sim.mixed.MixedRun`, then
    read the link counters and the lanes and write the run's results where the manifest (``EQUIMESH_MIXED``)
    says (the module docstring gives the timing).

    Parameters
    ----------
    dut : cocotb.handle.HierarchyObject
        The top-level module under simulation.
    """
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

    from .mixed import MixedRun
    from .program import final_reads

    cfg = json.loads(Path(os.environ["EQUIMESH_MIXED"]).read_text())
    image, design, load = pickle.loads(Path(cfg["image"]).read_bytes())
    fmt = PacketFormat(cfg["nodes"], cfg["payload_flits"], cfg["flit_bits"])
    traffic = Traffic(cfg["pattern"], cfg["roms"], cfg["counts"], cfg["rate"], tuple(cfg["silent"]), cfg["backlog"])
    lanes = cfg["lanes"]
    run = MixedRun(image, design, fmt, traffic, lanes, start_at=cfg["start_at"], cycles=cfg["cycles"])
    n_inj = fmt.nodes
    mons = [
        [getattr(dut, f"{kind}_mon__{i}__{f}") for f in ("valid", "ready", "payload")]
        for kind, count in (("inject", n_inj), ("eject", len(lanes)))
        for i in range(count)
    ]

    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for name in ("start", "host_addr"):
        getattr(dut, name).value = 0
    dut.stop.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await drive_load(dut, load)
    stop_sig, start_sig, launch_sig, done_sig, valid_sig = dut.stop, dut.start, dut.launch, dut.done, dut.link_valid
    t0 = time.perf_counter()
    while True:
        await FallingEdge(dut.clk)
        stop, start = run.drive()
        stop_sig.value = int(stop)
        start_sig.value = int(start)
        await ReadOnly()  # the new inputs applied: these are the values the next rising edge samples
        vals = []
        for v, r, p in mons:  # ready and payload only when valid (most monitors are idle)
            take = 1 if int(v.value) and int(r.value) else 0
            vals.append((take, take, int(p.value) if take else 0))
        if run.observe(int(launch_sig.value), int(done_sig.value), int(valid_sig.value), vals[:n_inj], vals[n_inj:]):
            break
    sim_seconds = time.perf_counter() - t0
    await RisingEdge(dut.clk)  # the edge the Amaranth bench's last sample belongs to
    await ReadOnly()
    link_flits = [int(getattr(dut, f"link_flits__{i}").value) for i in range(cfg["links"])]
    reads = final_reads(image) if run.done_at is not None else 0  # lanes only after a finished schedule
    host = np.zeros((reads, -(-len(dut.host_data) // 32)), dtype=np.uint32)
    for a in range(reads):
        await FallingEdge(dut.clk)
        dut.host_addr.value = a
        for _ in range(run.design.host_latency):
            await RisingEdge(dut.clk)
        await ReadOnly()
        host[a] = np.frombuffer(int(dut.host_data.value).to_bytes(4 * host.shape[1], "little"), dtype="<u4")
    out = run.results(link_flits, host)
    out["sim_seconds"] = round(sim_seconds, 3)
    out["sim_cycles"] = run.edge
    out["read_seconds"] = round(time.perf_counter() - t0 - sim_seconds, 3)
    Path(cfg["result"]).write_text(json.dumps(out, default=_jsonable))


def run_mixed_verilog(
    image,
    table,
    traffic: Traffic,
    payload_flits: int,
    build_dir,
    *,
    start_at: int,
    cycles: int,
    stall: float = 0.0,
    simulator: str = "icarus",
    pipeline: int = DEFAULT_PIPELINE,
) -> dict:
    """:func:`~equimesh.sim.mixed.simulate_mixed` on the generated Verilog under cocotb (Icarus or Verilator).

    Returns the same ``{"schedule", "packets", "sim_seconds"}`` dict, plus ``sim_cycles`` (cycles the
    bench observed), ``simulator``, ``build_seconds`` (Verilog export + compile) and ``run_seconds``
    (the whole simulator process, lane read-back included).

    Parameters
    ----------
    image : NetworkImage
        The compiled collective schedule.
    table : ForwardingTable
        The packets' forwarding tables (MultiWrite, seed 004).
    traffic : Traffic
        What the generators send.
    payload_flits : int
        Payload flits per packet.
    build_dir : str or pathlib.Path
        Where the Verilog is written, built and run.
    start_at : int
        The cycle at which ``start`` requests the collective.
    cycles : int
        Random patterns: cycles the generators inject before they stop.
    stall : float
        The sinks' probability of refusing a flit in a cycle.
    simulator : str
        ``"icarus"`` or ``"verilator"``.
    pipeline : int
        The routers' pipeline depth.

    Returns
    -------
    dict
        As described above.

    Raises
    ------
    PacketError
        If the simulator is unknown or not installed.
    """
    from ..rtl.design import fit
    from ..rtl.network import top_ports
    from .mixed import mixed_load, mixed_params, mixed_top
    from .verilog_sim import SimulatorMissing, bench_verilog, check_simulator, run_bench

    if simulator not in ("icarus", "verilator"):
        raise PacketError(f"unknown simulator {simulator!r}; expected icarus or verilator")
    try:
        check_simulator(simulator)
    except SimulatorMissing as e:
        raise PacketError(str(e)) from None
    build = Path(build_dir).resolve()
    build.mkdir(parents=True, exist_ok=True)
    design = fit(image, pipeline=pipeline)
    t0 = time.perf_counter()
    text, facts = bench_verilog(
        lambda: mixed_top(design, table, traffic, payload_flits),
        NAME,
        mixed_params(design, table, traffic, payload_flits),
        lambda top: {"lanes": [v for v, _ in top.net.lanes], "widths": top_ports(top)[2]},
    )
    export = time.perf_counter() - t0
    fmt = PacketFormat(table.topology.nodes, payload_flits, design.flit_bits)
    load = mixed_load(image, design, fmt, traffic, stall, facts["widths"])
    pkl = build / "image.pkl"
    pkl.write_bytes(pickle.dumps((image, design, load)))
    out, build_s, run_s = run_bench(
        text,
        NAME,
        build,
        simulator,
        "equimesh.sim.mixed_cocotb",
        "EQUIMESH_MIXED",
        {
            "image": str(pkl),
            "nodes": fmt.nodes,
            "payload_flits": payload_flits,
            "flit_bits": fmt.width,
            "pattern": traffic.pattern,
            "roms": traffic.roms,
            "counts": traffic.counts,
            "rate": traffic.rate,
            "silent": list(traffic.silent),
            "backlog": traffic.backlog,
            "start_at": start_at,
            "cycles": cycles,
            "links": len(image.topology.links),
            "lanes": facts["lanes"],
        },
    )
    out.update({"simulator": simulator, "build_seconds": round(build_s + export, 1), "run_seconds": round(run_s, 1)})
    return out
