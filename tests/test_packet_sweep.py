"""The BookSim-style synthetic patterns (hand-computed destinations) and ``traffic --sweep``: its load
bookkeeping, its interruption (the finished rates kept), and one small sweep on the compiled model
(the 2x3 EquiMesh model the compiled packet tests build)."""

import json

import pytest

from equimesh.cli import main
from equimesh.rtl.packet import PacketError, PacketFormat
from equimesh.sim.traffic import HOTSPOT_SHARE, make_traffic


def test_transpose_and_bitcomp_destinations():
    fmt = PacketFormat(16, 2)
    tr = make_traffic(fmt, "transpose", rate=0.1, grid=(4, 4))
    assert tr.silent == (0, 5, 10, 15)  # the diagonal would address itself
    assert tr.roms[6] == [1 << 9] and tr.roms[1] == [1 << 4] and tr.roms[14] == [1 << 11]  # (r, c) -> (c, r)
    bc = make_traffic(PacketFormat(6, 2), "bitcomp", rate=0.1)
    assert [r[0].bit_length() - 1 for r in bc.roms] == [5, 4, 3, 2, 1, 0] and bc.silent == ()
    assert make_traffic(PacketFormat(5, 2), "bitcomp", rate=0.1).silent == (2,)
    with pytest.raises(PacketError, match="transpose needs a square network"):
        make_traffic(PacketFormat(8, 2), "transpose", rate=0.1, grid=(2, 4))


def test_hotspot_goes_to_the_centre_or_uniformly():
    fmt = PacketFormat(16, 2)
    tr = make_traffic(fmt, "hotspot", rate=0.1, grid=(4, 4))
    hot = 2 * 4 + 2
    for s, rom in enumerate(tr.roms):
        assert all(b & (b - 1) == 0 and b != 1 << s for b in rom)  # one destination, never the source
    share = sum(b == 1 << hot for s, rom in enumerate(tr.roms) if s != hot for b in rom) / (15 * len(tr.roms[0]))
    # HOTSPOT_SHARE directly, plus the uniform draws that land on the centre (1 in 15)
    assert abs(share - (HOTSPOT_SHARE + (1 - HOTSPOT_SHARE) / 15)) < 0.03


def _fake_run(results):
    calls = []

    def run(backend, table, traffic, payload_flits, build_dir, mode, **kw):
        calls.append((traffic.rate, kw["cycles"], kw["phase"]))
        if len(calls) > len(results):
            raise KeyboardInterrupt
        accepted, mean, p99 = results[len(calls) - 1]
        return {
            "deadlock": False,
            "duplicates": 0,
            "lost": 0,
            "corrupted": 0,
            "misdelivered": 0,
            "delivered": 10,
            "expected": 10,
            "sim_seconds": 0.1,
            "phase": {
                "injected": accepted,
                "accepted": accepted,
                "latency_mean": mean,
                "latency_p99": p99,
                "latency_copies": 10,
            },
        }

    return run, calls


def test_sweep_bookkeeping_and_interruption(monkeypatch, capsys, tmp_path):
    """Two rates finish, the third is interrupted: the two rows are kept, the output says so (exit 130).
    Loads are flits/node/cycle; the generators' rate is load / packet_flits (2 payload + header + bitmap
    word = 4 flits); the run injects for warm-up + measurement cycles."""
    from equimesh import traffic_commands

    run, calls = _fake_run([(0.05, 20.0, 30.0), (0.08, 70.0, 200.0)])
    monkeypatch.setattr(traffic_commands, "packet_run", run)
    plot = tmp_path / "curve.png"
    argv = [
        "traffic",
        "--kind",
        "mesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--pattern",
        "uniform",
        "--payload-flits",
        "2",
        "--sweep",
        "0.05,0.1,0.2",
        "--warmup",
        "100",
        "--cycles",
        "300",
        "--json",
        "--plot",
        str(plot),
    ]
    assert main(argv) == 130
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert [c[0] for c in calls] == [0.05 / 4, 0.1 / 4, 0.2 / 4] and calls[0][1:] == (400, (100, 300))
    assert out["interrupted"] and (out["finished"], out["planned"]) == (2, 3)
    c = out["curves"]["mesh"]
    assert [r["offered"] for r in c["rows"]] == [0.05, 0.1]
    assert c["saturation_throughput"] == 0.08 and c["saturated_at"] == 0.1  # mean 70 > 3 x 20
    assert "sweep interrupted: kept the 2 of 3 rates it finished" in cap.err
    assert plot.stat().st_size > 1000


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--sweep", "0.1,x"], "--sweep entries must be numbers"),
        (["--sweep", "1.5"], "--sweep loads must be in (0, 1]"),
        (["--sweep", "0.1", "--backend", "amaranth"], "--sweep runs on the compiled model"),
        (["--sweep", "0.1", "--pattern", "allgather-unicast"], "--sweep takes a random pattern"),
    ],
)
def test_sweep_bad_input_is_one_line(argv, message, capsys):
    assert main(["traffic", "--rows", "2", "--cols", "3", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_sweep_on_the_compiled_model(capsys):
    """Every copy checked at every rate; at a load far below saturation the network accepts what the
    generators inject (within the randomness of 400 measured cycles) and the latency is at least the
    zero-load latency of one hop (the header, a bitmap word and 2 payload flits: more than 8 cycles,
    test_traffic_cli)."""
    argv = [
        "traffic",
        "--kind",
        "equimesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--pattern",
        "uniform",
        "--payload-flits",
        "2",
        "--sweep",
        "0.02,0.3",
        "--warmup",
        "200",
        "--cycles",
        "400",
        "--json",
    ]
    assert main(argv) == 0
    c = json.loads(capsys.readouterr().out)["curves"]["equimesh"]
    assert all(r["checked"] for r in c["rows"])
    low = c["rows"][0]
    # 0.02 flits/node/cycle of 4-flit packets: 6 x 400 x 0.005 = 12 packets expected in the phase (binomial,
    # sigma sqrt(12) packets = 0.0058 flits/node/cycle); the generators create at the offered load.
    assert abs(low["injected"] - 0.02) <= 4 * 12**0.5 * 4 / 2400
    assert abs(low["accepted"] - low["injected"]) < 0.01 and low["latency_mean"] > 8


def test_bench_packets_on_the_compiled_model(capsys, tmp_path):
    """``bench packets``: one row per thread count with the same run (threads share the nodes, not the
    records), every copy checked, and as many packets as the offered load creates: 0.1 flits/node/cycle
    of 4-flit packets on 6 nodes for 400 cycles is 60 packets expected (binomial, sigma under 8)."""
    out = tmp_path / "packets.md"
    argv = ["bench", "packets", "--sizes", "2x3", "--payload-flits", "2", "--loads", "0.1", "--threads", "1,2"]
    assert main([*argv, "--node-cycles", "2400", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert out.read_text() == text
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| 2x3")]
    assert [r[2].strip() for r in rows] == ["1", "2"]
    assert rows[0][3:6] == rows[1][3:6]  # cycles, packets, latency
    assert all(r[-1].strip() == "yes" for r in rows)
    assert abs(int(rows[0][4]) - 60) <= 4 * 8


def test_bench_packets_beside_booksim(capsys, tmp_path):
    """``bench packets --booksim``: BookSim2 runs the same traffic first, from a configuration of the
    run (hand-derived here for a 2x2 EquiMesh, 2 payload flits: packets of a header, one bitmap flit
    and 2 payload flits, 4 flits; 0.1 flits/node/cycle; 2,400 node-cycles over 4 nodes, 600 cycles),
    and the table adds its speed and ours over it. A stand-in ``booksim`` keeps its configuration and
    prints BookSim's statistics lines; one that prints none stops the bench in one line."""
    keep = tmp_path / "got.cfg"
    fake = tmp_path / "booksim"
    fake.write_text(f'#!/bin/sh\ncp "$1" {keep}\necho "Packet latency average = 12.5"\necho "Total run time 0.01"\n')
    fake.chmod(0o755)
    out = tmp_path / "packets.md"
    argv = ["bench", "packets", "--sizes", "2x2", "--payload-flits", "2", "--loads", "0.1", "--node-cycles", "2400"]
    assert main([*argv, "--booksim", str(fake), "--repeat", "2", "--out", str(out)]) == 0
    got = dict(line.rstrip(";").split(" = ") for line in keep.read_text().splitlines())
    assert {k: got[k] for k in ("topology", "k", "n", "routing_function", "traffic", "packet_size")} == {
        "topology": "mesh",
        "k": "2",
        "n": "2",
        "routing_function": "dor",
        "traffic": "uniform",
        "packet_size": "4",
    }
    assert (got["injection_rate"], got["injection_rate_uses_flits"], got["sample_period"]) == ("0.1", "1", "600")
    text = capsys.readouterr().out
    assert "the fastest of 2 runs" in text and sum(x.startswith("| 2x2") for x in text.splitlines()) == 1
    header = next(line for line in text.splitlines() if line.startswith("| network"))
    assert header.endswith("| BookSim2 cycles/s | x BookSim2 |")
    row = [
        x.strip().replace(",", "") for x in next(x for x in text.splitlines() if x.startswith("| 2x2")).split("|")[1:-1]
    ]
    ours, theirs, ratio = float(row[7]), float(row[9]), float(row[10])
    assert theirs > 0 and abs(ratio - ours / theirs) <= 0.01 * max(1.0, ratio)
    fake.write_text("#!/bin/sh\necho 'Could not open configuration file'\n")
    assert main([*argv, "--booksim", str(fake), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did not finish its run: Could not open configuration file" in err
