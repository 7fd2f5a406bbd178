"""Subcommands for OpTree on an optical ring (seed 002): ``optree`` and ``optree-report``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .errors import UsageError, writing
from .schedules import optree as ot
from .schedules import optree_optics as op
from .sim.analytic import optree_timing as report

__all__ = ["cmd_optree", "cmd_optree_report", "register"]


def _radices(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--radices must be comma-separated integers (got {text!r})") from None


def cmd_optree(args) -> int:
    """``equimesh optree``: OpTree AllGather on an optical ring of N nodes and w wavelengths (seed 002):
    the step formulas (Section IV-A, Table 1, Theorem 1, Lemma 3's k*), a verified lightpath schedule, optionally
    the torus extension (Section VI) and, for the optical parameters given, Eqs. 4-9 (losses, power, crosstalk, SNR, BER).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh optree`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    n, w = args.nodes, args.wavelengths
    if n < 2:
        raise UsageError(f"--nodes must be >= 2 (got {n})")
    if w < 1:
        raise UsageError(f"--wavelengths must be >= 1 (got {w})")
    if args.stages is not None and args.stages < 1:
        raise UsageError(f"--stages must be >= 1 (got {args.stages})")
    k_star = ot.k_star(n)
    k = len(args.radices) if args.radices else (args.stages or k_star)
    try:
        if args.radices:
            op.check_radices(n, tuple(args.radices))
            radices = tuple(args.radices)
        else:
            radices = ot.best_radices(n, w, k)
    except ot.OpTreeError as e:
        raise UsageError(
            f"{e}; pass --stages (1 always works)" if args.stages is None and not args.radices else str(e)
        ) from None
    t0 = time.perf_counter()
    sched = ot.build(n, w, radices)
    ot.verify(sched)
    seconds = time.perf_counter() - t0
    steps = report.table1_steps(n, w, k)
    out = {
        "nodes": n,
        "wavelengths": w,
        "k_star": k_star,
        "stages": k,
        "steps": steps,
        "wrht_variants": list(ot.wrht_steps(n, w)),
        "radices": list(radices),
        "stage_steps": sched.stage_steps,
        "stage_loads": sched.stage_loads,
        "floor_steps": sched.floor_steps,
        "constructive_steps": sched.num_steps,
        "lightpaths": int(len(sched.src)),
        "build_verify_seconds": round(seconds, 3),
    }
    m = round(n ** (1 / k))
    if m**k == n and k > 1:
        out["proof_stage_steps"] = ot.proof_stage_steps(n, w, m, k)
    out["optics"] = _optics(args, n, k, sched)
    if args.torus:
        out["torus"] = op.torus_steps(n, w, k)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"OpTree AllGather on an optical ring of N = {n} nodes, w = {w}: k* = {k_star} (Lemma 3), using k = {k}")
    print(
        "  Table 1 formulas: "
        + ", ".join(f"{a} {v}" for a, v in steps.items())
        + f"  (WRHT with theta: {out['wrht_variants'][1]})"
    )
    if "proof_stage_steps" in out:
        print(
            f"  Theorem 1's proof with integer m = {m}: stages {out['proof_stage_steps']}, "
            f"total {sum(out['proof_stage_steps'])}"
        )
    print(
        f"  constructive tree, radices {list(radices)}: stages {sched.stage_steps} = {sched.num_steps} steps "
        f"(per-stage floor ceil(load/w): {sched.floor_steps}), {out['lightpaths']} lightpaths, "
        f"verified in {seconds:.2f} s"
    )
    if sched.num_steps > steps["optree"]:
        print(
            f"  the integer tree needs {sched.num_steps} steps against Theorem 1's {steps['optree']}: "
            f"the theorem takes the real radix m = N^(1/k) = {n ** (1 / k):.3f}"
        )
    _print_extras(out, n)
    return 0


def _optics(args, n: int, k: int, sched) -> dict:
    """Eqs. 4-9 of seed 002 for the parameters given (each group only when all of its parameters are)."""
    try:
        lm = op.l_max(n, k)
        out = {"l_max_eq4": lm, "built_longest_path_nodes": op.built_path_nodes(sched)}
        if args.p_mod is not None and args.p_pass is not None:
            out["insertion_loss_db_eq5"] = op.insertion_loss(lm, args.p_mod, args.p_pass)
            if args.p_laser is not None and args.p_penalty is not None:
                out["power_ok_eq6"] = op.power_ok(out["insertion_loss_db_eq5"], args.p_laser, args.p_penalty)
        if None not in (args.p_rx, args.p_tx, args.p_signal, args.p_other):
            out["crosstalk_eq8"] = op.crosstalk_power(lm, args.p_rx, args.p_tx)
            out["snr_db_eq7"] = op.snr_db(args.p_signal, out["crosstalk_eq8"], args.p_other)
            out["ber_eq9"] = op.ber(out["snr_db_eq7"], snr_in_db=args.snr_in_db)
            out["reliable"] = out["ber_eq9"] < op.BER_LIMIT
    except ot.OpTreeError as e:
        raise UsageError(str(e)) from None
    return out


def _print_extras(out: dict, n: int) -> None:
    o = out["optics"]
    print(
        f"  Eq. 4: L_max = {o['l_max_eq4']:.1f} nodes (the built tree's longest lightpath: "
        f"{o['built_longest_path_nodes']} nodes, both fibers used)"
    )
    if "insertion_loss_db_eq5" in o:
        print(
            f"  Eq. 5: insertion loss {o['insertion_loss_db_eq5']:.2f} dB"
            + (f"; Eq. 6 power budget {'met' if o['power_ok_eq6'] else 'NOT met'}" if "power_ok_eq6" in o else "")
        )
    if "ber_eq9" in o:
        print(
            f"  Eqs. 7-9: crosstalk {o['crosstalk_eq8']:.4g}, SNR {o['snr_db_eq7']:.2f} dB, BER {o['ber_eq9']:.3g} "
            f"({'reliable' if o['reliable'] else 'NOT reliable'}: limit {op.BER_LIMIT:g})"
        )
    if "torus" in out:
        t = out["torus"]
        print(
            f"  torus {n}x{n} (Section VI, rows then columns): Theorem 1 {t['row_steps']} + {t['column_steps']} = "
            f"{t['theorem1_total']} steps, constructive {t['constructive_total']}; time "
            f"{t['time_in_d_over_B']} d/B + {t['time_steps_alpha']} a (column items are {n} d)"
        )


def cmd_optree_report(args) -> int:
    """``equimesh optree-report``: seed 002's printed figures against their formulas, as a Markdown table;
    with ``--out`` also Figs. 4-7 as PNGs.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh optree-report`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    checks = report.paper_checks()
    lines = [
        f"# seed 002 printed figures against their formulas ({time.strftime('%Y-%m-%d')})",
        "",
        "| figure | paper | formula | agrees | note |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.what} | {c.printed:g} | {c.computed:g} | {'yes' if c.agrees else 'NO'} | {c.note} |" for c in checks
    ]
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        with writing(out):
            for p in report.figures(out):
                print(f"wrote {p}")
    return 0


def register(sub) -> None:
    """Add ``optree`` and ``optree-report``.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "optree", help="OpTree AllGather on an optical ring (seed 002): step formulas and a verified lightpath schedule"
    )
    p.add_argument("--nodes", type=int, required=True, help="ring nodes N >= 2")
    p.add_argument("--wavelengths", type=int, required=True, help="wavelengths per fiber w >= 1")
    p.add_argument("--stages", type=int, help="tree depth k (default Lemma 3's k*); N must split into k radices >= 2")
    p.add_argument(
        "--radices",
        type=_radices,
        help="comma-separated tree radices (each >= 2, dividing N level by "
        "level); default: the best split into --stages radices",
    )
    p.add_argument("--torus", action="store_true", help="also the torus extension (Section VI) on an N x N torus")
    for name, unit, what in (
        ("p-mod", "dB", "modulator loss P_m (Eq. 5)"),
        ("p-pass", "dB", "loss per passed node P_pass (Eq. 5)"),
        ("p-laser", "dBm", "laser power P_laser (Eq. 6)"),
        ("p-penalty", "dB", "extinction-ratio power penalty P_p (Eq. 6)"),
        ("p-rx", "mW", "worst Rx crosstalk per node P_Rx (Eq. 8)"),
        ("p-tx", "mW", "worst Tx crosstalk P_Tx (Eq. 8)"),
        ("p-signal", "mW", "signal power P_S (Eq. 7)"),
        ("p-other", "mW", "other noise P_O (Eq. 7)"),
    ):
        p.add_argument(f"--{name}", type=float, help=f"{what}, {unit}")
    p.add_argument(
        "--snr-in-db", action="store_true", help="Eq. 9 with Eq. 7's dB value as printed (default: the linear ratio)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_optree)

    p = sub.add_parser(
        "optree-report", help="check seed 002's printed figures against their formulas; with --out also draw Figs. 4-7"
    )
    p.add_argument("--out", help="directory for the Fig. 4-7 PNGs")
    p.set_defaults(func=cmd_optree_report)
