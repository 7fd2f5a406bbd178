"""Fig. 9's open parameters searched (seed 000, Section V-C): which reading gives 1.37x / 1.13x?

The paper prints the geometric-mean speedups of EquiMesh + XTree over the mesh algorithms, 1.37x
forward and 1.13x backward, with per-model ranges 1.35x-1.39x and 1.06x-1.23x, and Table I's
512 x 512 MAC array at 1 GHz. It does not print the sequence length, the micro-batch, the
achieved compute rate, nor how much communication overlaps computation. With the collectives
about 2x faster on EquiMesh (Fig. 7), a speedup ``S`` needs a communication share
``f = 2 (1 - 1/S)`` of the baseline's time: 54 % forward, 23 % backward.

:func:`sweep` recomputes the speedups of :mod:`.llm` (whose collective times come from the
verified schedules and the alpha-beta simulator) over the achieved fraction of peak (``mfu``)
and the forward overlap, for each sequence length; :func:`solve_mfu` finds, per model, the
``mfu`` at which the forward (or backward) speedup equals the paper's.
"""

from __future__ import annotations

import numpy as np

from .llm import PROPOSED, evaluate_models, geomean, layer_work, pass_times

__all__ = ["PAPER", "RANGES", "measure", "sweep", "solve_mfu", "plot_sensitivity"]

PAPER = {"forward": 1.37, "backward": 1.13}
RANGES = {"forward": (1.35, 1.39), "backward": (1.06, 1.23)}


def measure(models, rows: int, cols: int, seq_len: int, micro_batch: int, log=lambda s: None) -> list[dict]:
    """:func:`.llm.evaluate_models` at Table I's peak, no forward overlap: the collective times per algorithm.

    Parameters
    ----------
    models : list of ModelShape
        The models (:func:`.llm.load_models`).
    rows, cols : int
        The array's size.
    seq_len, micro_batch : int
        The sequence length and micro-batch.
    log : callable
        ``log(line)`` for progress.

    Returns
    -------
    list of dict
        :func:`.llm.evaluate_models`'s rows, one per model.
    """
    return evaluate_models(models, rows, cols, (seq_len,), (micro_batch,), log=log)


def _speedups(model, row: dict, nodes: int, mfu: float, overlap: float) -> dict:
    w = layer_work(model, row["seq_len"], row["micro_batch"], nodes)
    per = {
        a: pass_times(w, v["allgather_s"], v["reducescatter_s"], model.layers, mfu, overlap)
        for a, v in row["algorithms"].items()
    }
    base = [a for a in per if a != PROPOSED]
    return {p: min(per[a][f"{p}_s"] for a in base) / per[PROPOSED][f"{p}_s"] for p in ("forward", "backward")}


def sweep(models, rows_out: list[dict], nodes: int, mfus, overlap: float = 0.0) -> dict:
    """``{"forward": array (models x mfus), "backward": ...}`` of speedups over the best mesh baseline.

    Parameters
    ----------
    models : list of ModelShape
        The models (:func:`.llm.load_models`).
    rows_out : list of dict
        :func:`measure`'s rows, one per model, in the same order.
    nodes : int
        N, the array's nodes.
    mfus : sequence of float
        Achieved fractions of the peak compute, each in (0, 1].
    overlap : float
        Fraction of a forward block's collectives hidden under its GEMMs.

    Returns
    -------
    dict
        ``"forward"`` and ``"backward"``: float arrays ``[models, mfus]``.
    """
    out = {"forward": np.zeros((len(models), len(mfus))), "backward": np.zeros((len(models), len(mfus)))}
    for i, (m, r) in enumerate(zip(models, rows_out)):
        for j, u in enumerate(mfus):
            s = _speedups(m, r, nodes, float(u), overlap)
            out["forward"][i, j], out["backward"][i, j] = s["forward"], s["backward"]
    return out


def solve_mfu(
    models, rows_out: list[dict], nodes: int, which: str, target: float, overlap: float = 0.0
) -> float | None:
    """The one ``mfu`` in (1e-4, 1] at which the geomean of ``which``'s speedup over ``models`` equals
    ``target`` (bisection on log mfu; the speedup grows with mfu as compute shrinks), or None.

    Parameters
    ----------
    models : list of ModelShape
        The models (:func:`.llm.load_models`).
    rows_out : list of dict
        :func:`measure`'s rows, one per model, in the same order.
    nodes : int
        N, the array's nodes.
    which : str
        ``"forward"`` or ``"backward"``.
    target : float
        The speedup to reach (the paper's 1.37 or 1.13).
    overlap : float
        Fraction of a forward block's collectives hidden under its GEMMs.

    Returns
    -------
    float or None
        The mfu, or None when the target lies outside the speedups at 1e-4 and 1.
    """

    def f(x):
        return (
            geomean([_speedups(m, r, nodes, float(np.exp(x)), overlap)[which] for m, r in zip(models, rows_out)])
            - target
        )

    lo, hi = np.log(1e-4), 0.0
    if f(lo) > 0 or f(hi) < 0:
        return None
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return float(np.exp((lo + hi) / 2))


def plot_sensitivity(curves: dict, mfus, path: str, title: str) -> None:
    """Geomean forward and backward speedup against mfu, one line per (sequence length, overlap).

    Parameters
    ----------
    curves : dict
        Per line label, a :func:`sweep` result.
    mfus : sequence of float
        The mfu values the sweeps used.
    path : str
        The PNG to write.
    title : str
        The figure's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, p in zip(axes, ("forward", "backward")):
        for label, sw in curves.items():
            ax.plot(mfus, [geomean(sw[p][:, j]) for j in range(len(mfus))], label=label)
        ax.axhline(PAPER[p], color="k", ls="--", lw=1, label=f"paper {PAPER[p]}x")
        ax.axhspan(PAPER[p] * 0.9, PAPER[p] * 1.1, color="0.85", zorder=0)
        ax.set_xscale("log")
        ax.set_xlabel("achieved fraction of Table I's peak compute (mfu)")
        ax.set_title(f"{p} (geomean of the 4 models; band = paper +-10 %)")
    axes[0].set_ylabel("speedup over the best mesh baseline")
    axes[1].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
