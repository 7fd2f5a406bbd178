"""Packet runs on the compiled Verilator model (no Python per cycle, checked by the hardware checkers'
counters) against the Amaranth simulator's flit-by-flit scoreboard and the cocotb benches on Icarus:
the same traffic gives the same copies, checker sums and (where the modes are cycle-deterministic) cycles.
And the verdict on the counters must be able to fail: planted duplicates, losses and corruption."""

import json
import shutil

import pytest

from equimesh.cli import main
from equimesh.rtl.packet import PacketError, PacketFormat
from equimesh.rtl.packet_network import packet_router_name
from equimesh.rtl.rom import compile_schedule
from equimesh.schedules.routing import forwarding_table
from equimesh.schedules.synth import synthesize
from equimesh.schedules.topology import build
from equimesh.sim import backends
from equimesh.sim.mixed import run_mixed_compiled, simulate_mixed
from equimesh.sim.tiles import auto_threads
from equimesh.sim.traffic import (
    PACKET_MODELS,
    make_traffic,
    packet_model,
    run_compiled,
    run_verilog,
    simulate,
    soak_verdict,
)

icarus = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")
# what differs by model and run: timings, and the tiled model's own figures
PER_MODEL = (
    "simulator",
    "build_seconds",
    "sim_seconds",
    "cached",
    "threads",
    "solo_cycles",
    "router_clocked",
    "input_clocked",
)
COPIES = ("packets", "expected", "delivered", "duplicates", "lost", "corrupted", "misdelivered", "flit_hops")
EDGES = ("completion", "cycles")  # the edge that took the last flit; the run's length
LATENCY = ("latency_mean", "latency_p99")  # per copy, injection to the last flit's delivery
# The soak of tests/cocotb_relay (2x3 EquiMesh, saturation, backpressure); the `soak` command below
# builds the same design, so the compiled model is built once.
SOAK = dict(fanout=3, rate=1.0, seed=5)
# Injection cycles of the soak. The generators create packets at the rate asked for into their source
# queues, and a run ends when the queues have drained: at rate 1.0 the 6 nodes create 240 packets in
# 40 cycles, which the saturated network delivers in 1,014 cycles (60 injection cycles: 360 packets in
# 1,497 cycles; 600: 3,600 packets in 14,300 cycles, on three simulators, for the same comparison).
SOAK_CYCLES = 40


def _soak_traffic():
    topo = build("equimesh", 2, 3)
    return topo, make_traffic(PacketFormat(topo.nodes, 2), "multicast", **SOAK)


def _clean(r):
    assert not r["deadlock"] and r["errors"] == [] and not r.get("sum_mismatch_nodes")
    assert (r["duplicates"], r["lost"], r["corrupted"], r["misdelivered"]) == (0, 0, 0, 0)
    assert r["delivered"] == r["expected"] > 0


@icarus
def test_compiled_soak_equals_icarus_and_amaranth(tmp_path):
    topo, traffic = _soak_traffic()
    table = forwarding_table(topo)
    got = run_compiled(table, traffic, 2, tmp_path / "v", cycles=SOAK_CYCLES, stall=0.2)
    _clean(got)
    assert got["packets"] > 120
    cocotb = run_verilog(table, traffic, 2, tmp_path / "i", mode="soak", cycles=SOAK_CYCLES, stall=0.2)
    assert {k: v for k, v in got.items() if k not in PER_MODEL + LATENCY + ("latency_copies",)} == {
        k: v for k, v in cocotb.items() if k not in PER_MODEL + LATENCY
    }
    ref = simulate(table, traffic, 2, cycles=SOAK_CYCLES, stall=0.2)  # every flit checked in Python
    _clean(ref)
    assert {k: got[k] for k in COPIES + EDGES + LATENCY} == {k: ref[k] for k in COPIES + EDGES + LATENCY}
    assert got["latency_copies"] == ref["delivered"]


def test_an_injection_shorter_than_a_packet_trip_is_no_deadlock(tmp_path):
    """Five injection cycles end before any copy can arrive (a hop alone takes more than 8 cycles,
    test_traffic_cli): a quiet stretch that short is no evidence of a deadlock. The run delivers
    every copy, as on the Amaranth simulator, and says so."""
    topo, traffic = _soak_traffic()
    table = forwarding_table(topo)
    got = run_compiled(table, traffic, 2, tmp_path, cycles=5)
    _clean(got)
    ref = simulate(table, traffic, 2, cycles=5)
    assert {k: got[k] for k in COPIES + EDGES} == {k: ref[k] for k in COPIES + EDGES}


def test_other_traffic_on_the_same_network_reuses_the_compiled_model(tmp_path):
    """The generators' tables, rate, limits and the sinks' stall are loaded at run time: another seed,
    rate, stall or pattern (within the table depth) is not another design. The second run is
    judged on its own ROMs, so a model that ignored the load would fail its verdict."""
    topo, first = _soak_traffic()
    table = forwarding_table(topo)
    fmt = PacketFormat(topo.nodes, 2)
    run_compiled(table, first, 2, tmp_path / "a", cycles=SOAK_CYCLES, stall=0.2)
    other = make_traffic(fmt, "unicast", rate=0.3, seed=9)
    assert other.depth == first.depth and other.roms != first.roms
    again = run_compiled(table, other, 2, tmp_path / "b", cycles=100, stall=0.0)
    assert again["cached"] and again["build_seconds"] == 0
    _clean(again)
    ref = simulate(table, other, 2, cycles=100)
    assert {k: again[k] for k in COPIES + EDGES + LATENCY} == {k: ref[k] for k in COPIES + EDGES + LATENCY}


@icarus
def test_compiled_count_equals_icarus_and_amaranth(tmp_path):
    """Finite traffic: the completion cycle is exact on every backend."""
    topo = build("equimesh", 2, 3)
    table = forwarding_table(topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 2), "allgather-multiwrite", packets=2)
    got = run_compiled(table, traffic, 2, tmp_path / "v")
    _clean(got)
    assert got["expected"] == topo.nodes * (topo.nodes - 1) * 2
    ref = simulate(table, traffic, 2)
    _clean(ref)
    assert {k: got[k] for k in COPIES + EDGES + LATENCY} == {k: ref[k] for k in COPIES + EDGES + LATENCY}
    cocotb = run_verilog(table, traffic, 2, tmp_path / "i", mode="count")
    assert {k: v for k, v in got.items() if k not in PER_MODEL + LATENCY + ("latency_copies",)} == {
        k: v for k, v in cocotb.items() if k not in PER_MODEL + LATENCY
    }


def test_generators_create_packets_at_the_rate_asked_for(tmp_path):
    """Offered load: each generator creates a packet in a cycle with probability ``rate``, whatever the
    network does (a source queue holds what it cannot send yet). 6 nodes x 4000 cycles at 0.05: a
    binomial count of mean 1200 and standard deviation sqrt(1200 x 0.95) = 33.8; the run must land
    within 5 of them (the old LFSR draws, which came in runs, created about half)."""
    topo, _ = _soak_traffic()
    traffic = make_traffic(PacketFormat(topo.nodes, 2), "unicast", rate=0.05, seed=3)
    got = run_compiled(forwarding_table(topo), traffic, 2, tmp_path / "r", cycles=4000)
    _clean(got)
    assert abs(got["created"] - 1200) <= 5 * 33.8
    assert got["packets"] == got["created"]  # every queued packet is sent before the drain ends


def test_every_packet_model_kind_gives_the_same_records(tmp_path, monkeypatch):
    """The tiled model (one compiled tile per port set, the links wired in C++), the flat model and the
    hierarchical one (each router module compiled once) run the same program to the same records:
    counters, copies, cycles and every copy's latency. The mesh has six port sets, so six tile modules."""
    from equimesh.sim import verilator

    topo = build("mesh", 2, 3)
    table = forwarding_table(topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 2), "multicast", fanout=3, rate=0.5, seed=2)
    asked = []
    real = verilator.build_model
    monkeypatch.setattr(verilator, "build_model", lambda *a, **k: asked.append(k["hier_blocks"]) or real(*a, **k))
    runs = {m: run_compiled(table, traffic, 2, tmp_path / m, cycles=300, stall=0.1, model=m) for m in PACKET_MODELS[1:]}
    runs["two threads"] = run_compiled(table, traffic, 2, tmp_path / "t", cycles=300, stall=0.1, threads=2)
    assert asked[0] == [] and sorted(asked[1]) == sorted({packet_router_name(topo.ports(v)) for v in range(topo.nodes)})
    for r in runs.values():
        _clean(r)
    flat = {k: v for k, v in runs["flat"].items() if k not in PER_MODEL}
    assert flat["packets"] > 100
    for m in ("tiled", "hierarchical", "two threads"):
        assert {k: v for k, v in runs[m].items() if k not in PER_MODEL} == flat, m


def test_two_threads_through_a_solo_window_give_one_threads_records(tmp_path):
    """The tiled model's threads time windows of max(64, 16384 // nodes) cycles (``Shares`` in
    sim/tiles.py): the first warms up, the second runs on the threads and the third, a probe, on the
    caller alone, every share in turn. A 2x3 mesh (windows of 2,730 cycles) run for more than three
    windows on two threads so passes through a solo window and back, and its records are one
    thread's, word for word."""
    topo = build("mesh", 2, 3)
    table = forwarding_table(topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 2), "multicast", fanout=3, rate=0.05, seed=3)
    one = run_compiled(table, traffic, 2, tmp_path / "one", cycles=12000, threads=1)
    two = run_compiled(table, traffic, 2, tmp_path / "two", cycles=12000, threads=2)
    _clean(one)
    assert one["completion"] > 3 * 2730 and one["solo_cycles"] == 0
    assert two["solo_cycles"] >= 2730
    assert {k: v for k, v in two.items() if k not in PER_MODEL} == {k: v for k, v in one.items() if k not in PER_MODEL}


def test_the_tiled_model_at_pipeline_1_gives_the_flat_models_records(tmp_path):
    """Pipeline 1: the input buffers' ready and the link registers are registers too, so the tiles may
    be clocked in any order; a 2x2 EquiMesh, one tile module."""
    topo = build("equimesh", 2, 2)
    table = forwarding_table(topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 3), "multicast", fanout=2, rate=0.6, seed=7)
    runs = [
        run_compiled(table, traffic, 3, tmp_path / m, cycles=200, stall=0.2, pipeline=1, model=m)
        for m in ("flat", "tiled")
    ]
    _clean(runs[0])
    assert runs[0]["packets"] > 50
    assert [{k: v for k, v in r.items() if k not in PER_MODEL} for r in runs[1:]] == [
        {k: v for k, v in runs[0].items() if k not in PER_MODEL}
    ]


def test_auto_picks_the_tiled_model_unless_it_cannot_run_the_request():
    assert packet_model("auto", 64, 2, None) == "tiled"
    assert packet_model("auto", 64, 1, None) == "tiled"
    assert packet_model("auto", 16, 0, None) == "flat"  # pipeline 0: combinational paths between routers
    assert packet_model("auto", 16, 2, "vcd") == "flat"  # a waveform: the tiles have no shared trace
    assert packet_model("auto", backends.FLAT_NODES + 1, 0, None) == "hierarchical"
    assert packet_model("flat", 64, 2, None) == "flat"
    with pytest.raises(PacketError, match="pipeline 1 or 2"):
        packet_model("tiled", 16, 0, None)
    with pytest.raises(PacketError, match="waveform"):
        packet_model("tiled", 16, 2, "fst")


def test_auto_threads_one_per_32_nodes_up_to_the_idle_usable_cores(monkeypatch):
    """``--threads auto`` by its definition: one thread per 32 nodes of a tiled model, at least one, at
    most the cores the process may run on that are idle (a core from 0.75 idle on); a whole-top model
    runs on one."""
    import os

    from equimesh.sim import tiles

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(tiles, "idle_cores", lambda: 7.8)
    assert [auto_threads("tiled", n) for n in (16, 63, 64, 95, 96, 256, 1024)] == [1, 1, 2, 2, 3, 8, 8]
    monkeypatch.setattr(tiles, "idle_cores", lambda: 7.7)  # the eighth core 70 % idle: not counted
    assert auto_threads("tiled", 1024) == 7
    assert auto_threads("flat", 1024) == auto_threads("hierarchical", 4096) == 1
    monkeypatch.setattr(tiles, "idle_cores", lambda: 1.6)  # one core idle, one busy elsewhere
    assert auto_threads("tiled", 1024) == 1
    monkeypatch.setattr(tiles, "idle_cores", lambda: 2.75)
    assert auto_threads("tiled", 1024) == 3
    monkeypatch.setattr(tiles, "idle_cores", lambda: 0.2)
    assert auto_threads("tiled", 1024) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    monkeypatch.setattr(tiles, "idle_cores", lambda: 7.8)
    assert auto_threads("tiled", 1024) == 1


@pytest.fixture
def two_reads_of_proc_stat(monkeypatch):
    """Two cores and two reads of ``/proc/stat``'s first line 100 ticks apart, 60 of them idle and 15
    I/O wait: 2 x 75 / 100 = 1.5 idle cores by the counters."""
    import builtins
    import io
    import os

    from equimesh.sim import tiles

    lines = iter(["cpu 100 0 100 400 20 0 0 0 0 0\n", "cpu 115 5 105 460 35 0 0 0 0 0\n"])
    real_open = builtins.open
    monkeypatch.setattr(
        builtins, "open", lambda f, *a, **k: io.StringIO(next(lines)) if f == "/proc/stat" else real_open(f, *a, **k)
    )
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(tiles, "IDLE_SAMPLE", 0.0)
    return tiles


def test_idle_cores_from_the_kernel_counters(monkeypatch, two_reads_of_proc_stat):
    """Idle cores = cores x (idle + iowait ticks) / all ticks between the two reads: 1.5."""
    tiles = two_reads_of_proc_stat
    monkeypatch.setattr(tiles, "CPU_QUOTA", "/nonexistent/cpu.max")  # no quota: the counters alone
    monkeypatch.setattr(tiles, "CPU_QUOTA_V1", "/nonexistent")
    assert tiles.idle_cores() == 1.5


@pytest.mark.parametrize("cpu_max, idle", [("120000 100000\n", 1.2), ("max 100000\n", 1.5), ("400000 100000\n", 1.5)])
def test_idle_cores_at_most_the_cgroup_quota(monkeypatch, tmp_path, two_reads_of_proc_stat, cpu_max, idle):
    """A cgroup v2 quota of 120,000 us per 100,000 us is 1.2 cores: the counters' 1.5 idle cores are
    capped at 1.2; no quota ("max") or a larger one (4 cores) leaves 1.5."""
    tiles = two_reads_of_proc_stat
    quota = tmp_path / "cpu.max"
    quota.write_text(cpu_max)
    monkeypatch.setattr(tiles, "CPU_QUOTA", str(quota))
    assert tiles.idle_cores() == idle


@pytest.mark.parametrize("cfs_quota, idle", [("120000\n", 1.2), ("-1\n", 1.5), ("300000\n", 1.5)])
def test_idle_cores_at_most_the_cgroup_v1_quota(monkeypatch, tmp_path, two_reads_of_proc_stat, cfs_quota, idle):
    """Without a v2 ``cpu.max``, the v1 quota: cfs_quota_us 120,000 over cfs_period_us 100,000 is 1.2
    cores, capping the counters' 1.5; -1 (no quota) or 3 cores leave 1.5."""
    tiles = two_reads_of_proc_stat
    (tmp_path / "cpu.cfs_quota_us").write_text(cfs_quota)
    (tmp_path / "cpu.cfs_period_us").write_text("100000\n")
    monkeypatch.setattr(tiles, "CPU_QUOTA", str(tmp_path / "no-cpu.max"))
    monkeypatch.setattr(tiles, "CPU_QUOTA_V1", str(tmp_path))
    assert tiles.idle_cores() == idle


def test_compiled_mixed_equals_amaranth(tmp_path):
    """The schedule bit for bit with the same launch, drain and cycles; the packets by the checkers."""
    topo = build("equimesh", 2, 3)
    image = compile_schedule(synthesize(topo, 2, "allgather"), 4, topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 3), "multicast", fanout=2, rate=0.1)
    table = forwarding_table(topo)
    run = dict(start_at=60, cycles=200, stall=0.2)
    ref = simulate_mixed(image, table, traffic, 3, **run)
    got = run_mixed_compiled(image, table, traffic, 3, tmp_path, **run)
    s, r = got["schedule"], ref["schedule"]
    assert s["done"] and s["bit_exact"] and s["link_busy_matches_schedule"]
    assert r["drain_cycles"] > 0  # packets were in flight at the request
    for k in ("launched_at", "drain_cycles", "cycles", "expected_cycles", "mismatches", "link_utilization"):
        assert s[k] == r[k], k
    _clean(got["packets"])
    assert {k: got["packets"][k] for k in COPIES + EDGES} == {k: ref["packets"][k] for k in COPIES + EDGES}


def test_soak_command_on_the_compiled_model(capsys):
    argv = [
        "soak",
        "--kind",
        "equimesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--payload-flits",
        "2",
        "--cycles",
        "1500",
        "--stall",
        "0.2",
        "--fanout",
        str(SOAK["fanout"]),
        "--seed",
        str(SOAK["seed"]),
        "--json",
    ]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["backend"] == "verilator" and r["simulator"] == "verilator"
    _clean(r)
    assert main(argv[:-1]) == 0  # the text report: the model's own cycles and rate
    assert f"the model ran {r['completion']} cycles in " in capsys.readouterr().out


def test_a_soak_past_the_old_queue_limit_drains(capsys):
    """At rate 1 an unbounded source queue grew by every refused packet: 10,400 injection cycles on the
    4x4 EquiMesh queued a drain longer than ``DRAIN_LIMIT`` and the soak called it a deadlock. With the
    soak's backlog every source holds at most ``SOAK_BACKLOG`` packets when the injection stops: 16 x 4
    packets, a few thousand flits, drain in a few thousand cycles."""
    from equimesh.sim.traffic import SOAK_BACKLOG

    argv = ["soak", "--kind", "equimesh", "--rows", "4", "--cols", "4", "--payload-flits", "2", "--cycles"]
    assert main([*argv, "20000", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    _clean(r)
    assert 20000 < r["cycles"] < 20000 + 16 * SOAK_BACKLOG * 100
    assert r["packets"] > 1000  # saturated: the sources were not starved


def _verdict(sent, count, key_sum, key_sq_sum, payload_errors=0):
    """Node 0 sends packets 0, 1, 2 to nodes 1 and 3 (keys 0, 1, 2: sum 3, sum of squares 5)."""
    fmt = PacketFormat(6, 2)
    tr = make_traffic(fmt, "multicast", bitmap=0b001010, src=0, packets=3)
    z = [0] * 6
    return soak_verdict(
        fmt,
        tr,
        created=sent,
        sent=sent,
        count=count,
        key_sum=key_sum,
        key_sq_sum=key_sq_sum,
        errors={"header": 0, "payload": payload_errors},
        ejected=6 * fmt.packet_flits,
        cycles=100,
        deadlock=False,
        link_flits=z,
    )


def test_soak_verdict_catches_planted_faults():
    sent = [3, 0, 0, 0, 0, 0]
    good = _verdict(sent, [0, 3, 0, 3, 0, 0], [0, 3, 0, 3, 0, 0], [0, 5, 0, 5, 0, 0])
    assert (good["expected"], good["delivered"], good["duplicates"], good["lost"]) == (6, 6, 0, 0)
    assert good["sum_mismatch_nodes"] == [] and not good["deadlock"]
    dup = _verdict(sent, [0, 4, 0, 3, 0, 0], [0, 4, 0, 3, 0, 0], [0, 6, 0, 5, 0, 0])  # packet 1 twice at node 1
    assert (dup["duplicates"], dup["delivered"]) == (1, 6)
    lost = _verdict(sent, [0, 3, 0, 2, 0, 0], [0, 3, 0, 1, 0, 0], [0, 5, 0, 1, 0, 0])  # packet 2 lost at node 3
    assert (lost["lost"], lost["delivered"]) == (1, 5)
    swap = _verdict(sent, [0, 3, 0, 3, 0, 0], [0, 2, 0, 3, 0, 0], [0, 2, 0, 5, 0, 0])  # packet 1 twice, 2 lost
    assert swap["sum_mismatch_nodes"] == [1] and swap["duplicates"] == swap["lost"] == 0
    bad = _verdict(sent, [0, 3, 0, 3, 0, 0], [0, 3, 0, 3, 0, 0], [0, 5, 0, 5, 0, 0], payload_errors=2)
    assert bad["corrupted"] == 2


def test_soak_verdict_with_bitmaps_wider_than_64_bits():
    """A 100-node network: node 7 sends packets 0..4 from a 2-entry ROM to nodes 3 and 99, then 70
    (keys 7 << 24 | q). Node 99 expects packets 0, 2, 4; node 70 packets 1, 3; node 3 all five."""
    fmt = PacketFormat(100, 2)
    tr = make_traffic(fmt, "multicast", fanout=2, rate=0.5, seed=1)
    tr.roms[7] = [(1 << 3) | (1 << 99), (1 << 3) | (1 << 70)]
    sent = [0] * 100
    sent[7] = 5
    keys = {q: (7 << 24 | q) for q in range(5)}
    count, key_sum, key_sq_sum = [0] * 100, [0] * 100, [0] * 100
    for d, qs in ((3, range(5)), (99, (0, 2, 4)), (70, (1, 3))):
        count[d] = len(qs)
        key_sum[d] = sum(keys[q] for q in qs) % 2**32
        key_sq_sum[d] = sum(keys[q] ** 2 for q in qs) % 2**32
    z = [0] * 10

    def verdict(count, key_sum):
        return soak_verdict(
            fmt,
            tr,
            created=sent,
            sent=sent,
            count=count,
            key_sum=key_sum,
            key_sq_sum=key_sq_sum,
            errors={"header": 0, "payload": 0},
            ejected=10 * fmt.packet_flits,
            cycles=100,
            deadlock=False,
            link_flits=z,
        )

    good = verdict(count, key_sum)
    assert (good["expected"], good["delivered"], good["duplicates"], good["lost"]) == (10, 10, 0, 0)
    assert good["sum_mismatch_nodes"] == [] and not good["deadlock"]
    wrong = verdict(count, key_sum[:99] + [key_sum[99] + 1])  # node 99 got another packet instead of one
    assert wrong["sum_mismatch_nodes"] == [99]
    short = verdict(count[:70] + [1] + count[71:], key_sum)
    assert (short["lost"], short["delivered"]) == (1, 9)


def test_traffic_waveform_on_the_compiled_model(tmp_path, capsys):
    """--vcd on the default backend: a traced model writes the run's waveform; the link counters'
    last values in it add up to the flit-hops the run reports."""
    from vcdvcd import VCDVCD

    vcd = tmp_path / "t.vcd"
    argv = [
        "traffic",
        "--kind",
        "equimesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--pattern",
        "allgather-multiwrite",
        "--packets",
        "2",
        "--payload-flits",
        "2",
        "--vcd",
        str(vcd),
        "--json",
    ]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    _clean(r)
    wave = VCDVCD(str(vcd))
    counters = [name for name in wave.signals if name.startswith("TOP.link_flits__")]
    assert len(counters) == len(build("equimesh", 2, 3).links)
    assert sum(int(wave[name].tv[-1][1], 2) for name in counters) == r["flit_hops"] > 0


def test_a_verilator_without_the_edge_record_is_named_in_one_line(tmp_path, monkeypatch):
    """The harness clears Verilator's record of the clock's last value; a Verilator that keeps it under
    another name stops the build with the way out, before any C++ is compiled."""
    from equimesh.sim import tiled_traffic, tiles
    from equimesh.sim.verilator import VerilatorError

    monkeypatch.setenv("EQUIMESH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(tiles, "EDGE_RECORD", "__Vno_such_record")
    with pytest.raises(VerilatorError, match="keep no __Vno_such_record.*use --model flat"):
        tiled_traffic.build_tiled(forwarding_table(build("equimesh", 2, 2)), 2, 4, 2, 64)


def test_resting_tiles_skip_their_router_clock_and_change_no_record(tmp_path):
    """The tiled model clocks a tile's router domain only while the tile is busy or a flit arrives
    (rtl/packet_tile.py). At a low load with sinks that stall (a refused lane keeps its router busy;
    a full buffer's ``ready`` comes back a cycle after it drains) most router edges are skipped, and the
    records (counters, copies, cycles, every copy's latency) are the flat model's, word for word."""
    topo = build("mesh", 2, 3)
    table = forwarding_table(topo)
    traffic = make_traffic(PacketFormat(topo.nodes, 2), "multicast", fanout=3, rate=0.015, seed=5)
    runs = {
        m: run_compiled(table, traffic, 2, tmp_path / m, cycles=4000, stall=0.3, model=m) for m in ("flat", "tiled")
    }
    _clean(runs["flat"])
    assert runs["flat"]["packets"] > 300 and runs["flat"]["router_clocked"] is None
    assert runs["tiled"]["router_clocked"] < 0.5
    # each network input's domain rests apart: an input is clocked only while it holds or receives a packet
    assert runs["tiled"]["input_clocked"] < runs["tiled"]["router_clocked"]
    assert {k: v for k, v in runs["tiled"].items() if k not in PER_MODEL} == {
        k: v for k, v in runs["flat"].items() if k not in PER_MODEL
    }
