"""OpTree's optical constraints and its torus extension (seed 002, Section IV-B, Eqs. 4-9, and Section VI).

* Eq. 4, the longest signal path of stage 1, in nodes: ``L_max = 1 + (N^(1/k) - 1) N^(1 - 1/k)``
  (from node 1 of the first child to node 1 of the last, Fig. 3); :func:`built_path_nodes` measures
  the same quantity on a constructed tree.
* Eq. 5, insertion loss ``L_l = P_m + L_max P_pass`` (dB), and Eq. 6, the power budget
  ``P_laser >= L_l + P_p``.
* Eq. 7, ``SNR = 10 log10(P_S / (P_N + P_O))`` (dB); Eq. 8, worst-case crosstalk
  ``P_Nw = L_max P_Rx + P_Tx``; Eq. 9, ``BER = 1/2 exp(-SNR_w / 4)``, reliable below 1e-9.

Eq. 9 leaves open whether ``SNR_w`` is Eq. 7's dB value or the linear ratio. The formula
``1/2 exp(-SNR/4)`` is the Gaussian-noise error rate of a linear power ratio, so :func:`ber`
takes the linear ratio ``10^(SNR_dB / 10)`` by default; ``snr_in_db=True`` plugs in the dB
value as printed (then BER < 1e-9 needs SNR_w >= 4 ln(5e8) = 80.1 dB).

Torus extension (Section VI): on an ``n x n`` torus, OpTree runs on every row ring, then on
every column ring, each column item carrying the ``n`` items its node gathered in its row.

Radices that do not divide ``N``: the seed's Algorithm 1 splits the ring into children of
``ceil(N/m)`` nodes, so the last child is short. After stage 1 the nodes of a child hold the
items of their own positions in every child; a short child has no nodes at the last positions,
so no later stage inside it can bring it those items. :func:`check_radices` refuses such trees
with one line; every split into equal children is built and verified by :func:`.optree.build`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import optree as ot

__all__ = [
    "BER_LIMIT",
    "Optics",
    "ber",
    "built_path_nodes",
    "check_radices",
    "crosstalk_power",
    "insertion_loss",
    "l_max",
    "power_ok",
    "snr_db",
    "torus_steps",
]

BER_LIMIT = 1e-9  # seed 002, Section IV-B-2


def _radix(n: int, k: int) -> float:
    if n < 2:
        raise ot.OpTreeError(f"N must be >= 2 (got {n})")
    if k < 1:
        raise ot.OpTreeError(f"the tree depth k must be >= 1 (got {k})")
    m = n ** (1 / k)
    if m < 2 - 1e-9:
        raise ot.OpTreeError(
            f"radix m = N^(1/k) = {m:.3f} must be >= 2 (k = {k} is too deep for N = {n}; k <= {int(math.log2(n))})"
        )
    return m


def l_max(n: int, k: int) -> float:
    """Eq. 4: the longest stage-1 signal path, in nodes, of a k-stage tree on N nodes (real radix N^(1/k)).

    Parameters
    ----------
    n : int
        N, the ring's nodes (>= 2).
    k : int
        The tree's stages (depth), with radix N^(1/k) >= 2.

    Returns
    -------
    float
        L_max in nodes.

    Raises
    ------
    OpTreeError
        If N < 2, k < 1 or the radix is below 2.
    """
    m = _radix(n, k)
    return 1 + (m - 1) * n ** (1 - 1 / k)


def built_path_nodes(sched: ot.OpTreeSchedule) -> int:
    """The longest lightpath of a constructed tree, in nodes (hops + 1), along its fiber.

    Parameters
    ----------
    sched : OpTreeSchedule
        A schedule of :func:`.optree.build`.

    Returns
    -------
    int
        The longest lightpath's nodes, the measured counterpart of Eq. 4's L_max.
    """
    hops = np.where(sched.fiber == ot.CW, sched.dst - sched.src, sched.src - sched.dst) % sched.nodes
    return int(hops.max()) + 1


def insertion_loss(path_nodes: float, p_mod_db: float, p_pass_db: float) -> float:
    """Eq. 5: ``L_l = P_m + L_max P_pass`` in dB.

    Parameters
    ----------
    path_nodes : float
        L_max, the longest path in nodes (:func:`l_max` or :func:`built_path_nodes`).
    p_mod_db : float
        P_m, the modulator loss in dB (>= 0).
    p_pass_db : float
        P_pass, the loss per passed node in dB (>= 0).

    Returns
    -------
    float
        L_l in dB.

    Raises
    ------
    OpTreeError
        If a loss is negative.
    """
    if p_mod_db < 0 or p_pass_db < 0:
        raise ot.OpTreeError(f"losses P_m and P_pass must be >= 0 dB (got {p_mod_db:g}, {p_pass_db:g})")
    return p_mod_db + path_nodes * p_pass_db


def power_ok(loss_db: float, p_laser_dbm: float, penalty_db: float) -> bool:
    """Eq. 6: ``P_laser >= L_l + P_p``.

    Parameters
    ----------
    loss_db : float
        L_l, the insertion loss in dB (:func:`insertion_loss`).
    p_laser_dbm : float
        P_laser, the laser power in dBm.
    penalty_db : float
        P_p, the extinction-ratio power penalty in dB.

    Returns
    -------
    bool
        Whether the laser covers the loss and the penalty.
    """
    return p_laser_dbm >= loss_db + penalty_db


def crosstalk_power(path_nodes: float, p_rx: float, p_tx: float) -> float:
    """Eq. 8: ``P_Nw = L_max P_Rx + P_Tx`` (linear power, e.g. mW).

    Parameters
    ----------
    path_nodes : float
        L_max, the longest path in nodes.
    p_rx : float
        P_Rx, the worst receiver crosstalk per node (>= 0).
    p_tx : float
        P_Tx, the worst transmitter crosstalk (>= 0).

    Returns
    -------
    float
        P_Nw, the worst-case crosstalk noise, in the unit of ``p_rx`` and ``p_tx``.

    Raises
    ------
    OpTreeError
        If a power is negative.
    """
    if p_rx < 0 or p_tx < 0:
        raise ot.OpTreeError(f"crosstalk powers P_Rx and P_Tx must be >= 0 (got {p_rx:g}, {p_tx:g})")
    return path_nodes * p_rx + p_tx


def snr_db(p_signal: float, p_noise: float, p_other: float) -> float:
    """Eq. 7: ``10 log10(P_S / (P_N + P_O))``.

    Parameters
    ----------
    p_signal : float
        P_S, the signal power (> 0).
    p_noise : float
        P_N, the crosstalk noise (:func:`crosstalk_power`), in the same unit.
    p_other : float
        P_O, other noise, in the same unit.

    Returns
    -------
    float
        The SNR in dB.

    Raises
    ------
    OpTreeError
        If P_S <= 0 or P_N + P_O <= 0.
    """
    if p_signal <= 0:
        raise ot.OpTreeError(f"the signal power P_S must be > 0 (got {p_signal:g})")
    if p_noise + p_other <= 0:
        raise ot.OpTreeError(f"the noise power P_N + P_O must be > 0 (got {p_noise + p_other:g})")
    return 10 * math.log10(p_signal / (p_noise + p_other))


def ber(snr_w_db: float, snr_in_db: bool = False) -> float:
    """Eq. 9: ``1/2 exp(-SNR_w / 4)``; SNR_w linear (default) or the dB value as printed (module docstring).

    Parameters
    ----------
    snr_w_db : float
        SNR_w in dB (:func:`snr_db`).
    snr_in_db : bool
        Plug in the dB value as printed instead of the linear ratio.

    Returns
    -------
    float
        The bit error rate; reliable below :data:`BER_LIMIT`.
    """
    x = snr_w_db if snr_in_db else 10 ** (snr_w_db / 10)
    return 0.5 * math.exp(-x / 4)


@dataclass
class Optics:
    """Eqs. 4-9 for one tree and one set of device parameters.

    Attributes
    ----------
    l_max : float
        Eq. 4's L_max in nodes.
    loss_db : float or None
        Eq. 5's insertion loss L_l (dB), when P_m and P_pass are given.
    power_ok : bool or None
        Eq. 6's power budget holds, when also P_laser and P_p are given.
    noise : float or None
        Eq. 8's crosstalk P_Nw, when P_Rx and P_Tx are given.
    snr_db : float or None
        Eq. 7's SNR (dB), when also P_S and P_O are given.
    ber : float or None
        Eq. 9's bit error rate.
    reliable : bool or None
        ``ber`` below :data:`BER_LIMIT`.
    """

    l_max: float
    loss_db: float | None = None
    power_ok: bool | None = None
    noise: float | None = None
    snr_db: float | None = None
    ber: float | None = None
    reliable: bool | None = None


def check_radices(n: int, radices: tuple[int, ...]) -> None:
    """Refuse, with one line, a tree the seed's construction cannot complete (module docstring).

    Parameters
    ----------
    n : int
        N, the ring's nodes.
    radices : tuple of int
        The tree's radix per level, root first.

    Raises
    ------
    OpTreeError
        If a radix is below 2, does not divide its level's nodes, or the radices' product is not N.
    """
    if any(m < 2 for m in radices):
        raise ot.OpTreeError(f"every radix must be >= 2 (got {list(radices)}); a radix of 1 splits nothing")
    size = n
    for level, m in enumerate(radices, 1):
        if size % m:
            child = -(-size // m)
            last = size - child * (m - 1)
            short = (
                f"children of {child} and a last one of {last}"
                if last > 0
                else f"only {-(-size // child)} children of {child}"
            )
            raise ot.OpTreeError(
                f"radix {m} does not divide the {size} nodes at level {level}: seed 002's Algorithm 1 makes "
                f"{short}, and a short child's nodes never receive the items of the positions it lacks"
            )
        size //= m
    if size != 1:
        raise ot.OpTreeError(f"the radices {list(radices)} multiply to {math.prod(radices)}, not N = {n}")


def torus_steps(n: int, wavelengths: int, stages: int) -> dict:
    """Section VI on an n x n torus: Theorem 1's steps on a row ring, then on a column ring, and the
    constructive tree's (built and verified) for both phases; column items are n times larger.

    Parameters
    ----------
    n : int
        The torus side (each row and column ring has n nodes).
    wavelengths : int
        w, wavelengths per fiber.
    stages : int
        k, the tree's stages.

    Returns
    -------
    dict
        ``radices``, ``row_steps``, ``column_steps``, ``theorem1_total``, ``constructive_row``,
        ``constructive_total``, and the time as ``time_in_d_over_B`` (bandwidth term, column items n times
        larger) and ``time_steps_alpha`` (latency term, in steps).
    """
    rad = ot.best_radices(n, wavelengths, stages)
    sched = ot.build(n, wavelengths, rad)
    ot.verify(sched)
    s1 = ot.theorem1_steps(n, wavelengths, stages)
    return {
        "radices": list(rad),
        "row_steps": s1,
        "column_steps": s1,
        "theorem1_total": 2 * s1,
        "constructive_row": sched.num_steps,
        "constructive_total": 2 * sched.num_steps,
        "time_in_d_over_B": s1 + n * s1,
        "time_steps_alpha": 2 * s1,
    }
