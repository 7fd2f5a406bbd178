"""Subcommands for evaluation at scale: ``evaluate``, ``report``, ``bench eval``."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from .args import CHUNKS, SIDE, count_list, items
from .errors import InputError, UsageError, writing
from .schedules.failures import Disconnected, degrade, parse_fail_links, random_failures
from .schedules.topology import TopologyError, build
from .sim.analytic.alphabeta import LINK_ORDERS, LinkModel
from .sim.analytic.evaluate import (
    ALGORITHMS,
    COLLECTIVES,
    default_sizes,
    evaluate,
    format_size,
    machine,
    parse_size,
    plot_curves,
    run_curve,
    to_json,
)

__all__ = ["add_model_args", "cmd_bench_eval", "cmd_evaluate", "cmd_report", "register"]


def _algorithms(text: str | None, failures: bool, collective: str | None = None) -> list[str]:
    if text is None:
        names = [
            n
            for n, a in ALGORITHMS.items()
            if (a.topology_agnostic or not failures) and (collective is None or collective in a.collectives)
        ]
    else:
        names = items(text, "--algorithms")
    for n in names:
        if n not in ALGORITHMS:
            raise UsageError(f"unknown algorithm {n!r}; expected one of {', '.join(ALGORITHMS)}")
        a = ALGORITHMS[n]
        if collective is not None and collective not in a.collectives:
            raise UsageError(f"algorithm {n!r} schedules {', '.join(a.collectives)} only, not {collective}")
        if failures and not a.topology_agnostic:
            raise UsageError(
                f"algorithm {n!r} has a fixed structure and cannot be resynthesized on a "
                "degraded topology; use a topology-agnostic one ("
                + ", ".join(k for k, v in ALGORITHMS.items() if v.topology_agnostic)
                + ")"
            )
    return names


def _sizes(text: str | None) -> np.ndarray:
    if text is None:
        return default_sizes()
    try:
        return np.array(sorted({parse_size(t) for t in items(text, "--sizes")}))
    except ValueError as e:
        raise UsageError(f"--sizes: {e}") from None


def _chunks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    return count_list(text, "--chunks")


def _model(args) -> LinkModel:
    if not args.alpha >= 0 or not args.bandwidth > 0:
        raise UsageError(f"--alpha must be >= 0 and --bandwidth > 0 (got {args.alpha}, {args.bandwidth})")
    return LinkModel(alpha=args.alpha * 1e-9, bandwidth=args.bandwidth * 1e9)


def cmd_evaluate(args) -> int:
    """``equimesh evaluate``: the effective bandwidth of XTree, MirrorXTree and the baselines across message
    sizes under the alpha-beta link model of seed 000 Table I (seed 003's model), best K per size; with
    ``--fail-links``/``--fail-random`` also the slowdown of each algorithm resynthesized on the degraded topology.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh evaluate`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    failing = args.fail_links is not None or args.fail_random is not None
    names = _algorithms(args.algorithms, failing, args.collective)
    sizes, model, ks = _sizes(args.sizes), _model(args), _chunks(args.chunks)
    curves = evaluate(args.rows, args.cols, args.collective, names, sizes, model, ks, args.link_order)
    out = to_json(args.rows, args.cols, args.collective, curves, model, args.link_order)
    if failing:
        out["failures"] = _failures(args, names, curves, sizes, model, ks)
    if args.plot:
        title = f"{args.collective} on {args.rows}x{args.cols} (alpha {args.alpha:g} ns, {args.bandwidth:g} GB/s)"
        with writing(args.plot):
            plot_curves(curves, title, args.plot)
        out["plot"] = args.plot
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(out)
    return 0


def _failures(args, names, curves, sizes, model, ks) -> list[dict]:
    """Resynthesize every (topology-agnostic) algorithm on its degraded topology; report the slowdown."""
    rows = []
    for name, intact in zip(names, curves):
        topo = intact.topology
        try:
            if args.fail_links is not None:
                failed = parse_fail_links(args.fail_links, topo)
            else:
                failed = random_failures(topo, args.fail_random, args.seed)
            deg = degrade(topo, failed)
        except TopologyError as e:
            raise UsageError(str(e)) from None
        except Disconnected as e:
            raise InputError(f"{name}: {e}") from None
        c = run_curve(
            ALGORITHMS[name], deg, args.collective, sizes, ks or ALGORITHMS[name].chunk_counts, model, args.link_order
        )
        rows.append(
            {
                "algorithm": name,
                "topology": deg.name,
                "failed_links": [list(f) for f in deg.failed],
                "verified": True,
                "effective_bandwidth_GBps": [round(float(x) / 1e9, 6) for x in c.effective_bandwidth],
                "slowdown": [round(float(a / b), 4) for a, b in zip(c.completion, intact.completion)],
            }
        )
    return rows


def _print_table(out: dict) -> None:
    sizes = out["sizes"]
    show = sorted({0, len(sizes) // 2, len(sizes) - 1})
    head = f"{'algorithm':<16} {'topology':<22}" + "".join(f"{format_size(sizes[i]):>10}" for i in show)
    print(f"{out['collective']} on {out['rows']}x{out['cols']}: effective bandwidth (GB/s) per message size per node")
    print(head + f"{'ratio':>8}")
    for r in out["results"]:
        bw = "".join(f"{r['effective_bandwidth_GBps'][i]:>10.2f}" for i in show)
        ratio = f"{r['ratio_vs_best_baseline']:>8.3f}" if "ratio_vs_best_baseline" in r else ""
        print(f"{r['algorithm']:<16} {r['topology']:<22}{bw}{ratio}")
    if out.get("best_baseline"):
        print(f"ratio = effective bandwidth at {format_size(sizes[-1])} / best baseline ({out['best_baseline']})")
    if out.get("ratio_vs_best_baseline") is not None:
        print(f"ratio_vs_best_baseline (proposed): {out['ratio_vs_best_baseline']:.3f}")
    for f in out.get("failures", []):
        print(
            f"{f['algorithm']} on {f['topology']}: verified; slowdown at {format_size(sizes[-1])} "
            f"{f['slowdown'][-1]:.3f}x, at {format_size(sizes[0])} {f['slowdown'][0]:.3f}x"
        )
    if "plot" in out:
        print(f"plot: {out['plot']}")


def cmd_report(args) -> int:
    """``equimesh report``: write the evaluation report (``evaluation.md`` and its figures) under ``--out``
    (:func:`equimesh.sim.analytic.report.write_report`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh report`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    from pathlib import Path

    from .sim.analytic.report import PAGES, write_report

    out = Path(args.out)
    with writing(f"the report under {out}"):
        path = write_report(out, log=lambda msg: print(f"report: {msg}", file=sys.stderr, flush=True))
    print(f"wrote {', '.join(str(path.parent / page) for page in PAGES)} and {out / 'figures'}")
    return 0


def cmd_bench_eval(args) -> int:
    """Time synthesis, verification and simulation of one message size on large meshes.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench eval`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    model = LinkModel()
    try:
        size = np.array([parse_size(args.size)])
    except ValueError as e:
        raise UsageError(f"--size: {e}") from None
    print(f"# equimesh bench eval, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine()}")
    print(f"# one message size ({args.size} per node), alpha-beta model of Table I; K = {args.chunks}")
    print(
        f"{'mesh':<6} {'algorithm':<16} {'collective':<10} {'transfers':>10} {'steps':>6} "
        f"{'synth s':>8} {'verify s':>8} {'sim s':>7} {'GB/s':>8}"
    )
    names = _algorithms(args.algorithms, False)
    for name in names:
        for dim in args.dims:
            algo = ALGORITHMS[name]
            for coll in algo.collectives:
                topo = build(algo.kind, dim, dim)
                c = run_curve(algo, topo, coll, size, [args.chunks], model)
                v = c.by_chunks[args.chunks]
                print(
                    f"{dim}x{dim:<4} {name:<16} {coll:<10} {v['transfers']:>10} {v['steps']:>6} "
                    f"{v['synth_s']:>8.2f} {v['verify_s']:>8.2f} {v['sim_s']:>7.2f} "
                    f"{c.effective_bandwidth[0] / 1e9:>8.2f}",
                    flush=True,
                )
    return 0


def add_model_args(p) -> None:
    """``--alpha`` (per-hop latency, ns) and ``--bandwidth`` (link bandwidth, GB/s): the alpha-beta link model,
    by default seed 000 Table I's 20 ns and 128 GB/s.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    p.add_argument("--alpha", type=float, default=20.0, help="per-hop latency in ns (default 20, Table I)")
    p.add_argument("--bandwidth", type=float, default=128.0, help="link bandwidth in GB/s (default 128, Table I)")


def register(sub, bench) -> None:
    """Add ``evaluate`` and ``report``, and the ``eval`` benchmark.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    p = sub.add_parser(
        "evaluate", help="effective bandwidth of XTree/MirrorXTree and the baselines across message sizes"
    )
    p.add_argument("--rows", type=SIDE, default=8, help="mesh rows (default 8)")
    p.add_argument("--cols", type=SIDE, default=8, help="mesh columns (default 8)")
    p.add_argument("--collective", choices=COLLECTIVES, default="allgather")
    p.add_argument(
        "--sizes", help="message sizes per node, comma-separated, e.g. 1K,1M,1G (default 1KB..1GB, powers of 2)"
    )
    p.add_argument("--algorithms", help="comma-separated, from: " + ", ".join(ALGORITHMS) + " (default: all available)")
    p.add_argument("--chunks", help="chunk counts K to try, best per size (default: each algorithm's own set)")
    add_model_args(p)
    p.add_argument(
        "--link-order",
        choices=LINK_ORDERS,
        default="schedule",
        help="how a link orders its transfers: schedule (as the schedule ROM does; default) or ready "
        "(in the order their data becomes ready, a FIFO per link; slower pure-Python event loop)",
    )
    fail = p.add_mutually_exclusive_group()
    fail.add_argument(
        "--fail-links",
        help="also resynthesize on the topology without these links: U-V (both ways) or U>V, comma-separated",
    )
    fail.add_argument("--fail-random", type=int, help="also resynthesize with this many random directed links failed")
    p.add_argument("--seed", type=int, default=0, help="seed for --fail-random (default 0)")
    p.add_argument("--plot", help="write the effective-bandwidth plot (PNG) here")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "report",
        help="write the evaluation report (Markdown + figures): Figs. 7/8, ratios, "
        "chunk sweep, seed 003 and RTL cross-checks, failures, compare",
    )
    p.add_argument(
        "--out",
        required=True,
        help="directory for evaluation.md and figures/ (a bench-eval.txt found there is quoted in the report)",
    )
    p.set_defaults(func=cmd_report)

    p = bench.add_parser(
        "eval", help="synthesis, verification and alpha-beta evaluation of one size on 16x16 and 32x32"
    )
    p.add_argument("--dims", type=SIDE, nargs="+", default=[16, 32], help="square mesh sizes (default 16 32)")
    p.add_argument(
        "--algorithms",
        default="equimesh-xtree",
        help="comma-separated (default equimesh-xtree); synthesis, verification and simulation are timed separately",
    )
    p.add_argument("--chunks", type=CHUNKS, default=4, help="chunk count K (default 4)")
    p.add_argument("--size", default="1G", help="message size per node (default 1G)")
    p.set_defaults(func=cmd_bench_eval)
