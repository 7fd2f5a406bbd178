"""An RTL assertion that fails on the Amaranth simulator is one error naming the assertion and the cycle,
and one line with exit status 3 on the command line (sim/harness.py, ``run_to_end``)."""

import amaranth.sim
import pytest
from amaranth.hdl import Assert, Module, Signal
from amaranth.sim import Simulator

from equimesh.cli import main
from equimesh.sim.harness import RtlAssertionFailed, run_to_end


def _counter_sim(limit: int, cycles: int) -> Simulator:
    """A counter from 0, one step per clock edge, asserted never to reach ``limit``; a bench of ``cycles`` edges."""
    m = Module()
    count = Signal(8)
    m.d.sync += [count.eq(count + 1), Assert(count != limit, "the counter reached its limit")]
    sim = Simulator(m)
    sim.add_clock(1e-8)

    async def bench(ctx):
        for _ in range(cycles):
            await ctx.tick()

    sim.add_testbench(bench)
    return sim


def test_failed_assertion_names_itself_and_its_cycle(tmp_path):
    # The counter holds k at clock edge k (0 first), so the assertion fails at edge 5.
    vcd = tmp_path / "fail.vcd"
    with pytest.raises(RtlAssertionFailed) as e:
        run_to_end(_counter_sim(limit=5, cycles=20), 1e-8, str(vcd))
    assert (
        str(e.value) == f"an RTL assertion failed in cycle 5: the counter reached its limit (waveform up to it: {vcd})"
    )
    assert vcd.stat().st_size > 0


def test_no_failure_runs_to_the_end():
    run_to_end(_counter_sim(limit=50, cycles=20), 1e-8)  # the bench ends before the counter gets there


def test_a_testbench_assert_is_not_taken_for_the_rtl():
    sim = Simulator(Module())

    async def bench(ctx):
        assert False, "the bench's own check"

    sim.add_testbench(bench)
    with pytest.raises(AssertionError, match="the bench's own check") as e:
        run_to_end(sim, 1e-8)
    assert type(e.value) is AssertionError


@pytest.mark.parametrize(
    "argv",
    [
        "simulate --rows 2 --cols 2 --chunks 1 --chunk-flits 2",
        "traffic --rows 2 --cols 2 --pattern unicast --rate 0.05 --cycles 50",
        "mixed --rows 2 --cols 2 --collective allgather --fanout 2 --rate 0.05 --packets 2 --cycles 100",
    ],
)
def test_cli_one_line_and_status_3(monkeypatch, capsys, argv):
    # A planted failure inside the simulator's run, after its first clock edge: what Amaranth raises when
    # an Assert fails.
    run = amaranth.sim.Simulator.run

    def broken(self):
        async def fail(ctx):
            await ctx.tick()
            raise AssertionError("Assertion violated: input buffer: a planted failure")

        self.add_testbench(fail)
        run(self)

    monkeypatch.setattr(amaranth.sim.Simulator, "run", broken)
    assert main(argv.split() + ["--backend", "amaranth"]) == 3
    err = capsys.readouterr().err
    assert err == "equimesh: an RTL assertion failed in cycle 0: input buffer: a planted failure\n"
