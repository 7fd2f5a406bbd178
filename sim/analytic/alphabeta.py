"""Event-driven alpha-beta simulator for schedule files (seed 000, Section V-A; TACOS's link model).

Every transfer of a chunk over a link occupies the link for ``alpha + chunk_bytes / B``
(the per-hop latency plus the serialization time). A transfer starts when

* its link is free: a link serves its transfers one at a time, in schedule order;
* its data is available: in an AllGather, when the sender holds the chunk; in a
  ReduceScatter, when every partial the sender receives for that chunk has arrived.

There is no global step barrier: a transfer starts as soon as both conditions hold,
so the steps of a schedule only fix the order of transfers on each link
(:func:`run_ready_order` is the alternative discipline: each link serves its transfers
in the order their data becomes ready, a FIFO per link). An
AllReduce file runs its ReduceScatter phase and then its AllGather phase on the same
links; the AllGather of ``(root, chunk)`` leaves the root as soon as the root holds
the full sum of that chunk (a data dependency, not a barrier between the phases).
An overlapped AllReduce (format version 2) interleaves the two in one step list; its
reduce transfers take the ReduceScatter keys and its gather transfers the AllGather
keys, with the same dependency at the root.

Because every data dependency of a verified schedule points to a strictly earlier
step, processing the transfers step by step and setting
``start = max(link free, data ready)`` gives exactly the event-driven times. The
state is one time per ``(node, root, chunk)`` key (when the node holds that chunk,
or when all partials for it have arrived), updated with numpy per step and
vectorized over message sizes.

Message size (seed 000, Section V-B, "communication size per node"):

* AllGather: every node contributes ``M`` bytes, split into ``K`` chunks of ``M / K``;
* ReduceScatter / AllReduce: every node holds an ``M``-byte vector; shard ``root`` is
  ``M / N`` of it and one chunk is ``M / (N K)``;
* AllToAll (seed 003, Section 3.6): every node holds ``M`` bytes, ``M / N`` for each node
  (itself included), sent as ``K`` chunks of ``M / (N K)``.

Effective bandwidth = ``M`` / completion time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...schedules.schedule import Schedule

__all__ = [
    "DIM_PHASES",
    "LINK_ORDERS",
    "LinkModel",
    "Result",
    "TABLE_I_ALPHA",
    "TABLE_I_BANDWIDTH",
    "Transfers",
    "chunk_bytes",
    "dim_decomposed_allreduce",
    "dim_decomposed_allreduce_time",
    "flatten",
    "run",
    "run_ready_order",
    "simulate",
]

# seed 000, Table I: 128 GB/s links, 20 ns per hop.
TABLE_I_BANDWIDTH = 128e9
TABLE_I_ALPHA = 20e-9
# Keep the (keys x sizes) state array below this many float64 values (64 MB).
_STATE_BUDGET = 1 << 23


@dataclass(frozen=True)
class LinkModel:
    """``alpha`` in time units per transfer; ``bandwidth`` in bytes (or flits) per time unit.

    Attributes
    ----------
    alpha : float
        Per-hop latency of a transfer (default seed 000, Table I: 20 ns, in seconds).
    bandwidth : float
        Link bandwidth (default seed 000, Table I: 128 GB/s, in bytes per second).
    """

    alpha: float = TABLE_I_ALPHA
    bandwidth: float = TABLE_I_BANDWIDTH


@dataclass
class Transfers:
    """A schedule flattened into the simulator's terms, one row per transfer.

    ``step`` orders the transfers (non-decreasing); within one step a link
    appears at most once and no transfer depends on another of the same step.
    ``src_keys[i]`` are the states transfer ``i`` waits for (it starts after the
    latest of them), ``dst_keys[i]`` the states its arrival completes (each
    keeps the latest arrival written to it); ``units[i]`` is its payload in
    chunks. Key ``n_keys`` pads rows of ``src_keys`` (always time 0) and key
    ``n_keys + 1`` pads rows of ``dst_keys`` (never read).

    Attributes
    ----------
    step : numpy.ndarray
        int64, shape (T,), non-decreasing.
    link : numpy.ndarray
        int64, shape (T,): link ids.
    src_keys, dst_keys : numpy.ndarray
        int64, shape (T, k): state keys each transfer waits for and completes.
    units : numpy.ndarray
        int64, shape (T,): payload in chunks.
    n_keys : int
        State keys 0..n_keys-1 (plus the two padding keys).
    n_links : int
        Links of the topology.
    bounds : numpy.ndarray
        int64: row offsets where each step starts, then the row count (set after construction).
    """

    step: np.ndarray
    link: np.ndarray
    src_keys: np.ndarray
    dst_keys: np.ndarray
    units: np.ndarray
    n_keys: int
    n_links: int

    def __post_init__(self):
        b = np.flatnonzero(np.diff(self.step)) + 1
        ends = [len(self.step)] if len(self.step) else []
        self.bounds = np.concatenate([[0], b, ends]).astype(np.int64)


@dataclass
class Result:
    """Times in the model's time unit, one entry per message size.

    Attributes
    ----------
    sizes : numpy.ndarray
        float64, shape (S,): message sizes per node (bytes, or flits in RTL units).
    completion : numpy.ndarray
        float64, shape (S,): completion times.
    unit_bytes : numpy.ndarray
        float64, shape (S,): bytes per chunk (:func:`chunk_bytes`).
    link_transfers : numpy.ndarray
        float64, shape (L,): transfers per link.
    link_units : numpy.ndarray
        float64, shape (L,): chunks carried per link.
    effective_bandwidth : numpy.ndarray
        sizes / completion (seed 000, Section V-B).
    """

    sizes: np.ndarray
    completion: np.ndarray
    unit_bytes: np.ndarray
    link_transfers: np.ndarray
    link_units: np.ndarray

    @property
    def effective_bandwidth(self) -> np.ndarray:
        """Message size per node / completion time (seed 000, Section V-B)."""
        return self.sizes / self.completion

    def link_busy(self, model: LinkModel, i: int = -1) -> np.ndarray:
        """Busy time of every link for size index ``i``.

        Parameters
        ----------
        model : LinkModel
            The model the result was computed with.
        i : int
            Index into ``sizes`` (default: the last).

        Returns
        -------
        numpy.ndarray
            float64, shape (L,): transfers x alpha + chunks x chunk bytes / bandwidth.
        """
        return self.link_transfers * model.alpha + self.link_units * self.unit_bytes[i] / model.bandwidth

    def link_utilization(self, model: LinkModel, i: int = -1) -> np.ndarray:
        """Busy time / completion time per link for size index ``i``.

        Parameters
        ----------
        model : LinkModel
        i : int
            Index into ``sizes`` (default: the last).

        Returns
        -------
        numpy.ndarray
            float64, shape (L,), in 0..1.
        """
        return self.link_busy(model, i) / self.completion[i]


def chunk_bytes(collective: str, nodes: int, chunks: int, message: np.ndarray) -> np.ndarray:
    """Bytes in one chunk for a message of ``message`` bytes per node (see module docstring).

    Parameters
    ----------
    collective : str
        ``"allgather"``: M / K; otherwise M / (N K) (seed 000, Section V-B).
    nodes : int
        N.
    chunks : int
        K.
    message : array_like of float
        M, bytes per node.

    Returns
    -------
    numpy.ndarray
        float64, the shape of ``message``.
    """
    message = np.asarray(message, dtype=np.float64)
    if collective == "allgather":
        return message / chunks
    return message / (nodes * chunks)


def flatten(sched: Schedule) -> Transfers:
    """Turn every phase's steps into one global step order with (phase, node, root, chunk) keys.

    Key ``(p, v, root, chunk)``: when node ``v`` holds the chunk (AllGather) or has all
    its partials (ReduceScatter) in phase ``p``. The AllGather phase of an AllReduce
    sends a root's own chunk once the root's ReduceScatter key is complete. In an
    overlapped AllReduce ``p`` is the transfer's op (0 reduce, 1 gather).

    Parameters
    ----------
    sched : Schedule
        A verified schedule (any collective, overlapped included).

    Returns
    -------
    Transfers
        One src and one dst key per transfer, one unit (chunk) each.
    """
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    if sched.collective == "alltoall":
        return _flatten_alltoall(sched)
    per_phase = n * n * k
    parts, offset = [], 0
    for p, phase in enumerate(sched.phases):
        for s, a in enumerate(phase.steps):
            if sched.overlapped:
                a = np.asarray(a, dtype=np.int64).reshape(-1, 4)
                p_of, a = a[:, 3], a[:, :3]
            else:
                a = np.asarray(a, dtype=np.int64).reshape(-1, 3)
                p_of = np.full(len(a), p)
            if len(a):
                parts.append((np.full(len(a), offset + s, dtype=np.int64), p_of, a))
        offset += len(phase.steps)
    if parts:
        step = np.concatenate([x[0] for x in parts])
        phase_of = np.concatenate([x[1] for x in parts])
        tr = np.concatenate([x[2] for x in parts])
    else:
        step, phase_of, tr = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
    link, root, chunk = tr[:, 0], tr[:, 1], tr[:, 2]
    rc = root * k + chunk
    src = topo.link_src[link]
    # a root starts its AllGather from the previous phase's (ReduceScatter) key
    src_phase = np.where((src == root) & (phase_of > 0), phase_of - 1, phase_of)
    return Transfers(
        step=step,
        link=link,
        src_keys=(src_phase * per_phase + src * (n * k) + rc)[:, None],
        dst_keys=(phase_of * per_phase + topo.link_dst[link] * (n * k) + rc)[:, None],
        units=np.ones(len(link), dtype=np.int64),
        n_keys=per_phase * (2 if sched.collective == "allreduce" else 1),
        n_links=len(topo.links),
    )


def _flatten_alltoall(sched: Schedule) -> Transfers:
    """AllToAll (docs/alltoall.md): a relay forwards a chunk once it holds it, as in an AllGather; the
    keys ``(node, source, chunk)`` that occur are numbered densely (there are N^2 K of them per node)."""
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    steps = [np.asarray(a, dtype=np.int64).reshape(-1, 3) for a in sched.phases[0].steps]
    step = np.concatenate([np.full(len(a), s, dtype=np.int64) for s, a in enumerate(steps)] or [np.zeros(0, np.int64)])
    tr = np.concatenate(steps) if steps else np.zeros((0, 3), np.int64)
    link, rc = tr[:, 0], tr[:, 1] * (n * k) + tr[:, 2]
    src_key = topo.link_src[link] * (n * n * k) + rc
    dst_key = topo.link_dst[link] * (n * n * k) + rc
    keys, inv = np.unique(np.concatenate([src_key, dst_key]), return_inverse=True)
    return Transfers(
        step=step,
        link=link,
        src_keys=inv[: len(link), None],
        dst_keys=inv[len(link) :, None],
        units=np.ones(len(link), dtype=np.int64),
        n_keys=len(keys),
        n_links=len(topo.links),
    )


def run(tr: Transfers, unit_time, alpha: float) -> np.ndarray:
    """Completion time for each entry of ``unit_time`` (time to send one chunk's bytes).

    Exact event-driven times: per step, ``start = max(link free, latest src key)``,
    ``finish = start + alpha + units * unit_time``; every dst key keeps its latest finish.

    Parameters
    ----------
    tr : Transfers
    unit_time : array_like of float
        Time to send one unit, per case.
    alpha : float
        Per-transfer latency.

    Returns
    -------
    numpy.ndarray
        float64, one completion time (the last link's finish) per entry of ``unit_time``.
    """
    unit_time = np.atleast_1d(np.asarray(unit_time, dtype=np.float64))
    out = np.zeros(len(unit_time))
    group = max(1, _STATE_BUDGET // (tr.n_keys + 2))
    units = tr.units.astype(np.float64)[:, None]
    single = tr.src_keys.shape[1] == 1 and tr.dst_keys.shape[1] == 1
    for g in range(0, len(unit_time), group):
        ut = unit_time[g : g + group]
        state = np.zeros((tr.n_keys + 2, len(ut)))
        free = np.zeros((tr.n_links, len(ut)))
        for i in range(len(tr.bounds) - 1):
            lo, hi = tr.bounds[i], tr.bounds[i + 1]
            link = tr.link[lo:hi]
            if single:
                ready = state[tr.src_keys[lo:hi, 0]]
                dk, fin_rows = tr.dst_keys[lo:hi, 0], None
            else:
                ready = state[tr.src_keys[lo:hi]].max(axis=1)
                dk = tr.dst_keys[lo:hi].reshape(-1)
                fin_rows = np.repeat(np.arange(hi - lo), tr.dst_keys.shape[1])
            fin = np.maximum(free[link], ready) + alpha + units[lo:hi] * ut
            free[link] = fin
            vals = fin if fin_rows is None else fin[fin_rows]
            order = np.argsort(dk, kind="stable")
            dks = dk[order]
            first = np.concatenate([[0], np.flatnonzero(np.diff(dks)) + 1])
            uk = dks[first]
            # several partials may arrive at one node for one chunk in the same step
            state[uk] = np.maximum(state[uk], np.maximum.reduceat(vals[order], first, axis=0))
        out[g : g + group] = free.max(axis=0) if tr.n_links else 0.0
    return out


def run_ready_order(tr: Transfers, unit_time: float, alpha: float) -> float:
    """Completion time when every link serves its transfers in the order their data becomes ready.

    The alternative link discipline to :func:`run`'s schedule order: a link that falls
    idle starts, among its transfers whose data is ready, the one that became ready
    first (ties: schedule order), as a FIFO queue per link would. A key is complete
    when every transfer writing it has arrived (all partials, or the one delivery), so
    a ReduceScatter chunk of one root may overtake the AllGather of another on a link:
    this is the overlap of the two phases across chunks that TidalMesh schedules
    explicitly (seed 000, Section V-A). Discrete-event loop with heaps, one size at a time.

    Parameters
    ----------
    tr : Transfers
    unit_time : float
        Time to send one unit.
    alpha : float
        Per-transfer latency.

    Returns
    -------
    float
        The last transfer's finish.

    Raises
    ------
    ValueError
        If some transfers never get their data (the dependencies are not met).
    """
    import heapq

    n_t = len(tr.step)
    pad = tr.n_keys  # reads of the padding key are always satisfied
    writers = np.bincount(tr.dst_keys.reshape(-1), minlength=tr.n_keys + 2)
    value = np.zeros(tr.n_keys + 2)
    src = [[int(k) for k in row if k != pad] for row in tr.src_keys]
    dst = [[int(k) for k in row if k < pad] for row in tr.dst_keys]
    readers: list[list[int]] = [[] for _ in range(tr.n_keys)]
    waiting = np.zeros(n_t, dtype=np.int64)
    for i, keys in enumerate(src):
        for k in keys:
            if writers[k]:
                readers[k].append(i)
                waiting[i] += 1
    link = tr.link.tolist()
    dur = (alpha + tr.units * unit_time).tolist()
    queue: list[list] = [[] for _ in range(tr.n_links)]
    busy = [False] * tr.n_links
    events: list[tuple] = []  # (time, kind 0 = ready / 1 = finish, transfer)
    for i in np.flatnonzero(waiting == 0):
        heapq.heappush(events, (0.0, 0, int(i)))
    end, finished = 0.0, 0

    def start(l: int, now: float) -> None:
        _, _, j = heapq.heappop(queue[l])
        busy[l] = True
        heapq.heappush(events, (now + dur[j], 1, j))

    while events:
        now, kind, i = heapq.heappop(events)
        l = link[i]
        if kind == 0:
            heapq.heappush(queue[l], (now, i, i))
            if not busy[l]:
                start(l, now)
            continue
        end, finished = now, finished + 1
        busy[l] = False
        for k in dst[i]:
            value[k] = max(value[k], now)
            writers[k] -= 1
            if writers[k] == 0:
                for j in readers[k]:
                    waiting[j] -= 1
                    if waiting[j] == 0:
                        heapq.heappush(events, (max(value[m] for m in src[j]), 0, j))
        if queue[l]:
            start(l, now)
    if finished < n_t:
        raise ValueError(
            f"{n_t - finished} transfers never get their data: the schedule's dependencies "
            "are not met (run the verifier)"
        )
    return end


LINK_ORDERS = ("schedule", "ready")


def simulate(sched: Schedule, sizes, model: LinkModel = LinkModel(), link_order: str = "schedule") -> Result:
    """Simulate ``sched`` for every message size per node in ``sizes`` (bytes, or flits in RTL units).

    ``link_order``: ``schedule`` (each link serves its transfers in schedule order, as the
    schedule ROM does; :func:`run`) or ``ready`` (in the order their data becomes ready;
    :func:`run_ready_order`).

    Parameters
    ----------
    sched : Schedule
        A verified schedule.
    sizes : array_like of float
        Message sizes per node, each > 0.
    model : LinkModel
    link_order : str
        One of :data:`LINK_ORDERS`.

    Returns
    -------
    Result

    Raises
    ------
    ValueError
        On a size <= 0 or an unknown link order.
    """
    sizes = np.atleast_1d(np.asarray(sizes, dtype=np.float64))
    if (sizes <= 0).any():
        raise ValueError(f"message sizes must be > 0 (got {sizes[sizes <= 0][0]:g})")
    tr = flatten(sched)
    ub = chunk_bytes(sched.collective, sched.topology.nodes, sched.chunks, sizes)
    if link_order == "schedule":
        completion = run(tr, ub / model.bandwidth, model.alpha)
    elif link_order == "ready":
        completion = np.array([run_ready_order(tr, u / model.bandwidth, model.alpha) for u in ub])
    else:
        raise ValueError(f"unknown link order {link_order!r}; expected one of {', '.join(LINK_ORDERS)}")
    return Result(
        sizes=sizes,
        completion=completion,
        unit_bytes=ub,
        link_transfers=np.bincount(tr.link, minlength=tr.n_links).astype(np.float64),
        link_units=np.bincount(tr.link, weights=tr.units, minlength=tr.n_links),
    )


# ----- seed 003 cross-check: dimension-decomposed ring AllReduce ---------------------------


def dim_decomposed_allreduce_time(rows: int, cols: int, message: float, model: LinkModel = LinkModel()) -> float:
    """Seed 003, Sections 3.4 and 4.2: ``2 sum_i (d_i - 1) alpha + 2 (N-1)/N M / BW``.

    The same formula holds on the torus (unidirectional ring per dimension) and on the
    mesh (bucket-brigade open line per dimension).

    Parameters
    ----------
    rows, cols : int
        The dimension sizes d_i.
    message : float
        M, bytes per node.
    model : LinkModel

    Returns
    -------
    float
        Time in the model's unit.
    """
    n = rows * cols
    return 2 * ((rows - 1) + (cols - 1)) * model.alpha + 2 * (n - 1) / n * message / model.bandwidth


def _line_sends(d: int, wrap: bool) -> list[list[tuple[int, int, int]]]:
    """ReduceScatter on one dimension of ``d`` positions: per step, ``(from, to, block)``.

    Block ``j`` ends fully reduced at position ``j``. Torus (seed 003, Section 3.4): the
    unidirectional ring, position ``i`` sends block ``(i - t - 1) mod d`` to ``i + 1`` at
    step ``t``. Mesh (Section 4.2): the bucket brigade on the open line, blocks right of a
    position flow right and blocks left of it flow left, ``d - 1`` steps either way.
    """
    steps = []
    for t in range(d - 1):
        if wrap:
            steps.append([(i, (i + 1) % d, (i - t - 1) % d) for i in range(d)])
        else:
            right = [(p, p + 1, d - 1 - t + p) for p in range(t + 1)]
            left = [(d - 1 - p, d - 2 - p, t - p) for p in range(t + 1)]
            steps.append(right + left)
    return steps


DIM_PHASES = {
    "allreduce": (("x", False), ("y", False), ("y", True), ("x", True)),
    "reducescatter": (("x", False), ("y", False)),
    "allgather": (("y", True), ("x", True)),
}


def dim_decomposed_allreduce(rows: int, cols: int, wrap: bool, collective: str = "allreduce") -> Transfers:
    """Seed 003's dimension-decomposed ring AllReduce (or, with ``collective``, its ReduceScatter or
    AllGather half alone: seed 003, Section 3.5) as simulator transfers.

    Phases RS-X (rows), RS-Y (columns), AG-Y, AG-X, as in seed 003, Section 3.4; AllGather
    on a dimension is the time-reverse of its ReduceScatter. One unit is one shard
    (``M / N`` bytes): an X-phase transfer carries one column block, ``rows`` shards;
    a Y-phase transfer carries one shard. Link ids are those of
    ``build("torus" if wrap else "mesh", rows, cols)``.

    Keys: per node and phase, one key per incoming direction (the partial or block that
    arrived last from that side, which is the one the node forwards next: on a ring or a
    line each direction's arrivals come in order over one link) and one "phase done" key
    (the latest arrival of the phase at the node). Every transfer of a phase also waits
    for the previous phase to be done at its sender.

    Parameters
    ----------
    rows, cols : int
        The network size.
    wrap : bool
        Torus (unidirectional rings) rather than mesh (open lines).

    Returns
    -------
    Transfers
        Two src and two dst keys per transfer; ``units`` in shards.
    """
    from ...schedules.topology import build

    topo = build("torus" if wrap else "mesh", rows, cols)
    index = {(l.src, l.dst): i for i, l in enumerate(topo.links)}
    n = rows * cols
    # key layout: [phase][node][slot]; slot 0 = from lower position, 1 = from higher, 2 = done
    n_keys = 4 * n * 3
    read_pad = n_keys  # the padding key of Transfers: always time 0

    def key(phase, node, slot):
        return (phase * n + node) * 3 + slot

    rows_out = []  # (step, link, src0, src1, dst0, dst1, units)
    step0 = 0
    for ph, (dim, is_ag) in enumerate(DIM_PHASES[collective]):
        d = cols if dim == "x" else rows
        units = rows if dim == "x" else 1
        plan = _line_sends(d, wrap)
        if is_ag:
            plan = [[(b, a, blk) for a, b, blk in st] for st in reversed(plan)]
        for t, sends in enumerate(plan):
            for line in range(rows if dim == "x" else cols):
                for a, b, _ in sends:
                    u = line * cols + a if dim == "x" else a * cols + line
                    v = line * cols + b if dim == "x" else b * cols + line
                    # direction as seen from the receiver: 0 = came from a lower position
                    slot_in = 0 if (b - a) % d == 1 and (wrap or b > a) else 1
                    prev = key(ph - 1, u, 2) if ph else read_pad
                    rows_out.append(
                        (step0 + t, index[(u, v)], key(ph, u, slot_in), prev, key(ph, v, slot_in), key(ph, v, 2), units)
                    )
        step0 += len(plan)
    a = np.array(rows_out, dtype=np.int64).reshape(-1, 7)
    a = a[np.argsort(a[:, 0], kind="stable")]
    return Transfers(
        step=a[:, 0],
        link=a[:, 1],
        src_keys=a[:, 2:4],
        dst_keys=a[:, 4:6],
        units=a[:, 6],
        n_keys=n_keys,
        n_links=len(topo.links),
    )
