"""Amaranth-simulator harness: schedule -> ROMs -> network -> run to ``done`` -> check and measure.

The reference is the schedule itself (design.md semantics): every node's final
lanes must hold, bit for bit, what the collective defines (AllGather: every
shard; ReduceScatter / AllReduce: the wrapping 32-bit sums), and every link
must be busy exactly ``transfers x chunk_flits`` cycles.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from ..rtl.network import Network
from ..rtl.rom import NetworkImage
from .metrics import LinkStats, link_stats
from .pattern import expected_chunk, pack, words

FLIT_BITS = 64


def lane_init(image: NetworkImage, flit_bits: int = FLIT_BITS) -> list[list[list[int]]]:
    """Initial lane contents of every node: its input chunks at the slots the ROM compiler chose."""
    F = image.chunk_flits
    out = []
    for v, r in enumerate(image.routers):
        lanes = [[0] * image.lane_flits for _ in r.lanes]
        for (root, c), (lane, slot) in image.initial[v].items():
            for f, w in enumerate(words(v, root, c, F, flit_bits)):
                lanes[lane][slot * F + f] = pack(w)
        out.append(lanes)
    return out


def expected_memory(image: NetworkImage, flit_bits: int = FLIT_BITS):
    """Yield ``(node, lane, address, value)`` for every flit the collective defines at the end."""
    F, n = image.chunk_flits, image.topology.nodes
    cache = {}
    for v in range(n):
        for (root, c), (lane, slot) in sorted(image.final[v].items()):
            if (root, c) not in cache:
                cache[(root, c)] = [pack(w) for w in expected_chunk(image.collective, n, root, c, F, flit_bits)]
            for f, value in enumerate(cache[(root, c)]):
                yield v, lane, slot * F + f, value


@dataclass
class RunResult:
    bit_exact: bool
    mismatches: int
    first_mismatch: str | None
    cycles: int
    stats: LinkStats
    sim_seconds: float

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.sim_seconds if self.sim_seconds else 0.0


def simulate(image: NetworkImage, flit_bits: int = FLIT_BITS, vcd: str | None = None, progress=None) -> RunResult:
    """Run the network in the Amaranth simulator; ``progress(cycle, expected)`` is called now and then.

    ``vcd``: write every signal to this VCD file (sim/waveform.py writes the matching GTKWave file).
    """
    dut = Network(image, lane_init(image, flit_bits), flit_bits)
    links = len(image.topology.links)
    expected_cycles = expected_run_cycles(image)
    trace: list[int] = []
    out = {}

    async def bench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        cycles = 1
        limit = expected_cycles + 16
        async for _, _, valid, done in ctx.tick().sample(dut.link_valid, dut.done):
            trace.append(valid)
            if done:
                break
            cycles += 1
            if cycles > limit:
                raise RuntimeError(f"network not done after {limit} cycles")
            if progress is not None and cycles % 32 == 0:
                progress(cycles, expected_cycles)
        out["cycles"] = cycles
        mism, first = 0, None
        for v, lane, addr, value in expected_memory(image, flit_bits):
            got = ctx.get(dut.routers[v].lane_units[lane].mem.data[addr])
            if got != value:
                mism += 1
                if first is None:
                    first = (f"node {v} lane {image.routers[v].lanes[lane]} flit {addr}: "
                             f"got {got:#x}, expected {value:#x}")
        out["mismatches"], out["first"] = mism, first

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    t0 = time.perf_counter()
    if vcd:
        with sim.write_vcd(vcd, traces=[dut.start, dut.done, dut.link_valid]):
            sim.run()
    else:
        sim.run()
    seconds = time.perf_counter() - t0
    if progress is not None:
        progress(out["cycles"], out["cycles"])
    busy = _decode(trace, links)
    stats = link_stats(image, busy, out["cycles"])
    return RunResult(out["mismatches"] == 0, out["mismatches"], out["first"], out["cycles"], stats, seconds)


def expected_run_cycles(image: NetworkImage) -> int:
    """Cycles from the edge that samples ``start`` to ``done``: steps x period + 3 (README "Timing")."""
    return image.steps * image.period + 3


def _decode(trace: list[int], links: int) -> np.ndarray:
    """bool [cycles, links] from the per-cycle link_valid integers."""
    raw = np.array([[(t >> (8 * b)) & 0xFF for b in range((links + 7) // 8)] for t in trace], dtype=np.uint8)
    if len(raw) == 0:
        return np.zeros((0, links), dtype=bool)
    return np.unpackbits(raw, axis=1, bitorder="little")[:, :links].astype(bool)
