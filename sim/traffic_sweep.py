"""Load-latency sweeps of the packet network (the standard NoC curves; Dally and Towles, Section 23.1).

For each topology and injection rate, one run on the compiled model (:func:`~equimesh.sim.traffic.run_compiled`,
every copy checked by the hardware checkers): the generators inject for ``warmup + measure`` cycles, then
stop and the network drains. Figures of the measurement phase (cycles ``warmup .. warmup + measure``):

* offered load: the load asked for, flits per node per cycle (the generators create packets at it over
  ``packet_flits``, a Bernoulli process with a fresh random draw per cycle, into a source queue:
  :class:`~equimesh.rtl.packet_endpoints.Generator`); ``injected``: the load that entered the network
  in the phase. Below saturation it is the offered load within the randomness of the draws; above, the
  source queues grow and it falls behind;
* accepted load: copy-flits delivered per node per cycle (the copies whose last flit arrived in the phase);
* latency: mean and 99th percentile over the copies injected in the phase, in cycles from the cycle the
  source's router took the header to the cycle the destination took the last flit (BookSim's network
  latency: the wait in the source queue is not counted).

The saturation throughput of a topology is the highest accepted load of its sweep; ``saturated_at`` is the
first offered load whose mean latency exceeds :data:`SATURATION` times the sweep's lowest-load mean latency
(the zero-load latency).
"""

from __future__ import annotations

__all__ = ["SATURATION", "plot", "saturation"]


SATURATION = 3.0  # mean latency above this many times the zero-load latency: the network is saturated


def saturation(rows: list[dict]) -> dict:
    """A topology's saturation throughput (the highest accepted load) and the first offered load whose mean
    latency exceeds :data:`SATURATION` times the lowest load's (None: not reached in the sweep).

    Parameters
    ----------
    rows : list of dict
        The sweep's runs of one topology, in increasing offered load: ``offered``, ``accepted`` (flits per
        node per cycle) and ``latency_mean`` (cycles; None when nothing was measured).

    Returns
    -------
    dict
        ``saturation_throughput`` and ``saturated_at`` (None for an empty sweep).
    """
    if not rows:
        return {"saturation_throughput": None, "saturated_at": None}
    zero = rows[0]["latency_mean"]
    late = [r["offered"] for r in rows if zero and r["latency_mean"] and r["latency_mean"] > SATURATION * zero]
    return {"saturation_throughput": max(r["accepted"] for r in rows), "saturated_at": min(late) if late else None}


def plot(curves: dict[str, list[dict]], title: str, path: str) -> None:
    """Mean latency against offered load, one line per topology, written to ``path`` (PNG, SVG or PDF).

    Parameters
    ----------
    curves : dict[str, list of dict]
        Per topology name, its runs (as :func:`saturation` takes them).
    title : str
        The figure's title.
    path : str
        The file to write; its suffix picks the format.
    """
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
