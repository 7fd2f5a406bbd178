"""Load-latency sweeps of the packet network (the standard NoC curves; Dally and Towles, Section 23.1).

For each topology and injection rate, one run on the compiled model (:func:`~equimesh.sim.traffic.run_compiled`,
every copy checked by the hardware checkers): the generators inject for ``warmup + measure`` cycles, then
stop and the network drains. Figures of the measurement phase (cycles ``warmup .. warmup + measure``):

* offered load: copy-flits a node asks the network to deliver per cycle, ``rate x packet_flits x fanout``
  (``fanout`` 1 for the unicast patterns);
* accepted load: copy-flits delivered per node per cycle (the copies whose last flit arrived in the phase);
* latency: mean and 99th percentile over the copies injected in the phase, in cycles from the cycle the
  source's router took the header to the cycle the destination took the last flit.

The saturation throughput of a topology is the highest accepted load of its sweep; ``saturated_at`` is the
first offered load whose accepted load falls below :data:`SATURATION` of it.
"""

from __future__ import annotations

import numpy as np

SATURATION = 0.95  # accepted / offered below this: the network is saturated


def phase_figures(fmt, copies: np.ndarray, start: int, warmup: int, measure: int) -> dict:
    """The measurement phase's accepted load and latency from a compiled run's copy log (``copies``:
    ``(stamp, cycle)`` rows, :func:`~equimesh.sim.traffic.copy_latency`), the traffic starting at edge ``start``."""
    from .traffic import copy_latency

    lat = copy_latency(fmt, copies, start, (warmup, warmup + measure))
    arrived = copies[:, 1] - start
    delivered = int(np.count_nonzero((arrived >= warmup) & (arrived < warmup + measure)))
    accepted = delivered * fmt.packet_flits / (fmt.nodes * measure)
    return {"accepted": round(accepted, 5), **lat}


def saturation(rows: list[dict]) -> dict:
    """A topology's saturation throughput (the highest accepted load) and the first offered load at which
    accepted falls below :data:`SATURATION` of offered (None: not reached in the sweep)."""
    if not rows:
        return {"saturation_throughput": None, "saturated_at": None}
    late = [r["offered"] for r in rows if r["accepted"] < SATURATION * r["offered"]]
    return {"saturation_throughput": max(r["accepted"] for r in rows), "saturated_at": min(late) if late else None}


def plot(curves: dict[str, list[dict]], title: str, path: str) -> None:
    """Mean latency against offered load, one line per topology, written to ``path`` (PNG, SVG or PDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, rows in curves.items():
        pts = [(r["offered"], r["latency_mean"]) for r in rows if r["latency_mean"] is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=name)
    ax.set_xlabel("offered load (flits/node/cycle)")
    ax.set_ylabel("mean latency (cycles)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
