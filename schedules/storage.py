"""The node storage model that schedules must honour to run on the RTL.

Every router has one *lane* (a chunk buffer with one write and one read port)
per network port. This is the constraint the hardware puts on schedules:

* AllGather: a chunk received on in-port ``p`` is written into lane ``p``.
  A node's own chunk ``c`` is preloaded into its *home lane*
  ``ports[c mod len(ports)]``. An out-port reads the lane holding the chunk
  it sends, through the crossbar. **Per step, each lane is read for at most
  one distinct chunk** (the same chunk may fan out to several out-ports).
* ReduceScatter (the time- and direction-reverse of AllGather on the mirror
  topology, Algorithm 3): out-port ``p`` always sends from lane ``p``, and
  every partial received for a chunk is added into the lane of the port the
  node later sends that chunk on (the root: into the chunk's home lane).
  **Per step, each lane accumulates at most one distinct chunk** (several
  in-ports may add into it at once, the dual of a fan-out).

The two rules are duals: a ReduceScatter obeys the second exactly when the
AllGather it was reversed from obeys the first on the mirror topology.

* AllToAll (docs/alltoall.md): a chunk received on in-port ``p`` is written into
  lane ``p``, as in AllGather; a node's own K (N - 1) chunks are preloaded into
  lanes the compiler chooses (``rtl/rom.py``). **Per step, the distinct relayed
  chunks a node sends arrived on distinct in-ports**, and **a node sends each of
  its own chunks in one step only** (fanning out within it is allowed); then the
  own chunks sent in a step always find lanes left over (a node sends at most
  one chunk per out-link, and has a lane per port).
"""

from __future__ import annotations

import numpy as np

from .schedule import Phase, Schedule
from .topology import Topology

__all__ = [
    "StorageConflict",
    "allgather_lanes",
    "alltoall_lanes",
    "check_storage",
    "home_lanes",
    "lane_table",
    "link_lanes",
    "reducescatter_lanes",
]


class StorageConflict(ValueError):
    """A schedule the node storage cannot execute; the message is one line.

    The line names the phase, step, link, node, root and chunk, and the lane (by port) that
    would read or accumulate two different chunks in one step.
    """


def lane_table(topo: Topology) -> tuple[dict[tuple[int, str], int], np.ndarray]:
    """Number every (node, port) lane; return the map and the lane count per node.

    Parameters
    ----------
    topo : Topology
        One lane per network port of each router (:meth:`.Topology.ports`).

    Returns
    -------
    tuple of (dict, numpy.ndarray)
        ``(node, port) -> global lane id``, numbered node by node in canonical port order; and the
        lanes per node, int64 of shape (N,).
    """
    index: dict[tuple[int, str], int] = {}
    counts = np.zeros(topo.nodes, dtype=np.int64)
    for v in range(topo.nodes):
        for p in topo.ports(v):
            index[(v, p)] = len(index)
        counts[v] = len(topo.ports(v))
    return index, counts


def home_lanes(topo: Topology, chunks: int) -> np.ndarray:
    """``home[v, c]`` = global lane id of the lane that holds node v's own chunk c.

    The home lane of chunk c is that of port ``ports[c mod len(ports)]``.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.

    Returns
    -------
    numpy.ndarray
        int64, shape (N, K).
    """
    index, _ = lane_table(topo)
    home = np.zeros((topo.nodes, chunks), dtype=np.int64)
    for v in range(topo.nodes):
        ports = topo.ports(v)
        for c in range(chunks):
            home[v, c] = index[(v, ports[c % len(ports)])]
    return home


def link_lanes(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Global lane ids of each link's source port and destination port.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(src, dst)``, each int64 of shape (L,), indexed by link id.
    """
    index, _ = lane_table(topo)
    src = np.array([index[(l.src, l.src_port)] for l in topo.links], dtype=np.int64)
    dst = np.array([index[(l.dst, l.dst_port)] for l in topo.links], dtype=np.int64)
    return src, dst


def _flat(phase: Phase):
    if not phase.steps:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    step = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, s in enumerate(phase.steps)])
    tr = np.concatenate([np.asarray(s, dtype=np.int64).reshape(-1, 3) for s in phase.steps])
    return step, tr[:, 0], tr[:, 1], tr[:, 2]


def allgather_lanes(topo: Topology, chunks: int, phase: Phase) -> np.ndarray:
    """``lane[v, root, chunk]``: the lane where node v keeps (root, chunk) after an AllGather.

    A received chunk is written into the lane of the in-port it arrives on; a node's own
    chunks sit in their home lanes.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    phase : Phase
        An AllGather phase of ``[link, root, chunk]`` rows.

    Returns
    -------
    numpy.ndarray
        int64, shape (N, N, K): global lane ids; -1 where v never receives the chunk.
    """
    n = topo.nodes
    lane = np.full((n, n, chunks), -1, dtype=np.int64)
    home = home_lanes(topo, chunks)
    lane[np.arange(n), np.arange(n), :] = home
    step, link, root, chunk = _flat(phase)
    _, dst_lane = link_lanes(topo)
    lane[topo.link_dst[link], root, chunk] = dst_lane[link]
    return lane


def reducescatter_lanes(topo: Topology, chunks: int, phase: Phase) -> np.ndarray:
    """``lane[v, root, chunk]``: where node v accumulates (root, chunk) in a ReduceScatter.

    That is the lane of the out-port v later sends the chunk on; the root's is the chunk's home lane.

    Parameters
    ----------
    topo : Topology
    chunks : int
        K, the chunks per shard.
    phase : Phase
        A ReduceScatter phase of ``[link, root, chunk]`` rows.

    Returns
    -------
    numpy.ndarray
        int64, shape (N, N, K): global lane ids; -1 where v never sends the chunk.
    """
    n = topo.nodes
    lane = np.full((n, n, chunks), -1, dtype=np.int64)
    lane[np.arange(n), np.arange(n), :] = home_lanes(topo, chunks)
    step, link, root, chunk = _flat(phase)
    src_lane, _ = link_lanes(topo)
    lane[topo.link_src[link], root, chunk] = src_lane[link]
    return lane


def _first_conflict(step, lane_id, root, chunk, chunks):
    """Index of the first transfer whose lane already serves another chunk in that step, or None."""
    if len(step) == 0:
        return None
    x = root * chunks + chunk
    span = int(x.max()) + 1
    slot = step * (int(lane_id.max()) + 1) + lane_id  # (step, lane)
    key = slot * span + x
    order = np.argsort(key)  # one int64 key instead of a 3-key lexsort: 4M transfers in 0.3 s
    k = key[order]
    bad = np.nonzero((k[1:] // span == k[:-1] // span) & (k[1:] != k[:-1]))[0]
    return None if len(bad) == 0 else order[bad[0] + 1]


def check_storage(sched: Schedule) -> None:
    """Raise :class:`StorageConflict` if a phase breaks the one-chunk-per-lane-per-step rule.

    AllGather phases are checked on the lanes read, ReduceScatter phases on the lanes accumulated
    into, AllToAll by :func:`alltoall_lanes` (module docstring).

    Parameters
    ----------
    sched : Schedule
        A phased schedule of ``[link, root, chunk]`` rows (not an overlapped one).

    Raises
    ------
    StorageConflict
        At the first lane serving two different chunks in one step.
    """
    topo, k = sched.topology, sched.chunks
    index, _ = lane_table(topo)
    names = {v: key for key, v in index.items()}
    for i, phase in enumerate(sched.phases):
        label = f"phase {i} ({phase.collective}): " if len(sched.phases) > 1 else ""
        if phase.collective == "alltoall":
            alltoall_lanes(sched)
            continue
        step, link, root, chunk = _flat(phase)
        if phase.collective == "allgather":
            lane = allgather_lanes(topo, k, phase)
            node = topo.link_src[link]
            what = "reads"
        else:
            lane = reducescatter_lanes(topo, k, phase)
            node = topo.link_dst[link]
            what = "accumulates"
        lane_id = lane[node, root, chunk]
        j = _first_conflict(step, lane_id, root, chunk, k)
        if j is not None:
            v, port = names[int(lane_id[j])]
            raise StorageConflict(
                f"{label}step {step[j]}, link {link[j]}, node {v}, root {root[j]}, chunk {chunk[j]}: "
                f"lane {port} of node {v} {what} two different chunks in one step "
                "(one chunk per lane per step; see README 'Node storage')"
            )


def alltoall_lanes(sched: Schedule) -> list[dict]:
    """Check the AllToAll lane rule; return, per node, where each chunk it sends or keeps arrived.

    The schedule must already be a valid AllToAll (``verify.verify_alltoall``).

    Parameters
    ----------
    sched : Schedule
        An ``alltoall`` schedule.

    Returns
    -------
    list of dict
        Per node ``v``: ``(root, chunk) -> in-port`` for every chunk ``v`` receives, and
        ``(v, chunk) -> None`` for its own chunks.

    Raises
    ------
    StorageConflict
        One line naming the step, the node, the port (or "own chunk") and the two chunks.
    """
    topo, k = sched.topology, sched.chunks
    links = topo.links
    came: list[dict] = [dict() for _ in range(topo.nodes)]
    own_step: list[dict] = [dict() for _ in range(topo.nodes)]
    for s, step in enumerate(sched.phases[0].steps):
        by_port: dict[tuple[int, str], tuple[int, int]] = {}
        arrivals = []
        for link, root, c in np.asarray(step).reshape(-1, 3).tolist():
            u = links[link].src
            key = (root, c)
            if root == u:
                first = own_step[u].setdefault(key, s)
                if first != s:
                    raise StorageConflict(
                        f"step {s}, node {u}: sends its own chunk {root}->{c // k} again (first at step {first}); "
                        "an own chunk leaves in one step only"
                    )
            else:
                port = came[u][key]
                other = by_port.setdefault((u, port), key)
                if other != key:
                    raise StorageConflict(
                        f"step {s}, node {u}: lane {port} would send chunks {other[0]}->{other[1] // k} and "
                        f"{root}->{c // k}, both received on in-port {port}, in one step"
                    )
            arrivals.append((links[link].dst, links[link].dst_port, key))
        for w, port, key in arrivals:
            came[w][key] = port
    for v in range(topo.nodes):
        for key in own_step[v]:
            came[v][key] = None
    return came
