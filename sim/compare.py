"""The baseline comparison: one collective on mesh, EquiMesh, the overflow-degree baseline, torus
and Supermesh.

Seed 000, Section II-A (Fig. 2): the overflow baseline reaches full degree by
duplicating perimeter links, at the price of 6-port edge routers; EquiMesh
keeps every router at 5 ports. Seed 001: the Supermesh SM(m,n) connects every
row and every column fully, at (m-1)+(n-1) network ports per router. Per kind:
cycles and link utilization (RTL simulation, bit-exact checked), routers by
port count, crosspoints, the synthesized cells of each distinct router and its
schedule-table bits.

Time (issue 15): cycles count the same on every kind, but the clock a network
closes at is its slowest router's. :func:`read_fpga` reads the router Fmax
values that ``equimesh fpga --json`` measured, :func:`clocks` takes each
kind's slowest router, and :func:`add_time` turns cycles into nanoseconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..rtl.design import FLIT_BITS
from ..rtl.flow.yosys import router_cells, table_bits
from ..rtl.network import router_name
from ..rtl.rom import compile_schedule
from ..rtl.timing import DEFAULT_PIPELINE
from ..schedules.jsonfile import JsonFileError, read_json
from ..schedules.synth import synthesize
from ..schedules.topology import build

__all__ = ["CompareError", "KINDS", "add_time", "clocks", "compare", "heatmap", "read_fpga"]

KINDS = ("mesh", "equimesh", "overflow", "torus", "supermesh")


class CompareError(ValueError):
    """A ``--fmax-from`` file that does not describe the designs compared (one line).

    Also raised when a compared router design has no measured Fmax.
    """


def compare(
    rows: int, cols: int, chunks: int, chunk_flits: int, collective: str, out_dir: str | Path, run, kinds=KINDS
) -> dict[str, dict]:
    """Run one collective on each kind (seed 000, Section II-A; seed 001 for the Supermesh) and compare.

    ``run(image, label)`` runs a compiled image on a backend and returns its
    :class:`~equimesh.sim.backends.RunResult`.

    Parameters
    ----------
    rows, cols : int
        The size R x C of every topology.
    chunks : int
        K, the chunks per shard.
    chunk_flits : int
        F, flits per chunk.
    collective : str
        ``"allgather"``, ``"reducescatter"``, ``"allreduce"`` or ``"alltoall"`` (the relay under the
        lane rule, docs/alltoall.md), synthesized with ``auto``.
    out_dir : str or Path
        Where the heat maps and the synthesis runs go.
    run : callable
        ``run(image, label) -> RunResult``.
    kinds : sequence of str
        Default :data:`KINDS`.

    Returns
    -------
    dict of str to dict
        Per kind: ``bit_exact``, ``steps``, ``cycles``, ``link_utilization`` and its ``_min``,
        ``links``, ``routers_by_ports``, ``crosspoints``, ``router_cells``, ``table_bits``,
        ``routers`` (module names), ``heatmap`` (PNG path) and ``cycles_vs_equimesh`` (None
        without an EquiMesh).
    """
    out_dir = Path(out_dir)
    result = {}
    for kind in kinds:
        t = build(kind, rows, cols)
        sched = synthesize(t, chunks, collective)
        image = compile_schedule(sched, chunk_flits, t)
        res = run(image, t.name)
        summ = t.summary()
        png = out_dir / f"heatmap_{kind}_{rows}x{cols}_{collective}.png"
        heatmap(t, res.stats.utilization, png, f"{t.name} {collective}, K={chunks}, F={chunk_flits}")
        result[kind] = {
            "bit_exact": res.bit_exact and res.stats.busy_matches_schedule and res.counters_agree,
            "steps": sched.num_steps,
            "cycles": res.cycles,
            "link_utilization": round(res.stats.mean, 4),
            "link_utilization_min": round(res.stats.min, 4),
            "links": len(t.links),
            "routers_by_ports": {str(p): c for p, c in summ["routers_by_ports"].items()},
            "crosspoints": summ["crosspoints"],
            "router_cells": {str(p): c for p, c in router_cells(res.design, out_dir / "synth" / kind).items()},
            "table_bits": {str(p): b for p, b in table_bits(res.design).items()},
            "routers": sorted({router_name(res.design, v) for v in range(t.nodes)}),
            "heatmap": str(png),
        }
    base = result["equimesh"]["cycles"] if "equimesh" in result else None
    for r in result.values():
        r["cycles_vs_equimesh"] = None if base is None else round(r["cycles"] / base, 4)
    return result


def _mhz(value) -> float:
    """An Fmax from an fpga file: a finite number of MHz above zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ValueError(f"fmax_mhz must be a positive number of MHz (got {value!r})")
    return float(value)


def read_fpga(
    paths, kinds, rows: int, cols: int, chunk_flits: int, pipeline: int = DEFAULT_PIPELINE
) -> dict[str, dict[str, float]]:
    """The median Fmax (MHz) of each router, by kind, from the JSON files of ``equimesh fpga --json``
    (one per kind), checked against the comparison before it runs: a file for another design raises
    :class:`CompareError`.

    Parameters
    ----------
    paths : iterable of str or Path
        One file per kind.
    kinds : sequence of str
        The compared kinds.
    rows, cols, chunk_flits : int
        The compared size and flits per chunk; the flit width must be :data:`FLIT_BITS`.
    pipeline : int
        The compared routers' pipeline depth.

    Returns
    -------
    dict of str to dict of str to float
        Kind -> router module name -> Fmax in MHz.

    Raises
    ------
    CompareError
        If a file is unreadable, not of that form, for another kind, size, flit width or pipeline
        depth, or a second file for one kind.
    """
    fmax = {}
    for path in paths:
        try:
            data = read_json(path)
            kind = data["kind"]
            routers = {r["name"]: _mhz(r["fmax_mhz"]) for r in data["routers"]}
            design = (data["rows"], data["cols"], data["chunk_flits"], data["flit_bits"])
            depth = data["pipeline"]
        except JsonFileError as e:
            raise CompareError(str(e)) from None
        except (ValueError, KeyError, TypeError) as e:
            raise CompareError(f"{path}: not the JSON of 'equimesh fpga --json' ({type(e).__name__}: {e})") from None
        if kind not in kinds:
            raise CompareError(f"{path}: Fmax of the {kind}, which is not compared (kinds: {', '.join(kinds)})")
        ours = (rows, cols, chunk_flits, FLIT_BITS)
        if design != ours:
            raise CompareError(
                f"{path}: Fmax of a {design[0]}x{design[1]} {kind} at {design[2]} flits/chunk, "
                f"{design[3]}-bit flits; compared: {rows}x{cols}, {chunk_flits} flits/chunk, "
                f"{FLIT_BITS}-bit flits"
            )
        if depth != pipeline:
            raise CompareError(
                f"{path}: Fmax of routers with pipeline depth {depth}; the compared ones have {pipeline}"
            )
        if kind in fmax:
            raise CompareError(f"{path}: a second Fmax file for the {kind}")
        fmax[kind] = routers
    return fmax


def clocks(fmax: dict[str, dict[str, float]], result: dict[str, dict]) -> dict[str, float]:
    """The clock of each kind with measured routers: its slowest router's Fmax (a network runs on one
    clock). Every router design the comparison instantiated must have been measured.

    Parameters
    ----------
    fmax : dict of str to dict of str to float
        From :func:`read_fpga`.
    result : dict of str to dict
        From :func:`compare`; each measured kind's ``routers`` are looked up.

    Returns
    -------
    dict of str to float
        Kind -> clock in MHz.

    Raises
    ------
    CompareError
        If a router design of a measured kind has no Fmax.
    """
    out = {}
    for kind, routers in fmax.items():
        missing = sorted(set(result[kind]["routers"]) - set(routers))
        if missing:
            raise CompareError(
                f"the Fmax file of the {kind} has no router {', '.join(missing)} "
                f"(measured: {', '.join(sorted(routers))})"
            )
        out[kind] = min(routers[name] for name in result[kind]["routers"])
    return out


def add_time(result: dict[str, dict], clocks: dict[str, float]) -> None:
    """Add ``clock_mhz`` and ``time_ns`` (cycles / clock) to each kind with a clock, and
    ``time_vs_equimesh``; kinds without one get None.

    Parameters
    ----------
    result : dict of str to dict
        From :func:`compare`; changed in place. ``time_ns`` is rounded to 0.1 ns,
        ``time_vs_equimesh`` to 4 places (None without an EquiMesh time).
    clocks : dict of str to float
        Kind -> MHz, from :func:`clocks`.
    """
    for kind, r in result.items():
        mhz = clocks.get(kind)
        r["clock_mhz"] = mhz
        r["time_ns"] = None if mhz is None else round(r["cycles"] * 1000.0 / mhz, 1)
    base = result.get("equimesh", {}).get("time_ns")
    for r in result.values():
        r["time_vs_equimesh"] = None if base is None or r["time_ns"] is None else round(r["time_ns"] / base, 4)


def heatmap(topo, utilization: np.ndarray, path: Path, title: str) -> None:
    """One R x C panel per out-port (N E S W, X0 ...): the utilization of each router's link on that port.

    Parameters
    ----------
    topo : Topology
    utilization : numpy.ndarray
        Shape (L,): per link, 0..1.
    path : Path
        The PNG to write (its directory is created).
    title : str
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ports = sorted({l.src_port for l in topo.links}, key=lambda p: "NESW".find(p) if p in "NESW" else 4 + int(p[1:]))
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
