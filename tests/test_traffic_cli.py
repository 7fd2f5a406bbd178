"""The traffic/soak/routing commands: results, and one clear line with a non-zero exit for bad input."""

import json

from equimesh.cli import main
from equimesh.schedules.routing import xy_table
from equimesh.schedules.topology import build


def _fails(capsys, argv, code, text):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert text in err and err.count("\n") == 1 and "Traceback" not in err


def test_explicit_multicast_json(capsys):
    argv = [
        "traffic",
        "--kind",
        "equimesh",
        "--rows",
        "2",
        "--cols",
        "3",
        "--src",
        "4",
        "--dests",
        "0,2,5",
        "--packets",
        "3",
        "--payload-flits",
        "2",
        "--backend",
        "amaranth",
        "--json",
    ]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["packets"], r["expected"], r["delivered"], r["duplicates"], r["lost"]) == (3, 9, 9, 0, 0)
    for key in ("corrupted", "deadlock", "cycles", "flit_hops", "link_utilization", "latency_mean", "latency_p99"):
        assert key in r


def test_pipeline_latency_model(capsys):
    """One packet, no contention, XY on the 2x3 mesh from node 0 to node 5: 3 hops (0 -> 1 -> 2 -> 5).
    Latency counts from the cycle the source router takes the header to the cycle node 5 takes the last
    flit. The packet is the header, one bitmap word (6 nodes) and 2 payload flits. Per relay, by hand:
    the relay takes the header and the bitmap word one a cycle (its parse stage) and presents the
    header in the cycle after the word (rtl/relay.py); at a network input the input buffer (a memory
    read without a clock) presents a flit written in cycle t at t + 1. With pipeline 0 the header
    leaves in the cycle it is presented: the source's relay presents it in 2, and each hop adds
    1 + 2 = 3 (buffer, parse), so node 5's lane takes the header in 2 + 3 x 3 = 11 and the last of the
    3 flits behind it in 14. With pipeline 1 the header waits in stages Q, A and G (3 cycles) after
    it is presented and leaves through the output's link register (1): 2 + 3 + 1 = 6 to the link at
    the source, 1 + 2 + 3 + 1 = 7 per hop at nodes 1 and 2, 1 + 2 + 3 = 6 at node 5 into its lane:
    6 + 14 + 6 = 26, the last flit in 29. Pipeline 2 deepens only the schedule path: its packets take
    pipeline 1's 29."""
    for pipeline, latency in ((0, 14), (1, 29), (2, 29)):
        argv = [
            "traffic",
            "--kind",
            "mesh",
            "--rows",
            "2",
            "--cols",
            "3",
            "--routing",
            "xy",
            "--src",
            "0",
            "--dests",
            "5",
            "--packets",
            "1",
            "--payload-flits",
            "2",
            "--backend",
            "amaranth",
            "--pipeline",
            str(pipeline),
            "--json",
        ]
        assert main(argv) == 0
        r = json.loads(capsys.readouterr().out)
        assert (r["pipeline"], r["delivered"], r["latency_mean"]) == (pipeline, 1, latency)


def test_bad_input_is_one_line(capsys, tmp_path):
    base = ["traffic", "--kind", "equimesh", "--rows", "4", "--cols", "4"]
    _fails(capsys, base + ["--src", "0", "--bitmap", "0x10002"], 2, "wider than the network")
    _fails(capsys, base + ["--src", "0", "--dests", "3,17"], 2, "destination 17 does not exist")
    _fails(capsys, base + ["--src", "16", "--dests", "3"], 2, "source node 16 does not exist")
    _fails(capsys, base + ["--src", "3", "--dests", "3"], 2, "own packet")
    _fails(capsys, base + ["--fanout", "16"], 2, "--fanout must be 1..15")
    _fails(capsys, base + ["--rate", "0"], 2, "--rate")
    _fails(capsys, base + ["--rate", "0.00001"], 2, "below the generators' resolution of 2**-16")
    _fails(capsys, base + ["--src", "0", "--dests", "1", "--packets", "-3"], 2, "--packets must be 1..4294967294")
    _fails(capsys, base + ["--src", "0", "--dests", "1", "--packets", str(2**32)], 2, "--packets must be 1..")
    _fails(
        capsys,
        base + ["--pattern", "allgather-unicast", "--packets", "300"],
        2,
        "needs 4500 table entries per generator; they hold at most 4096 (use --packets 273 or fewer)",
    )
    _fails(capsys, ["soak"] + base[1:] + ["--pipeline", "3"], 2, "--pipeline: invalid choice: 3")
    t = xy_table(build("mesh", 2, 2))
    t.ports[0][3], t.ports[1][2], t.ports[3][0], t.ports[2][1] = "E", "S", "W", "N"
    path = tmp_path / "cyclic.json"
    path.write_text(json.dumps(t.to_json()))
    _fails(
        capsys,
        ["traffic", "--kind", "mesh", "--rows", "2", "--cols", "2", "--routing", str(path)],
        1,
        "channel dependency cycle",
    )
    _fails(
        capsys,
        ["routing", "--kind", "mesh", "--rows", "2", "--cols", "2", "--routing", str(path)],
        1,
        "channel dependency cycle",
    )
    _fails(capsys, ["routing", "--routing", str(tmp_path / "missing.json")], 1, "missing.json: no such file")


def test_traffic_file_gives_each_source_its_packets_in_order():
    """A traffic file's packets, by the format's definition (docs/packets.md): source 0 sends to {5}
    then {1, 2, 4}; source 3 to bitmap 0x21 = {0, 5}; nobody else sends. Tables are padded to one length
    (the generators' rule) and the counts stop each source after its own packets."""
    from equimesh.rtl.packet import PacketFormat
    from equimesh.sim.traffic import read_traffic

    text = json.dumps(
        {"packets": [{"src": 0, "dests": [5]}, {"src": 3, "bitmap": "0x21"}, {"src": 0, "dests": [1, 2, 4]}]}
    )
    t = read_traffic(PacketFormat(6, 2), text, "t.json", rate=0.5)
    assert t.counts == [2, 0, 0, 1, 0, 0] and t.rate == 0.5
    assert [t.bitmap(0, q) for q in range(2)] == [0b100000, 0b010110]
    assert t.bitmap(3, 0) == 0b100001
    assert {len(rom) for rom in t.roms} == {2}


def test_traffic_file_bad_packets_are_one_line(capsys, tmp_path):
    base = ["traffic", "--kind", "equimesh", "--rows", "2", "--cols", "3", "--backend", "amaranth"]
    cases = [
        (
            '{"packets": [{"src": 0, "dests": [1]}, {"src": 2, "dests": [2]}]}',
            "packet 1: node 2 cannot be a destination",
        ),
        ('{"packets": [{"src": 6, "dests": [1]}]}', "packet 0: source node 6 does not exist"),
        ('{"packets": [{"src": 0, "dests": [7]}]}', "packet 0: destination 7 does not exist"),
        ('{"packets": [{"src": 0, "bitmap": "0x40"}]}', "packet 0: bitmap 0x40 is wider than the network"),
        ('{"packets": [{"src": 0, "dests": []}]}', "packet 0: a packet needs at least one destination"),
        ('{"packets": [{"src": 0, "bitmap": "0"}]}', "packet 0: a packet needs at least one destination"),
        ('{"packets": [{"src": 0, "dests": [1], "bitmap": "0x2"}]}', "packet 0: give dests or bitmap"),
        ('{"packets": [{"dests": [1]}]}', "packet 0: expected"),
        ('{"packets": []}', "at least one packet"),
        ("[1, 2", "not JSON"),
    ]
    for i, (text, message) in enumerate(cases):
        f = tmp_path / f"t{i}.json"
        f.write_text(text)
        _fails(capsys, base + ["--traffic", str(f)], 2, message)
    _fails(capsys, base + ["--traffic", str(tmp_path / "missing.json")], 2, "cannot read traffic file")
    _fails(capsys, base + ["--traffic", str(f), "--src", "0"], 2, "--traffic gives every packet")
