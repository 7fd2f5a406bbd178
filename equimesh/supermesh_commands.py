"""Subcommands for the Supermesh analytics of seed 001: ``supermesh topology`` and ``supermesh a2a``."""

from __future__ import annotations

import json

import numpy as np

from .args import CHUNK_FLITS
from .errors import InputError, UsageError
from .schedules import supermesh as sm

__all__ = ["cmd_a2a", "cmd_a2a_rtl", "cmd_topology", "register"]


def cmd_topology(args) -> int:
    """``equimesh supermesh topology``: build SM(m,n,p,x,y) (seed 001) and print its nodes, links,
    global bandwidth (GBW), cuts and hop bound.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh supermesh topology`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    dims = (args.m, args.n, args.p, args.x, args.y)
    try:
        t = sm.supermesh3d(*dims)
        out = {
            "m": args.m,
            "n": args.n,
            "p": args.p,
            "x": args.x,
            "y": args.y,
            "nodes": t.nodes,
            "links": int(len(t.a)),
            "links_formula": sm.links_3d(*dims),
            "gbw": sm.gbw(*dims),
            "cuts": {d: t.cut(i) for i, d in enumerate(("rows", "cols", "planes")) if dims[i] > 1},
            "hops": t.hops(),
        }
    except sm.SupermeshError as e:
        raise UsageError(str(e)) from None
    if args.p == 1:
        out["short_reach_links"] = sm.short_reach_links(args.m, args.n)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    name = f"SM({args.m},{args.n},{args.p},{args.x},{args.y})"
    print(f"{name}: {t.nodes} nodes, {out['links']} links (formula {out['links_formula']}), diameter {out['hops']}")
    print(f"  GBW (slide formula, w(x) = x^2/4): {out['gbw']:g}")
    print(
        "  links across the halving cut, counted: "
        + ", ".join(f"{d} {c}" for d, c in out["cuts"].items())
        + " (odd sizes cut floor/ceil)"
    )
    return 0


def _read_matrix(path: str) -> np.ndarray:
    try:
        text = open(path).read()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file") from None
    try:
        rows = [[float(v) for v in line.replace(",", " ").split()] for line in text.splitlines() if line.strip()]
        return np.array(rows, dtype=float)
    except ValueError:
        raise InputError(f"{path}: not a matrix of numbers (one row per line, comma or space separated)") from None


def cmd_a2a_rtl(args) -> int:
    """DA2A and IA2A of the slide examples that fit SM(4) as schedules on SM(4,4), run on the RTL (seed 001).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh supermesh a2a --rtl`` (backend, chunk flits, ``--json``).

    Returns
    -------
    int
        0 when every run is bit-exact, 1 otherwise.
    """
    from .sim.backends import run_image
    from .sim.supermesh_a2a import run_examples
    from .sim.verilator import VerilatorError
    from .sim.verilog_sim import SimulatorMissing

    try:
        rows = run_examples(4, 4, args.chunk_flits, lambda image, label: run_image(image, args.backend))
    except (VerilatorError, SimulatorMissing) as e:
        raise InputError(str(e)) from None
    ok = all(r[k]["bit_exact"] for r in rows for k in ("da2a", "ia2a"))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0 if ok else 1
    print(
        f"SM(4,4), every row an S(4) running the example, a message of size w = 4w chunks, "
        f"{args.chunk_flits} flits/chunk, {args.backend}"
    )
    print(f"{'example':<12}{'M':>4}{'R+C':>5}  model  cost DA2A/IA2A  steps DA2A/IA2A  cycles DA2A/IA2A  RTL faster")
    for r in rows:
        d, i = r["da2a"], r["ia2a"]
        exact = "" if d["bit_exact"] and i["bit_exact"] else "  NOT BIT-EXACT"
        print(
            f"{r['example']:<12}{r['M']:>4g}{r['R'] + r['C']:>5}  {r['choice']:<5}  "
            f"{r['da2a_cost']:>6g} / {r['ia2a_cost']:<6g}  {d['steps']:>6} / {i['steps']:<6}  "
            f"{d['cycles']:>7} / {i['cycles']:<7}  {r['rtl_faster']}"
            f"{'' if r['agrees'] else ' (model: ' + r['choice'] + ')'}{exact}"
        )
    agree = sum(r["agrees"] for r in rows)
    print(f"the RTL's faster schedule is the model's choice in {agree} of {len(rows)} examples")
    return 0 if ok else 1


def cmd_a2a(args) -> int:
    """``equimesh supermesh a2a``: direct against indirect all-to-all (DA2A, IA2A; seed 001) on SM(m) for a
    message matrix read from a file or one of the slides' examples; with ``--rtl``, both as schedules run
    in the RTL (:func:`cmd_a2a_rtl`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh supermesh a2a`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    if args.rtl:
        return cmd_a2a_rtl(args)
    if args.sync < 0:
        raise UsageError(f"--sync must be >= 0 (got {args.sync})")
    examples = sm.slide_examples()
    if args.matrix:
        msg, name = _read_matrix(args.matrix), args.matrix
    else:
        msg, name = examples[args.example], f"slide example '{args.example}' on S(8)"
    try:
        a = sm.all_to_all(msg, args.sync)
    except sm.SupermeshError as e:
        raise InputError(f"{name}: {e}") from None
    out = {
        "m": a.m,
        "M": a.M,
        "max_r": a.max_r,
        "max_c": a.max_c,
        "R": a.R,
        "C": a.C,
        "choice": a.choice,
        "da2a_cost": a.da2a_cost,
        "ia2a_cost": a.ia2a_cost,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{name}: M = {a.M:g}, MaxR = {a.max_r:g}, MaxC = {a.max_c:g}, R = ceil(MaxR/{a.m}) = {a.R}, "
        f"C = ceil(MaxC/{a.m}) = {a.C}"
    )
    print(f"  M {'<=' if a.choice == 'DA2A' else '>'} R + C = {a.R + a.C}: {a.choice}")
    print(f"  cost model (max link load per round, summed): DA2A {a.da2a_cost:g}, IA2A {a.ia2a_cost:g}")
    return 0


def register(sub) -> None:
    """Add ``equimesh supermesh`` and its verbs ``topology`` and ``a2a``.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser("supermesh", help="Supermesh analytics (seed 001): SM(m,n,p,x,y) links, GBW, hops; DA2A vs IA2A")
    verbs = p.add_subparsers(dest="verb", required=True, parser_class=type(p))
    q = verbs.add_parser("topology", help="generate SM(m,n,p,x,y): nodes, links, GBW, cuts, hop bound")
    q.add_argument("--m", type=int, required=True, help="rows m >= 1 (m >= 2 when n = 1)")
    q.add_argument("--n", type=int, default=1, help="columns n >= 1 (default 1: the 1D SM(m))")
    q.add_argument("--p", type=int, default=1, help="planes p >= 1 (default 1)")
    q.add_argument("--x", type=int, default=0, help="row planes, 0..m (default 0)")
    q.add_argument("--y", type=int, default=0, help="column planes, 0..n (default 0)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_topology)
    q = verbs.add_parser("a2a", help="direct vs indirect all-to-all on SM(m) from a message matrix")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("--matrix", help="text file: m rows of m message sizes (comma or space separated)")
    src.add_argument("--example", choices=sorted(sm.slide_examples()), help="a matrix giving a slide's M, R, C")
    src.add_argument(
        "--rtl",
        action="store_true",
        help="run DA2A and IA2A of every slide example that fits S(4) as schedules on SM(4,4) in the RTL "
        "and set the faster beside the model's choice",
    )
    q.add_argument(
        "--backend",
        choices=("amaranth", "verilator", "icarus"),
        default="amaranth",
        help="with --rtl: the simulator (default amaranth)",
    )
    q.add_argument("--chunk-flits", type=CHUNK_FLITS, default=1, help="with --rtl: flits per chunk F (default 1)")
    q.add_argument("--sync", type=float, default=0.0, help="least cost of one round (default 0)")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_a2a)
