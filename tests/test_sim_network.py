"""The network in the Amaranth simulator, checked against the schedule (the independent reference)."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from equimesh.rtl.crossbar import Crossbar
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.harness import simulate


def _run(kind, rows, cols, k, collective, flits):
    t = build(kind, rows, cols)
    sched = synthesize(t, k, collective)
    image = compile_schedule(sched, flits, t)
    return sched, image, simulate(image)


CASES = [
    ("equimesh", 2, 3, 4, "allgather", 4),
    ("equimesh", 2, 3, 4, "allreduce", 4),
    ("equimesh", 2, 3, 2, "reducescatter", 3),
    ("equimesh", 4, 4, 2, "allgather", 2),
    ("equimesh", 4, 4, 2, "allreduce", 2),
    ("equimesh", 2, 3, 2, "allreduce", 1),
    ("mirror-equimesh", 2, 3, 2, "allgather", 2),
    ("mesh", 4, 4, 1, "allgather", 2),
    ("mesh", 3, 3, 2, "allreduce", 2),
    ("overflow", 4, 4, 1, "allgather", 2),
    ("overflow", 3, 4, 1, "allreduce", 2),
    ("torus", 3, 3, 1, "allreduce", 2),
]


@pytest.mark.parametrize("kind,rows,cols,k,collective,flits", CASES)
def test_bit_exact_and_link_busy_cycles_match_the_schedule(kind, rows, cols, k, collective, flits):
    sched, image, res = _run(kind, rows, cols, k, collective, flits)
    assert res.bit_exact, res.first_mismatch
    per_link = np.zeros(len(sched.topology.links), dtype=np.int64)
    for phase in sched.phases:
        for step in phase.steps:
            np.add.at(per_link, np.asarray(step)[:, 0], 1)
    assert (res.stats.busy == per_link * flits).all()
    # Timing contract (README "Timing"): max(F, 2) cycles per step plus 3 cycles of start/drain.
    assert res.cycles == sched.num_steps * max(flits, 2) + 3
    # Per timestep, the measured busy fraction is the schedule's.
    links = len(sched.topology.links)
    want = [len(s) * flits / (links * max(flits, 2)) for p in sched.phases for s in p.steps]
    assert np.allclose(res.stats.per_step, want)


def test_a_wrong_rom_entry_is_caught_by_the_memory_check():
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 1, "allgather"), 2, t)
    r = image.routers[0]
    s, lane = map(int, np.argwhere(r.wr_en)[0])
    r.wr_en[s, lane] = 0  # drop one write: that chunk never lands (nor where node 0 forwards it)
    res = simulate(image)
    assert not res.bit_exact and res.mismatches >= 2 and res.first_mismatch.startswith("node 0 ")


def test_crossbar_asserts_on_a_select_naming_no_input():
    dut = Crossbar(3, 2, 64)

    async def bench(ctx):
        ctx.set(dut.sel[1].valid, 1)
        ctx.set(dut.sel[1].input, 2)
        ctx.set(dut.i[2].words[1], 7)
        await ctx.tick()
        assert ctx.get(dut.o[1].words[1]) == 7 and ctx.get(dut.o[0].words[1]) == 0
        ctx.set(dut.sel[1].input, 3)
        await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    with pytest.raises(AssertionError, match="crossbar output 1 selects a missing input"):
        sim.run()
