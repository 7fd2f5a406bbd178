"""The ``equimesh`` command line: one subcommand per user verb."""

from __future__ import annotations

import argparse
import sys

from .errors import InputError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's usage errors: one line, exit 2
        sub = self.prog.removeprefix("equimesh").strip()  # main() prefixes "equimesh: " itself
        raise UsageError(f"{sub}: {message}" if sub else message)


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="equimesh", description="EquiMesh / XTree collective networks: topologies, schedules, RTL, simulation.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    bench = sub.add_parser("bench", help="benchmarks: print their tables and save them under bench/ "
                                         "(schedules, optimal, rtl, eval, relay, modes)")
    benches = bench.add_subparsers(dest="bench", required=True, parser_class=_Parser)
    # each command module adds its own subcommands, and its benchmarks under `bench`
    from . import (
        commands,
        eval_commands,
        fpga_commands,
        llm_commands,
        optree_commands,
        rtl_commands,
        search_commands,
        supermesh_commands,
        traffic_commands,
    )
    for module in (commands, eval_commands, rtl_commands, traffic_commands):
        module.register(sub, benches)
    for module in (optree_commands, supermesh_commands, llm_commands, fpga_commands, search_commands):
        module.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = make_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except (UsageError, InputError) as e:
        print(f"equimesh: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("equimesh: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
