"""Subcommands for OpTree on an optical ring (seed 002): ``optree`` and ``optree-report``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .errors import UsageError, writing
from .schedules import optree as ot
from .sim.analytic import optree_timing as report


def cmd_optree(args) -> int:
    n, w = args.nodes, args.wavelengths
    if n < 2:
        raise UsageError(f"--nodes must be >= 2 (got {n})")
    if w < 1:
        raise UsageError(f"--wavelengths must be >= 1 (got {w})")
    if args.stages is not None and args.stages < 1:
        raise UsageError(f"--stages must be >= 1 (got {args.stages})")
    k_star = ot.k_star(n)
    k = args.stages or k_star
    try:
        radices = ot.best_radices(n, w, k)
    except ot.OpTreeError as e:
        raise UsageError(f"{e}; pass --stages (1 always works)" if args.stages is None else str(e)) from None
    t0 = time.perf_counter()
    sched = ot.build(n, w, radices)
    ot.verify(sched)
    seconds = time.perf_counter() - t0
    steps = report.table1_steps(n, w, k)
    out = {"nodes": n, "wavelengths": w, "k_star": k_star, "stages": k, "steps": steps,
           "wrht_variants": list(ot.wrht_steps(n, w)),
           "radices": list(radices), "stage_steps": sched.stage_steps, "stage_loads": sched.stage_loads,
           "floor_steps": sched.floor_steps, "constructive_steps": sched.num_steps,
           "lightpaths": int(len(sched.src)), "build_verify_seconds": round(seconds, 3)}
    m = round(n ** (1 / k))
    if m ** k == n and k > 1:
        out["proof_stage_steps"] = ot.proof_stage_steps(n, w, m, k)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"OpTree AllGather on an optical ring of N = {n} nodes, w = {w}: k* = {k_star} (Lemma 3), using k = {k}")
    print("  Table 1 formulas: " + ", ".join(f"{a} {v}" for a, v in steps.items())
          + f"  (WRHT with theta: {out['wrht_variants'][1]})")
    if "proof_stage_steps" in out:
        print(f"  Theorem 1's proof with integer m = {m}: stages {out['proof_stage_steps']}, "
              f"total {sum(out['proof_stage_steps'])}")
    print(f"  constructive tree, radices {list(radices)}: stages {sched.stage_steps} = {sched.num_steps} steps "
          f"(per-stage floor ceil(load/w): {sched.floor_steps}), {out['lightpaths']} lightpaths, "
          f"verified in {seconds:.2f} s")
    if sched.num_steps > steps["optree"]:
        print(f"  the integer tree needs {sched.num_steps} steps against Theorem 1's {steps['optree']}: "
              f"the theorem takes the real radix m = N^(1/k) = {n ** (1 / k):.3f}")
    return 0


def cmd_optree_report(args) -> int:
    checks = report.paper_checks()
    lines = [f"# seed 002 printed figures against their formulas ({time.strftime('%Y-%m-%d')})", "",
             "| figure | paper | formula | agrees | note |", "|---|---|---|---|---|"]
    lines += [f"| {c.what} | {c.printed:g} | {c.computed:g} | {'yes' if c.agrees else 'NO'} | {c.note} |"
              for c in checks]
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        with writing(out):
            for p in report.figures(out):
                print(f"wrote {p}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("optree", help="OpTree AllGather on an optical ring (seed 002): step formulas and a "
                                      "verified lightpath schedule")
    p.add_argument("--nodes", type=int, required=True, help="ring nodes N >= 2")
    p.add_argument("--wavelengths", type=int, required=True, help="wavelengths per fiber w >= 1")
    p.add_argument("--stages", type=int, help="tree depth k (default Lemma 3's k*); N must split into k radices >= 2")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_optree)

    p = sub.add_parser("optree-report", help="check seed 002's printed figures against their formulas; "
                                             "with --out also draw Figs. 4-7")
    p.add_argument("--out", help="directory for the Fig. 4-7 PNGs")
    p.set_defaults(func=cmd_optree_report)
