"""The network in the Amaranth simulator (the reference backend), checked against the schedule.

The schedule semantics are the independent reference (sim/pattern.py, docs/architecture.md): every node's final
lanes bit for bit, every link's busy cycles from the schedule's transfers, and the timing contract.
"""

import sys

import numpy as np
import pytest
from amaranth.sim import Simulator

from equimesh.rtl.crossbar import Crossbar
from equimesh.rtl.design import Design, fit
from equimesh.rtl.network import Network, top_ports
from equimesh.rtl.rom import RomError, compile_schedule
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim.backends import judge, run_image
from equimesh.sim.harness import execute
from equimesh.sim.program import make_program


def schedule_busy(sched, flits):
    """Each link's busy cycles, counted from the schedule file's transfers."""
    per_link = np.zeros(len(sched.topology.links), dtype=np.int64)
    for phase in sched.phases:
        for step in phase.steps:
            np.add.at(per_link, np.asarray(step)[:, 0], 1)
    return per_link * flits


CASES = [
    ("equimesh", 2, 3, 4, "allgather", 4),
    ("equimesh", 2, 3, 4, "allreduce", 4),
    ("equimesh", 2, 3, 2, "reducescatter", 3),
    ("equimesh", 3, 3, 2, "reducescatter", 2),
    ("equimesh", 4, 4, 2, "allgather", 2),
    ("equimesh", 2, 3, 2, "allreduce", 1),
    ("mirror-equimesh", 2, 3, 2, "allgather", 2),
    ("mesh", 4, 4, 1, "allgather", 2),
    ("mesh", 3, 3, 2, "allreduce", 2),
    ("overflow", 3, 4, 1, "allreduce", 2),
    ("torus", 3, 3, 1, "allreduce", 2),
    ("torus", 3, 3, 2, "allgather", 2),
    ("supermesh", 4, 4, 4, "allgather", 2),  # SM(4,4), seed 001: 6 network ports per router
    ("supermesh", 4, 4, 2, "allreduce", 2),
]


@pytest.mark.parametrize("kind,rows,cols,k,collective,flits", CASES)
def test_bit_exact_and_link_busy_cycles_match_the_schedule(kind, rows, cols, k, collective, flits):
    t = build(kind, rows, cols)
    sched = synthesize(t, k, collective)
    res = run_image(compile_schedule(sched, flits, t), "amaranth")
    assert res.bit_exact, res.outcome.first_mismatch
    assert (res.stats.busy == schedule_busy(sched, flits)).all()
    # Timing contract (docs/rtl.md "Timing"), the default router (pipeline 2): max(F, 5) cycles per step plus 6
    # cycles of table fill, pipeline and drain, counted by the testbench and the network's own counter.
    assert res.cycles == res.outcome.rtl_cycles == sched.num_steps * max(flits, 5) + 6


# Per pipeline depth, worked by hand from the stages of rtl/router.py: (cycles per step at F = 2, constant).
# Pipeline 0: read, crossbar, write; transparent lanes: max(F, 2) per step, 2 + 1 for done.
# Pipeline 1: table fill, read, read register, crossbar, write; plain lanes: max(F, 4) per step, 1 + 3 + 1.
# Pipeline 2: as 1 with the write registered once more (stage W): max(F, 5) per step, 1 + 4 + 1.
TIMING = {0: (2, 3), 1: (4, 5), 2: (5, 6)}


@pytest.mark.parametrize("pipeline", sorted(TIMING))
def test_one_elaborated_network_runs_an_allgather_then_is_reloaded_and_runs_an_allreduce(pipeline):
    t = build("equimesh", 2, 3)
    ag, ar = (compile_schedule(synthesize(t, 2, c), 2, t) for c in ("allgather", "allreduce"))
    design = Design(t, 2, slots=16, depth=16, reduce=True, pipeline=pipeline)
    per_step, constant = TIMING[pipeline]
    net = Network(design)
    widths = top_ports(net)[2]
    limit = sys.get_int_max_str_digits()
    outs = execute(net, make_program(ag, design, widths), make_program(ar, design, widths))
    assert sys.get_int_max_str_digits() == limit  # lifted for the simulator only, then restored
    for image, out in zip((ag, ar), outs):
        outcome, stats = judge(image, design, out)
        assert outcome.bit_exact, outcome.first_mismatch
        assert stats.busy_matches_schedule
        assert outcome.cycles == outcome.rtl_cycles == image.steps * per_step + constant


def test_a_wrong_table_entry_is_caught_by_the_memory_check():
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 1, "allgather"), 2, t)
    r = image.routers[0]
    s, lane = map(int, np.argwhere(r.wr_en)[0])
    r.wr_en[s, lane] = 0  # drop one write: that chunk never lands (nor where node 0 forwards it)
    res = run_image(image, "amaranth")
    assert not res.bit_exact and res.outcome.mismatches >= 2 and res.outcome.first_mismatch.startswith("node 0 ")


def test_a_schedule_bigger_than_the_design_is_refused_in_one_line():
    t = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(t, 4, "allreduce"), 2, t)
    with pytest.raises(RomError, match=r"^the schedule has \d+ steps; the design's tables hold 4"):
        fit(image, depth=4)
    with pytest.raises(RomError, match="needs the ReduceScatter adders"):
        fit(image, reduce=False)
    with pytest.raises(RomError, match=r"slots per lane; the design's lanes hold 1 "):
        fit(image, slots=1)


@pytest.mark.parametrize(
    "hot, legal, illegal, message",
    [
        # binary: input 2 of 3; code 3 names no input
        (False, {"valid": 1, "input": 2}, {"valid": 1, "input": 3}, "crossbar output 1 selects a missing input"),
        # one-hot (rtl/crossbar.py): bit 2 alone routes input 2; bits 1 and 2 together are illegal
        (True, 0b100, 0b110, "crossbar output 1 selects two inputs"),
    ],
)
def test_crossbar_routes_a_legal_select_and_asserts_on_an_illegal_one(hot, legal, illegal, message):
    dut = Crossbar(3, 2, 64, hot)

    async def bench(ctx):
        ctx.set(dut.sel[1], legal)
        ctx.set(dut.i[2].words[1], 7)
        ctx.set(dut.i[1].words[1], 5)
        await ctx.tick()
        assert ctx.get(dut.o[1].words[1]) == 7 and ctx.get(dut.o[0].words[1]) == 0
        ctx.set(dut.sel[1], illegal)
        await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    with pytest.raises(AssertionError, match=message):
        sim.run()


def test_loading_group_by_group_and_buses_split_over_several_ports(monkeypatch):
    """Big networks load a group of nodes at a time and split wide buses over ports: the same run."""
    from equimesh.rtl import network

    t = build("mesh", 2, 3)
    image = compile_schedule(synthesize(t, 2, "allreduce"), 2, t)
    monkeypatch.setattr(network, "LOAD_BITS", 256)  # one node (4 lanes x 64 bits) per group
    monkeypatch.setattr(network, "PORT_BITS", 128)  # two flits or four counters per port
    design = fit(image)
    assert network.load_group(design) == 1
    assert [p for p, _ in network.buses(design)["host_data"].ports()][:2] == ["host_data_0", "host_data_1"]
    res = run_image(image, "amaranth", design)
    assert res.bit_exact and res.stats.busy_matches_schedule and res.counters_agree


def test_the_reference_simulator_takes_tops_wider_than_pythons_int_conversion_limit():
    """An 8x8 network's lane read-back bus is 64 nodes x 4 lanes x 64 bits = 16,384 bits; the
    simulator writes its mask as a decimal literal of 4,933 digits, over Python's default 4,300.
    The same width at 2x2: 4 nodes x 4 lanes x 1024-bit flits."""
    import dataclasses

    t = build("equimesh", 2, 2)
    image = compile_schedule(synthesize(t, 4, "allgather"), 2, t)
    res = run_image(image, "amaranth", dataclasses.replace(fit(image), flit_bits=1024))
    assert res.bit_exact and res.stats.busy_matches_schedule


def test_a_bench_that_wrote_no_result_is_one_line_naming_its_first_error(tmp_path):
    from equimesh.sim.verilog_sim import bench_failure

    log = tmp_path / "test.log"
    log.write_text(
        '  File "bench.py", line 84\n    raise ValueError(\nValueError: Can\'t convert LogicArray to int\n'
        "later: OtherError: not this one\n"
    )
    assert bench_failure(log) == "the cocotb bench wrote no result: ValueError: Can't convert LogicArray to int"
    assert bench_failure(tmp_path / "gone.log") == f"the cocotb bench wrote no result; see {tmp_path / 'gone.log'}"
