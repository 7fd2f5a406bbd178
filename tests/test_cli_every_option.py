"""Every command, every option its ``--help`` lists (issue 37): with one bad value it gives one line on
stderr and a non-zero exit, never a traceback; and every command with ``--json`` runs at a small size
and prints JSON.

The options are read from the parser itself, so a new option without a bad case here fails
:func:`test_every_option_has_a_bad_case`. The bad values are chosen from the help texts' ranges.
Each run is in-process and small (2x2, K = 1, F = 1, the Amaranth simulator).
"""

from __future__ import annotations

import argparse
import json

import pytest

from equimesh.cli import main, make_parser

NOT_A_DIR = "NOTADIR"  # replaced by a path below a regular file: nothing can be written there
MISSING = "MISSING"  # replaced by a path that does not exist


def _commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    out = {}

    def walk(parser, prefix):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and prefix:
            out[tuple(prefix)] = parser
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, prefix + [name])

    walk(make_parser(), [])
    return out


COMMANDS = _commands()


def _options(parser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.option_strings[-1] != "--help"]


S22 = ["--rows", "2", "--cols", "2"]
RUN = [*S22, "--chunks", "1", "--chunk-flits", "1"]
TRAFFIC = [*S22, "--fanout", "2", "--cycles", "50", "--backend", "amaranth"]
# A small valid invocation of each command; a bad case appends one option to it.
BASE = {
    ("topology",): S22,
    ("schedule",): [*S22, "--chunks", "1"],
    ("verify",): ["SCHEDULE"],
    ("bench", "schedules"): ["--kinds", "mesh", "--sizes", "2x2", "--chunks", "1", "--out", "OUTDIR"],
    ("bench", "optimal"): ["--kind", "mesh", "--sizes", "2x2", "--chunks", "1", "--out", "OUTDIR"],
    ("demo",): [*S22, "--chunks", "1", "--out", "OUTDIR"],
    ("evaluate",): S22,
    ("report",): ["--out", "OUTDIR"],
    ("bench", "eval"): ["--dims", "2", "--chunks", "1"],
    ("simulate",): [*RUN, "--backend", "amaranth"],
    ("verilog",): [*RUN, "--out", "OUTDIR"],
    ("compare",): [*RUN, "--kinds", "mesh", "--backend", "amaranth"],
    ("bench", "rtl"): [
        "--sizes",
        "2x2",
        "--backends",
        "amaranth",
        "--chunks",
        "1",
        "--chunk-flits",
        "1",
        "--out",
        "OUTDIR",
    ],
    ("routing",): S22,
    ("traffic",): TRAFFIC,
    ("soak",): TRAFFIC,
    ("mixed",): [*RUN, *TRAFFIC[4:]],
    ("bench", "relay"): ["--sizes", "2x2", "--kinds", "mesh", "--chunks", "1", "--backend", "amaranth"],
    ("bench", "modes"): [
        "--sizes",
        "2x2",
        "--kinds",
        "mesh",
        "--chunks",
        "1",
        "--chunk-flits",
        "1",
        "--out-dir",
        "OUTDIR",
    ],
    ("optree",): ["--nodes", "8", "--wavelengths", "2"],
    ("optree-report",): ["--out", "OUTDIR/o.md"],
    ("supermesh", "topology"): ["--m", "3"],
    ("supermesh", "a2a"): ["--example", "copy"],
    ("llm",): S22,
    ("fpga",): [*RUN, "--kind", "mesh"],
    ("bench", "all"): ["--markdown", "OUTDIR/results.md"],
    ("search", "library"): ["--sizes", "", "--out", "OUTDIR/lib.json"],
    ("search", "split"): ["--out", "OUTDIR/splits.json"],
    ("search", "ringdirs"): ["--sizes", "2x3", "--out", "OUTDIR/dirs.json"],
    ("search", "hamiltonian"): ["--max-side", "2", "--out", "OUTDIR/tiles.json"],
    ("search", "forwarding"): ["--sizes", "2x2"],
    ("bench", "sweep"): [MISSING],
    ("bitmap-overhead",): [],
    ("paper",): ["--out", "OUTDIR/paper.md", "--sizes", "2x3", "--chunks", "1"],
    ("prove",): ["--block", "crossbar"],
    ("sweep",): ["--command", "optree", "--nodes", "16", "--wavelengths", "1", "--store", "OUTDIR/s.db"],
    ("bench", "alltoall"): ["--sizes", "2x2", "--chunks", "1"],
    ("bench", "packets"): ["--sizes", "2x2", "--node-cycles", "400", "--out", "OUTDIR/p.md"],
}

# One bad value per option name, from the ranges the help texts give.
BAD = {
    "--kind": "ring",
    "--kinds": "ring",
    "--rows": "1",
    "--cols": "65",
    "--ring-dirs": "abcd",
    "--chunks": "0",
    "--algorithm": "bogus",
    "--algorithms": "bogus",
    "--collective": "broadcast",
    "--storage": "bogus",
    "--time-limit": "-1",
    "--out": NOT_A_DIR,
    "--sizes": "2x",
    "--solver": "bogus",
    "--alpha": "-1",
    "--bandwidth": "0",
    "--link-order": "bogus",
    "--fail-links": "0-9",
    "--fail-random": "-1",
    "--seed": "x",
    "--plot": NOT_A_DIR,
    "--dims": "1",
    "--size": "x",
    "--depth": "0",
    "--slots": "0",
    "--pipeline": "3",
    "--backend": "modelsim",
    "--backends": "modelsim",
    "--model": "bogus",
    "--models": "bogus",
    "--schedule": MISSING,
    "--vcd": NOT_A_DIR,
    "--tables-dir": NOT_A_DIR,
    "--routing": "bogus",
    "--payload-flits": "0",
    "--fmax-from": MISSING,
    "--clock-mhz": "0",
    "--fanout": "0",
    "--rate": "2",
    "--cycles": "0",
    "--stall": "1.5",
    "--build-dir": NOT_A_DIR,
    "--pattern": "bogus",
    "--packets": "-1",
    "--src": "99",
    "--bitmap": "zz",
    "--dests": "99",
    "--traffic": MISSING,
    "--start-at": "-1",
    "--nodes": "0",
    "--wavelengths": "0",
    "--stages": "0",
    "--m": "0",
    "--n": "0",
    "--p": "0",
    "--x": "-1",
    "--y": "-1",
    "--matrix": MISSING,
    "--example": "bogus",
    "--sync": "-1",
    "--rtl": "2",
    "--models-file": MISSING,
    "--seq-len": "0",
    "--micro-batch": "0",
    "--flit-bits": "0",
    "--chunk-flits": "0",
    "--seeds": "0",
    "--part": "bogus",
    "--package": "bogus",
    "--speed": "0",
    "--out-dir": NOT_A_DIR,
    "--markdown": NOT_A_DIR,
    "--F": "0",
    "--K": "0",
    "--block": "nope",
    "--command": "bogus",
    "--csv": NOT_A_DIR,
    "--results": NOT_A_DIR,
    "--json": NOT_A_DIR,
    "--memory-limit": "0",
    "--mfu": "0",
    "--option": "bogus",
    "--overlap": "2",
    "--payloads": "x",
    "--property": "nope",
    "--radices": "1",
    "--retries": "-1",
    "--scheduler": "tcp://127.0.0.1:9",
    "--store": NOT_A_DIR,
    "--sweep": "x",
    "--table-depth": "0",
    "--timeout": "0",
    "--warmup": "-1",
    "--worker-memory": "bogus",
    "--workers": "0",
    "--threads": "0",
    "--loads": "2",
    "--node-cycles": "0",
    "--booksim": MISSING,
    "--repeat": "0",
    "--p-laser": "x",
    "--p-mod": "x",
    "--p-other": "x",
    "--p-pass": "x",
    "--p-penalty": "x",
    "--p-rx": "x",
    "--p-signal": "x",
    "--p-tx": "x",
    "--add": MISSING,
    "--method": "bogus",
    "--max-side": "1",
    "--first": "2x",
    "--period": "3",
    "--tails": "1x4",
    "--tiles": "16x",
    "--skew": "0:4",
}
# Options that matter only with another one: that one goes with the bad value.
WITH = {
    (("traffic",), "--kinds"): ["--sweep", "0.05"],
    (("traffic",), "--warmup"): ["--sweep", "0.05"],
    (("traffic",), "--plot"): ["--sweep", "0.05"],
    (("verilog",), "--routing"): ["--packets"],
    (("fpga",), "--routing"): ["--packets"],
    (("verilog",), "--payload-flits"): ["--packets"],
    (("fpga",), "--payload-flits"): ["--packets"],
}


def _cases():
    for cmd, parser in COMMANDS.items():
        for a in _options(parser):
            if a.nargs == 0:
                continue
            yield pytest.param(cmd, a.option_strings[-1], id=" ".join(cmd) + a.option_strings[-1])


def _fill(argv, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    sub = {
        NOT_A_DIR: str(blocker / "out"),
        MISSING: str(tmp_path / "missing.json"),
        "OUTDIR": str(tmp_path / "out"),
        "SCHEDULE": str(tmp_path / "s.json"),
    }
    return [sub.get(a, a.replace("OUTDIR", str(tmp_path / "out"))) for a in argv]


def test_every_option_has_a_bad_case():
    names = {a.option_strings[-1] for p in COMMANDS.values() for a in _options(p) if a.nargs != 0}
    assert names <= BAD.keys(), sorted(names - BAD.keys())
    assert set(COMMANDS) == set(BASE)


@pytest.mark.parametrize("cmd,option", list(_cases()))
def test_one_bad_value_is_one_line(capsys, tmp_path, cmd, option):
    argv = _fill([*cmd, *BASE[cmd], *WITH.get((cmd, option), []), option, BAD[option]], tmp_path)
    _one_error_line(capsys, argv)


def _one_error_line(capsys, argv):
    """Non-zero exit; stderr ends in the one ``equimesh: `` line (progress lines may come before it)."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0, argv
    lines = err.splitlines()
    assert err.endswith("\n") and lines[-1].startswith("equimesh: "), (argv, err)
    assert sum(l.startswith("equimesh: ") for l in lines) == 1 and "Traceback" not in err, (argv, err)


def test_verify_a_missing_file(capsys, tmp_path):
    _one_error_line(capsys, ["verify", str(tmp_path / "missing.json")])


# Every command with --json at a small size; fpga runs yosys and nextpnr (tens of seconds cold), and its
# --json is run and parsed by tests/test_fpga.py::test_smallest_router_really_synthesizes_places_and_routes.
JSON_ELSEWHERE = {("fpga",)}


def _json_commands():
    return [
        c for c, p in COMMANDS.items() if any(a.option_strings[-1] == "--json" and a.nargs == 0 for a in _options(p))
    ]


def test_the_json_commands_are_the_expected_ones():
    """Written from the --help texts: a new --json command must join the run below."""
    assert {" ".join(c) for c in _json_commands()} == {
        "topology",
        "schedule",
        "evaluate",
        "simulate",
        "compare",
        "routing",
        "traffic",
        "bench relay",
        "mixed",
        "soak",
        "optree",
        "supermesh topology",
        "supermesh a2a",
        "llm",
        "fpga",
        "bitmap-overhead",
    }


@pytest.mark.parametrize("cmd", [c for c in _json_commands() if c not in JSON_ELSEWHERE], ids=" ".join)
@pytest.mark.parametrize("kind", ["mesh", "equimesh"])
def test_json_output_parses(capsys, tmp_path, cmd, kind):
    argv = _fill([*cmd, *BASE[cmd], "--json"], tmp_path)
    if "--rows" in BASE[cmd] and cmd != ("compare",) and cmd != ("evaluate",) and cmd != ("llm",):
        argv += ["--kind", kind]
    elif kind != "mesh":
        pytest.skip("the command takes no --kind")
    assert main(argv) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, (dict, list)) and out
