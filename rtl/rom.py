"""The ROM compiler: a verified schedule -> one schedule-table image per router.

This is where the intelligence of the schedule-driven datapath lives (the
S4NOC idea: the router is a step counter and a table). It is pure Python and
is tested without a simulator.

Node storage (``schedules/storage.py``, README "Node storage"): one *lane*
(a chunk buffer) per network port of the router, ``slots`` chunk slots deep,
``chunk_flits`` flits per slot. The compiler assigns every chunk a
``(lane, slot)``, and writes, per timestep and router:

* per lane: which slot its send read port streams out (``rd_en``,
  ``rd_slot``), and which slot its write port fills (``wr_en``, ``wr_slot``)
  from which in-ports (``wr_mask``), adding the lane's old value or not
  (``wr_acc``, ReduceScatter only);
* per out-port: which lane the crossbar connects to it (``valid``, ``lane``).

AllGather (seed 000, Algorithm 2): a chunk received on in-port ``p`` goes to
lane ``p``; a node's own chunk ``c`` starts in lane ``ports[c mod P]``.
ReduceScatter (Algorithm 3, MirrorXTree): node ``v`` keeps its partial of
``(root, chunk)`` in the lane of the port it later sends it on (the root: the
chunk's home lane), and every partial it receives is added there. AllReduce
runs both phases on the same lanes; after the ReduceScatter the root's sums
sit in their home lanes, which is where the AllGather expects them.
AllToAll (docs/alltoall.md, "Lanes and slots"; :func:`_compile_alltoall`): the
schedule must obey the lane rule (``schedules/storage.alltoall_lanes``). Node
``v`` preloads its own K (N - 1) chunks, each into a lane no relayed chunk of
its sending step reads (fewest own chunks first), slots in the order they
leave; a received chunk goes to its in-port's lane, lowest free slot; a slot is
free from the step after the chunk's last send; a destination keeps what is
addressed to it (``final[v]``: ``(source, chunk field)`` with field // K = v).
"""

from __future__ import annotations

import gc
import heapq
from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Shape, unsigned
from amaranth.lib import data

from ..schedules.schedule import Schedule
from ..schedules.storage import StorageConflict, alltoall_lanes, check_storage
from ..schedules.topology import PORT_ORDER, Topology
from ..schedules.verify import ScheduleInvalid, verify

__all__ = [
    "MAX_CHUNK_FLITS",
    "NetworkImage",
    "RomError",
    "RouterImage",
    "compile_schedule",
    "design_ports",
    "entry_layout",
    "lane_op_layout",
    "out_sel_layout",
    "same_topology",
]

MAX_CHUNK_FLITS = 1 << 16  # flits per chunk: a lane holds slots x F flits


class RomError(ValueError):
    """A schedule the hardware cannot execute; the message is one line.

    Raised for a bad ``chunk_flits``, a schedule for another topology, a schedule that fails
    verification or the lane rule, or a design with fewer slots per lane than the schedule needs.
    """


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def lane_op_layout(lanes: int, slots: int) -> data.StructLayout:
    """What one lane does in one timestep.

    Parameters
    ----------
    lanes : int
        Lanes of the router (one per network port).
    slots : int
        Chunk slots per lane.

    Returns
    -------
    amaranth.lib.data.StructLayout
        ``rd_en`` (1 bit: the send read port streams a slot out), ``rd_slot`` (which one),
        ``wr_en`` (1 bit: the write port fills a slot), ``wr_slot`` (which one), ``wr_acc``
        (1 bit: add the slot's old value, ReduceScatter) and ``wr_mask`` (``lanes`` bits: the
        in-ports summed into it, bit i the in-port of lane i). Slot fields are
        max(1, ceil(log2 slots)) bits wide.
    """
    return data.StructLayout(
        {
            "rd_en": 1,  # the send read port streams a slot out
            "rd_slot": unsigned(_bits(slots)),  # ... this one
            "wr_en": 1,  # the write port fills a slot
            "wr_slot": unsigned(_bits(slots)),  # ... this one
            "wr_acc": 1,  # add the slot's old value (ReduceScatter)
            "wr_mask": unsigned(lanes),  # in-ports summed into it (bit i: in-port of lane i)
        }
    )


def out_sel_layout(lanes: int) -> data.StructLayout:
    """What one out-port sends in one timestep: a lane, or idle.

    Parameters
    ----------
    lanes : int
        Lanes of the router.

    Returns
    -------
    amaranth.lib.data.StructLayout
        ``valid`` (1 bit) and ``lane`` (max(1, ceil(log2 lanes)) bits).
    """
    return data.StructLayout({"valid": 1, "lane": unsigned(_bits(lanes))})


def entry_layout(lanes: int, slots: int) -> data.StructLayout:
    """One schedule-table ROM entry (one timestep of one router).

    Parameters
    ----------
    lanes : int
        Lanes (and out-ports) of the router.
    slots : int
        Chunk slots per lane.

    Returns
    -------
    amaranth.lib.data.StructLayout
        ``lane``: an array of ``lanes`` :func:`lane_op_layout` entries; ``out``: an array of
        ``lanes`` :func:`out_sel_layout` entries.
    """
    return data.StructLayout(
        {
            "lane": data.ArrayLayout(lane_op_layout(lanes, slots), lanes),
            "out": data.ArrayLayout(out_sel_layout(lanes), lanes),
        }
    )


def design_ports(topo: Topology, node: int) -> tuple[str, ...]:
    """The ports of a node's router design: N E S W, plus the node's extra ports X0, X1, ...

    Ports with no link stay in the design and are tied off (mesh edges).

    Parameters
    ----------
    topo : Topology
    node : int
        The node id.

    Returns
    -------
    tuple of str
        ``("N", "E", "S", "W", ...)`` with the node's extra ports in canonical order.
    """
    extra = [p for p in topo.ports(node) if p not in PORT_ORDER]
    return tuple(PORT_ORDER) + tuple(extra)


@dataclass
class RouterImage:
    """One router's share of the schedule: its lanes and its ROM table (arrays indexed [step, lane]).

    Every table array is int64 of shape (steps, len(lanes)); the fields are those of
    :func:`lane_op_layout` and :func:`out_sel_layout`, indexed by lane for the lane ops and by
    out-port (the port of the same index) for ``out_*``.

    Attributes
    ----------
    node : int
        The node id.
    ports : tuple of str
        The router design's ports (:func:`design_ports`).
    lanes : tuple of str
        The ports that carry a link, one lane each, in canonical order.
    rd_en, rd_slot : numpy.ndarray
        The send read port streams slot ``rd_slot`` out.
    wr_en, wr_slot, wr_acc, wr_mask : numpy.ndarray
        The write port fills slot ``wr_slot``, adding its old value if ``wr_acc``, from the
        in-ports in the bitmask ``wr_mask`` (bit i: in-port of lane i).
    out_valid, out_lane : numpy.ndarray
        The out-port sends, from lane ``out_lane``.
    """

    node: int
    ports: tuple[str, ...]
    lanes: tuple[str, ...]
    rd_en: np.ndarray
    rd_slot: np.ndarray
    wr_en: np.ndarray
    wr_slot: np.ndarray
    wr_acc: np.ndarray
    wr_mask: np.ndarray
    out_valid: np.ndarray
    out_lane: np.ndarray

    def entry(self, s: int) -> dict:
        """Timestep ``s`` of the table as the nested dict of :func:`entry_layout`.

        Parameters
        ----------
        s : int
            The timestep, 0..steps-1.

        Returns
        -------
        dict
            ``{"lane": [per-lane field dicts], "out": [{"valid", "lane"} per out-port]}`` of ints.
        """
        n = len(self.lanes)
        return {
            "lane": [
                {
                    "rd_en": int(self.rd_en[s, i]),
                    "rd_slot": int(self.rd_slot[s, i]),
                    "wr_en": int(self.wr_en[s, i]),
                    "wr_slot": int(self.wr_slot[s, i]),
                    "wr_acc": int(self.wr_acc[s, i]),
                    "wr_mask": int(self.wr_mask[s, i]),
                }
                for i in range(n)
            ],
            "out": [{"valid": int(self.out_valid[s, i]), "lane": int(self.out_lane[s, i])} for i in range(n)],
        }


@dataclass
class NetworkImage:
    """Everything elaboration and checking need: ROM tables, lane size, where data starts and ends.

    ``initial[v]`` and ``final[v]`` map ``(root, chunk)`` to ``(lane index, slot)``
    at node ``v``. AllGather starts with a node's own shard; ReduceScatter and
    AllReduce start with the node's whole input vector.

    Attributes
    ----------
    topology : Topology
        The network.
    collective : str
        The schedule's collective.
    chunks : int
        K, the chunks per shard.
    chunk_flits : int
        F, flits per chunk (1..:data:`MAX_CHUNK_FLITS`).
    steps : int
        Timesteps of the whole schedule (all phases).
    slots : int
        Chunk slots per lane the schedule needs (>= 1).
    reduce : bool
        A phase is a ReduceScatter (the lanes need adders).
    routers : list of RouterImage
        One per node, by node id.
    initial, final : list of dict
        Per node, ``(root, chunk) -> (lane index, slot)`` before and after the schedule.
    link_transfers : numpy.ndarray
        int64, shape (L,): chunk transfers per link id over the schedule.
    lane_flits : int
        Flits a lane holds: slots x F.
    """

    topology: Topology
    collective: str
    chunks: int
    chunk_flits: int
    steps: int
    slots: int
    reduce: bool
    routers: list[RouterImage]
    initial: list[dict]
    final: list[dict]
    link_transfers: np.ndarray

    @property
    def lane_flits(self) -> int:
        """Flits a lane holds: slots x chunk_flits."""
        return self.slots * self.chunk_flits

    def layout(self, node: int, slots: int | None = None) -> data.StructLayout:
        """The table entry of ``node``'s router in a design with ``slots`` slots per lane (default: the image's).

        Parameters
        ----------
        node : int
        slots : int or None

        Returns
        -------
        amaranth.lib.data.StructLayout
            :func:`entry_layout` for the router's lane count.
        """
        return entry_layout(len(self.routers[node].lanes), slots or self.slots)

    def table_bits(self, slots: int | None = None, width: int | None = None) -> np.ndarray:
        """Every router's schedule table as bits: uint8 ``[nodes, steps, width]``, bit 0 first.

        Entry ``s`` of node ``v`` is the bit image of :func:`entry_layout` for a design with ``slots``
        slots per lane; ``width`` (default: the widest entry) pads every entry with zeros.

        Parameters
        ----------
        slots : int or None
            Slots per lane of the design; at least the image's :attr:`slots`.
        width : int or None
            Bits per entry.

        Returns
        -------
        numpy.ndarray
            uint8 of shape (nodes, steps, width), each 0 or 1.

        Raises
        ------
        RomError
            If ``slots`` is below what the schedule needs.
        """
        slots = slots or self.slots
        if slots < self.slots:
            raise RomError(f"the schedule needs {self.slots} slots per lane; the design has {slots}")
        n = self.topology.nodes
        width = width or max(self.layout(v, slots).size for v in range(n))
        out = np.zeros((n, self.steps, width), dtype=np.uint8)
        by_lanes: dict[int, list[int]] = {}
        for r in self.routers:
            by_lanes.setdefault(len(r.lanes), []).append(r.node)
        for lanes, nodes in by_lanes.items():
            lay = entry_layout(lanes, slots)
            lane_f, out_f = lay["lane"], lay["out"]
            op, sel = lane_f.shape.elem_shape, out_f.shape.elem_shape
            for i in range(lanes):
                fields = [
                    (name, lane_f.offset + i * op.size + op[name].offset, Shape.cast(op[name].shape).width)
                    for name, _ in op
                ]
                fields += [
                    (f"out_{name}", out_f.offset + i * sel.size + sel[name].offset, Shape.cast(sel[name].shape).width)
                    for name, _ in sel
                ]
                for name, off, w in fields:
                    vals = np.stack([getattr(self.routers[v], name)[:, i] for v in nodes])  # [nodes, steps]
                    bits = (vals[..., None] >> np.arange(w)) & 1
                    out[nodes, :, off : off + w] = bits.astype(np.uint8)
        return out

    def rom_words(self, node: int, slots: int | None = None) -> list[int]:
        """The table of a router as integers: the bit image of :func:`entry_layout`, step 0 first.

        Parameters
        ----------
        node : int
        slots : int or None
            Slots per lane of the design (default: the image's).

        Returns
        -------
        list of int
            One word per timestep, bit 0 the entry's bit 0.

        Raises
        ------
        RomError
            If ``slots`` is below what the schedule needs.
        """
        bits = self.table_bits(slots)[node, :, : self.layout(node, slots).size]
        packed = np.packbits(bits, axis=1, bitorder="little")
        return [int.from_bytes(row.tobytes(), "little") for row in packed]


def same_topology(a: Topology, b: Topology) -> bool:
    """Whether two topologies have the same kind, size and links (endpoints, ports, order).

    Parameters
    ----------
    a, b : Topology

    Returns
    -------
    bool
    """
    return (a.kind, a.rows, a.cols) == (b.kind, b.rows, b.cols) and a.links == b.links


class _Lanes:
    """Slot allocation of one node: per lane, the lowest free slot first (a heap of the slots freed
    below the high-water mark ``top``)."""

    def __init__(self, n: int):
        self.top = [0] * n
        self.free = [[] for _ in range(n)]

    def alloc(self, lane: int) -> int:
        if self.free[lane]:
            return heapq.heappop(self.free[lane])
        self.top[lane] += 1
        return self.top[lane] - 1

    def release(self, lane: int, slot: int) -> None:
        heapq.heappush(self.free[lane], slot)

    def keep_only(self, live):
        used = [set() for _ in self.top]
        for lane, slot in live:
            used[lane].add(slot)
        self.free = [sorted(set(range(top)) - u) for top, u in zip(self.top, used)]  # a sorted list is a heap


def _initial_places(sched: Schedule, t: Topology, home: list, lane_of: list, alloc: list) -> list[dict]:
    """Where each node's chunks start, ``(lane, slot)`` per ``(root, chunk)``: an AllGather's own chunks in
    their home lanes; a ReduceScatter's partials in the lane each is later sent from."""
    n, k = t.nodes, sched.chunks
    loc: list[dict] = [dict() for _ in range(n)]
    first = sched.phases[0].collective
    if first == "allgather":
        for v in range(n):
            for c in range(k):
                loc[v][(v, c)] = (home[v][c], alloc[v].alloc(home[v][c]))
    else:
        # ReduceScatter input: each partial starts in the lane it will be sent from.
        send_lane = [dict() for _ in range(n)]
        for s in sched.phases[0].steps:
            for link, root, c in np.asarray(s).reshape(-1, 3).tolist():
                l = t.links[link]
                send_lane[l.src][(root, c)] = lane_of[l.src][l.src_port]
        for v in range(n):
            for root in range(n):
                for c in range(k):
                    lane = home[v][c] if root == v else send_lane[v][(root, c)]
                    loc[v][(root, c)] = (lane, alloc[v].alloc(lane))
    return loc


def compile_schedule(sched: Schedule, chunk_flits: int, topo: Topology | None = None) -> NetworkImage:
    """Compile a schedule into ROM images; raise :class:`RomError` if the hardware cannot run it.

    The schedule is verified and checked against the lane rule first; then every chunk gets a
    ``(lane, slot)``, the lowest free slot of its lane first (module docstring).

    Parameters
    ----------
    sched : Schedule
        A phased schedule (AllGather, ReduceScatter, or AllReduce as two phases).
    chunk_flits : int
        F, flits per chunk, 1..:data:`MAX_CHUNK_FLITS`.
    topo : Topology or None
        The network the hardware is built for; if given, it must equal the schedule's.

    Returns
    -------
    NetworkImage

    Raises
    ------
    RomError
        On a bad ``chunk_flits``, another topology, an invalid schedule or a storage conflict.

    Notes
    -----
    AllToAll schedules take :func:`_compile_alltoall` (module docstring). The cyclic garbage collector is
    paused meanwhile: a 32x32 AllGather's places are millions of tuples, none in a cycle, and the
    collector's repeated passes over them took 46 of the 70 s this took at 32x32.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile(sched, chunk_flits, topo)
    finally:
        if enabled:
            gc.enable()


def _compile(sched: Schedule, chunk_flits: int, topo: Topology | None) -> NetworkImage:
    """:func:`compile_schedule`'s work."""
    if not 1 <= chunk_flits <= MAX_CHUNK_FLITS:
        raise RomError(f"chunk_flits must be 1..{MAX_CHUNK_FLITS} (got {chunk_flits})")
    t = sched.topology
    if topo is not None and not same_topology(t, topo):
        same = (t.name, len(t.links)) == (topo.name, len(topo.links))
        raise RomError(
            f"the schedule is for the {t.name} ({len(t.links)} links), "
            f"but the network is the {topo.name} ({len(topo.links)} links)"
            + ("; their links differ (ring directions or ports)" if same else "")
        )
    try:
        verify(sched)
        came = alltoall_lanes(sched) if sched.collective == "alltoall" else None
        check_storage(sched)
    except (ScheduleInvalid, StorageConflict) as e:
        raise RomError(f"the hardware cannot execute this schedule: {e}") from None
    if came is not None:
        return _compile_alltoall(sched, chunk_flits, came)

    n, k = t.nodes, sched.chunks
    lanes = [tuple(t.ports(v)) for v in range(n)]
    lane_of = [{p: i for i, p in enumerate(lanes[v])} for v in range(n)]
    steps = sched.num_steps
    arrays = {
        name: [np.zeros((steps, len(lanes[v])), dtype=np.int64) for v in range(n)]
        for name in ("rd_en", "rd_slot", "wr_en", "wr_slot", "wr_acc", "wr_mask", "out_valid", "out_lane")
    }
    A = lambda name, v: arrays[name][v]  # noqa: E731
    alloc = [_Lanes(len(lanes[v])) for v in range(n)]
    home = [[lane_of[v][lanes[v][c % len(lanes[v])]] for c in range(k)] for v in range(n)]
    link_transfers = np.zeros(len(t.links), dtype=np.int64)

    loc = _initial_places(sched, t, home, lane_of, alloc)
    initial = [dict(d) for d in loc]

    base = 0
    for phase in sched.phases:
        if phase.collective == "allgather" and base > 0:
            # After the ReduceScatter only the root's sums are live; other slots are free.
            for v in range(n):
                loc[v] = {(v, c): loc[v][(v, c)] for c in range(k)}
                alloc[v].keep_only(loc[v].values())
        for i, step in enumerate(phase.steps):
            s = base + i
            arrivals = []
            for link, root, c in np.asarray(step).reshape(-1, 3).tolist():
                l = t.links[link]
                u, w = l.src, l.dst
                link_transfers[link] += 1
                lane, slot = loc[u][(root, c)]
                o = lane_of[u][l.src_port]
                if phase.collective == "reducescatter" and lane != o:
                    raise RomError(
                        f"step {s}, link {link}: node {u} must send root {root}, chunk {c} "
                        f"from lane {l.src_port}, but it is in lane {lanes[u][lane]}"
                    )
                if A("rd_en", u)[s, lane] and A("rd_slot", u)[s, lane] != slot:
                    raise RomError(
                        f"step {s}, link {link}: lane {lanes[u][lane]} of node {u} would read two slots in one step"
                    )
                A("rd_en", u)[s, lane] = 1
                A("rd_slot", u)[s, lane] = slot
                A("out_valid", u)[s, o] = 1
                A("out_lane", u)[s, o] = lane
                arrivals.append((w, lane_of[w][l.dst_port], root, c, link))
            for w, p, root, c, link in arrivals:
                if phase.collective == "allgather":
                    lane, slot, acc = p, alloc[w].alloc(p), 0
                    loc[w][(root, c)] = (lane, slot)
                else:
                    (lane, slot), acc = loc[w][(root, c)], 1
                    if A("wr_en", w)[s, lane] and A("wr_slot", w)[s, lane] != slot:
                        raise RomError(
                            f"step {s}, link {link}: lane {lanes[w][lane]} of node {w} "
                            "would accumulate two slots in one step"
                        )
                A("wr_en", w)[s, lane] = 1
                A("wr_slot", w)[s, lane] = slot
                A("wr_acc", w)[s, lane] = acc
                A("wr_mask", w)[s, lane] |= 1 << p
        base += phase.num_steps

    last = sched.phases[-1].collective
    final = [dict(loc[v]) if last == "allgather" else {(v, c): loc[v][(v, c)] for c in range(k)} for v in range(n)]
    slots = max(1, max(max(a.top) for a in alloc))
    routers = [
        RouterImage(
            v,
            design_ports(t, v),
            lanes[v],
            *(
                arrays[name][v]
                for name in ("rd_en", "rd_slot", "wr_en", "wr_slot", "wr_acc", "wr_mask", "out_valid", "out_lane")
            ),
        )
        for v in range(n)
    ]
    return NetworkImage(
        t,
        sched.collective,
        k,
        chunk_flits,
        steps,
        slots,
        reduce=any(p.collective == "reducescatter" for p in sched.phases),
        routers=routers,
        initial=initial,
        final=final,
        link_transfers=link_transfers,
    )


def _own_lanes(sched: Schedule, lane_of: list, came: list) -> list[dict]:
    """Per node, the lane of every chunk it sends or keeps: a received chunk in its in-port's lane; an
    own chunk in a lane no relayed chunk of its sending step uses, the one holding fewest own chunks
    so far (AllToAll lane rule, ``schedules/storage.alltoall_lanes``)."""
    t = sched.topology
    lane = [{key: lane_of[v][p] for key, p in came[v].items() if p is not None} for v in range(t.nodes)]
    own_count = [[0] * len(lane_of[v]) for v in range(t.nodes)]
    for step in sched.phases[0].steps:
        busy: dict[int, set] = {}
        own: dict[int, list] = {}
        for link, root, c in np.asarray(step).reshape(-1, 3).tolist():
            u = t.links[link].src
            if root == u:
                if (root, c) not in lane[u] and (root, c) not in own.setdefault(u, []):
                    own[u].append((root, c))
            else:
                busy.setdefault(u, set()).add(lane[u][(root, c)])
        for u, keys in own.items():
            free = sorted(set(range(len(lane_of[u]))) - busy.get(u, set()), key=lambda i: (own_count[u][i], i))
            for key, i in zip(keys, free):  # the lane rule leaves a lane for each (one chunk per out-link)
                lane[u][key] = i
                own_count[u][i] += 1
    return lane


def _compile_alltoall(sched: Schedule, chunk_flits: int, came: list) -> NetworkImage:
    """AllToAll tables (docs/alltoall.md, "Lanes and slots").

    Node ``v`` preloads its own K (N - 1) chunks (fewer when skewed) into the lanes
    :func:`_own_lanes` picks, slots 0, 1, ... of each lane in the order they leave. A chunk received
    on in-port ``p`` is written into lane ``p``, in the lowest slot free at that step; a slot is
    free again from the step after the chunk's last send (an own chunk once sent, a relayed one once
    forwarded). A destination keeps the chunks addressed to it: ``final[v]`` holds
    ``(source, chunk field)`` for every chunk field ``c`` with ``c // K == v``.
    """
    t, k, F = sched.topology, sched.chunks, chunk_flits
    n, steps = t.nodes, sched.num_steps
    lanes = [tuple(t.ports(v)) for v in range(n)]
    lane_of = [{p: i for i, p in enumerate(lanes[v])} for v in range(n)]
    lane = _own_lanes(sched, lane_of, came)
    names = ("rd_en", "rd_slot", "wr_en", "wr_slot", "wr_acc", "wr_mask", "out_valid", "out_lane")
    arrays = {name: [np.zeros((steps, len(lanes[v])), dtype=np.int64) for v in range(n)] for name in names}
    rows = [np.asarray(step).reshape(-1, 3).tolist() for step in sched.phases[0].steps]
    last_send: list[dict] = [dict() for _ in range(n)]
    for s, step in enumerate(rows):
        for link, root, c in step:
            last_send[t.links[link].src][(root, c)] = s
    alloc = [_Lanes(len(lanes[v])) for v in range(n)]
    loc: list[dict] = [dict() for _ in range(n)]
    for v in range(n):
        for key in sorted((key for key in last_send[v] if key[0] == v), key=lambda key: last_send[v][key]):
            loc[v][key] = (lane[v][key], alloc[v].alloc(lane[v][key]))
    initial = [dict(d) for d in loc]
    link_transfers = np.zeros(len(t.links), dtype=np.int64)
    for s, step in enumerate(rows):
        done = {}
        for link, root, c in step:
            l = t.links[link]
            u, w = l.src, l.dst
            link_transfers[link] += 1
            i, slot = loc[u][(root, c)]
            o = lane_of[u][l.src_port]
            rd_en, rd_slot = arrays["rd_en"][u], arrays["rd_slot"][u]
            if rd_en[s, i] and rd_slot[s, i] != slot:  # the lane rule (checked before) rules this out
                raise RomError(
                    f"step {s}, link {link}: lane {lanes[u][i]} of node {u} would read two slots in one step"
                )
            rd_en[s, i], rd_slot[s, i] = 1, slot
            arrays["out_valid"][u][s, o], arrays["out_lane"][u][s, o] = 1, i
            p = lane_of[w][l.dst_port]
            loc[w][(root, c)] = (p, alloc[w].alloc(p))
            arrays["wr_en"][w][s, p], arrays["wr_slot"][w][s, p] = 1, loc[w][(root, c)][1]
            arrays["wr_mask"][w][s, p] = 1 << p
            if last_send[u][(root, c)] == s and c // k != u:
                done[(u, (root, c))] = None  # a chunk fanning out to several out-ports: once
        for u, key in done:  # free from the next step on
            alloc[u].release(*loc[u].pop(key))
    final = [{key: at for key, at in loc[v].items() if key[1] // k == v} for v in range(n)]
    routers = [RouterImage(v, design_ports(t, v), lanes[v], *(arrays[name][v] for name in names)) for v in range(n)]
    slots = max(1, max(max(a.top) for a in alloc))
    return NetworkImage(t, "alltoall", k, F, steps, slots, False, routers, initial, final, link_transfers)
