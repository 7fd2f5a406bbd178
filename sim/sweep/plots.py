"""The standard pictures of a sweep store (docs/sweeps.md "Plots"), with matplotlib:

- ``schedule_steps.png``: schedule steps against network size (nodes), one line per topology and K;
- ``cycles.png``, ``utilization.png``: simulated cycles and link utilization against size per topology;
- ``time.png``: the alpha-beta completion time against size per algorithm's topology;
- ``fmax.png``, ``luts.png``: ECP5 Fmax (median over seeds) and LUT4s against size per router (ports);
- ``latency.png``: mean packet latency against offered load (rate) per topology and size.

Only the pictures the store has data for are drawn; failed points are left out.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

__all__ = ["plot_store"]


def _nodes(r: dict) -> int:
    return r["rows"] * r["cols"]


def _series(rows, label, x, y) -> dict[str, list[tuple[float, float]]]:
    """``label(row) -> name``; points (x, median of y over repeats such as seeds) per name, sorted by x."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in rows:
        v = y(r)
        if v is not None:
            acc[label(r)][x(r)].append(v)
    return {name: sorted((xx, statistics.median(vs)) for xx, vs in pts.items()) for name, pts in sorted(acc.items())}


def _draw(series, path: Path, xlabel: str, ylabel: str, title: str, logx: bool = False) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not series:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def _routers(rows):
    """One row per router of each fpga point (its ``result`` JSON's ``routers``)."""
    for r in rows:
        for x in json.loads(r["result"]).get("routers", []):
            yield {**r, "router": f"{r['kind']} {x['ports']}-port", **{k: x[k] for k in ("fmax_mhz", "luts")}}


def plot_store(rows: list[dict], out: Path) -> list[Path]:
    """Draw every standard picture (module docstring) that the rows have data for.

    Parameters
    ----------
    rows : list of dict
        :meth:`.store.Store.rows`.
    out : Path
        The directory of the PNG files.

    Returns
    -------
    list of Path
        The files written.
    """
    ok = [r for r in rows if r["status"] == "ok"]
    by = defaultdict(list)
    for r in ok:
        by[r["command"]].append(r)
    per_kind = lambda r: f"{r['kind']} {r['collective']}"
    runs = by["simulate"] + by["compare"]
    routers = list(_routers(by["fpga"]))
    todo = [
        (
            _series(
                by["schedule"], lambda r: f"{r['kind']} {r['collective']} K={r['K']}", _nodes, lambda r: r["steps"]
            ),
            "schedule_steps.png",
            "nodes",
            "schedule steps",
            "Schedule steps against size",
        ),
        (
            _series(runs, per_kind, _nodes, lambda r: r["cycles"]),
            "cycles.png",
            "nodes",
            "cycles",
            "Simulated cycles against size",
        ),
        (
            _series(runs, per_kind, _nodes, lambda r: r["utilization"]),
            "utilization.png",
            "nodes",
            "mean link utilization",
            "Link utilization against size",
        ),
        (
            _series(by["evaluate"], per_kind, _nodes, lambda r: r["time_s"] and r["time_s"] * 1e6),
            "time.png",
            "nodes",
            "completion time (us)",
            "Collective time against size (alpha-beta)",
        ),
        (
            _series(routers, lambda r: r["router"], _nodes, lambda r: r["fmax_mhz"]),
            "fmax.png",
            "nodes",
            "Fmax (MHz, median over seeds)",
            "ECP5 Fmax per router against size",
        ),
        (
            _series(routers, lambda r: r["router"], _nodes, lambda r: r["luts"]),
            "luts.png",
            "nodes",
            "LUT4",
            "ECP5 LUTs per router against size",
        ),
        (
            _series(
                by["traffic"], lambda r: f"{r['kind']} {r['size']}", lambda r: r["rate"], lambda r: r["latency_mean"]
            ),
            "latency.png",
            "offered load (flits / node / cycle)",
            "mean latency (cycles)",
            "Packet latency against load",
        ),
    ]
    written = [_draw(series, out / name, xl, yl, title) for series, name, xl, yl, title in todo]
    return [p for p in written if p is not None]
