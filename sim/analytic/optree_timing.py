"""OpTree (seed 002): communication time, the paper's printed figures checked, and Figs. 4-7.

Time follows Eq. (3), T = (d/B + a) S, with the Section V-A parameters:
B = 40 Gbps per wavelength, a = 25 us MRR reconfiguration (the O/E/O delay of
one clock per flit is left out). Every algorithm pays (d/B + a) per step, as
the paper's Tables 2 and 3 do: their percentages are step-count ratios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ...schedules import optree as ot

__all__ = [
    "ALGORITHMS",
    "Check",
    "MB",
    "RECONFIG_S",
    "SECTION_VB_BEST_K",
    "TABLE1",
    "TABLE2",
    "TABLE2_NODES",
    "TABLE3",
    "TABLE3_WAVELENGTHS",
    "WAVELENGTH_BPS",
    "comm_time",
    "figures",
    "optree_best",
    "paper_checks",
    "performance_difference",
    "table1_steps",
]

WAVELENGTH_BPS = 40e9  # seed 002, Section V-A: 40 Gbps per wavelength
RECONFIG_S = 25e-6  # seed 002, Section V-A: MRR reconfiguration delay per step
ALGORITHMS = ("ring", "ne", "wrht", "osm", "optree")


def comm_time(steps: int, item_bytes: float) -> float:
    """Eq. (3): seconds for ``steps`` steps, each moving one item of ``item_bytes`` per wavelength.

    Seed 002, Eq. (3) with Section V-A's parameters: T = (d / B + a) S, B = 40 Gbps, a = 25 us.

    Parameters
    ----------
    steps : int
        S.
    item_bytes : float
        d, bytes per item.

    Returns
    -------
    float
        Seconds.
    """
    return (item_bytes * 8 / WAVELENGTH_BPS + RECONFIG_S) * steps


def table1_steps(nodes: int, wavelengths: int, stages: int | None = None) -> dict[str, int]:
    """Table 1's formulas; OpTree at ``stages`` (default Lemma 3's k*), WRHT with (theta - 1).

    Seed 002, Table 1 (OpTree: Theorem 1).

    Parameters
    ----------
    nodes : int
        N.
    wavelengths : int
        w.
    stages : int or None
        OpTree's tree depth k.

    Returns
    -------
    dict of str to int
        Steps per algorithm of :data:`ALGORITHMS`.
    """
    k = stages or ot.k_star(nodes)
    return {
        "ring": ot.ring_steps(nodes),
        "ne": ot.ne_steps(nodes),
        "wrht": ot.wrht_steps(nodes, wavelengths)[0],
        "osm": ot.osm_steps(nodes, wavelengths),
        "optree": ot.theorem1_steps(nodes, wavelengths, k),
    }


def performance_difference(other: int, optree: int) -> float:
    """Tables 2 and 3: (S_other - S_OpTree) / S_other in percent, truncated to two decimals as printed.

    Parameters
    ----------
    other : int
        The other algorithm's steps (> 0).
    optree : int
        OpTree's steps.

    Returns
    -------
    float
        Percent; negative where OpTree takes more steps.
    """
    return math.trunc(Fraction(other - optree, other) * 10000) / 100


@dataclass
class Check:
    """One printed figure of seed 002 against its own formula.

    Attributes
    ----------
    what : str
        Which figure, and the formula.
    printed : float
        The value the paper prints.
    computed : float
        The value its formula gives.
    note : str
        Where they disagree, the reading (if any) that reproduces the printed value.
    agrees : bool
        ``printed == computed``.
    """

    what: str
    printed: float
    computed: float
    note: str = ""

    @property
    def agrees(self) -> bool:
        """Whether the printed and computed values are equal."""
        return self.printed == self.computed


# Seed 002's printed figures. Table 1: N = 1024, w = 64. Tables 2 (w = 64) and 3 (N = 1024):
# performance difference of OpTree over WRHT, Ring, NE in percent, per column.
TABLE1 = {"ring": 1023, "ne": 512, "wrht": 259, "osm": 128, "optree": 70, "k_star": 7}
TABLE2 = {
    "wrht": (87.64, 72.97, 39.76, -31.27),
    "ring": (93.73, 93.15, 92.37, 91.69),
    "ne": (87.5, 86.32, 84.76, 83.39),
}
TABLE2_NODES = (512, 1024, 2048, 4096)
TABLE3 = {
    "wrht": (62.75, -180.0, 72.97, 93.2),
    "ring": (-9.48, 72.62, 93.15, 96.57),
    "ne": (-118.75, 45.31, 86.32, 93.16),
}
TABLE3_WAVELENGTHS = (4, 16, 64, 256)
SECTION_VB_BEST_K = {512: 6, 1024: 6, 2048: 7, 4096: 8}  # "depths 6, 6, 7, and 8 are optimal"


def _diffs(nodes: int, w: int, wrht_variant: int) -> dict[str, float]:
    s = table1_steps(nodes, w)
    s["wrht"] = ot.wrht_steps(nodes, w)[wrht_variant]
    return {a: performance_difference(s[a], s["optree"]) for a in ("wrht", "ring", "ne")}


def paper_checks() -> list[Check]:
    """Every printed step count and percentage of seed 002 recomputed from its formula.

    Where a figure disagrees, the note names the reading (if any) that reproduces it.

    Returns
    -------
    list of Check
        The motivation example (Section III-C), Table 1, Lemma 3's k*, Section V-B's best depths,
        Theorem 1 at k* against its minimum, Tables 2 and 3.
    """
    out = []
    # Motivation example (Section III-C), N = 16, w = 2.
    out.append(Check("motivation one-stage: ceil(ceil(16^2/8) / 2)", 16, -(-math.ceil(16**2 / 8) // 2)))
    two = -(-4 * math.ceil(4**2 / 8) // 2) + -(-4 * math.ceil(4**2 / 4) // 2)
    out.append(Check("motivation two-stage 4-ary: ceil(4 ceil(4^2/8) / 2) + ceil(4 ceil(4^2/4) / 2)", 12, two))
    out.append(
        Check(
            "motivation three-stage depth: floor(log_3 16)",
            3,
            math.floor(math.log(16, 3)),
            "the printed 3 is ceil(log_3 16); floor gives 2",
        )
    )
    st = [8 * math.ceil(2**2 / 8), 2 * 3 * math.ceil(3**2 / 4), 6 * math.ceil(3**2 / 4)]
    out.append(
        Check(
            "motivation three-stage wavelengths, stage 2: 2*3*ceil(3^2/4)",
            12,
            st[1],
            "ceil(9/4) = 3; the printed 12 needs floor(9/4) = 2",
        )
    )
    out.append(
        Check(
            "motivation three-stage wavelengths, stage 3: 6*ceil(3^2/4)",
            12,
            st[2],
            "as stage 2: the printed 12 needs floor(9/4)",
        )
    )
    out.append(
        Check(
            "motivation three-stage steps from the printed expressions",
            16,
            sum(-(-v // 2) for v in st),
            "4 + 6 + 6 = 16 uses the printed 12s; the expressions give 4 + 9 + 9",
        )
    )
    # Table 1.
    s = table1_steps(1024, 64)
    for a in ALGORITHMS:
        note = ""
        if a == "osm":
            note = "ceil(N^2/8w) = 2048; 128 equals N/8"
        out.append(Check(f"Table 1 {a} (N=1024, w=64)", TABLE1[a], s[a], note))
    out.append(Check("Table 1 k* (N=1024), Lemma 3 with ceil", TABLE1["k_star"], ot.k_star(1024)))
    out.append(
        Check(
            "Lemma 3 k* (N=1024) with round ('integer rounding' in the text)",
            TABLE1["k_star"],
            ot.k_star(1024, round),
            "6.39 rounds to 6; the table uses the ceiling",
        )
    )
    for n, k in SECTION_VB_BEST_K.items():
        out.append(
            Check(
                f"Section V-B best depth for N={n} vs Lemma 3 (ceil)",
                k,
                ot.k_star(n),
                "" if k == ot.k_star(n) else f"round() gives {ot.k_star(n, round)}",
            )
        )
    for n, w in ((16, 2), (512, 64), (1024, 64), (2048, 64), (4096, 64)):
        best = min(range(1, 16), key=lambda k: (ot.theorem1_steps(n, w, k), k))
        out.append(
            Check(
                f"Theorem 1 at Lemma 3's k* = {ot.k_star(n)} vs its minimum (k = {best}), N={n}, w={w}",
                ot.theorem1_steps(n, w, ot.k_star(n)),
                ot.theorem1_steps(n, w, best),
            )
        )
    # Tables 2 and 3: percentages are step-count ratios.
    for i, n in enumerate(TABLE2_NODES):
        d = _diffs(n, 64, 0)
        for a, row in TABLE2.items():
            out.append(Check(f"Table 2 {a}, N={n}", row[i], d[a]))
    for i, w in enumerate(TABLE3_WAVELENGTHS):
        d = _diffs(1024, w, 0)
        for a, row in TABLE3.items():
            note = ""
            if row[i] != d[a]:
                alt = {
                    f"w={w}, WRHT with theta": _diffs(1024, w, 1),
                    "w=128 (Section V-E's text)": _diffs(1024, 128, 0),
                }
                note = "; ".join(f"matches {k}" for k, v in alt.items() if v[a] == row[i]) or "no reading found"
            out.append(Check(f"Table 3 {a}, w={w}", row[i], d[a], note))
    return out


# ----- Figs. 4-7 ---------------------------------------------------------------

MB = 1 << 20


def optree_best(nodes: int, wavelengths: int, stages: int) -> ot.OpTreeSchedule:
    """The verified constructive schedule of the best ``stages``-stage tree.

    Parameters
    ----------
    nodes : int
        N.
    wavelengths : int
        w.
    stages : int
        k; N must have a factorization into k radices (:func:`..optree.factorizations`).

    Returns
    -------
    OpTreeSchedule
        Verified (:func:`..optree.verify`).
    """
    sched = ot.build(nodes, wavelengths, ot.best_radices(nodes, wavelengths, stages))
    ot.verify(sched)
    return sched


def figures(out: Path, constructive_max_nodes: int = 1024) -> list[Path]:
    """Figs. 4-7 of seed 002 from the formulas, plus verified constructive OpTree where N <= the limit.

    Absolute times (Eq. 3) on log axes instead of the paper's normalized bars.

    Parameters
    ----------
    out : Path
        The directory the PNGs go to (created if missing).
    constructive_max_nodes : int
        Largest N for which constructive schedules are built and drawn.

    Returns
    -------
    list of Path
        ``optree_fig4_depth.png``, ``optree_fig5_sizes.png``, ``optree_fig6_nodes.png``,
        ``optree_fig7_wavelengths.png``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    styles = {"ring": "o-", "ne": "s-", "wrht": "^-", "optree": "D-"}

    # Fig. 4: time against the tree depth k, w = 64, d = 4 MB.
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for n in TABLE2_NODES:
        ks = range(1, 13)
        ax.plot(ks, [comm_time(ot.theorem1_steps(n, 64, k), 4 * MB) * 1e3 for k in ks], "-", label=f"N={n} Theorem 1")
        if n <= constructive_max_nodes:
            ks2 = [k for k in range(2, 11) if ot.factorizations(n, k)]
            ax.plot(
                ks2,
                [comm_time(optree_best(n, 64, k).num_steps, 4 * MB) * 1e3 for k in ks2],
                "x",
                color=ax.lines[-1].get_color(),
                label=f"N={n} constructive",
            )
    ax.set(xlabel="stages k", ylabel="time (ms)", yscale="log", title="Fig. 4: OpTree vs depth, w=64, d=4 MB")
    ax.legend(fontsize=7)
    paths.append(_save(fig, out / "optree_fig4_depth.png"))

    def panel(ax, n, w, sizes, title):
        steps = table1_steps(n, w)
        for a, st in styles.items():
            ax.plot([s / MB for s in sizes], [comm_time(steps[a], s) * 1e3 for s in sizes], st, label=a, ms=4)
        if n <= constructive_max_nodes:
            c = optree_best(n, w, ot.k_star(n)).num_steps if ot.factorizations(n, ot.k_star(n)) else None
            if c:
                ax.plot(
                    [s / MB for s in sizes],
                    [comm_time(c, s) * 1e3 for s in sizes],
                    "k:",
                    label=f"optree constructive ({c} steps)",
                )
        ax.set(xscale="log", yscale="log", xlabel="message size d (MB)", ylabel="time (ms)", title=title)
        ax.legend(fontsize=6)

    # Fig. 5: N = 1024, w = 64, small and large messages.
    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    panel(axs[0], 1024, 64, [32 * 1024 * 2**i for i in range(6)], "Fig. 5a: small messages")
    panel(axs[1], 1024, 64, [4**i * MB for i in range(1, 7)], "Fig. 5b: large messages")
    paths.append(_save(fig, out / "optree_fig5_sizes.png"))
    # Fig. 6: node counts; Fig. 7: wavelength counts (N = 1024); d = 4..128 MB.
    sizes = [4 * MB * 2**i for i in range(6)]
    fig, axs = plt.subplots(1, 4, figsize=(16, 4))
    for ax, n in zip(axs, TABLE2_NODES):
        panel(ax, n, 64, sizes, f"Fig. 6: N={n}, w=64")
    paths.append(_save(fig, out / "optree_fig6_nodes.png"))
    fig, axs = plt.subplots(1, 4, figsize=(16, 4))
    for ax, w in zip(axs, TABLE3_WAVELENGTHS):
        panel(ax, 1024, w, sizes, f"Fig. 7: N=1024, w={w}")
    paths.append(_save(fig, out / "optree_fig7_wavelengths.png"))
    return paths


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
