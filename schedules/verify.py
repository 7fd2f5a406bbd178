"""The schedule verifier: checks a schedule against its own topology and the semantics of docs/architecture.md, "Schedule file".

* every link id, root and chunk is in range;
* every link carries at most one chunk per step;
* AllGather: causality (the sender holds the chunk before the step) and
  every ``(root, chunk)`` reaches every other node exactly once;
* ReduceScatter: every node other than the root sends each ``(root, chunk)``
  exactly once, and only after all the partials it receives for it have
  arrived; together these make a spanning in-tree towards the root;
* AllReduce: both phases;
* overlapped AllReduce (format version 2): one step list of typed transfers; the
  reduce (``"r"``) transfers obey the ReduceScatter rules, the gather (``"g"``) ones
  the AllGather rules, a root gathers a chunk only at a step after the last partial
  of it has arrived, and a link carries one transfer per step across both ops.

Errors are :class:`ScheduleInvalid` with one line naming step, link, node and chunk.
"""

from __future__ import annotations

import numpy as np

from .schedule import OP_GATHER, OP_REDUCE, Phase, Schedule

__all__ = [
    "ScheduleInvalid",
    "verify",
    "verify_allgather",
    "verify_alltoall",
    "verify_overlapped",
    "verify_reducescatter",
]


class ScheduleInvalid(ValueError):
    """The schedule breaks the collective's semantics; the message is one line.

    The line names the phase (or ``reduce:`` / ``gather:``), step, link with its endpoints,
    root and chunk, then what is wrong.
    """


def _flatten(phase: Phase, width: int = 3) -> tuple[np.ndarray, ...]:
    """Step, link, root, chunk (and op, for ``width`` 4) of every transfer of ``phase``."""
    if phase.steps:
        step = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(phase.steps)])
        tr = np.concatenate([np.asarray(s, dtype=np.int64).reshape(-1, width) for s in phase.steps])
    else:
        step, tr = np.zeros(0, dtype=np.int64), np.zeros((0, width), dtype=np.int64)
    return (step, *tr.T)


def _where(label: str, step, link, src, dst, root, chunk) -> str:
    return f"{label}step {step}, link {link} ({src}->{dst}), root {root}, chunk {chunk}"


def _second_occurrence(key: np.ndarray) -> int | None:
    """Index of the first transfer whose key an earlier transfer already has, or None."""
    k = np.sort(key)
    if not (k[1:] == k[:-1]).any():  # the common case, without the slower stable argsort
        return None
    order = np.argsort(key, kind="stable")
    dup = np.nonzero(np.diff(key[order]) == 0)[0]
    return None if len(dup) == 0 else int(order[dup[0] + 1])


def _check_link_capacity(label, step, link, root, chunk, src, dst, n_links):
    i = _second_occurrence(step * n_links + link)
    if i is not None:
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + ": link already carries another chunk in this step"
        )


def _check_ranges(label, step, link, root, chunk, n_links, n, k):
    """Link ids, roots and chunks must lie in range: a negative id would index from the end of an array."""
    for name, a, hi in (("link", link, n_links), ("root", root, n), ("chunk", chunk, k)):
        bad = np.nonzero((a < 0) | (a >= hi))[0]
        if len(bad):
            i = bad[0]
            raise ScheduleInvalid(
                f"{label}step {step[i]}, link {link[i]}, root {root[i]}, chunk {chunk[i]}: "
                f"{name} {a[i]} is out of range (0..{hi - 1})"
            )


def verify_allgather(sched: Schedule, phase: Phase, label: str = "") -> None:
    """Check one AllGather phase: ranges, link capacity, causality, every chunk everywhere once.

    Parameters
    ----------
    sched : Schedule
        Gives the topology and K.
    phase : Phase
        Steps of ``[link, root, chunk]`` rows.
    label : str
        Prefix of the error message, e.g. ``"phase 1 (allgather): "``.

    Raises
    ------
    ScheduleInvalid
        At the first broken rule: an id out of range, a link carrying two chunks in a step, a
        transfer into the root, a second receipt, a sender not holding the chunk before the step,
        or a ``(root, chunk)`` some node never receives.
    """
    _allgather(sched, *_flatten(phase), label)


def _allgather(sched: Schedule, step, link, root, chunk, label: str, held: np.ndarray | None = None) -> None:
    """AllGather rules; ``held[root, chunk]`` = the step after which the root holds its chunk (-1: from the start)."""
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    _check_ranges(label, step, link, root, chunk, len(topo.links), n, k)
    src, dst = topo.link_src[link], topo.link_dst[link]
    _check_link_capacity(label, step, link, root, chunk, src, dst, len(topo.links))
    own = np.nonzero(dst == root)[0]
    if len(own):
        i = own[0]
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": node {dst[i]} is the root and already holds its own chunk"
        )
    key = (dst * n + root) * k + chunk
    i = _second_occurrence(key)
    if i is not None:
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": node {dst[i]} receives this chunk a second time"
        )
    # recv[node, root, chunk] = step it arrives; -1 for the root's own chunks.
    big = np.iinfo(np.int64).max
    recv = np.full(n * n * k, big, dtype=np.int64)
    recv[key] = step
    r = np.arange(n)
    recv.reshape(n, n, k)[r, r, :] = -1 if held is None else held
    late = np.nonzero(recv[(src * n + root) * k + chunk] >= step)[0]
    if len(late):
        i = late[np.argmin(step[late])]
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": sender {src[i]} does not hold the chunk before this step"
        )
    missing = np.nonzero(recv == big)[0]
    if len(missing):
        node, rest = divmod(int(missing[0]), n * k)
        rt, ch = divmod(rest, k)
        raise ScheduleInvalid(f"{label}node {node} never receives root {rt}, chunk {ch}")


def verify_reducescatter(sched: Schedule, phase: Phase, label: str = "") -> None:
    """Check one ReduceScatter phase: every non-root node sends each partial once, after its inputs.

    Together the rules make a spanning in-tree towards each root.

    Parameters
    ----------
    sched : Schedule
        Gives the topology and K.
    phase : Phase
        Steps of ``[link, root, chunk]`` rows.
    label : str
        Prefix of the error message.

    Raises
    ------
    ScheduleInvalid
        At the first broken rule: an id out of range, a link carrying two chunks in a step, the
        root sending, a second send, a node never sending its partial, or a node sending before
        a partial it receives has arrived.
    """
    _reducescatter(sched, *_flatten(phase), label)


def _reducescatter(sched: Schedule, step, link, root, chunk, label: str) -> None:
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    _check_ranges(label, step, link, root, chunk, len(topo.links), n, k)
    src, dst = topo.link_src[link], topo.link_dst[link]
    _check_link_capacity(label, step, link, root, chunk, src, dst, len(topo.links))
    bad = np.nonzero(src == root)[0]
    if len(bad):
        i = bad[0]
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": node {src[i]} is the root and must not send its own shard's sum"
        )
    key = (src * n + root) * k + chunk
    i = _second_occurrence(key)
    if i is not None:
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": node {src[i]} sends its partial a second time"
        )
    big = np.iinfo(np.int64).max
    sent = np.full(n * n * k, big, dtype=np.int64)
    sent[key] = step
    missing = np.nonzero(sent == big)[0]
    missing = missing[(missing // k) % n != missing // (n * k)]
    if len(missing):
        node, rest = divmod(int(missing[0]), n * k)
        rt, ch = divmod(rest, k)
        raise ScheduleInvalid(
            f"{label}node {node} never sends its partial of root {rt}, chunk {ch}: "
            "the reduction tree does not span every node"
        )
    # A receiver other than the root must send strictly after every partial it receives.
    nonroot = dst != root
    early = np.nonzero(nonroot & (sent[(dst * n + root) * k + chunk] <= step))[0]
    if len(early):
        i = early[np.argmin(step[early])]
        raise ScheduleInvalid(
            _where(label, step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": node {dst[i]} sends its partial at step "
            f"{sent[(dst[i] * n + root[i]) * k + chunk[i]]}, before this child's partial arrives"
        )


def verify_overlapped(sched: Schedule) -> None:
    """Check the overlapped AllReduce (docs/architecture.md, "Schedule file", format version 2).

    Its typed transfers share one step list: the reduce (``"r"``) ones obey the ReduceScatter
    rules, the gather (``"g"``) ones the AllGather rules, a root gathers a chunk only at a step
    after its last partial has arrived, and a link carries one transfer per step across both ops.

    Parameters
    ----------
    sched : Schedule
        An overlapped schedule: one phase with step arrays of shape (n, 4).

    Raises
    ------
    ScheduleInvalid
        At the first broken rule, prefixed ``reduce:`` or ``gather:`` where it is one op's.
    """
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    step, link, root, chunk, op = _flatten(sched.phases[0], 4)
    src, dst = topo.link_src[link], topo.link_dst[link]
    _check_link_capacity("", step, link, root, chunk, src, dst, len(topo.links))
    red, gat = op == OP_REDUCE, op == OP_GATHER
    _reducescatter(sched, step[red], link[red], root[red], chunk[red], "reduce: ")
    # complete[root, chunk]: the step of the last partial into the root (-1 on one node)
    complete = np.full(n * k, -1, dtype=np.int64)
    into_root = red & (dst == root)
    np.maximum.at(complete, root[into_root] * k + chunk[into_root], step[into_root])
    early = np.nonzero(gat & (src == root) & (step <= complete[root * k + chunk]))[0]
    if len(early):
        i = early[np.argmin(step[early])]
        raise ScheduleInvalid(
            _where("gather: ", step[i], link[i], src[i], dst[i], root[i], chunk[i])
            + f": root {root[i]} sends before its sum is complete (its last partial "
            f"arrives at step {complete[root[i] * k + chunk[i]]})"
        )
    _allgather(sched, step[gat], link[gat], root[gat], chunk[gat], "gather: ", complete.reshape(n, k))


def _a2a_where(step, link, src, dst, root, chunk, k) -> str:
    return f"step {step}, link {link} ({src}->{dst}), chunk {root}->{chunk // k}" + (
        f" part {chunk % k}" if k > 1 else ""
    )


def _counts(sched: Schedule) -> np.ndarray:
    """The per-pair chunk counts of a skewed AllToAll (file key ``counts``, docs/alltoall.md), else K everywhere."""
    n, k = sched.topology.nodes, sched.chunks
    counts = sched.meta.get("counts")
    if counts is None:
        return np.full((n, n), k, dtype=np.int64)
    ok = (
        isinstance(counts, list)
        and len(counts) == n
        and all(isinstance(r, list) and len(r) == n and all(type(c) is int and 0 <= c <= k for c in r) for r in counts)
    )
    if not ok:
        raise ScheduleInvalid(f"'counts' must be {n} lists of {n} integers 0..{k} (chunks per source, destination)")
    return np.array(counts, dtype=np.int64)


def verify_alltoall(sched: Schedule) -> None:
    """AllToAll (docs/alltoall.md): transfer ``[link, root, chunk]`` moves source ``root``'s chunk for
    destination ``chunk // K``. A node sends only a chunk it holds (the source, or it received the
    chunk at an earlier step); no node receives a chunk twice, the source never receives its own;
    every chunk reaches its destination; a link carries one chunk per step.

    Parameters
    ----------
    sched : Schedule
        An ``alltoall`` schedule.

    Raises
    ------
    ScheduleInvalid
        At the first transfer that breaks a rule, in one line.
    """
    topo, n, k = sched.topology, sched.topology.nodes, sched.chunks
    step, link, root, chunk = _flatten(sched.phases[0])
    _check_ranges("", step, link, root, chunk, len(topo.links), n, n * k)
    src, dst = topo.link_src[link], topo.link_dst[link]
    _check_link_capacity("", step, link, root, chunk, src, dst, len(topo.links))
    w = _counts(sched)
    extra = np.nonzero(chunk % k >= w[root, chunk // k])[0]
    if len(extra):
        i = extra[0]
        raise ScheduleInvalid(
            _a2a_where(step[i], link[i], src[i], dst[i], root[i], chunk[i], k)
            + f": node {root[i]} sends node {chunk[i] // k} only {w[root[i], chunk[i] // k]} "
            "chunk(s) ('counts')"
        )
    self_addressed = np.nonzero(chunk // k == root)[0]
    if len(self_addressed):
        i = self_addressed[0]
        raise ScheduleInvalid(
            _a2a_where(step[i], link[i], src[i], dst[i], root[i], chunk[i], k)
            + f": node {root[i]} addresses no chunk to itself"
        )
    for i, why in (
        (np.nonzero(dst == root)[0], "is its source"),
        ([_second_occurrence((dst * n + root) * (n * k) + chunk)], "receives it a second time"),
    ):
        if len(i) and i[0] is not None:
            i = i[0]
            raise ScheduleInvalid(
                _a2a_where(step[i], link[i], src[i], dst[i], root[i], chunk[i], k) + f": node {dst[i]} {why}"
            )
    key = (dst * n + root) * (n * k) + chunk  # (node, source, chunk) it arrives at
    order = np.argsort(key, kind="stable")
    keys, steps = key[order], step[order]
    want = (src * n + root) * (n * k) + chunk  # what the sender must hold
    at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    held = (src == root) | ((keys[at] == want) & (steps[at] < step) if len(keys) else False)
    late = np.nonzero(~held)[0]
    if len(late):
        i = late[np.argmin(step[late])]
        raise ScheduleInvalid(
            _a2a_where(step[i], link[i], src[i], dst[i], root[i], chunk[i], k)
            + f": sender {src[i]} does not hold the chunk before this step"
        )
    arrived = np.zeros((n, n * k), dtype=bool)  # [source, chunk] reached its destination
    home = dst == chunk // k
    arrived[root[home], chunk[home]] = True
    arrived[np.arange(n * k) // k, np.arange(n * k)] = True
    arrived |= np.arange(n * k)[None, :] % k >= np.repeat(w, k, axis=1)  # parts beyond the pair's count
    missing = np.argwhere(~arrived)
    if len(missing):
        s, c = (int(x) for x in missing[0])
        raise ScheduleInvalid(
            f"chunk {s}->{c // k}" + (f" part {c % k}" if k > 1 else "") + f": never reaches node {c // k}"
        )


def verify(sched: Schedule) -> None:
    """Raise :class:`ScheduleInvalid` unless the schedule is a correct collective on its topology.

    Parameters
    ----------
    sched : Schedule
        Any collective; each phase is checked by its collective's rules (module docstring).

    Raises
    ------
    ScheduleInvalid
        One line naming step, link, node and chunk of the first broken rule.
    """
    if sched.collective == "alltoall":
        verify_alltoall(sched)
        return
    if sched.overlapped:
        verify_overlapped(sched)
        return
    for i, phase in enumerate(sched.phases):
        label = f"phase {i} ({phase.collective}): " if len(sched.phases) > 1 else ""
        if phase.collective == "allgather":
            verify_allgather(sched, phase, label)
        else:
            verify_reducescatter(sched, phase, label)
