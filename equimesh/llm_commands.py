"""Subcommand ``llm``: end-to-end LLM forward and backward time on the network (seed 000, Section V-C, Fig. 9)."""

from __future__ import annotations

import json
import sys

from .args import SIDE
from .errors import InputError, UsageError, writing
from .sim.analytic.llm import (
    DEFAULT_MICRO_BATCH,
    DEFAULT_SEQ_LEN,
    MODELS_FILE,
    PROPOSED,
    ModelFileError,
    evaluate_models,
    geomean,
    load_models,
    plot_fig9,
)

__all__ = ["cmd_llm", "register"]


def cmd_llm(args) -> int:
    """``equimesh llm``: the end-to-end forward and backward time of each LLM with sequence and tensor
    parallelism on an R x C array (seed 000 Section V-C, Table I, Fig. 9; :mod:`equimesh.sim.analytic.llm`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh llm`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    if args.seq_len < 1 or args.micro_batch < 1:
        raise UsageError(f"--seq-len and --micro-batch must be >= 1 (got {args.seq_len}, {args.micro_batch})")
    if not 0 < args.mfu <= 1:
        raise UsageError(f"--mfu must be in (0, 1] (got {args.mfu:g})")
    if not 0 <= args.overlap <= 1:
        raise UsageError(f"--overlap must be in [0, 1] (got {args.overlap:g})")
    try:
        models = load_models(args.models_file)
    except ModelFileError as e:
        raise InputError(str(e)) from None
    names = [m.name for m in models]
    if args.model != "all":
        if args.model not in names:
            raise UsageError(f"unknown model {args.model!r}; expected one of: all, {', '.join(names)}")
        models = [m for m in models if m.name == args.model]
    log = (lambda msg: print(f"llm: {msg}", file=sys.stderr, flush=True)) if not args.json else (lambda msg: None)
    results = evaluate_models(
        models, args.rows, args.cols, (args.seq_len,), (args.micro_batch,), log=log, mfu=args.mfu, overlap=args.overlap
    )
    out = {
        "rows": args.rows,
        "cols": args.cols,
        "seq_len": args.seq_len,
        "micro_batch": args.micro_batch,
        "mfu": args.mfu,
        "overlap": args.overlap,
        "proposed": PROPOSED,
        "models": results,
        "geomean_forward_speedup": geomean([r["forward_speedup"] for r in results]),
        "geomean_backward_speedup": geomean([r["backward_speedup"] for r in results]),
    }
    if args.plot:
        with writing(args.plot):
            plot_fig9(
                results,
                args.plot,
                f"SP + TP on {args.rows}x{args.cols}, sequence {args.seq_len}, micro-batch {args.micro_batch}",
            )
        out["plot"] = args.plot
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"SP + TP on {args.rows}x{args.cols}, sequence length {args.seq_len}, micro-batch {args.micro_batch}, "
        f"compute at {args.mfu:g} x Table I's peak, forward overlap {args.overlap:g}: time of all layers (ms)"
    )
    algos = list(results[0]["algorithms"])
    print(f"{'model':<14} {'pass':<9}" + "".join(f"{a:>16}" for a in algos) + f"{'speedup':>9}")
    for r in results:
        for p in ("forward", "backward"):
            times = "".join(f"{r['algorithms'][a][f'{p}_s'] * 1e3:>16.2f}" for a in algos)
            print(f"{r['name']:<14} {p:<9}{times}{r[f'{p}_speedup']:>9.3f}")
    print(
        f"speedup = best mesh baseline / {PROPOSED}; geomean forward {out['geomean_forward_speedup']:.3f}, "
        f"backward {out['geomean_backward_speedup']:.3f} (paper: 1.37 / 1.13)"
    )
    if "plot" in out:
        print(f"plot: {out['plot']}")
    return 0


def register(sub) -> None:
    """Add ``equimesh llm`` (:func:`cmd_llm`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser("llm", help="end-to-end LLM forward/backward time with SP + TP (seed 000, Fig. 9)")
    p.add_argument("--model", default="all", help="a model name from the model file, or all (default)")
    p.add_argument("--models-file", default=str(MODELS_FILE), help="model shapes (JSON; default: the four of Fig. 9)")
    p.add_argument("--rows", type=SIDE, default=8, help="array rows (default 8)")
    p.add_argument("--cols", type=SIDE, default=8, help="array columns (default 8)")
    p.add_argument("--seq-len", type=int, default=DEFAULT_SEQ_LEN, help=f"sequence length (default {DEFAULT_SEQ_LEN})")
    p.add_argument(
        "--micro-batch", type=int, default=DEFAULT_MICRO_BATCH, help=f"micro-batch size (default {DEFAULT_MICRO_BATCH})"
    )
    p.add_argument(
        "--mfu",
        type=float,
        default=1.0,
        help="achieved fraction of Table I's peak MAC rate, (0, 1] (default 1; docs/paper.md: about 0.1 "
        "gives the paper's 1.37x / 1.13x)",
    )
    p.add_argument(
        "--overlap",
        type=float,
        default=0.0,
        help="fraction of a forward block's collectives hidden under its GEMMs, [0, 1] (default 0)",
    )
    p.add_argument("--plot", help="write the Fig. 9 bar plot (PNG) here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_llm)
