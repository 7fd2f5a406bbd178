"""Seed 001's DA2A and IA2A run on the RTL, against the round-cost model's choice.

Every slide example that fits SM(n) (``schedules/supermesh.slide_examples(n)``) is run in each row of
SM(m, n) at once, a message of size w as w n chunks (so IA2A's parts, 1/n of each message, are whole
chunks and the model's round costs are exact in steps). Both schedules
(``schedules/methods/a2a_supermesh``) are compiled and run bit-exact on a backend; the faster in
cycles is set beside the model's choice (M <= R + C: DA2A) and its costs.
"""

from __future__ import annotations

from ..rtl.rom import compile_schedule
from ..schedules import supermesh as sm
from ..schedules.methods.a2a_supermesh import direct_alltoall, indirect_alltoall, row_counts
from ..schedules.topology import build

__all__ = ["run_examples"]


def run_examples(rows: int, cols: int, chunk_flits: int, run) -> list[dict]:
    """DA2A and IA2A of every fitting slide example on SM(rows, cols), each run by ``run(image, label)``.

    Parameters
    ----------
    rows, cols : int
        SM(rows, cols); the examples are on SM(cols) (one row).
    chunk_flits : int
        F, flits per chunk.
    run : callable
        ``run(image, label) -> RunResult`` (:func:`~equimesh.sim.backends.run_image`).

    Returns
    -------
    list of dict
        Per example: ``example``, the model's ``M``, ``R``, ``C``, ``choice``, ``da2a_cost`` and
        ``ia2a_cost`` (in steps: the model's cost x cols), and per schedule (``da2a``, ``ia2a``) its
        ``steps``, ``cycles``, ``slots`` and ``bit_exact``; ``rtl_faster`` ("DA2A", "IA2A" or "tie")
        and ``agrees`` (the faster is the model's choice, or a tie where the model's costs tie too).
    """
    topo = build("supermesh", rows, cols)
    out = []
    for name, msg in sm.slide_examples(cols).items():
        model = sm.all_to_all(msg)
        counts = row_counts(topo, (msg * cols).astype(int))
        row = {
            "example": name,
            "M": model.M,
            "R": model.R,
            "C": model.C,
            "choice": model.choice,
            "da2a_cost": model.da2a_cost * cols,
            "ia2a_cost": model.ia2a_cost * cols,
        }
        for key, make in (("da2a", direct_alltoall), ("ia2a", indirect_alltoall)):
            sched = make(topo, counts)
            image = compile_schedule(sched, chunk_flits, topo)
            res = run(image, f"{topo.name} {name} {key}")
            ok = res.bit_exact and res.stats.busy_matches_schedule and res.counters_agree
            row[key] = {"steps": sched.num_steps, "cycles": res.cycles, "slots": image.slots, "bit_exact": ok}
        d, i = row["da2a"]["cycles"], row["ia2a"]["cycles"]
        row["rtl_faster"] = "DA2A" if d < i else "IA2A" if i < d else "tie"
        model_tie = row["da2a_cost"] == row["ia2a_cost"]
        row["agrees"] = row["rtl_faster"] == model.choice or (row["rtl_faster"] == "tie" and model_tie)
        out.append(row)
    return out
