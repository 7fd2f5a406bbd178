"""Run a sweep's points on Dask (``distributed``): an existing cluster by its scheduler's address, or a
``LocalCluster`` sized to the machine (docs/sweeps.md "Running").

Every point missing from the store is one Dask task calling :func:`.points.run_point` (or
:func:`.points.run_isolated` under a timeout or memory limit). Points that share a stage
(:data:`.points.SHARED`: the seeds of one ``fpga`` design share its synthesis) depend on one task that
runs the stage once, so that parallel workers never repeat it. The tasks return their outcomes to this
process, the client, which alone writes the store as each finishes: a sweep that is stopped keeps what
it finished, and is resumed by running it again. A worker that dies has its tasks rescheduled on the
others by the Dask scheduler (up to its ``allowed-failures``); a task whose workers kept dying is stored
as failed with that one line.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass

from .plan import point_key
from .points import run_isolated, run_point, run_shared, shared_key
from .store import Store

__all__ = [
    "CONNECT_TIMEOUT",
    "ClusterError",
    "Counts",
    "connect",
    "local_cluster",
    "run_serial",
    "run_sweep",
    "shared_task",
    "task",
]


class ClusterError(RuntimeError):
    """A scheduler that cannot be reached; the message names its address."""


CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler
POLL = 0.2  # seconds between looks at the running tasks


def connect(address: str):
    """The client of an existing Dask cluster.

    Parameters
    ----------
    address : str
        The scheduler's address, ``tcp://HOST:PORT``.

    Returns
    -------
    distributed.Client
        Connected; a :class:`ClusterError` naming ``address`` after :data:`CONNECT_TIMEOUT` seconds.
    """
    from distributed import Client

    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {' '.join(str(e).split())[:200]}") from None


def local_cluster(workers: int | None = None, memory_limit: str | None = None, processes: bool = True):
    """A Dask cluster on this machine.

    Parameters
    ----------
    workers : int, optional
        Single-threaded worker processes (default one per core).
    memory_limit : str, optional
        Each worker's memory limit in Dask's syntax (``"4GB"``; default the machine's memory shared out).
    processes : bool
        Workers as processes (False: threads of this process, for tests).

    Returns
    -------
    (distributed.LocalCluster, distributed.Client)
        The cluster (its dashboard on a free port) and its client.
    """
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers or os.cpu_count() or 1,
        threads_per_worker=1,
        processes=processes,
        memory_limit=memory_limit or "auto",
        dashboard_address=":0",
    )
    return cluster, Client(cluster, set_as_default=False)


def task(point: dict, timeout: float | None, memory_mb: int | None, shared: dict | None = None) -> dict:
    """One point, run on a worker: isolated in a child process when it has a timeout or memory limit.
    ``shared`` is the outcome of its :func:`shared_task`, a task it depends on.

    Parameters
    ----------
    point : dict
        The point (:meth:`Sweep.points <equimesh.sim.sweep.plan.Sweep.points>`).
    timeout : float or None
        Seconds it may take.
    memory_mb : int or None
        Address space it may use, in MiB.
    shared : dict, optional
        The outcome of the shared task it depends on.

    Returns
    -------
    dict
        Its outcome, as :func:`~equimesh.sim.sweep.points.run_point` gives it.
    """
    if timeout is None and memory_mb is None:
        return run_point(point, shared)
    return run_isolated(point, timeout, memory_mb, shared)


def shared_task(point: dict, timeout: float | None, memory_mb: int | None) -> dict:
    """The stage a group of points shares (:data:`.points.SHARED`; an ``fpga`` design's synthesis, which
    all its seeds place and route), run once on a worker, under the points' limits.

    Parameters
    ----------
    point : dict
        One of the group's points (the stage depends only on what they share).
    timeout : float or None
        Seconds before the stage is stopped (None: no limit).
    memory_mb : int or None
        Memory limit of the stage's process in MB (None: no limit).

    Returns
    -------
    dict
        The stage's result, handed to each point of the group.
    """
    if timeout is None and memory_mb is None:
        return run_shared(point)
    return run_isolated(point, timeout, memory_mb, stage=True)


def run_serial(points: list[dict], progress=None) -> dict[str, dict]:
    """The points one after another in this process, each shared stage once (as on a cluster): the
    baseline of ``equimesh bench sweep``.

    Parameters
    ----------
    points : list of dict
        Points of :meth:`.plan.Plan.points`.
    progress : callable, optional
        ``progress(done, total)`` after each point.

    Returns
    -------
    dict
        Point key -> outcome (:func:`.points.run_point`).
    """
    keyed = {point_key(p): p for p in points}
    shared: dict[str, dict] = {}
    out = {}
    for k, p in keyed.items():
        s = shared_key(p)
        if s is not None and s not in shared:
            shared[s] = run_shared(p)
        out[k] = run_point(p, shared.get(s))
        if progress:
            progress(len(out), len(keyed))
    return out


@dataclass
class Counts:
    """A sweep's progress: points done (stored ok), failed (stored with an error), running, remaining;
    ``skipped``: points found in the store before the sweep started.

    Attributes
    ----------
    total : int
        Points in the sweep.
    skipped : int
        Points already in the store.
    done, failed, running : int
        Points stored ok, stored with an error, and being run.
    """

    total: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - self.failed

    def line(self) -> str:
        return f"{self.done} done, {self.running} running, {self.failed} failed, {self.remaining} remaining" + (
            f" ({self.skipped} already in the store)" if self.skipped else ""
        )


def _outcome(future) -> dict:
    if future.status == "finished":
        return future.result()
    e = future.exception() if future.status == "error" else None
    text = " ".join(str(e).split()) if e is not None else future.status
    return {"error": f"{type(e).__name__ if e is not None else 'Cancelled'}: {text}"[:500]}


def run_sweep(
    points: list[dict],
    store: Store,
    client,
    *,
    timeout: float | None = None,
    memory_mb: int | None = None,
    retries: int = 1,
    progress=None,
) -> Counts:
    """Run every point of ``points`` that ``store`` lacks as a Dask task; store each outcome as it arrives.

    Parameters
    ----------
    points : list of dict
        Points of :meth:`.plan.Plan.points` (duplicates are run once).
    store : Store
        The results store; only this function (the client) writes it, upserting by key.
    client : distributed.Client
        The cluster's client.
    timeout, memory_mb : float or int, optional
        Per-point limits (:func:`.points.run_isolated`); without both a point runs in its worker.
    retries : int
        Dask's retries of a task that raised (a point's own errors are results, not raises).
    progress : callable, optional
        ``progress(counts)``, called whenever the counts change.

    Returns
    -------
    Counts
        The sweep's final counts. On KeyboardInterrupt the remaining tasks are cancelled and the
        interrupt re-raised; the store keeps every finished point.
    """
    keyed = {point_key(p): p for p in points}
    have = store.keys()
    counts = Counts(len(keyed), skipped=len(have & set(keyed)))
    todo = {k: p for k, p in keyed.items() if k not in have}
    run = uuid.uuid4().hex[:8]  # a resumed sweep's tasks never meet the cancelled ones of its last run
    shared = {}  # a stage shared by several points: one task that their tasks depend on
    for p in todo.values():
        s = shared_key(p)
        if s is not None and s not in shared:
            shared[s] = client.submit(
                shared_task, p, timeout, memory_mb, key=f"sweep-shared-{s}-{run}", pure=False, retries=retries
            )
    futures = {
        client.submit(
            task,
            p,
            timeout,
            memory_mb,
            shared.get(shared_key(p)),
            key=f"sweep-point-{k}-{run}",
            pure=False,
            retries=retries,
        ): k
        for k, p in todo.items()
    }
    del shared  # each stage's result lives on while the points that depend on it wait
    pending = dict(futures)
    last = None
    try:
        while pending:
            for f in [f for f in pending if f.done()]:
                k = pending.pop(f)
                outcome = _outcome(f)
                store.put(k, todo[k], outcome)
                if "error" in outcome:
                    counts.failed += 1
                else:
                    counts.done += 1
            ours = {f.key for f in pending}
            counts.running = (
                sum(len(ours.intersection(keys)) for keys in client.processing().values()) if pending else 0
            )
            state = (counts.done, counts.failed, counts.running)
            if progress and state != last:
                progress(counts)
                last = state
            if pending:
                time.sleep(POLL)
    except BaseException:
        client.cancel(list(pending))
        raise
    return counts
