"""Subcommand ``paper``: docs/paper.md, every figure, table and formula of seeds 000-004 that equimesh covers."""

from __future__ import annotations

import sys
from pathlib import Path

from .args import count_list, size_list
from .errors import writing

__all__ = ["register"]


def cmd_paper(args) -> int:
    from .sim.analytic.paper import write_page

    sizes, chunks = size_list(args.sizes), count_list(args.chunks, "--chunks")
    out = Path(args.out)
    with writing(out):
        write_page(out, sizes, chunks, log=lambda s: print(f"paper: {s}", file=sys.stderr, flush=True))
    print(f"wrote {out} and its figures in {out.parent / 'figures'}")
    return 0


def register(sub) -> None:
    """Add ``equimesh paper``: write docs/paper.md, the seeds' figures, tables and formulas against equimesh.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "paper",
        help="write docs/paper.md: the seeds' figures, tables and formulas against "
        "equimesh, with ratio and status (takes several minutes)",
    )
    p.add_argument(
        "--out",
        default="docs/paper.md",
        help="the page to write (default docs/paper.md); figures go to figures/ beside it",
    )
    p.add_argument(
        "--sizes",
        default="2x3,4x4,8x8,5x11,16x16",
        help="EquiMesh sizes of the Algorithm 2 table (default 2x3,4x4,8x8,5x11,16x16)",
    )
    p.add_argument("--chunks", default="1,4,16", help="K values of the Algorithm 2 table (default 1,4,16)")
    p.set_defaults(func=cmd_paper)
