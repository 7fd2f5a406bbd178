"""``equimesh bench alltoall``: the AllToAll cut-bound table of issue 41 (docs/alltoall.md).

For each size and topology kind: the relay schedule's steps, the lower bound and its binding term
(:mod:`.schedules.alltoall`), the efficiency (bound / steps), the ratio of steps and of bound to the
EquiMesh of the same size, the alpha-beta time at large M over seed 003's formula (mesh, torus),
and the synthesis time.
"""

from __future__ import annotations

import time

from .errors import UsageError, print_and_save
from .schedules import alltoall
from .schedules.synth import synthesize
from .schedules.topology import TopologyError, build, parse_sizes
from .schedules.verify import verify
from .sim.analytic.alphabeta import LinkModel, simulate

__all__ = ["register", "cmd_bench_alltoall", "KINDS"]

KINDS = ("mesh", "equimesh", "overflow", "torus", "supermesh")
SEED003 = {"mesh": 4, "torus": 8}  # seed 003, Section 3.6: AllToAll takes (d_max / this) M / BW
LARGE_M = 1e12  # bytes per node: the per-hop alpha is negligible against M / BW


def _seed003(kind: str, sched, rows: int, cols: int) -> str:
    """The alpha-beta completion time at large M over seed 003's formula (mesh and torus only)."""
    if kind not in SEED003:
        return "-"
    model = LinkModel()
    formula = max(rows, cols) / SEED003[kind] * LARGE_M / model.bandwidth
    return f"{simulate(sched, [LARGE_M], model).completion[0] / formula:.4f}"


def _rows(sizes, k):
    """One table row per (size, kind): name, size, K, steps, bound, binding, efficiency, ratios, seconds."""
    rows = []
    for r, c in sizes:
        got = {}
        for kind in KINDS:
            t = build(kind, r, c)
            t0 = time.perf_counter()
            s = synthesize(t, k, "alltoall", "relay", lanes=False)
            sec = time.perf_counter() - t0
            verify(s)
            got[kind] = (s.num_steps, alltoall.lower_bound(t, k), alltoall.binding(t, k), sec, _seed003(kind, s, r, c))
        es, eb = got["equimesh"][:2]
        for kind, (steps, bound, term, sec, ab) in got.items():
            rows.append(
                [
                    kind,
                    f"{r}x{c}",
                    k,
                    steps,
                    bound,
                    term,
                    f"{bound / steps:.3f}",
                    f"{steps / es:.3f}",
                    f"{bound / eb:.3f}",
                    ab,
                    f"{sec:.2f}",
                ]
            )
    return rows


def cmd_bench_alltoall(args) -> int:
    """``equimesh bench alltoall``: per size and topology kind, the AllToAll schedule's steps against the
    cut bound (:func:`equimesh.schedules.alltoall.lower_bound`), its binding term and efficiency, the ratio
    to EquiMesh and, on mesh and torus, the alpha-beta time over seed 003's formula.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench alltoall`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    try:
        sizes = parse_sizes(args.sizes)
    except TopologyError as e:
        raise UsageError(str(e)) from None
    if not sizes:
        raise UsageError("--sizes names no size")
    if args.chunks < 1:
        raise UsageError(f"--chunks must be >= 1 (got {args.chunks})")
    head = [
        "topology",
        "size",
        "K",
        "steps",
        "bound",
        "binding term",
        "efficiency",
        "steps / EquiMesh",
        "bound / EquiMesh",
        "alpha-beta / seed 003",
        "synthesis s",
    ]
    lines = [
        f"equimesh bench alltoall --sizes {args.sizes} --chunks {args.chunks} (relay schedules, links only)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in _rows(sizes, args.chunks):
        lines.append("| " + " | ".join(str(x) for x in row) + " |")
    text = "\n".join(lines) + "\n"
    print_and_save(text, args.out)
    return 0


def register(sub, bench) -> None:
    """Add the ``alltoall`` benchmark (this module adds no top-level command).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    del sub  # this module adds a benchmark only
    p = bench.add_parser("alltoall", help="AllToAll cut-bound table: steps, bound, binding term, ratio to EquiMesh")
    p.add_argument("--sizes", default="8x8,16x16", help="comma-separated RxC (default 8x8,16x16)")
    p.add_argument("--chunks", type=int, default=1, help="chunks per (source, destination) pair K (default 1)")
    p.add_argument("--out", default=None, help="also write the table (Markdown) to this file")
    p.set_defaults(func=cmd_bench_alltoall)
