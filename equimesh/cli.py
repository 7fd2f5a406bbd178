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
    # --- subcommand registration: each module adds its own subcommands ---
    from .commands import register as register_core
    register_core(sub)
    from .eval_commands import register as register_eval; register_eval(sub)
    from .rtl_commands import register as register_rtl; register_rtl(sub)
    from .traffic_commands import register as register_traffic; register_traffic(sub)
    from .optree_commands import register as register_optree; register_optree(sub)
    from .supermesh_commands import register as register_supermesh; register_supermesh(sub)
    from .llm_commands import register as register_llm; register_llm(sub)
    from .fpga_commands import register as register_fpga; register_fpga(sub)
    from .prove_commands import register as register_prove; register_prove(sub)
    # --- end of registration ---
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
