"""The ``equimesh`` command line: one subcommand per user verb."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import InputError, UsageError, writing

__all__ = ["RESULTS", "cmd_bench_all", "main", "make_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's usage errors: one line, exit 2
        sub = self.prog.removeprefix("equimesh").strip()  # main() prefixes "equimesh: " itself
        raise UsageError(f"{sub}: {message}" if sub else message)


def make_parser() -> argparse.ArgumentParser:
    """The ``equimesh`` parser: every command module registers its subcommands, and its benchmarks under
    ``equimesh bench``; ``bench all`` runs :data:`RESULTS`.

    Returns
    -------
    argparse.ArgumentParser
        The parser; a usage error raises :class:`UsageError` (one line, exit 2) instead of exiting.
    """
    p = _Parser(
        prog="equimesh", description="EquiMesh / XTree collective networks: topologies, schedules, RTL, simulation."
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    bench = sub.add_parser(
        "bench",
        help="benchmarks: print their tables and save them under bench/ (schedules, optimal, rtl, eval, relay, modes)",
    )
    benches = bench.add_subparsers(dest="bench", required=True, parser_class=_Parser)
    # each command module adds its own subcommands, and its benchmarks under `bench`
    from . import (
        alltoall_commands,
        commands,
        eval_commands,
        fpga_commands,
        llm_commands,
        optree_commands,
        packet_commands,
        paper_commands,
        prove_commands,
        rtl_commands,
        search_commands,
        supermesh_commands,
        sweep_commands,
        traffic_commands,
    )

    for module in (commands, eval_commands, rtl_commands, traffic_commands, alltoall_commands, sweep_commands):
        module.register(sub, benches)
    for module in (
        packet_commands,
        optree_commands,
        supermesh_commands,
        llm_commands,
        fpga_commands,
        search_commands,
        prove_commands,
        paper_commands,
    ):
        module.register(sub)
    q = benches.add_parser("all", help="run the results plan (RESULTS) and write its tables as one Markdown page")
    q.add_argument("--markdown", default="bench/results.md", help="the page to write (default bench/results.md)")
    q.set_defaults(func=cmd_bench_all)
    return p


_EVERY_SIZE = ",".join(f"{r}x{c}" for r in range(2, 17) for c in range(2, 17)) + ",32x32"
# The benchmark runs of `equimesh bench all`, each a title and the command's arguments: their timing tables
# on one page (bench/results.md). docs/results.md comes from the sweep plan plans/results.toml (`make results`).
RESULTS = (
    (
        "Lane-rule AllGather at every size 2..16 and 32x32, K = 4 and 8",
        [
            "bench",
            "schedules",
            "--kinds",
            "equimesh",
            "--sizes",
            _EVERY_SIZE,
            "--chunks",
            "4,8",
            "--algorithms",
            "auto",
            "--lanes",
            "--summary",
            "--out",
            "bench/schedules-allgather.md",
        ],
    ),
    (
        "Lane-rule AllReduce at every size 2..16 and 32x32, K = 4 and 8",
        [
            "bench",
            "schedules",
            "--kinds",
            "equimesh",
            "--sizes",
            _EVERY_SIZE,
            "--chunks",
            "4,8",
            "--algorithms",
            "auto",
            "--lanes",
            "--summary",
            "--collective",
            "allreduce",
            "--out",
            "bench/schedules-allreduce.md",
        ],
    ),
    ("Schedule methods per topology", ["bench", "schedules"]),
    ("XTree against the proven optimum", ["bench", "optimal"]),
    ("RTL simulation speed", ["bench", "rtl"]),
    ("Packet simulation speed", ["bench", "packets", "--threads", "1,2"]),
    ("Alpha-beta evaluation at scale", ["bench", "eval"]),
    ("AllGather by MultiWrite packets, unicasts and schedules", ["bench", "relay"]),
    ("Cells per router: schedules, packets, both", ["bench", "modes"]),
)


def cmd_bench_all(args) -> int:
    """Run every entry of ``RESULTS`` and write their output, with the command and time of each, to one page.

    Parameters
    ----------
    args : argparse.Namespace
        ``markdown``: the page to write (``docs/results.md`` by default).

    Returns
    -------
    int
        The exit status: 0, or 1 when any benchmark exited non-zero.
    """
    import contextlib
    import io
    import os
    import platform
    import time

    parts = [
        f"# Benchmarks\n\nWritten by `equimesh bench all --markdown {args.markdown}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. Every table below was measured in that run; timings are of "
        f"this machine under its load at the time, so compare ratios within a table.\n"
    ]
    with writing(args.markdown):
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    failed = 0
    for title, argv in RESULTS:
        print(f"equimesh {' '.join(argv[:2])} ...", file=sys.stderr, flush=True)
        out = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = main(argv)
        failed += code != 0
        command = "equimesh " + " ".join(a if len(a) < 60 else "SIZES" for a in argv)
        parts.append(
            f"## {title}\n\n`{command}` (exit {code}, {time.perf_counter() - t0:.0f} s"
            + (", SIZES = every R x C with 2 <= R, C <= 16, and 32x32" if "SIZES" in command else "")
            + f")\n\n{out.getvalue().strip()}\n"
        )
    with writing(args.markdown):
        Path(args.markdown).write_text("\n".join(parts))
    print(f"wrote {args.markdown}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Run one ``equimesh`` command; bad input is one line on stderr and a non-zero exit, never a traceback
    (``equimesh/errors.py``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``equimesh``; by default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: the command's, 2 for a usage error, 1 for bad input, 3 when the RTL broke one of
        its assertions on the Amaranth simulator, 130 when interrupted.
    """
    try:
        args = make_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except (UsageError, InputError) as e:
        print(f"equimesh: {e}", file=sys.stderr)
        return e.exit_code
    except AssertionError as e:
        from .sim.harness import RtlAssertionFailed  # imported only here: it loads the simulator

        if not isinstance(e, RtlAssertionFailed):
            raise
        print(f"equimesh: {e}", file=sys.stderr)  # a bug in the hardware, found by its own assertion
        return 3
    except KeyboardInterrupt:
        print("equimesh: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
