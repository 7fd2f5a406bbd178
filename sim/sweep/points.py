"""The library call behind each sweep point (docs/sweeps.md "Commands"): one function per command,
taking a point of :mod:`.plan` and returning a flat dict of results.

The result's standard names (``steps``, ``bound``, ``cycles``, ``utilization``, ``time_s``,
``fmax_mhz``, ``luts``, ``ffs``, ``latency_mean``, ``latency_p99``) become columns of the store
(:mod:`.store`); everything else is kept in its ``result`` JSON column. :func:`run_point` never raises:
a failing point returns ``{"error": one line}`` for the store.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import subprocess
import sys
import time
import traceback
import zlib

__all__ = [
    "POINT_FUNCTIONS",
    "SHARED",
    "child_setup",
    "fpga_synthesis",
    "run_isolated",
    "run_point",
    "run_shared",
    "shared_key",
]


def _rows_cols(point: dict) -> tuple[int, int]:
    r, c = point["size"].split("x")
    return int(r), int(c)


def _schedule(point: dict):
    from ...schedules.synth import synthesize
    from ...schedules.topology import build
    from ...schedules.verify import verify

    topo = build(point["kind"], *_rows_cols(point))
    sched = synthesize(topo, point["K"], point["collective"], point["options"].get("algorithm", "auto"))
    verify(sched)
    return topo, sched


def schedule_point(point: dict) -> dict:
    """Synthesize and verify a schedule (schedules/synth.py); its steps against seed 000's lower bound
    (Section III-A, schedules/schedule.py ``lower_bound``)."""
    from ...schedules.schedule import schedule_bound

    _, sched = _schedule(point)
    bound = schedule_bound(sched)
    return {
        "steps": sched.num_steps,
        "bound": bound,
        "efficiency": round(bound / sched.num_steps, 4),
        "method": sched.meta.get("method"),
    }


def simulate_point(point: dict) -> dict:
    """Compile the schedule into table images (rtl/rom.py), fit the design (rtl/design.py) and run it
    on the point's backend (sim/backends.py ``run_image``), checked bit for bit against the model."""
    from ...rtl.design import fit
    from ...rtl.rom import compile_schedule
    from ..backends import run_image

    topo, sched = _schedule(point)
    image = compile_schedule(sched, point["F"], topo)
    design = fit(image, pipeline=point["pipeline"])
    res = run_image(image, point["options"]["backend"], design)
    st = res.stats
    ok = res.bit_exact and st.busy_matches_schedule and res.counters_agree
    if not ok:
        raise RuntimeError(f"not bit-exact: {res.outcome.first_mismatch}")
    return {
        "steps": sched.num_steps,
        "cycles": res.cycles,
        "utilization": round(st.mean, 4),
        "utilization_min": round(st.min, 4),
        "cycles_per_step": design.period,
        "sim_seconds": res.run_seconds,
    }


def compare_point(point: dict) -> dict:
    """One kind of ``equimesh compare`` (sim/compare.py): cycles, utilization and cells per router."""
    import tempfile

    from ...rtl.design import fit
    from ..backends import run_image
    from ..compare import compare

    r, c = _rows_cols(point)
    with tempfile.TemporaryDirectory() as out:
        res = compare(
            r,
            c,
            point["K"],
            point["F"],
            point["collective"],
            out,
            lambda image, label: run_image(image, point["options"]["backend"], fit(image, pipeline=point["pipeline"])),
            [point["kind"]],
        )[point["kind"]]
    if not res["bit_exact"]:
        raise RuntimeError("not bit-exact")
    return {
        "steps": res["steps"],
        "cycles": res["cycles"],
        "utilization": res["link_utilization"],
        "crosspoints": res["crosspoints"],
        "router_cells": res["router_cells"],
    }


def fpga_synthesis(point: dict) -> dict:
    """The stage that every seed of one ``fpga`` design shares: each distinct router of the network
    synthesized for an ECP5 (rtl/flow/ecp5.py ``synthesize``), once, whatever the seed.

    Parameters
    ----------
    point : dict
        An ``fpga`` point; its ``seed`` is not used.

    Returns
    -------
    dict
        ``{"routers": [...]}``: per router ``name``, ``ports``, ``nodes``, ``luts``, ``ffs``, ``brams``,
        the synthesis key and its netlist (zlib-compressed, base64), which travels to the place-and-route
        tasks so that they need no shared file system.
    """
    from ...rtl.design import fit
    from ...rtl.flow.ecp5 import check_block_rams, distinct_routers, synthesize
    from ...rtl.rom import compile_schedule

    topo, sched = _schedule(point)
    o = point["options"]
    design = fit(compile_schedule(sched, point["F"], topo), flit_bits=o["flit_bits"], pipeline=point["pipeline"])
    routers = []
    for r in distinct_routers(design):
        key, entry = synthesize(r)
        syn = json.loads((entry / "result.json").read_text())
        check_block_rams(r.name, syn["brams"], o["part"])
        routers.append(
            {
                "name": r.name,
                "ports": r.lanes,
                "nodes": sum(r.names.values()),
                "luts": syn["luts"],
                "ffs": syn["ffs"],
                "brams": syn["brams"],
                "synth_key": key,
                "netlist": base64.b64encode(zlib.compress((entry / "netlist.json").read_bytes(), 6)).decode(),
            }
        )
    return {"routers": routers}


def fpga_point(point: dict, synthesis: dict | None = None) -> dict:
    """Every distinct router of the network placed and routed for an ECP5 with the point's nextpnr seed
    (rtl/flow/ecp5.py, as ``equimesh fpga`` with one seed): per router LUT4s, flip-flops and Fmax;
    the network's Fmax is its slowest router's.

    Parameters
    ----------
    point : dict
        An ``fpga`` point.
    synthesis : dict, optional
        Its design's :func:`fpga_synthesis` (a task of its own on a cluster); computed here if not given.

    Returns
    -------
    dict
        ``fmax_mhz`` (slowest router), ``luts`` and ``ffs`` (largest router), and ``routers``.
    """
    import tempfile
    from pathlib import Path

    from ...rtl.flow.ecp5 import Target, place_and_route

    synthesis = synthesis or fpga_synthesis(point)
    o = point["options"]
    target = Target(o["part"], o["package"], o["speed"], o["clock_mhz"])
    routers = []
    for r in synthesis["routers"]:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "netlist.json").write_bytes(zlib.decompress(base64.b64decode(r["netlist"])))
            pnr = json.loads(
                (place_and_route(r["name"], r["synth_key"], Path(d), target, point["seed"]) / "result.json").read_text()
            )
        keep = ("name", "ports", "nodes", "luts", "ffs", "brams")
        routers.append({**{k: r[k] for k in keep}, "fmax_mhz": round(pnr["fmax_mhz"], 2)})
    return {
        "fmax_mhz": min(x["fmax_mhz"] for x in routers),
        "luts": max(x["luts"] for x in routers),
        "ffs": max(x["ffs"] for x in routers),
        "routers": routers,
    }


def packet_run(table, traffic, payload_flits: int, pipeline: int, warmup: int, measure: int) -> dict:
    """The adapter to the packet simulator (sim/traffic.py ``run_compiled``, the compiled model, every copy
    checked by the hardware checkers) with a warm-up and a measurement phase: the one place a change of
    its entry point needs a change here."""
    from ..traffic import run_compiled
    from ..verilator import build_directory

    with build_directory(None, "equimesh-sweep-") as d:
        return run_compiled(
            table, traffic, payload_flits, d, cycles=warmup + measure, pipeline=pipeline, phase=(warmup, measure)
        )


def traffic_point(point: dict) -> dict:
    """One point of a load-latency curve (sim/traffic_sweep.py, as ``equimesh traffic --sweep``): random
    packet traffic at the point's offered load (``rate``, flits per node per cycle) on the packet network,
    and the measurement phase's injected and accepted load (flits per node per cycle, a multicast's
    copies counted once per packet) and latency (cycles, from the source router taking the header to
    the destination taking the last flit)."""
    from ...rtl.packet import PacketFormat
    from ...schedules.routing import forwarding_table
    from ...schedules.topology import build
    from ..traffic import make_traffic

    o = point["options"]
    topo = build(point["kind"], *_rows_cols(point))
    table = forwarding_table(topo, o["routing"])
    fmt = PacketFormat(topo.nodes, o["payload_flits"])
    traffic = make_traffic(
        fmt, o["pattern"], fanout=o["fanout"], rate=point["rate"] / fmt.packet_flits, seed=point["seed"]
    )
    r = packet_run(table, traffic, o["payload_flits"], point["pipeline"], o["warmup"], o["cycles"])
    if r["deadlock"] or r["lost"] or r["corrupted"] or r["duplicates"] or r["misdelivered"] or r["errors"]:
        raise RuntimeError(
            f"packet run failed: deadlock {r['deadlock']}, lost {r['lost']}, corrupted "
            f"{r['corrupted']}, duplicates {r['duplicates']}, misdelivered {r['misdelivered']}"
        )
    ph, fan = r["phase"], o["fanout"] if o["pattern"] == "multicast" else 1
    return {
        "injected": round(ph["injected"] / fan, 5),
        "accepted": round(ph["accepted"] / fan, 5),
        "latency_mean": ph["latency_mean"],
        "latency_p99": ph["latency_p99"],
        "copies": ph["latency_copies"],
        "packets": r["packets"],
        "utilization": r["link_utilization"],
        "sim_seconds": r["sim_seconds"],
    }


def evaluate_point(point: dict) -> dict:
    """The alpha-beta completion time (seed 003; sim/analytic/evaluate.py) of one algorithm at one
    message size and chunk count."""
    import numpy as np

    from ..analytic.evaluate import evaluate, parse_size

    o = point["options"]
    size = parse_size(o["message"])
    (curve,) = evaluate(
        *_rows_cols(point), point["collective"], [o["algorithm"]], np.array([size]), chunk_counts=[point["K"]]
    ) or (None,)
    if curve is None:
        raise ValueError(f"{o['algorithm']} does not schedule {point['collective']}")
    k = curve.by_chunks[point["K"]]
    return {
        "kind": curve.topology.kind,
        "steps": k["steps"],
        "bound": k["bound"],
        "time_s": float(curve.completion[0]),
        "bandwidth_gbs": float(curve.effective_bandwidth[0] / 1e9),
    }


def llm_point(point: dict) -> dict:
    """SP + TP layer times of the language models (sim/analytic/llm.py, seed 000 Fig. 9): the geometric
    mean speed-up of EquiMesh + XTree over the best mesh baseline."""
    from ..analytic.llm import evaluate_models, geomean, load_models

    o = point["options"]
    models = [m for m in load_models() if o["model"] in ("all", m.name)]
    res = evaluate_models(models, *_rows_cols(point), (o["seq_len"],), (o["micro_batch"],))
    return {
        "forward_speedup": geomean([r["forward_speedup"] for r in res]),
        "backward_speedup": geomean([r["backward_speedup"] for r in res]),
        "models": len(res),
    }


def optree_point(point: dict) -> dict:
    """OpTree on an optical ring (seed 002): Table 1's step counts at N nodes and w wavelengths, with
    k stages (0: Lemma 3's k*)."""
    from ...schedules import optree as ot
    from ..analytic.optree_timing import table1_steps

    n, w = point["nodes"], point["wavelengths"]
    k = point["options"]["stages"] or ot.k_star(n)
    steps = table1_steps(n, w, k)
    return {"steps": steps["optree"], "stages": k, "table1": steps}


POINT_FUNCTIONS = {
    "schedule": schedule_point,
    "simulate": simulate_point,
    "compare": compare_point,
    "fpga": fpga_point,
    "traffic": traffic_point,
    "evaluate": evaluate_point,
    "llm": llm_point,
    "optree": optree_point,
}
# Commands whose points share a stage: command -> (stage name, the stage's function, the axes it does
# not depend on). A sweep runs the stage once per group of points and passes its result to each.
SHARED = {"fpga": ("fpga-synthesis", fpga_synthesis, ("seed",))}


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return f"{type(e).__name__}: {text}"[:500]


def shared_key(point: dict) -> str | None:
    """The key of the stage a point shares with others (:data:`SHARED`), or None if it has none.

    Parameters
    ----------
    point : dict
        A point of :meth:`.plan.Plan.points`.

    Returns
    -------
    str or None
        ``<stage>-<24 hex digits>``: the stage's name and the :func:`.plan.point_key` of the point
        without the axes the stage does not depend on (an ``fpga`` point's seed).
    """
    from .plan import point_key

    if point["command"] not in SHARED:
        return None
    stage, _, free = SHARED[point["command"]]
    return f"{stage}-{point_key({k: v for k, v in point.items() if k not in free})}"


def _outcome(call) -> dict:
    t0 = time.perf_counter()
    out = {"host": os.uname().nodename, "pid": os.getpid()}
    try:
        out["result"] = call()
    except MemoryError:
        out["error"] = "MemoryError: the point exceeded its memory limit"
    except Exception as e:  # noqa: BLE001 -- every failure of a point is a stored result, not a crash
        out["error"] = _one_line(e)
        out["traceback"] = traceback.format_exc(limit=-3)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def run_shared(point: dict) -> dict:
    """Run the stage that ``point`` shares with others (:data:`SHARED`) in this process; never raises.

    Parameters
    ----------
    point : dict
        A point whose command has a shared stage.

    Returns
    -------
    dict
        As :func:`run_point`: ``{"result": ...}`` for :func:`run_point`'s ``shared``, or ``{"error"}``.
    """
    return _outcome(lambda: SHARED[point["command"]][1](point))


def run_point(point: dict, shared: dict | None = None) -> dict:
    """Run one point in this process; never raises.

    Parameters
    ----------
    point : dict
        A point of :meth:`.plan.Plan.points`.
    shared : dict, optional
        The outcome of :func:`run_shared` for this point's shared stage: its result is passed on (a
        failed stage fails the point with the stage's error). Without it the point computes the stage.

    Returns
    -------
    dict
        ``{"result": {...}, "seconds", "host", "pid"}``, or ``{"error": one line, "traceback", ...}``
        when the library raised (a bad combination, a tool crash).
    """
    function = POINT_FUNCTIONS[point["command"]]
    if shared is None:
        return _outcome(lambda: function(point))
    if "error" in shared:
        return {**shared, "seconds": 0.0}
    return _outcome(lambda: function(point, shared["result"]))


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it exits


def child_setup(memory_mb: int | None):
    """The ``preexec_fn`` of a point's child process: it is killed (SIGKILL) when its parent, the worker,
    dies, so a stopped sweep or a lost worker leaves no orphan still computing; and with ``memory_mb`` its
    address space is limited (``RLIMIT_AS``).

    Parameters
    ----------
    memory_mb : int, optional
        The child's address-space limit in MiB.

    Returns
    -------
    callable
        Runs in the child between fork and exec.
    """
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)

    def setup():
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if memory_mb is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    return setup


def run_isolated(
    point: dict, timeout: float | None = None, memory_mb: int | None = None, shared: dict | None = None, stage=False
) -> dict:
    """:func:`run_point` (or with ``stage`` :func:`run_shared`) in a child Python process: a point that
    hangs or swells fails alone, and its worker lives on.

    Parameters
    ----------
    point : dict
        A point of :meth:`.plan.Plan.points`.
    timeout : float, optional
        Seconds before the child is killed (the outcome is then ``"timeout after T s"``).
    memory_mb : int, optional
        The child's address-space limit in MiB (``RLIMIT_AS``).
    shared : dict, optional
        As for :func:`run_point`.
    stage : bool
        Run the point's shared stage instead of the point.

    Returns
    -------
    dict
        As :func:`run_point`.
    """
    t0 = time.perf_counter()
    where = {"host": os.uname().nodename, "pid": os.getpid()}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", __name__],
            input=json.dumps({"point": point, "shared": shared, "stage": stage}),
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=child_setup(memory_mb),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:g} s", "seconds": round(time.perf_counter() - t0, 3), **where}
    if proc.returncode != 0 or not proc.stdout.strip():
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {
            "error": f"the point's process died ({proc.returncode}): {tail}"[:500],
            "seconds": round(time.perf_counter() - t0, 3),
            **where,
        }
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":  # the child of run_isolated: a point as JSON on stdin, its outcome on stdout
    _job = json.loads(sys.stdin.read())
    _out = run_shared(_job["point"]) if _job["stage"] else run_point(_job["point"], _job["shared"])
    print(json.dumps(_out, default=str))
