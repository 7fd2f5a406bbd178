"""The evaluation report (``equimesh report --out DIR``): Figs. 7/8, ratios, chunk sweep, cross-checks, failures.

Everything in the report is measured by the code it names, in the run that writes it:
seed 000's Figs. 7/8 reproduction (Section V-B), the saturated ratio to the best baseline
with the bounds that explain it (Section III-A), the overlapped AllReduce against its
bound, the end-to-end LLM model of Fig. 9 (Section V-C), the chunk-count sweep (Section III-A),
the alpha-beta simulator against seed 003's closed forms (Sections 3.4 / 4.2) and against
the RTL's cycle counts, link-failure resynthesis, topology drawings and per-link
utilization heatmaps.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from ...rtl.timing import DEFAULT_PIPELINE, LATENCY, MIN_PERIOD
from ...schedules.failures import Disconnected, degrade, parse_fail_links, random_failures
from ...schedules.schedule import lower_bound
from ...schedules.topology import Topology, build
from .alphabeta import LinkModel, dim_decomposed_allreduce, dim_decomposed_allreduce_time, run, simulate
from .evaluate import ALGORITHMS, best_baseline, evaluate, format_size, machine, plot_curves, run_curve, to_json
from .llm import DEFAULT_MICRO_BATCH, DEFAULT_SEQ_LEN, PROPOSED, evaluate_models, geomean, load_models, plot_fig9

__all__ = [
    "FIG_SHAPES",
    "KSWEEP",
    "PAGES",
    "bounds_table",
    "chunk_sweep",
    "compare_section",
    "draw_topology",
    "failures_section",
    "figs_7_8",
    "llm_section",
    "overlap_steps_table",
    "overlap_table",
    "render",
    "rtl_check",
    "seed003_check",
    "topology_figure",
    "utilization_figure",
    "write_report",
]

FIG_SHAPES = ((8, 8), (5, 11))
KSWEEP = (1, 2, 4, 8, 16)
# The report's pages, each rendered from its template with the one context of a run: the main page
# (Figs. 7/8, overlap, chunk count), Fig. 9, and the link failures and cross-checks.
PAGES = {
    "evaluation.md": "evaluation.md.j2",
    "evaluation-llm.md": "evaluation-llm.md.j2",
    "evaluation-checks.md": "evaluation-checks.md.j2",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _table(head: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


# ----- drawings -------------------------------------------------------------------------


def draw_topology(ax, topo: Topology, values: np.ndarray | None = None, vmax: float = 1.0, cmap: str = "viridis"):
    """Nodes on the grid, each directed link an arrow (ring and overflow links bowed outwards).

    ``values`` (one per link) colour the links, e.g. utilization; otherwise mesh links
    are grey, EquiMesh ring links red, overflow duplicates purple.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    topo : Topology
        The topology.
    values : numpy.ndarray, optional
        One value per link (``topo.links`` order), shown on ``cmap``.
    vmax : float
        The value at the top of the colour map.
    cmap : str
        A matplotlib colour map name.
    """
    from matplotlib import colormaps
    from matplotlib.patches import FancyArrowPatch

    plt = _plt()
    pos = {v: (v % topo.cols, -(v // topo.cols)) for v in range(topo.nodes)}
    colors = colormaps[cmap] if values is not None else None
    for i, l in enumerate(topo.links):
        (x1, y1), (x2, y2) = pos[l.src], pos[l.dst]
        ring = l.src_port == l.dst_port
        extra = l.src_port.startswith("X")
        rad = 0.35 if ring else (0.25 if extra else 0.12)
        if values is not None:
            c = colors(min(1.0, values[i] / vmax))
        else:
            c = "tab:red" if ring else ("tab:purple" if extra else "0.45")
        ax.add_patch(
            FancyArrowPatch(
                (x1, y1),
                (x2, y2),
                connectionstyle=f"arc3,rad={rad}",
                arrowstyle="-|>",
                mutation_scale=7,
                lw=1.0,
                color=c,
                shrinkA=6,
                shrinkB=6,
            )
        )
    xs, ys = zip(*pos.values())
    ax.scatter(xs, ys, s=70 if topo.nodes <= 25 else 25, color="white", edgecolor="black", zorder=3)
    if topo.nodes <= 25:
        for v, (x, y) in pos.items():
            ax.text(x, y, str(v), ha="center", va="center", fontsize=6, zorder=4)
    ax.set_xlim(-0.8, topo.cols - 0.2)
    ax.set_ylim(-topo.rows + 0.2, 0.8)
    ax.set_aspect("equal")
    ax.axis("off")
    if values is not None:
        sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, vmax))
        plt.colorbar(sm, ax=ax, fraction=0.04, label="link utilization")


def topology_figure(path: Path) -> None:
    """The 4x4 mesh, EquiMesh (Algorithm 1's edge rings in red) and overflow mesh side by side.

    Parameters
    ----------
    path : pathlib.Path
        The PNG to write.
    """
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6), dpi=100)
    for ax, kind in zip(axes, ("mesh", "equimesh", "overflow")):
        t = build(kind, 4, 4)
        draw_topology(ax, t)
        ax.set_title(f"4x4 {kind}: {len(t.links)} links, min in-degree {int(t.in_degree.min())}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def utilization_figure(items: list[tuple[str, Topology, np.ndarray]], path: Path) -> None:
    """Per-link utilization heatmaps side by side, one panel per item (:func:`draw_topology`).

    Parameters
    ----------
    items : list of tuple
        ``(title, topology, utilization per link)`` per panel.
    path : pathlib.Path
        The PNG to write.
    """
    plt = _plt()
    fig, axes = plt.subplots(1, len(items), figsize=(5.2 * len(items), 4.6), dpi=100)
    for ax, (title, topo, util) in zip(np.atleast_1d(axes), items):
        draw_topology(ax, topo, util, vmax=1.0)
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ----- sections -------------------------------------------------------------------------


def figs_7_8(out: Path, model: LinkModel, log) -> tuple[str, dict]:
    """Seed 000 Figs. 7 and 8 (Section V-B): effective bandwidth of every algorithm of
    :data:`.evaluate.ALGORITHMS` from 1 KB to 1 GB per node, AllGather (Fig. 7) and AllReduce (Fig. 8), on each
    shape of :data:`FIG_SHAPES`; a plot and a table per figure and shape.

    Parameters
    ----------
    out : pathlib.Path
        The report's directory; figures go under ``out/figures``.
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    tuple of (str, dict)
        The section's Markdown, and ``{"figs": ..., "ratios": ...}``: per ``"{collective}_{R}x{C}"`` the
        curves' JSON (with the curves under ``"_curves"``), and one row per figure and shape of EquiMesh + XTree's
        ratio to the best baseline at 1 GB.
    """
    text, data = [], {}
    ratio_rows = []
    for collective, fig in (("allgather", 7), ("allreduce", 8)):
        for rows, cols in FIG_SHAPES:
            log(f"Fig. {fig}: {collective} on {rows}x{cols}")
            names = list(ALGORITHMS)
            curves = evaluate(rows, cols, collective, names, np.array(2.0 ** np.arange(10, 31)), model)
            png = f"figures/fig{fig}_{collective}_{rows}x{cols}.png"
            hlines = []
            if collective == "allreduce":
                mesh = build("mesh", rows, cols)
                n = mesh.nodes
                hlines = [
                    ("mesh bound, phases overlapped (link count)", len(mesh.links) * model.bandwidth / (2 * (n - 1))),
                    ("mesh bound, phases in sequence (degree 2)", n * model.bandwidth * 2 / (2 * (n - 1))),
                ]
            plot_curves(curves, f"Fig. {fig} reproduction: {collective} on {rows}x{cols}", str(out / png), hlines)
            js = to_json(rows, cols, collective, curves, model)
            data[f"{collective}_{rows}x{cols}"] = js
            sizes = js["sizes"]
            show = [0, 10, 14, 20]  # 1 KB, 1 MB, 16 MB, 1 GB
            tab = [
                [
                    r["algorithm"],
                    r["kind"],
                    *[f"{r['effective_bandwidth_GBps'][i]:.2f}" for i in show],
                    r["best_chunks"][-1],
                    f"{r['ratio_vs_best_baseline']:.3f}",
                ]
                for r in js["results"]
            ]
            text.append(
                f"#### Fig. {fig} ({collective}, {rows}x{cols})\n\n![{collective} {rows}x{cols}]({png})\n\n"
                + _table(
                    [
                        "algorithm",
                        "topology",
                        *[f"GB/s @ {format_size(sizes[i])}" for i in show],
                        "K @ 1GB",
                        "ratio @ 1GB",
                    ],
                    tab,
                )
                + f"\n\nBest baseline at 1 GB: `{js['best_baseline']}`.\n"
            )
            eq = next(r for r in js["results"] if r["algorithm"] == "equimesh-xtree")
            ratio_rows.append(
                (
                    collective,
                    f"{rows}x{cols}",
                    f"{eq['ratio_vs_best_baseline']:.3f}",
                    js["best_baseline"],
                    f"{eq['effective_bandwidth_GBps'][-1]:.2f}",
                    f"{max(r['effective_bandwidth_GBps'][-1] for r in js['results'] if r['role'] == 'baseline'):.2f}",
                )
            )
            data[f"{collective}_{rows}x{cols}"]["_curves"] = curves
    return "\n".join(text), {"figs": data, "ratios": ratio_rows}


def bounds_table() -> str:
    """Seed 000, Section III-A: the degree bound, and the link-count bound an overlapped AllReduce meets.

    Returns
    -------
    str
        A Markdown table, one row per shape of :data:`FIG_SHAPES`: mesh and EquiMesh minimum in-degree and link
        count, and the overlapped AllReduce's link-count bound on each.
    """
    rows = []
    for r, c in FIG_SHAPES:
        m, e = build("mesh", r, c), build("equimesh", r, c)
        n = r * c
        rows.append(
            [
                f"{r}x{c}",
                int(m.in_degree.min()),
                int(e.in_degree.min()),
                f"{int(e.in_degree.min()) / int(m.in_degree.min()):.2f}",
                len(m.links),
                len(e.links),
                f"{len(e.links) / len(m.links):.3f}",
                f"{2 * n * (n - 1) / len(m.links) / n:.3f}",
                f"{2 * n * (n - 1) / len(e.links) / n:.3f}",
            ]
        )
    return _table(
        [
            "mesh",
            "min in-degree mesh",
            "min in-degree EquiMesh",
            "degree ratio",
            "links mesh",
            "links EquiMesh",
            "link ratio",
            "overlapped AR bound mesh (x M/B)",
            "overlapped AR bound EquiMesh (x M/B)",
        ],
        rows,
    )


def overlap_table(figs: dict, model: LinkModel, log) -> str:
    """AllReduce at 1 GB under both link disciplines, against the sequential-phase and overlap bounds.

    Bounds (seed 000, Section III-A, in bandwidth): run one after the other, ReduceScatter and
    AllGather each need K (N-1) / d chunk times, so BW <= N B d / (2 (N-1)); overlapped, the
    2 N (N-1) K chunk transfers need all L links, so BW <= L B / (2 (N-1)) (and the per-node
    in-link bound d N B / (N-1), never the tighter one here).

    Parameters
    ----------
    figs : dict
        The ``"figs"`` entry of :func:`figs_7_8`'s data: per ``"{collective}_{R}x{C}"``, the curves' JSON and
        ``"_curves"``, the curves themselves.
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    str
        A Markdown table: per shape and AllReduce algorithm, the bandwidth in schedule order and in ready order,
        and both bounds.
    """
    rows = []
    for rows_, cols in FIG_SHAPES:
        curves = figs[f"allreduce_{rows_}x{cols}"]["_curves"]
        for c in curves:
            log(f"ready-order AllReduce {rows_}x{cols} {c.algorithm}")
            size = c.sizes[-1:]
            ready = max(float(size[0] / simulate(s, size, model, "ready").completion[0]) for s in c.schedules.values())
            t, n = c.topology, c.topology.nodes
            d = int(min(t.in_degree.min(), t.out_degree.min()))
            seq = n * model.bandwidth * d / (2 * (n - 1))
            ovl = min(len(t.links) * model.bandwidth / (2 * (n - 1)), d * n * model.bandwidth / (n - 1))
            rows.append(
                [
                    f"{rows_}x{cols}",
                    c.algorithm,
                    f"{c.effective_bandwidth[-1] / 1e9:.1f}",
                    f"{ready / 1e9:.1f}",
                    f"{seq / 1e9:.1f}",
                    f"{ovl / 1e9:.1f}",
                ]
            )
    return _table(
        [
            "mesh",
            "algorithm",
            "GB/s, schedule order",
            "GB/s, ready order",
            "bound, phases in sequence",
            "bound, phases overlapped",
        ],
        rows,
    )


def overlap_steps_table(figs: dict) -> str:
    """The overlapped AllReduce of the AllReduce figures: steps against the version-2 bound, per K.

    Parameters
    ----------
    figs : dict
        The ``"figs"`` entry of :func:`figs_7_8`'s data: per ``"{collective}_{R}x{C}"``, the curves' JSON and
        ``"_curves"``, the curves themselves.

    Returns
    -------
    str
        A Markdown table: per shape, overlapped algorithm and K, the steps, the bound, the efficiency, MirrorXTree's
        phased steps beside them, and the synthesis seconds.
    """
    rows = []
    for r, c in FIG_SHAPES:
        curves = {cv.algorithm: cv for cv in figs[f"allreduce_{r}x{c}"]["_curves"]}
        seq = curves["equimesh-xtree"].by_chunks
        for name in ("mesh-overlap", "equimesh-overlap"):
            for k, v in curves[name].by_chunks.items():
                phased = f"{seq[k]['steps']} ({seq[k]['bound']})" if name == "equimesh-overlap" and k in seq else "-"
                rows.append(
                    [
                        f"{r}x{c}",
                        name,
                        k,
                        v["steps"],
                        v["bound"],
                        f"{v['bound'] / v['steps']:.3f}",
                        phased,
                        f"{v['synth_s']:.1f}",
                    ]
                )
    return _table(
        [
            "mesh",
            "algorithm",
            "K",
            "steps",
            "bound (overlapped)",
            "efficiency",
            "MirrorXTree phased steps (bound)",
            "synthesis s",
        ],
        rows,
    )


def llm_section(out: Path, model: LinkModel, log) -> tuple[str, dict]:
    """Fig. 9 (seed 000, Section V-C): the four models at the default sequence and micro-batch, and a sweep.

    Parameters
    ----------
    out : pathlib.Path
        The report's directory; figures go under ``out/figures``.
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    tuple of (dict, dict)
        The section's pieces (``main``, ``share`` and ``sweep`` tables, and the speedup ranges and geometric
        means), and the data: ``{"default": rows, "sweep": rows}`` of :func:`.llm.evaluate_models`.
    """
    models = load_models()
    log("Fig. 9: LLM forward and backward")
    res = evaluate_models(models, 8, 8, model=model, log=log)
    plot_fig9(
        res,
        str(out / "figures/fig9_llm_8x8.png"),
        f"Fig. 9 reproduction: SP + TP on 8x8, sequence {DEFAULT_SEQ_LEN}, micro-batch {DEFAULT_MICRO_BATCH}",
    )
    algos = list(res[0]["algorithms"])
    main_rows = []
    for r in res:
        for p in ("forward", "backward"):
            main_rows.append(
                [
                    r["name"],
                    p,
                    *[f"{r['algorithms'][a][f'{p}_s'] * 1e3:.2f}" for a in algos],
                    r[f"best_baseline_{p}"],
                    f"{r[f'{p}_speedup']:.3f}",
                ]
            )
    share_rows = []
    for r in res:
        eq, best = r["algorithms"][PROPOSED], r["algorithms"][r["best_baseline_forward"]]
        rc = (best["allgather_s"] + best["reducescatter_s"]) / (eq["allgather_s"] + eq["reducescatter_s"])
        f = r["comm_share_forward"][r["best_baseline_forward"]]
        need = (1 - 1 / 1.37) / (1 - 1 / rc)
        slower = ((1 - need) / need) / ((1 - f) / f)  # GEMM time per byte moved that gives that share
        share_rows.append(
            [
                r["name"],
                f"{r['allgather_bytes_per_node'] / 2**10:.0f} KB",
                f"{r['reducescatter_bytes_per_node'] / 2**20:.0f} MB",
                f"{best['forward_compute_s'] / r['layers'] * 1e6:.1f}",
                f"{eq['allgather_s'] * 1e6:.1f} / {eq['reducescatter_s'] * 1e6:.1f}",
                f"{best['allgather_s'] * 1e6:.1f} / {best['reducescatter_s'] * 1e6:.1f}",
                f"{rc:.3f}",
                f"{100 * f:.0f}%",
                f"{100 * need:.0f}%",
                f"{slower:.1f}x",
            ]
        )
    seqs, mbs = (1024, 2048, 4096, 8192, 16384, 32768), (1, 4, 16)
    log("Fig. 9: sequence-length and micro-batch sweep")
    sweep = evaluate_models(models, 8, 8, seqs, mbs, model=model, log=log)
    sweep_rows = []
    for s_ in seqs:
        for b in mbs:
            sel = [r for r in sweep if r["seq_len"] == s_ and r["micro_batch"] == b]
            sweep_rows.append(
                [
                    s_,
                    b,
                    *[f"{r['forward_speedup']:.2f} / {r['backward_speedup']:.2f}" for r in sel],
                    f"{geomean([r['forward_speedup'] for r in sel]):.3f} / "
                    f"{geomean([r['backward_speedup'] for r in sel]):.3f}",
                ]
            )
    fwd = [r["forward_speedup"] for r in res]
    bwd = [r["backward_speedup"] for r in res]
    text = {
        "main": _table(["model", "pass", *[f"{a} (ms)" for a in algos], "best mesh baseline", "speedup"], main_rows),
        "share": _table(
            [
                "model",
                "AllGather per node",
                "ReduceScatter vector",
                "GEMMs per layer (us)",
                "EquiMesh AG / RS (us)",
                "best mesh AG / RS (us)",
                "collective ratio",
                "comm share of the best mesh forward",
                "share the paper's 1.37x needs",
                "GEMM time that share needs",
            ],
            share_rows,
        ),
        "sweep": _table(
            ["sequence", "micro-batch", *[f"{m.name} fwd / bwd" for m in models], "geomean fwd / bwd"], sweep_rows
        ),
        "fwd": f"{min(fwd):.2f}-{max(fwd):.2f}",
        "bwd": f"{min(bwd):.2f}-{max(bwd):.2f}",
        "gfwd": f"{geomean(fwd):.2f}",
        "gbwd": f"{geomean(bwd):.2f}",
    }
    return text, {"default": res, "sweep": sweep}


def chunk_sweep(out: Path, model: LinkModel, log) -> str:
    """Section III-A: per K, the latency bound D and the bandwidth bound ceil(K (N-1) / d) in steps.

    XTree on the 8x8 and 2x3 EquiMesh for each K of :data:`KSWEEP`: which bound binds, the steps, and the
    bandwidth at 1 KB, 1 MB and 1 GB, with a plot.

    Parameters
    ----------
    out : pathlib.Path
        The report's directory; figures go under ``out/figures``.
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    str
        The section's Markdown.
    """
    text = []
    for rows, cols, collective in ((8, 8, "allgather"), (2, 3, "allgather")):
        log(f"chunk sweep {rows}x{cols}")
        topo = build("equimesh", rows, cols)
        sizes = np.array(2.0 ** np.arange(10, 31))
        c = run_curve(ALGORITHMS["equimesh-xtree"], topo, collective, sizes, KSWEEP, model)
        n, d, diam = topo.nodes, int(topo.in_degree.min()), topo.diameter
        tab = []
        for k, v in c.by_chunks.items():
            bw_steps = math.ceil(k * (n - 1) / d)
            tab.append(
                [
                    k,
                    diam,
                    bw_steps,
                    "latency" if diam > bw_steps else ("both" if diam == bw_steps else "bandwidth"),
                    v["steps"],
                    f"{(sizes[0] / v['completion'][0]) / 1e9:.2f}",
                    f"{(sizes[10] / v['completion'][10]) / 1e9:.2f}",
                    f"{(sizes[-1] / v['completion'][-1]) / 1e9:.3f}",
                ]
            )
        best = c.best_chunks
        changes = [
            f"K={best[i]} from {format_size(sizes[i])}" for i in range(len(sizes)) if i == 0 or best[i] != best[i - 1]
        ]
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
        for k, v in c.by_chunks.items():
            ax.plot(sizes, sizes / v["completion"] / 1e9, marker=".", label=f"K={k} ({v['steps']} steps)")
        ax.set_xscale("log", base=2)
        ticks = [2.0**e for e in range(10, 31, 4)]
        ax.set_xticks(ticks, [format_size(t) for t in ticks])
        ax.set_xlabel("message size per node")
        ax.set_ylabel("effective bandwidth (GB/s)")
        ax.set_title(f"XTree {collective} on {rows}x{cols} EquiMesh: chunk count K", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        png = f"figures/ksweep_{collective}_{rows}x{cols}.png"
        fig.savefig(out / png)
        plt.close(fig)
        binding = {row[0]: row[3] for row in tab}
        cross = [k for k in binding if binding[k] != "latency"]
        summary = (
            f"The bandwidth bound binds for every K (D = {diam} <= (N-1)/d = {(n - 1) / d:.2f})."
            if all(b == "bandwidth" for b in binding.values())
            else f"The bounds cross at K = {cross[0]}: " + ", ".join(f"K = {k} {b}" for k, b in binding.items()) + "."
        )
        text.append(
            f"#### {rows}x{cols} EquiMesh, XTree {collective} (N = {n}, D = {diam}, min in-degree {d})\n\n"
            f"{summary}\n\n"
            f"![K sweep]({png})\n\n"
            + _table(
                [
                    "K",
                    "latency bound D (steps)",
                    "bandwidth bound ceil(K(N-1)/d)",
                    "binding",
                    "XTree steps",
                    "GB/s @ 1KB",
                    "GB/s @ 1MB",
                    "GB/s @ 1GB",
                ],
                tab,
            )
            + "\n\nBest K by size: "
            + ", ".join(changes)
            + ".\n"
        )
    return "\n".join(text)


def seed003_check(model: LinkModel) -> str:
    """The alpha-beta simulator against seed 003's closed form of the dimension-decomposed AllReduce
    (Sections 3.4 / 4.2), on meshes (open lines) and tori (rings), at 1 KB and 1 GB.

    Parameters
    ----------
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).

    Returns
    -------
    str
        A Markdown table of formula, simulated time and relative error per case.
    """
    rows = []
    for r, c in ((4, 4), (5, 11), (8, 8), (16, 16)):
        for wrap in (False, True):
            tr = dim_decomposed_allreduce(r, c, wrap)
            sizes = np.array([2.0**10, 2.0**30])
            sim = run(tr, sizes / (r * c) / model.bandwidth, model.alpha)
            for m, s in zip(sizes, sim):
                f = dim_decomposed_allreduce_time(r, c, m, model)
                rows.append(
                    [
                        f"{r}x{c}",
                        "torus (ring)" if wrap else "mesh (open line)",
                        format_size(m),
                        f"{f * 1e6:.4f}",
                        f"{s * 1e6:.4f}",
                        f"{abs(s / f - 1):.1e}",
                    ]
                )
    return _table(
        ["shape", "per-dimension primitive", "M", "seed 003 formula (us)", "simulated (us)", "rel. error"], rows
    )


def failures_section(model: LinkModel, log) -> str:
    """Link failures on the 8x8 EquiMesh: XTree resynthesized on the topology with 1, 2, 4 and 8 random links
    failed (seed 0), AllGather and AllReduce at 1 GB and K = 4, against the intact network.

    Parameters
    ----------
    model : LinkModel
        The alpha-beta link model (Table I's by default in :func:`write_report`).
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    str
        A Markdown table: degrees, bound, steps and bandwidth with and without the failures, and the slowdown.
    """
    rows = []
    size = np.array([2.0**30])
    for collective in ("allgather", "allreduce"):
        topo = build("equimesh", 8, 8)
        algo = ALGORITHMS["equimesh-xtree"]
        intact = run_curve(algo, topo, collective, size, [4], model)
        for k in (1, 2, 4, 8):
            log(f"failures {collective} k={k}")
            deg = degrade(topo, random_failures(topo, k, seed=0))
            c = run_curve(algo, deg, collective, size, [4], model)  # run_curve verifies
            rows.append(
                [
                    collective,
                    k,
                    int(deg.in_degree.min()),
                    int(deg.out_degree.min()),
                    lower_bound(deg, 4, collective),
                    c.by_chunks[4]["steps"],
                    intact.by_chunks[4]["steps"],
                    f"{c.effective_bandwidth[0] / 1e9:.2f}",
                    f"{intact.effective_bandwidth[0] / 1e9:.2f}",
                    f"{c.completion[0] / intact.completion[0]:.3f}",
                ]
            )
    return _table(
        [
            "collective",
            "failed links (seed 0)",
            "min in-degree",
            "min out-degree",
            "bound (steps)",
            "steps",
            "steps intact",
            "GB/s @ 1GB",
            "GB/s intact",
            "slowdown",
        ],
        rows,
    )


def rtl_check(log) -> tuple[str, list]:
    """The simulator in RTL units (alpha = pipeline latency, B = 1 flit/cycle) against the Amaranth network's cycles.

    The alpha of one step is the minimum step period at the default pipeline depth (:mod:`equimesh.rtl.timing`);
    each case runs on the Amaranth simulator.

    Parameters
    ----------
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    tuple of (str, list of dict)
        The Markdown table, and per case its RTL and alpha-beta cycles.
    """
    from ...rtl.rom import compile_schedule
    from ...schedules.synth import synthesize
    from ..backends import run_image

    alpha = MIN_PERIOD[DEFAULT_PIPELINE]  # a flit read at stage A of a step is readable there this much later
    rows, data = [], []
    cases = [
        ("equimesh", 2, 3, "allgather", 4, 8),
        ("equimesh", 3, 3, "allgather", 4, 8),
        ("equimesh", 3, 3, "allreduce", 4, 8),
        ("mesh", 3, 4, "allgather", 2, 16),
        ("equimesh", 4, 4, "allgather", 4, 16),
    ]
    for kind, r, c, coll, k, flits in cases:
        log(f"RTL {kind} {r}x{c} {coll}")
        topo = build(kind, r, c)
        sched = synthesize(topo, k, coll, "mirrorxtree" if coll == "allreduce" else "xtree")
        try:
            image = compile_schedule(sched, flits, topo)
            res = run_image(image, "amaranth")
        except Exception as e:  # the RTL may reject a schedule (e.g. storage lanes): report it
            rows.append([f"{r}x{c} {kind}", coll, k, flits, sched.num_steps, "-", "-", "-", f"not run: {e}"])
            continue
        message = flits * k * (1 if coll == "allgather" else topo.nodes)
        ab = simulate(sched, [message], LinkModel(alpha=alpha, bandwidth=1.0)).completion[0]
        ab0 = simulate(sched, [message], LinkModel(alpha=0.0, bandwidth=1.0)).completion[0]
        rows.append(
            [
                f"{r}x{c} {kind}",
                coll,
                k,
                flits,
                sched.num_steps,
                res.cycles,
                f"{ab:.0f}",
                f"{100 * (ab - res.cycles) / res.cycles:+.1f}%",
                f"{ab0:.0f}",
                f"{100 * (ab0 - res.cycles) / res.cycles:+.1f}%",
            ]
        )
        data.append({"case": f"{r}x{c} {kind} {coll}", "rtl_cycles": res.cycles, "alphabeta_cycles": ab})
    head = [
        "topology",
        "collective",
        "K",
        "flits/chunk F",
        "steps",
        "RTL cycles",
        f"alpha-beta, alpha={alpha}",
        "error",
        "alpha-beta, alpha=0",
        "error",
    ]
    return _table(head, rows), data


def compare_section(out: Path, log) -> str:
    """The cycle-level comparison of ``equimesh compare`` (4x4, K = 4, F = 16, AllGather, every kind of
    :data:`equimesh.sim.compare.KINDS`) on the compiled backend, with its heatmaps.

    Parameters
    ----------
    out : pathlib.Path
        The report's directory; figures go under ``out/figures``.
    log : callable
        ``log(line)`` as each piece starts.

    Returns
    -------
    str
        The section's Markdown: the table and the heatmaps (copied under ``out/figures/compare``).
    """
    from ...rtl.design import fit
    from ..backends import run_image
    from ..compare import compare

    log("compare (RTL, every kind)")
    where = out / "figures" / "compare"
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:  # heatmaps are kept, synthesis work files are not
        res = compare(4, 4, 4, 16, "allgather", tmp, lambda image, label: run_image(image, "verilator", fit(image)))
        for r in res.values():
            shutil.copy(r["heatmap"], where / Path(r["heatmap"]).name)
    rows = [
        [
            kind,
            r["steps"],
            r["cycles"],
            r["cycles_vs_equimesh"],
            f"{r['link_utilization']:.3f}",
            r["crosspoints"],
            "yes" if r["bit_exact"] else "NO",
        ]
        for kind, r in res.items()
    ]
    imgs = "\n".join(f"![{Path(r['heatmap']).stem}](figures/compare/{Path(r['heatmap']).name})" for r in res.values())
    return (
        "`equimesh compare` (4x4, K = 4, F = 16, AllGather, Verilator):\n\n"
        + _table(["kind", "steps", "cycles", "vs EquiMesh", "utilization", "crosspoints", "bit-exact"], rows)
        + "\n\n"
        + imgs
    )


# ----- the report -----------------------------------------------------------------------


def _utilization_figure(figs: dict, model: LinkModel, path: Path) -> None:
    """Per-link utilization of EquiMesh + XTree and the best mesh baseline, AllGather 8x8 at 1 GB."""
    ag = figs["figs"]["allgather_8x8"]["_curves"]
    items = []
    for name in ("equimesh-xtree", best_baseline(ag).algorithm):
        c = next(x for x in ag if x.algorithm == name)
        k = c.best_chunks[-1]
        util = simulate(c.schedules[k], [c.sizes[-1]], model).link_utilization(model)
        items.append((f"{name} allgather 8x8, 1 GB, K={k}: mean utilization {util.mean():.2f}", c.topology, util))
    utilization_figure(items, path)


def _bench_quote(out: Path) -> str:
    bench_file = out / "bench-eval.txt"
    if bench_file.is_file():
        return (
            f"The last run saved in `{bench_file}` (its own date and machine in the header):\n\n```\n"
            f"{bench_file.read_text().strip()}\n```"
        )
    return f"Save a run as `{bench_file}` (`equimesh bench eval > {bench_file}`) to quote it here."


def _disconnect_example() -> str:
    try:
        m44 = build("mesh", 4, 4)
        degrade(m44, parse_fail_links("0-1,0-4", m44))
        return "(not disconnected)"
    except Disconnected as e:
        return str(e)


def _ratios(figs: dict) -> dict:
    """The summary's measured ratios and the EquiMesh-to-mesh link ratios of Figs. 7/8's shapes."""
    by_coll = {c: [float(r[2]) for r in figs["ratios"] if r[0] == c] for c in ("allgather", "allreduce")}
    ag_ratio, ar_ratio = ("-".join(f"{v:.2f}" for v in sorted(set(np.round(x, 2)))) for x in by_coll.values())
    link_ratios = ", ".join(
        f"{len(build('equimesh', r, c).links) / len(build('mesh', r, c).links):.2f} on {r}x{c}" for r, c in FIG_SHAPES
    )
    ratio_tab = _table(
        [
            "collective",
            "mesh",
            "EquiMesh / best baseline @ 1GB",
            "best baseline",
            "EquiMesh GB/s",
            "best baseline GB/s",
        ],
        [list(r) for r in figs["ratios"]],
    )
    return {"ag_ratio": ag_ratio, "ar_ratio": ar_ratio, "link_ratios": link_ratios, "ratio_tab": ratio_tab}


def render(template: str, **context) -> str:
    """Render one of ``sim/analytic/templates`` (Jinja2) with ``context``.

    Parameters
    ----------
    template : str
        The template's file name (``"evaluation.md.j2"``).
    **context
        The template's variables; a missing one is an error (``StrictUndefined``).

    Returns
    -------
    str
        The rendered text.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("equimesh.sim.analytic", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    return env.get_template(template).render(**context)


def write_report(out: Path, log=lambda s: None) -> Path:
    """Write the evaluation report: every section measured in one run, rendered from the templates of
    :data:`PAGES` (one context, so the pages share the run's stamp and numbers).

    Parameters
    ----------
    out : Path
        The directory for the pages of :data:`PAGES`, ``figures/*.png`` and ``figures/evaluation.json``.
    log : callable
        Receives a line per section as it starts.

    Returns
    -------
    Path
        ``out/evaluation.md``, the main page; the others are beside it.
    """
    (out / "figures").mkdir(parents=True, exist_ok=True)
    model = LinkModel()
    t0 = time.perf_counter()
    figs_text, figs = figs_7_8(out, model, log)
    topology_figure(out / "figures/topologies_4x4.png")
    _utilization_figure(figs, model, out / "figures/utilization_allgather_8x8.png")
    llm, llm_data = llm_section(out, model, log)
    rtl_text, rtl_data = rtl_check(log)
    context = dict(
        _ratios(figs),
        figs_text=figs_text,
        overlap=overlap_table(figs["figs"], model, log),
        ovl_steps=overlap_steps_table(figs["figs"]),
        llm=llm,
        ksweep=chunk_sweep(out, model, log),
        s003=seed003_check(model),
        fail=failures_section(model, log),
        rtl_text=rtl_text,
        compare=compare_section(out, log),
        bench=_bench_quote(out),
        disconnect=_disconnect_example(),
        bounds=bounds_table(),
        algorithms_table=_table(
            ["algorithm", "topology", "role", "source", "K tried"],
            [[a.name, a.kind, a.role, a.source, ",".join(map(str, a.chunk_counts))] for a in ALGORITHMS.values()],
        ),
        out=out,
        host=machine(),
        stamp=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        DEFAULT_MICRO_BATCH=DEFAULT_MICRO_BATCH,
        DEFAULT_SEQ_LEN=DEFAULT_SEQ_LEN,
        DEFAULT_PIPELINE=DEFAULT_PIPELINE,
        alpha=MIN_PERIOD[DEFAULT_PIPELINE],
        latency=LATENCY[DEFAULT_PIPELINE],
    )
    context["seconds"] = f"{time.perf_counter() - t0:.0f}"
    for page, template in PAGES.items():
        (out / page).write_text(render(template, **context))
    for v in figs["figs"].values():
        v.pop("_curves")
    (out / "figures/evaluation.json").write_text(
        json.dumps({"figs": figs["figs"], "rtl": rtl_data, "llm": llm_data}, indent=1)
    )
    return out / "evaluation.md"
