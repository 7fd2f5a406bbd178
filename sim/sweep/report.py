"""A plan's results page: every sweep of a plan as one Markdown table of its points in the store, in the
plan's order, under the sweep's ``name`` and ``about`` (docs/sweeps.md "A results page").

Every number on the page is a stored result of one point of the plan, so the plan file and the store
are the page's provenance. A point not in the store yet is counted, never filled in; a failed point
shows its stored one-line error. A result that lists records (an ``fpga`` point's ``routers``) gives
one row per record.
"""

from __future__ import annotations

import json

from .plan import AXES, Plan, point_key
from .store import METRICS

__all__ = ["render_page", "sweep_table"]

_SKIP = {"seconds", "synth_key", "netlist", "table1"}


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|")


def _scalars(d: dict) -> dict:
    return {k: v for k, v in d.items() if isinstance(v, (int, float, str)) and k not in _SKIP}


def _records(row: dict) -> list[dict]:
    """The row's values; a result holding a list of records gives one dict per record."""
    result = json.loads(row["result"] or "{}")
    base = {a: row[a] for a in AXES} | {m: row[m] for m in METRICS} | _scalars(result)
    base |= {"status": row["status"], "error": row["error"], "seconds": row["seconds"]}
    lists = [v for v in result.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    if not lists:
        return [base]
    return [base | {f"router {k}" if k in base else k: v for k, v in _scalars(x).items()} for x in lists[0]]


def sweep_table(points: list[dict], rows_by_key: dict[str, dict]) -> tuple[str, int]:
    """The Markdown table of one sweep's points that the store has.

    Parameters
    ----------
    points : list of dict
        The sweep's points (:meth:`.plan.Sweep.points`), in order.
    rows_by_key : dict
        Store rows (:meth:`.store.Store.rows`) by key.

    Returns
    -------
    tuple of (str, int)
        The table (the axes the sweep varies, then every result column that has a value, the point's
        run time in seconds and, if any failed, the error), and the number of its points missing from
        the store.
    """
    varied = [a for a in AXES if len({json.dumps(p.get(a)) for p in points}) > 1]
    found = [rows_by_key[k] for k in map(point_key, points) if k in rows_by_key]
    records = [r for row in found for r in _records(row)]
    if not records:
        return "", len(points)
    results = [
        k
        for k in dict.fromkeys(k for r in records for k in r)
        if k not in AXES and k not in ("status", "error", "seconds") and any(r.get(k) is not None for r in records)
    ]
    head = varied + results + ["seconds"] + (["error"] if any(r["error"] for r in records) else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(r.get(h)) for h in head) + " |" for r in records]
    return "\n".join(lines) + "\n", len(points) - len(found)


def _fixed(sweep) -> str:
    fixed = [f"{a} = {v[0]}" for a, v in sweep.axes.items() if len(v) == 1]
    options = [f"{k} = {v}" for k, v in sweep.options.items()]
    return "; ".join(x for x in (", ".join(fixed), "options " + ", ".join(options) if options else "") if x)


def render_page(plan: Plan, plan_path: str, rows: list[dict], command: str, preamble: str = "") -> str:
    """The results page of ``plan`` from the store's ``rows``.

    Parameters
    ----------
    plan : Plan
        The plan (its sweeps' ``name`` and ``about`` head their sections).
    plan_path : str
        The plan file, named on the page.
    rows : list of dict
        The store's rows (:meth:`.store.Store.rows`).
    command : str
        The command that wrote the page, named on it.
    preamble : str
        Markdown placed after the page's first paragraph.

    Returns
    -------
    str
        The page: where it comes from (plan, store, equimesh version, when the points ran), then one
        section per sweep.
    """
    by_key = {r["key"]: r for r in rows}
    used = [by_key[k] for s in plan.sweeps for k in map(point_key, s.points()) if k in by_key]
    versions = sorted({r["version"] for r in used})
    finished = sorted(r["finished"] for r in used)
    when = f", run between {finished[0]} and {finished[-1]}" if finished else ""
    parts = [
        f"# Measured results\n\nWritten by `{command}` from the plan `{plan_path}` and its store: every "
        f"number below is a stored result of one point of that plan (equimesh {', '.join(versions) or '-'}"
        f"{when}). Run the same command to add the points that are missing; `seconds` is a point's run time "
        f"on the machine that ran it, under that machine's load.\n"
    ]
    if preamble:
        parts.append(preamble.strip() + "\n")
    missing_total = 0
    for i, sweep in enumerate(plan.sweeps, 1):
        table, missing = sweep_table(sweep.points(), by_key)
        missing_total += missing
        title = sweep.name or f"{sweep.command} sweep {i}"
        text = [f"## {title}\n"]
        if sweep.about:
            text.append(sweep.about.strip() + "\n")
        n = len(sweep.points())
        text.append(f"`{sweep.command}` over {n} point{'s' * (n != 1)}; {_fixed(sweep)}.\n")
        if missing:
            text.append(f"{missing} of its {len(sweep.points())} points are not in the store yet.\n")
        if table:
            text.append(table)
        parts.append("\n".join(text))
    if missing_total:
        parts.insert(1, f"**{missing_total} points of the plan are not in the store yet.**\n")
    return "\n".join(parts)
