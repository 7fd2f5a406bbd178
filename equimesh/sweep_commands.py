"""``equimesh sweep``: design-space sweeps on Dask with a resumable SQLite store (sim/sweep,
docs/sweeps.md)."""

from __future__ import annotations

import sys
import time
from importlib.util import find_spec
from pathlib import Path

from .errors import InputError, UsageError, writing
from .sim.sweep.plan import AXES, COMMANDS, PlanError, load_plan, plan_from_dict
from .sim.sweep.store import Store, StoreError

__all__ = ["cmd_bench_sweep", "cmd_sweep", "cpu_seconds", "register"]

DEFAULT_STORE = "sweep.db"


def _log(line: str) -> None:
    print(f"sweep: {line}", file=sys.stderr, flush=True)


def _value(text: str):
    """A command-line value as TOML would read it: an integer, a number, else the string."""
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _cli_plan(args):
    """The plan of ``--command`` and the axis options (``--kind equimesh,mesh --size 4x4``)."""
    axes = {
        a: [_value(v.strip()) for v in getattr(args, f"axis_{a}").split(",")]
        for a in AXES
        if getattr(args, f"axis_{a}") is not None
    }
    options = {}
    for item in args.option:
        name, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--option takes NAME=VALUE (got {item!r})")
        options[name.strip()] = _value(value.strip())
    return plan_from_dict({"command": args.command_, "axes": axes, "options": options}, "command line")


def _plan(args):
    given_axes = [a for a in AXES if getattr(args, f"axis_{a}") is not None]
    if args.plan and (args.command_ or given_axes or args.option):
        raise UsageError("give a plan file or --command with axes, not both")
    if not args.plan and (given_axes or args.option) and not args.command_:
        raise UsageError("axes on the command line need --command")
    try:
        if args.plan:
            return load_plan(args.plan)
        return _cli_plan(args) if args.command_ else None
    except PlanError as e:
        raise UsageError(str(e)) from None


def _client(args):
    from .sim.sweep.runner import ClusterError, connect, local_cluster

    if args.scheduler:
        try:
            return None, connect(args.scheduler)
        except ClusterError as e:
            raise InputError(str(e)) from None
    return local_cluster(args.workers, args.worker_memory)


def _run(args, plan, store) -> int:
    from .sim.sweep.runner import run_sweep

    points = plan.points()
    if args.retry_failed:
        from .sim.sweep.plan import point_key

        _log(f"{store.forget_failed({point_key(p) for p in points})} failed points to run again")
    cluster, client = _client(args)
    try:
        info = client.scheduler_info()
        if "dashboard" in info.get("services", {}) and (cluster is None or find_spec("bokeh")):
            # a local cluster serves its dashboard's pages only where bokeh is installed
            _log(f"dashboard {client.dashboard_link}")
        _log(f"{len(points)} points, {len(info['workers'])} workers, store {store.path}")
        t0 = time.perf_counter()
        tty = sys.stderr.isatty()
        every = [0.0]

        def progress(c):
            now = time.perf_counter()
            if tty:
                print(f"\rsweep: {c.line()} {now - t0:6.0f} s", end="", file=sys.stderr, flush=True)
            elif now - every[0] >= 5 or c.remaining == 0:
                every[0] = now
                _log(f"{c.line()} after {now - t0:.0f} s")

        counts = run_sweep(
            points,
            store,
            client,
            timeout=args.timeout,
            memory_mb=args.memory_limit,
            retries=args.retries,
            progress=progress,
        )
        if tty:
            print(file=sys.stderr)
        _log(f"finished in {time.perf_counter() - t0:.1f} s: {counts.line()}")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 1 if counts.failed else 0


def _table(rows: list[dict], extra: bool = False) -> tuple[list[str], list[list[str]]]:
    """The columns the rows have values in (command, axes, status, standard results, seconds, error);
    with ``extra`` also the other numbers and names of their ``result`` JSON."""
    import json

    from .sim.sweep.store import METRICS

    axes = [a for a in AXES if any(r[a] is not None for r in rows)]
    metrics = [m for m in METRICS if any(r[m] is not None for r in rows)]
    results = [json.loads(r["result"] or "{}") for r in rows]
    more = [
        k
        for k in dict.fromkeys(k for res in results for k in res)
        if extra
        and k not in METRICS
        and k not in AXES
        and all(isinstance(res.get(k), (int, float, str, type(None))) for res in results)
    ]
    head = ["command", *axes, "status", *metrics, *more, "seconds", "error"]
    return head, [[_cell(res.get(h) if h in more else r[h]) for h in head] for r, res in zip(rows, results)]


def _show(store) -> None:
    head, cells = _table(store.rows())
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(head)]
    widths[-1] = 0  # the error, last, unpadded
    for line in [head, *cells]:
        print("  ".join(x.rjust(w) for x, w in zip(line, widths)).rstrip())
    print(f"{len(cells)} points in {store.path}")


def _markdown(store, path: str) -> None:
    """The store as Markdown: one table per command, the columns it has values in."""
    rows = store.rows()
    parts = [
        f"# Sweep results\n\nFrom the store `{store.path}` ({len(rows)} points) by "
        f"`equimesh sweep --store {store.path} --markdown {path}`.\n"
    ]
    for command in dict.fromkeys(r["command"] for r in rows):
        head, cells = _table([r for r in rows if r["command"] == command], extra=True)
        lines = ["| " + " | ".join(head[1:]) + " |", "|" + "---|" * (len(head) - 1)]
        lines += ["| " + " | ".join(x.replace("|", "\\|") for x in c[1:]) + " |" for c in cells]
        parts.append(f"## {command}\n\n" + "\n".join(lines) + "\n")
    Path(path).write_text("\n".join(parts))


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def cmd_sweep(args) -> int:
    """``equimesh sweep``: run the missing points of a plan (a TOML file, or ``--command`` with axes) on a
    Dask cluster into a resumable SQLite store, then show, export, plot or render the store.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh sweep`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when no point of the plan failed (or there was no plan to run), else 1; bad
        input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be > 0 seconds (got {args.timeout})")
    if args.memory_limit is not None and args.memory_limit < 64:
        raise UsageError(f"--memory-limit must be >= 64 MiB (got {args.memory_limit})")
    if (args.workers is not None or args.worker_memory is not None) and args.scheduler:
        raise UsageError(
            "--workers and --worker-memory size the local cluster; an existing one (--scheduler) has its own"
        )
    plan = _plan(args)
    if args.retry_failed and plan is None:
        raise UsageError("--retry-failed runs a plan's failed points again: give the plan")
    if args.results and not args.plan:
        raise UsageError("--results writes the page of a plan file: give the plan")
    if plan is None and not (args.show or args.csv or args.json or args.markdown or args.plot):
        raise UsageError("give a plan file, --command with axes, or --show/--csv/--json/--markdown/--plot of a store")
    path = args.store or (plan.store if plan and plan.store else DEFAULT_STORE)
    if plan is None and not Path(path).exists():
        raise InputError(f"no store {path}")
    try:
        with writing(path):
            store = Store(path)
    except StoreError as e:
        raise InputError(str(e)) from None
    code = _run(args, plan, store) if plan else 0
    if args.show:
        _show(store)
    for option, write in ((args.csv, store.write_csv), (args.json, store.write_json)):
        if option:
            with writing(option):
                _log(f"{write(option)} points written to {option}")
    if args.markdown:
        with writing(args.markdown):
            _markdown(store, args.markdown)
        _log(f"wrote {args.markdown}")
    if args.results:
        from .sim.sweep.report import render_page

        command = f"equimesh sweep {args.plan} --store {path} --results {args.results}"
        with writing(args.results):
            Path(args.results).write_text(render_page(plan, args.plan, store.rows(), command, plan.about))
        _log(f"wrote {args.results}")
    if args.plot:
        from .sim.sweep.plots import plot_store

        with writing(args.plot):
            Path(args.plot).mkdir(parents=True, exist_ok=True)
            for p in plot_store(store.rows(), Path(args.plot)):
                _log(f"plot {p}")
    store.close()
    return code


def register(sub, bench) -> None:
    """Add ``equimesh sweep`` (:func:`cmd_sweep`) and the ``sweep`` benchmark (:func:`cmd_bench_sweep`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    bench : argparse._SubParsersAction
        The ``equimesh bench`` subcommands.
    """
    register_bench(bench)
    p = sub.add_parser(
        "sweep",
        help="run a design-space sweep (a TOML plan, or a grid on the command line) on "
        "Dask into a resumable SQLite store; show, export and plot the store",
    )
    p.add_argument("plan", nargs="?", help="the plan, a TOML file (docs/sweeps.md)")
    p.add_argument(
        "--command",
        dest="command_",
        metavar="COMMAND",
        help=f"instead of a plan file: the command of each point ({', '.join(COMMANDS)})",
    )
    for axis in AXES:
        p.add_argument(
            f"--{axis}",
            dest=f"axis_{axis}",
            metavar="V,V",
            help=f"with --command: the values of the {axis} axis, comma-separated",
        )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --command: a fixed option of every point (repeatable)",
    )
    p.add_argument("--store", help=f"the SQLite store (default: the plan's `store`, else {DEFAULT_STORE})")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster of this scheduler (tcp://HOST:PORT); default a local cluster",
    )
    p.add_argument("--workers", type=int, help="local cluster: worker processes (default one per core)")
    p.add_argument(
        "--worker-memory",
        help="local cluster: each worker's memory limit, Dask's syntax (e.g. 4GB; "
        "default: the machine's memory shared out)",
    )
    p.add_argument("--timeout", type=float, help="seconds one point may take; it is then stored as failed")
    p.add_argument(
        "--memory-limit",
        type=int,
        metavar="MIB",
        help="address space one point may use (MiB); over it the point fails with MemoryError",
    )
    p.add_argument("--retries", type=int, default=1, help="Dask retries of a task that raised (default 1)")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run the plan's points stored as failed again (a sweep otherwise keeps a failure as its result)",
    )
    p.add_argument("--show", action="store_true", help="print the store's table")
    p.add_argument("--csv", help="export the store to this CSV file")
    p.add_argument("--json", help="export the store to this JSON file")
    p.add_argument("--markdown", metavar="FILE", help="write the store as Markdown tables, one per command")
    p.add_argument("--plot", metavar="DIR", help="draw the standard plots from the store into DIR")
    p.add_argument(
        "--results",
        metavar="FILE",
        help="after the sweep, write the plan's results page (Markdown): each sweep of the plan as a "
        "table of its stored points, in the plan's order (make results: docs/results.md)",
    )
    p.set_defaults(func=cmd_sweep)


def _same(a: dict, b: dict) -> bool:
    """Two outcomes of one point agree: both failed, or the same results apart from seconds."""
    strip = lambda o: {k: v for k, v in (o.get("result") or {}).items() if "seconds" not in k}
    return ("error" in a) == ("error" in b) and strip(a) == strip(b)


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its children that have finished: the tools it
    ran (yosys, nextpnr, Verilator). Called on each worker of a cluster too (``Client.run``).

    Returns
    -------
    float
        The seconds.
    """
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cmd_bench_sweep(args) -> int:
    """The plan's points one after another in this process, then on a local cluster of ``--workers``
    workers, each with an empty model cache: the wall times, their ratio, the CPU seconds each run
    spent (on a machine shared with other jobs the wall-time ratio follows their load; the CPU seconds
    show whether the cluster repeated work), the machine's load.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bench sweep``.

    Returns
    -------
    int
        The exit status: 0 when both runs agree point for point, else 1.
    """
    import json
    import os
    import tempfile

    from .sim.sweep.plan import point_key
    from .sim.sweep.runner import local_cluster, run_serial, run_sweep

    plan = _plan(args)
    points = list({point_key(p): p for p in plan.points()}.values())
    saved = os.environ.get("EQUIMESH_CACHE")
    load = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as d:
        try:
            os.environ["EQUIMESH_CACHE"] = f"{d}/serial"
            t0, c0 = time.perf_counter(), cpu_seconds()
            serial = run_serial(
                points, lambda i, n: _log(f"one after another: {i}/{n} after {time.perf_counter() - t0:.0f} s")
            )
            t_serial, cpu_serial = time.perf_counter() - t0, cpu_seconds() - c0
            load.append(os.getloadavg())
            os.environ["EQUIMESH_CACHE"] = f"{d}/cluster"  # the workers inherit it
            t1 = time.perf_counter()
            cluster, client = local_cluster(args.workers)
            t2 = time.perf_counter()
            store = Store(f"{d}/sweep.db")
            run_sweep(points, store, client, progress=lambda c: _log(f"cluster: {c.line()}"))
            t_cluster = time.perf_counter() - t2
            cpu_cluster = sum(client.run(cpu_seconds).values())  # each worker's, from its start
            client.close()
            cluster.close()
            load.append(os.getloadavg())
            differ = [
                r
                for r in store.rows()
                if not _same(
                    serial[r["key"]], {"result": json.loads(r["result"])} if r["status"] == "ok" else {"error": 1}
                )
            ]
            agree = len(points) - len(differ)
        finally:
            if saved is None:
                os.environ.pop("EQUIMESH_CACHE", None)
            else:
                os.environ["EQUIMESH_CACHE"] = saved
    failed = sum("error" in o for o in serial.values())
    print(f"{len(points)} points ({failed} failed), {os.cpu_count()} cores, empty model caches")
    print(f"  one after another, in one process:   {t_serial:8.1f} s")
    print(f"  local cluster of {args.workers} workers:          {t_cluster:8.1f} s (+ {t2 - t1:.1f} s to start it)")
    print(
        f"  ratio cluster / one after another:   {t_cluster / t_serial:8.3f} "
        f"({(t_cluster + t2 - t1) / t_serial:.3f} with the start)"
    )
    print(
        f"  CPU seconds, tools included:          {cpu_serial:8.1f} one after another, {cpu_cluster:.1f} on the "
        f"cluster ({cpu_cluster / cpu_serial:.3f}x)"
    )
    print(f"  results that agree between the runs: {agree}/{len(points)}")
    for r in differ:  # each point whose two results differ, and how
        one, other = serial[r["key"]].get("result") or {}, json.loads(r["result"] or "{}")
        axes = " ".join(f"{a}={r[a]}" for a in AXES if r[a] is not None)
        keys = [k for k in dict.fromkeys([*one, *other]) if "seconds" not in k and one.get(k) != other.get(k)]
        print(f"    differs: {r['command']} {axes}: " + "; ".join(f"{k} {one.get(k)} / {other.get(k)}" for k in keys))
    print(
        "  load average (1, 5, 15 min) before, between, after: "
        + "; ".join(" ".join(f"{x:.1f}" for x in la) for la in load)
    )
    return 0 if agree == len(points) else 1


def register_bench(bench) -> None:
    p = bench.add_parser(
        "sweep",
        help="a plan's points one after another, then on a local Dask cluster: "
        "the speed-up (each run with an empty model cache)",
    )
    p.add_argument("plan", help="the plan, a TOML file (docs/sweeps.md)")
    p.add_argument("--workers", type=int, default=2, help="workers of the local cluster (default 2)")
    p.set_defaults(func=cmd_bench_sweep, command_=None, option=[], **{f"axis_{a}": None for a in AXES})
