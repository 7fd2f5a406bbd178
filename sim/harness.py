"""The Amaranth-simulator backend: the reference for small networks.

It executes a :class:`~equimesh.sim.program.Program` (load, run to ``done``,
read back) on the network top built from Amaranth submodules, the same
program the compiled and cocotb backends execute on the Verilog.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from amaranth.sim import Simulator

from ..rtl.network import Network
from .program import Drive, Program, Run, words_of

__all__ = ["RtlAssertionFailed", "drive", "execute", "run_to_end"]


class RtlAssertionFailed(AssertionError):
    """The RTL broke one of its own assertions (an ``Assert`` in ``rtl/``) on the Amaranth simulator: a
    bug in the hardware, not in the user's input (so no ``RuntimeError`` handler takes it for a failed
    run)."""


def run_to_end(sim: Simulator, period: float, vcd=None, traces=()) -> None:
    """Run ``sim`` to the end of its testbenches, writing the waveform ``vcd`` if given (with ``traces``).

    Parameters
    ----------
    sim : Simulator
        The simulator, its clock (``period`` seconds) and testbenches added.
    period : float
        The clock's period in seconds.
    vcd : str or pathlib.Path, optional
        The waveform file; on a failed assertion it holds the run up to that cycle.
    traces : sequence of Signal
        Signals the waveform shows first.

    Raises
    ------
    RtlAssertionFailed
        An RTL assertion failed: the message is the assertion's and the cycle is counted from 0, the
        first clock edge.
    """
    try:
        if vcd is None:
            sim.run()
        else:
            with sim.write_vcd(vcd, traces=traces):
                sim.run()
    except AssertionError as e:
        what = str(e)
        if not what.startswith("Assertion violated"):
            raise
        # Amaranth 0.5 keeps the simulated time (femtoseconds) in its engine only; the first edge is at half
        # a period, so edge k is at (k + 1/2) periods.
        cycle = int(sim._engine.now * 1e-15 / period)
        kept = f" (waveform up to it: {vcd})" if vcd is not None else ""
        what = what.removeprefix("Assertion violated").removeprefix(": ")
        raise RtlAssertionFailed(f"an RTL assertion failed in cycle {cycle}: {what}{kept}") from None


def _int(words: np.ndarray) -> int:
    return int.from_bytes(np.ascontiguousarray(words, dtype="<u4").tobytes(), "little")


def _words(value: int, width: int) -> np.ndarray:
    n = words_of(width)
    return np.frombuffer(value.to_bytes(4 * n, "little"), dtype="<u4").copy()


def _port(top, name):
    p = getattr(top, name)
    return p.as_value() if hasattr(p, "as_value") else p


async def drive(ctx, top, seg: Drive) -> None:
    """Set ``top``'s inputs frame by frame as ``seg`` says, one clock edge per frame (no captures).

    Parameters
    ----------
    ctx : amaranth.sim.SimulatorContext
        The testbench context.
    top : amaranth.lib.wiring.Component
    seg : Drive
    """
    for f in range(seg.frames):
        for name, vals in seg.values.items():
            ctx.set(_port(top, name), _int(vals[f]))
        await ctx.tick()


def execute(net: Network, *programs: Program, vcd: str | None = None, progress=None) -> list[dict]:
    """Run ``programs`` one after the other on one elaborated ``net``; return, per program,
    ``{"run_cycles", "run_seconds", <captured port>: uint32 [frames, words]}``.

    ``progress(cycle, limit)`` is called now and then during a run segment.

    Parameters
    ----------
    net : Network
        Built with routers as submodules.
    *programs : Program
        Their :class:`Drive` and :class:`Run` segments are executed.
    vcd : str or None
        Write a VCD of ``start``, ``done`` and ``link_valid`` there.
    progress : callable or None
        ``progress(cycle, limit)``, every 64 cycles of a run.

    Returns
    -------
    list of dict
        Per program: ``run_cycles`` (edges, start to done), ``run_seconds`` (wall clock) and
        each captured port's uint32 ``[frames, words]``.

    Raises
    ------
    RuntimeError
        If ``done`` does not rise within a run segment's ``limit`` cycles.
    """
    outs: list[dict] = [{} for _ in programs]

    async def bench(ctx):
        for program, out in zip(programs, outs):
            await _execute(ctx, program, out)

    async def _execute(ctx, program, out):
        for seg in program.segments:
            if isinstance(seg, Run):
                ctx.set(net.start, 1)
                await ctx.tick()
                ctx.set(net.start, 0)
                cycles, t0 = 1, time.perf_counter()
                async for _, _, done in ctx.tick().sample(net.done):
                    if done:
                        break
                    cycles += 1
                    if cycles > seg.limit:
                        raise RuntimeError(f"network not done after {seg.limit} cycles")
                    if progress is not None and cycles % 64 == 0:
                        progress(cycles, seg.limit)
                out["run_cycles"], out["run_seconds"] = cycles, time.perf_counter() - t0
                continue
            caps = {
                name: np.zeros((seg.frames, words_of(program.widths[name])), dtype=np.uint32) for name in seg.capture
            }
            for f in range(seg.frames):
                for name, vals in seg.values.items():
                    ctx.set(_port(net, name), _int(vals[f]))
                await ctx.tick()
                for name in seg.capture:
                    caps[name][f] = _words(ctx.get(_port(net, name)), program.widths[name])
            out.update(caps)

    # The simulator compiles every signal to Python source with its mask as a decimal literal; a top
    # bus of more than 14,300 bits (8x8 and up) passes Python's default 4300-digit conversion limit.
    # The limit is restored afterwards: the JSON readers rely on it to refuse absurd numbers.
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        sim = Simulator(net)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        run_to_end(sim, 1e-8, vcd or None, traces=[net.start, net.done, net.link_valid])
    finally:
        sys.set_int_max_str_digits(limit)
    return outs
