"""Evaluation at scale (seed 000, Section V): effective bandwidth of every algorithm across message sizes.

Each algorithm is a schedule generator on its topology (EquiMesh for XTree/MirrorXTree,
the 2D mesh for the baselines of Section V-A, the overflow-degree mesh of Fig. 2b as a
reference). Every schedule is verified, then run through the alpha-beta event simulator
(:mod:`.alphabeta`) at each message size. An algorithm is tried at each of its chunk
counts ``K`` and, per size, the best ``K`` is reported: chunking trades the latency bound
against the bandwidth bound (Section III-A), and XTree adapts ``K`` the same way
(Section VI).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...schedules.schedule import Schedule, schedule_bound
from ...schedules.synth import BASELINES, synthesize
from ...schedules.topology import Topology, build
from ...schedules.verify import verify
from .alphabeta import LinkModel, simulate

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "COLLECTIVES",
    "Curve",
    "STYLE",
    "TREE_COLLECTIVES",
    "best_baseline",
    "default_sizes",
    "evaluate",
    "format_size",
    "machine",
    "parse_size",
    "plot_curves",
    "run_curve",
    "to_json",
]

COLLECTIVES = ("allgather", "allreduce", "alltoall")
TREE_COLLECTIVES = ("allgather", "allreduce")  # what the tree and ring algorithms schedule


def _relay(topo: Topology, chunks: int, collective: str) -> Schedule:
    """Seed 003's ring-relay AllToAll on any topology (``schedules/methods/a2a.py``, docs/alltoall.md)."""
    return synthesize(topo, chunks, collective, "relay", lanes=False)


def _lead(name: str) -> Callable[[Topology, int, str], Schedule]:
    """A generator behind ``schedules.synth.synthesize``; XTree-based ones use MirrorXTree for AllReduce."""

    def make(topo: Topology, chunks: int, collective: str) -> Schedule:
        algo = "mirrorxtree" if (name == "xtree" and collective != "allgather") else name
        return synthesize(topo, chunks, collective, algo, lanes=False)

    return make


@dataclass(frozen=True)
class Algorithm:
    """One curve of Figs. 7/8: a schedule generator on a topology kind.

    Attributes
    ----------
    name : str
        The key in :data:`ALGORITHMS`, e.g. ``"equimesh-xtree"``.
    kind : str
        The topology kind it runs on.
    role : str
        ``"proposed"``, ``"baseline"`` (seed 000, Section V-A) or ``"reference"``.
    source : str
        What it implements, citing the seed.
    make : callable
        ``make(topology, chunks, collective) -> Schedule``.
    chunk_counts : tuple of int
        The chunk counts K it is tried at.
    topology_agnostic : bool
        It can be resynthesized on a degraded topology.
    collectives : tuple of str
        The collectives it schedules.
    """

    name: str
    kind: str
    role: str  # "proposed", "baseline" (Section V-A) or "reference"
    source: str
    make: Callable[[Topology, int, str], Schedule] = field(repr=False)
    chunk_counts: tuple[int, ...]
    topology_agnostic: bool  # can be resynthesized on a degraded topology
    collectives: tuple[str, ...] = TREE_COLLECTIVES  # the collectives it schedules


ALGORITHMS = {
    a.name: a
    for a in [
        Algorithm(
            "equimesh-xtree",
            "equimesh",
            "proposed",
            "seed 000, Algorithms 1-3: XTree AllGather, MirrorXTree AllReduce on EquiMesh",
            _lead("xtree"),
            (1, 2, 4, 8),
            True,
        ),
        Algorithm(
            "mesh-ring2d",
            "mesh",
            "baseline",
            "seed 000, Section V-A '2DMesh' [13], [32]: hierarchical ring RS-X, RS-Y, AG-Y, AG-X",
            _lead("ring2d"),
            (1, 2, 4),
            False,
        ),
        Algorithm(
            "mesh-multitree",
            "mesh",
            "baseline",
            "seed 000, Section V-A 'MultiTree' [26]: one tree per node; RS on the reversed trees",
            _lead("multitree"),
            (1, 2, 4),
            True,
        ),
        Algorithm(
            "mesh-tacos",
            "mesh",
            "baseline",
            "seed 000, Section V-A 'TACOS' [28]: randomized greedy link-chunk matching on the "
            "time-expanded network, best of several seeds (schedules/methods/tacos.py)",
            BASELINES["tacos"],
            (1, 2, 4),
            True,
        ),
        Algorithm(
            "mesh-tto",
            "mesh",
            "baseline",
            "seed 000, Section V-A 'TTO' [27]: three link-disjoint trees with chunk pipelining (schedules/methods/tto.py)",
            BASELINES["tto"],
            (3, 6, 12),
            False,
        ),
        Algorithm(
            "mesh-tidalmesh",
            "mesh",
            "baseline",
            "seed 000, Section V-A 'TidalMesh' [29]: APPROXIMATION, bidirectional 'tide' reduce-scatter/"
            "all-gather per row and column (schedules/methods/tidalmesh.py)",
            BASELINES["tidalmesh"],
            (1, 2, 4),
            False,
        ),
        Algorithm(
            "mesh-overlap",
            "mesh",
            "baseline",
            "seed 000, Section V-A 'TidalMesh' [29] overlap: ReduceScatter and AllGather of different chunks "
            "in one step list (format version 2), link-balanced trees (schedules/methods/overlap.py)",
            BASELINES["overlap"],
            (4, 8, 16),
            True,
            ("allreduce",),
        ),
        Algorithm(
            "equimesh-overlap",
            "equimesh",
            "reference",
            "the same overlapped AllReduce on EquiMesh: does overlap help where the degree bound "
            "already equals the link bound?",
            BASELINES["overlap"],
            (4, 8),
            True,
            ("allreduce",),
        ),
        Algorithm(
            "overflow-xtree",
            "overflow",
            "reference",
            "seed 000, Fig. 2b overflow-degree mesh (6-port edge routers) with XTree/MirrorXTree",
            _lead("xtree"),
            (1, 2, 4, 8),
            True,
        ),
        Algorithm(
            "supermesh-xtree",
            "supermesh",
            "reference",
            "seed 001 SM(rows, cols): rows and columns fully connected, with XTree/MirrorXTree",
            _lead("xtree"),
            (1, 2, 4, 8),
            True,
        ),
        *(
            Algorithm(
                f"{kind}-a2a",
                kind,
                role,
                f"{what}: seed 003 Section 3.6 ring-relay AllToAll, balanced shortest routes "
                "(schedules/methods/a2a.py, docs/alltoall.md)",
                _relay,
                (1, 2),
                True,
                ("alltoall",),
            )
            for kind, role, what in (
                ("equimesh", "proposed", "EquiMesh"),
                ("mesh", "baseline", "2D mesh, seed 003's (d_max / 4) M / BW"),
                ("overflow", "reference", "overflow-degree mesh (Fig. 2b)"),
                ("torus", "reference", "2D torus, seed 003's (d_max / 8) M / BW"),
                ("supermesh", "reference", "seed 001 SM(rows, cols)"),
            )
        ),
        Algorithm(
            "mesh-xtree",
            "mesh",
            "reference",
            "XTree/MirrorXTree on the plain mesh: separates the topology's gain from the algorithm's",
            _lead("xtree"),
            (1, 2, 4, 8),
            True,
        ),
    ]
}


def machine() -> str:
    """Host, CPU model and core count, Python version: the header of every measured table.

    Returns
    -------
    str
        One line, with the numpy version too.
    """
    import os
    import platform

    model = platform.processor() or "cpu"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
    except OSError:
        pass
    return (
        f"{platform.node()} ({platform.machine()}, {model}, {os.cpu_count()} cores), "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def default_sizes() -> np.ndarray:
    """1 KB to 1 GB per node in powers of two (Figs. 7/8).

    Returns
    -------
    numpy.ndarray
        float64, shape (21,): 2**10 .. 2**30 bytes.
    """
    return 2.0 ** np.arange(10, 31)


def parse_size(text: str) -> float:
    """``4096``, ``4K``, ``16M``, ``1G`` (binary multiples); must be > 0.

    Parameters
    ----------
    text : str
        A number with an optional K/M/G suffix and an optional trailing B, any case.

    Returns
    -------
    float
        Bytes.

    Raises
    ------
    ValueError
        If it is not such a number, or not > 0.
    """
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}
    try:
        v = float(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else float(t)
    except ValueError:
        raise ValueError(f"size {text!r} is not a number with an optional K/M/G suffix") from None
    if not v > 0:
        raise ValueError(f"sizes must be > 0 bytes (got {text!r})")
    return v


def format_size(v: float) -> str:
    """A byte count as the largest whole binary unit: ``4KB``, ``16MB``, ``1GB``, else ``<v>B``.

    Parameters
    ----------
    v : float
        Bytes.

    Returns
    -------
    str
    """
    for unit, m in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if v >= m and v % m == 0:
            return f"{int(v // m)}{unit}B"
    return f"{v:g}B"


@dataclass
class Curve:
    """One algorithm on one topology: the best chunk count and bandwidth per size.

    Attributes
    ----------
    algorithm : str
        The :class:`Algorithm` name.
    role : str
        Its role.
    topology : Topology
    sizes : numpy.ndarray
        float64, shape (S,): message sizes per node in bytes.
    by_chunks : dict
        K -> ``steps``, ``bound``, ``completion`` (seconds, shape (S,)), ``synth_s``, ``verify_s``,
        ``sim_s`` and ``transfers``.
    schedules : dict
        K -> Schedule.
    completion : numpy.ndarray
        Per size, the least completion time over K (seconds).
    best_chunks : list of int
        Per size, the K that gives it.
    effective_bandwidth : numpy.ndarray
        sizes / completion, bytes per second.
    """

    algorithm: str
    role: str
    topology: Topology
    sizes: np.ndarray
    by_chunks: dict  # K -> {"steps", "bound", "completion", "synth_s", "sim_s"}
    schedules: dict = field(repr=False, default_factory=dict)  # K -> Schedule

    @property
    def completion(self) -> np.ndarray:
        """Per size, the least completion time over the chunk counts."""
        return np.min([v["completion"] for v in self.by_chunks.values()], axis=0)

    @property
    def best_chunks(self) -> list[int]:
        """Per size, the chunk count K with the least completion time."""
        ks = list(self.by_chunks)
        return [ks[i] for i in np.argmin([v["completion"] for v in self.by_chunks.values()], axis=0)]

    @property
    def effective_bandwidth(self) -> np.ndarray:
        """Message size per node / completion time (seed 000, Section V-B), bytes per second."""
        return self.sizes / self.completion


# Schedules already synthesized and verified in this process, with their times: ``equimesh report``
# evaluates the same algorithms on the same topologies for several sections (Fig. 9 twice at 8x8).
_SCHEDULES: dict[tuple, tuple[Schedule, float, float]] = {}


def _synthesized(algo: Algorithm, topo: Topology, chunks: int, collective: str) -> tuple[Schedule, float, float]:
    """``algo``'s verified schedule and its synthesis and verification seconds, made once per process."""
    key = (algo.name, topo.kind, topo.rows, topo.cols, tuple(topo.links), chunks, collective)
    if key not in _SCHEDULES:
        t0 = time.perf_counter()
        sched = algo.make(topo, chunks, collective)
        t1 = time.perf_counter()
        verify(sched)
        _SCHEDULES[key] = sched, t1 - t0, time.perf_counter() - t1
    return _SCHEDULES[key]


def run_curve(
    algo: Algorithm,
    topo: Topology,
    collective: str,
    sizes: np.ndarray,
    chunk_counts,
    model: LinkModel,
    link_order: str = "schedule",
) -> Curve:
    """Synthesize, verify and simulate ``algo`` on ``topo`` at every chunk count (schedules made once
    per process: the synthesis and verification seconds are those of the first time).

    Parameters
    ----------
    algo : Algorithm
    topo : Topology
    collective : str
    sizes : numpy.ndarray
        Message sizes per node in bytes.
    chunk_counts : iterable of int
    model : LinkModel
    link_order : str
        As :func:`.alphabeta.simulate`.

    Returns
    -------
    Curve

    Raises
    ------
    ScheduleInvalid
        If a schedule fails verification.
    """
    by, scheds = {}, {}
    for k in chunk_counts:
        sched, synth_s, verify_s = _synthesized(algo, topo, k, collective)
        t2 = time.perf_counter()
        res = simulate(sched, sizes, model, link_order)
        t3 = time.perf_counter()
        by[k] = {
            "steps": sched.num_steps,
            "bound": schedule_bound(sched),
            "completion": res.completion,
            "synth_s": synth_s,
            "verify_s": verify_s,
            "sim_s": t3 - t2,
            "transfers": int(sum(p.transfers for p in sched.phases)),
        }
        scheds[k] = sched
    return Curve(algo.name, algo.role, topo, sizes, by, scheds)


def evaluate(
    rows: int,
    cols: int,
    collective: str,
    algorithms: list[str],
    sizes: np.ndarray,
    model: LinkModel = LinkModel(),
    chunk_counts: list[int] | None = None,
    link_order: str = "schedule",
) -> list[Curve]:
    """Figs. 7/8 for one mesh size: one :class:`Curve` per algorithm that schedules ``collective``.

    Parameters
    ----------
    rows, cols : int
        The network size.
    collective : str
        One of :data:`COLLECTIVES`.
    algorithms : list of str
        Keys of :data:`ALGORITHMS`.
    sizes : numpy.ndarray
        Message sizes per node in bytes.
    model : LinkModel
    chunk_counts : list of int or None
        None: each algorithm's own.
    link_order : str

    Returns
    -------
    list of Curve
        In the order of ``algorithms``.
    """
    curves = []
    for name in algorithms:
        algo = ALGORITHMS[name]
        if collective not in algo.collectives:
            continue
        topo = build(algo.kind, rows, cols)
        curves.append(run_curve(algo, topo, collective, sizes, chunk_counts or algo.chunk_counts, model, link_order))
    return curves


def best_baseline(curves: list[Curve]) -> Curve | None:
    """The Section V-A baseline with the highest effective bandwidth at the largest size.

    Parameters
    ----------
    curves : list of Curve

    Returns
    -------
    Curve or None
        None if no curve has role ``"baseline"``.
    """
    base = [c for c in curves if c.role == "baseline"]
    return max(base, key=lambda c: c.effective_bandwidth[-1]) if base else None


def to_json(
    rows: int, cols: int, collective: str, curves: list[Curve], model: LinkModel, link_order: str = "schedule"
) -> dict:
    """The JSON of one evaluation (``equimesh eval --json``).

    Parameters
    ----------
    rows, cols : int
    collective : str
    curves : list of Curve
    model : LinkModel
    link_order : str

    Returns
    -------
    dict
        ``rows``, ``cols``, ``collective``, ``model``, ``message_size_definition``, ``sizes``,
        ``best_baseline``, ``ratio_vs_best_baseline`` (the proposed algorithm's, at the largest
        size) and ``results``: per curve effective bandwidth in GB/s, completion in seconds,
        best K, and per K steps, bound, transfers and timings.
    """
    best = best_baseline(curves)
    out = {
        "rows": rows,
        "cols": cols,
        "collective": collective,
        "model": {"alpha_s": model.alpha, "bandwidth_Bps": model.bandwidth, "link_order": link_order},
        "message_size_definition": (
            "bytes contributed per node (AllGather shard)"
            if collective == "allgather"
            else "bytes each node sends in all (M / N to every node, its own share included)"
            if collective == "alltoall"
            else "bytes of the vector each node reduces (shard = M / N)"
        ),
        "sizes": [float(s) for s in curves[0].sizes] if curves else [],
        "best_baseline": best.algorithm if best else None,
        "ratio_vs_best_baseline": None,
        "results": [],
    }
    for c in curves:
        r = {
            "algorithm": c.algorithm,
            "role": c.role,
            "source": ALGORITHMS[c.algorithm].source,
            "topology": c.topology.name,
            "kind": c.topology.kind,
            "effective_bandwidth_GBps": [round(float(x) / 1e9, 6) for x in c.effective_bandwidth],
            "completion_s": [float(x) for x in c.completion],
            "best_chunks": c.best_chunks,
            "chunks": {
                str(k): {
                    "steps": v["steps"],
                    "bound": v["bound"],
                    "transfers": v["transfers"],
                    "effective_bandwidth_GBps": [round(float(x) / 1e9, 6) for x in c.sizes / v["completion"]],
                    "synth_s": round(v["synth_s"], 4),
                    "sim_s": round(v["sim_s"], 4),
                }
                for k, v in c.by_chunks.items()
            },
        }
        if best is not None:
            r["ratio_vs_best_baseline"] = round(float(c.effective_bandwidth[-1] / best.effective_bandwidth[-1]), 4)
            if c.role == "proposed":
                out["ratio_vs_best_baseline"] = r["ratio_vs_best_baseline"]
        out["results"].append(r)
    return out


# ----- figures --------------------------------------------------------------------------

STYLE = {
    "equimesh-xtree": ("tab:red", "o", "-"),
    "overflow-xtree": ("tab:purple", "s", "--"),
    "mesh-xtree": ("tab:pink", "^", ":"),
    "mesh-ring2d": ("tab:blue", "v", "-"),
    "mesh-multitree": ("tab:green", "D", "-"),
    "mesh-tacos": ("tab:orange", "P", "-"),
    "mesh-tto": ("tab:brown", "X", "-"),
    "mesh-tidalmesh": ("tab:cyan", "*", "-"),
    "mesh-overlap": ("black", "h", "-"),
    "equimesh-a2a": ("tab:red", "o", "-"),
    "mesh-a2a": ("tab:blue", "v", "-"),
    "overflow-a2a": ("tab:purple", "s", "--"),
    "torus-a2a": ("tab:gray", "<", "-."),
    "supermesh-a2a": ("tab:olive", "d", "--"),
    "equimesh-overlap": ("tab:olive", "d", "--"),
}


def plot_curves(curves: list[Curve], title: str, path: str, hlines: list[tuple[str, float]] = ()) -> None:
    """Effective bandwidth against message size per node (log x), one line per algorithm.

    ``hlines``: ``(label, bytes/s)`` reference levels such as saturation bounds, drawn dashed.

    Parameters
    ----------
    curves : list of Curve
    title : str
    path : str
        The image to write.
    hlines : list of tuple of (str, float)
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 4.0), dpi=100)
    for c in curves:
        color, marker, ls = STYLE.get(c.algorithm, (None, ".", "-"))
        ax.plot(
            c.sizes,
            c.effective_bandwidth / 1e9,
            ls,
            color=color,
            marker=marker,
            ms=4,
            lw=1.4,
            label=f"{c.algorithm} ({c.topology.kind})",
        )
    for (label, level), color in zip(hlines, ("0.3", "0.6", "0.45")):
        ax.axhline(level / 1e9, ls="--", lw=0.9, color=color, label=label)
    ax.set_xscale("log", base=2)
    ticks = [2.0**e for e in range(10, 31, 4)]
    ax.set_xticks(ticks, [format_size(t) for t in ticks])
    ax.set_xlabel("message size per node")
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
