"""The baseline comparison: one collective on mesh, EquiMesh and the overflow-degree baseline.

Seed 000, Section II-A (Fig. 2): the overflow baseline reaches full degree by
duplicating perimeter links, at the price of 6-port edge routers; EquiMesh
keeps every router at 5 ports. Per kind: cycles and link utilization (RTL
simulation, bit-exact checked), routers by port count, crosspoints, the
synthesized cells of each distinct router and its schedule-table bits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..rtl.rom import compile_schedule
from ..schedules.synth import synthesize
from ..schedules.topology import build
from .synth import router_cells, table_bits

KINDS = ("mesh", "equimesh", "overflow")


def compare(rows: int, cols: int, chunks: int, chunk_flits: int, collective: str, out_dir: str | Path,
            run) -> dict[str, dict]:
    """``run(image, label)`` runs a compiled image on a backend and returns its
    :class:`~equimesh.sim.backends.RunResult`."""
    out_dir = Path(out_dir)
    result = {}
    for kind in KINDS:
        t = build(kind, rows, cols)
        sched = synthesize(t, chunks, collective)
        image = compile_schedule(sched, chunk_flits, t)
        res = run(image, t.name)
        summ = t.summary()
        png = out_dir / f"heatmap_{kind}_{rows}x{cols}_{collective}.png"
        heatmap(t, res.stats.utilization, png, f"{t.name} {collective}, K={chunks}, F={chunk_flits}")
        result[kind] = {
            "bit_exact": res.bit_exact and res.stats.busy_matches_schedule and res.counters_agree,
            "steps": sched.num_steps, "cycles": res.cycles,
            "link_utilization": round(res.stats.mean, 4), "link_utilization_min": round(res.stats.min, 4),
            "links": len(t.links), "routers_by_ports": {str(p): c for p, c in summ["routers_by_ports"].items()},
            "crosspoints": summ["crosspoints"],
            "router_cells": {str(p): c for p, c in router_cells(res.design, out_dir / "synth" / kind).items()},
            "table_bits": {str(p): b for p, b in table_bits(res.design).items()},
            "heatmap": str(png),
        }
    base = result["equimesh"]["cycles"]
    for kind in KINDS:
        result[kind]["cycles_vs_equimesh"] = round(result[kind]["cycles"] / base, 4)
    return result


def heatmap(topo, utilization: np.ndarray, path: Path, title: str) -> None:
    """One R x C panel per out-port (N E S W, X0 ...): the utilization of each router's link on that port."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ports = sorted({l.src_port for l in topo.links}, key=lambda p: ("NESW".find(p) if p in "NESW" else 4 + int(p[1:])))
    fig, axes = plt.subplots(1, len(ports), figsize=(2.6 * len(ports) + 1, 2.6), squeeze=False)
    for ax, port in zip(axes[0], ports):
        grid = np.full((topo.rows, topo.cols), np.nan)
        for i, l in enumerate(topo.links):
            if l.src_port == port:
                grid[divmod(l.src, topo.cols)] = utilization[i]
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"out-port {port}")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes[0].tolist(), label="link utilization")
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
