"""The host program of a run: load the tables and lanes, start, wait for ``done``, read back.

Pure numpy, no simulator: every backend (Amaranth simulator, cocotb on Icarus,
the compiled Verilator model) executes the same :class:`Program` on the same
network top (``rtl/network.py``), and :func:`check` judges the result against
the schedule semantics (docs/architecture.md, "Schedule file"): every node's final memory bit for bit,
every link's busy cycles, and the cycle count of the timing model.

A program is a list of segments:

* :class:`Drive`: ``frames`` clock cycles; in each, set the named input ports
  to that frame's value, take one clock edge, then record the named outputs;
* :class:`Run`: pulse ``start`` for one edge and clock until ``done`` (at most
  ``limit`` edges); the backend counts the edges itself.

Segments for runs that are not one ``start``/``done`` (packet traffic, soaks,
mixed runs; used by the compiled model). Edges are counted from the end of
reset, :class:`Drive` frames included, so a program can place events at known
cycles (``edge`` arguments are these absolute counts):

* :class:`Set`: set input ports, no edge;
* :class:`ClockTo`: clock until ``edge`` edges have passed (none if already past);
* :class:`Until`: clock until output ``port`` (<= 64 bits) is >= ``target`` (checked
  before each edge: the value the edge samples), until ``deadline``, or until it
  has not changed for ``watchdog`` edges; records the edge count, whether it got
  there, and the edge count at which ``port`` last changed;
* :class:`Settle`: clock in windows of ``window`` edges until a window in which
  ``port`` did not change, or until ``deadline``; records the edge count, whether it
  settled, and the end of the last window that changed ``port``;
* :class:`Capture`: record the named outputs now, no edge.

Values are little-endian uint32 words (``[frames, words]`` per port), so wide
ports of big networks stay numpy arrays end to end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..rtl.design import Design
from ..rtl.flit import WORD_BITS
from ..rtl.network import buses, load_group
from ..rtl.rom import NetworkImage
from .pattern import expected_chunks, input_chunks

__all__ = [
    "Capture",
    "ClockTo",
    "Drive",
    "Outcome",
    "Program",
    "Run",
    "Set",
    "Settle",
    "Until",
    "check",
    "final_entries",
    "final_reads",
    "join",
    "lane_images",
    "make_program",
    "merged",
    "pack_bits",
    "read_back",
    "scalar",
    "split",
    "words_of",
]


def words_of(width: int) -> int:
    """uint32 words that hold a port of ``width`` bits (at least 1).

    Parameters
    ----------
    width : int
        Bits.

    Returns
    -------
    int
        ceil(width / 32), at least 1.
    """
    return max(1, -(-width // 32))


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """uint8 bits ``[frames, width]`` (bit 0 first) -> uint32 words ``[frames, words]``.

    Parameters
    ----------
    bits : numpy.ndarray
        uint8 of 0/1, shape (frames, width).

    Returns
    -------
    numpy.ndarray
        uint32, shape (frames, :func:`words_of` (width)), little-endian, zero-padded.
    """
    frames, width = bits.shape
    padded = np.zeros((frames, words_of(width) * 32), dtype=np.uint8)
    padded[:, :width] = bits
    return np.packbits(padded, axis=1, bitorder="little").view("<u4").reshape(frames, -1)


def scalar(values, width: int) -> np.ndarray:
    """A column of integers (< 2**64) as uint32 words ``[frames, words]``.

    Parameters
    ----------
    values : array_like of int
        One value per frame, each below 2**64.
    width : int
        The port's bits; gives the word count.

    Returns
    -------
    numpy.ndarray
        uint32, shape (len(values), :func:`words_of` (width)); words past the second are zero.
    """
    v = np.asarray(values, dtype=np.uint64)
    out = np.zeros((len(v), words_of(width)), dtype=np.uint32)
    out[:, 0] = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if out.shape[1] > 1:
        out[:, 1] = (v >> np.uint64(32)).astype(np.uint32)
    return out


@dataclass
class Drive:
    """``frames`` clock cycles: per frame set the inputs, take one edge, record the outputs.

    Attributes
    ----------
    frames : int
        Clock cycles.
    values : dict of str to numpy.ndarray
        Input port -> uint32 words, shape (frames, words).
    capture : list of str
        Output ports recorded after each edge.
    """

    frames: int
    values: dict[str, np.ndarray]
    capture: list[str] = field(default_factory=list)


def merged(*drives: Drive) -> Drive:
    """Drives of different ports side by side, as long as the longest: a shorter one holds its last frame.

    Parameters
    ----------
    *drives : Drive
        At least one; their captures are dropped.

    Returns
    -------
    Drive
        Without captures.
    """
    frames = max(d.frames for d in drives)
    values = {}
    for d in drives:
        for name, vals in d.values.items():
            values[name] = np.concatenate([vals, np.repeat(vals[-1:], frames - d.frames, axis=0)])
    return Drive(frames, values)


@dataclass
class Run:
    """Pulse ``start`` for one edge and clock until ``done``.

    Attributes
    ----------
    limit : int
        The most clock edges to wait for ``done``.
    """

    limit: int


@dataclass
class Set:
    """Set input ports, no clock edge.

    Attributes
    ----------
    values : dict of str to numpy.ndarray
        Port -> one frame: uint32 words ``[1, words]``.
    """

    values: dict[str, np.ndarray]  # one frame: uint32 words ``[1, words]``


@dataclass
class ClockTo:
    """Clock until ``edge`` edges have passed since reset (none if already past).

    Attributes
    ----------
    edge : int
        The absolute edge count.
    """

    edge: int


@dataclass
class Until:
    """Clock until output ``port`` is >= ``target``, until ``deadline``, or until the watchdog fires.

    The port is checked before each edge (the value the edge samples). Records the edge count,
    whether it got there, and the edge count at which ``port`` last changed.

    Attributes
    ----------
    port : str
        An output of at most 64 bits.
    target : int
    deadline : int
        Absolute edge count.
    watchdog : int
        Stop when ``port`` has not changed for this many edges; 0: no watchdog.
    """

    port: str
    target: int
    deadline: int
    watchdog: int = 0  # 0: no watchdog


@dataclass
class Settle:
    """Clock in windows of ``window`` edges until a whole window in which ``port`` did not change (a last
    window cut short by the deadline does not count: a few quiet edges say nothing).

    Records the edge count, whether it settled, and the end of the last window that changed ``port``.

    Attributes
    ----------
    port : str
        An output port.
    window : int
        Edges per window.
    deadline : int
        Absolute edge count to give up at.
    """

    port: str
    window: int
    deadline: int


@dataclass
class Capture:
    """Record the named outputs now, no clock edge.

    Attributes
    ----------
    names : list of str
        Output ports.
    """

    names: list[str]


@dataclass
class Program:
    """The segments, and the bit width of every port they name.

    Attributes
    ----------
    segments : list
        :class:`Drive`, :class:`Run`, :class:`Set`, :class:`ClockTo`, :class:`Until`,
        :class:`Settle` and :class:`Capture` segments, in order.
    widths : dict of str to int
        Bit width of every port.
    """

    segments: list
    widths: dict[str, int]


def lane_images(image: NetworkImage, design: Design) -> tuple[np.ndarray, int]:
    """The initial lane contents: uint32 ``[addresses, nodes * max_lanes, words per flit]`` and the
    number of addresses to load (the highest initial flit + 1).

    Parameters
    ----------
    image : NetworkImage
        Its ``initial`` placement gives the chunks (:mod:`.pattern` data).
    design : Design
        Gives ``max_lanes`` and the flit width.

    Returns
    -------
    tuple of (numpy.ndarray, int)
        uint32 of shape (addresses, N x max_lanes, flit_bits / 32), lane ``i`` of node ``v`` at
        column ``v * max_lanes + i``; and the address count.
    """
    F, ml, W = image.chunk_flits, design.max_lanes, design.flit_bits // WORD_BITS
    entries = [
        (v, lane, slot, root, c)
        for v in range(image.topology.nodes)
        for (root, c), (lane, slot) in image.initial[v].items()
    ]
    e = np.array(entries, dtype=np.int64).reshape(-1, 5)
    n_load = int((e[:, 2].max() + 1) * F) if len(e) else 0
    out = np.zeros((n_load, image.topology.nodes * ml, W), dtype=np.uint32)
    chunks = input_chunks(e[:, 0], e[:, 3], e[:, 4], F, design.flit_bits)  # [entries, F, W]
    addr = e[:, 2, None] * F + np.arange(F)
    out[addr, (e[:, 0] * ml + e[:, 1])[:, None]] = chunks
    return out, n_load


def split(design: Design, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bus values (uint32 ``[frames, words]``, field 0 first) -> the values of the bus's ports.

    Parameters
    ----------
    design : Design
        Gives the buses (:func:`~equimesh.rtl.network.buses`).
    values : dict of str to numpy.ndarray
        Name -> uint32 ``[frames, words]``; names that are not buses pass through unchanged.

    Returns
    -------
    dict of str to numpy.ndarray
        Port name -> its share of the words.
    """
    out = {}
    for name, vals in values.items():
        bus = buses(design).get(name)
        if bus is None:
            out[name] = vals
            continue
        w = bus.field_bits // 32
        first = 0
        for port, fields in bus.ports():
            out[port] = np.ascontiguousarray(vals[:, first : first + fields * w])
            first += fields * w
    return out


def join(design: Design, out: dict, name: str) -> np.ndarray:
    """A captured bus (uint32 ``[frames, words]``) from the records of its ports.

    Parameters
    ----------
    design : Design
    out : dict
        A backend's records: port name -> uint32 ``[frames, words]``.
    name : str
        The bus, e.g. ``"host_data"`` or ``"busy"``.

    Returns
    -------
    numpy.ndarray
        uint32 ``[frames, words]``, the ports' words concatenated in port order.
    """
    return np.concatenate([out[port] for port, _ in buses(design)[name].ports()], axis=-1)


def make_program(image: NetworkImage, design: Design, widths: dict[str, int]) -> Program:
    """Load every table and lane of ``design`` with ``image``, run it, read the counters and lanes.

    ``widths``: the bit width of every port of the network top (:func:`~equimesh.rtl.network.top_ports`).

    The loads go group by group (:func:`~equimesh.rtl.network.load_group`); then a :class:`Run`
    limited to the timing model's cycles + 16, idle frames that capture ``cycles`` and ``busy``,
    and read frames that capture ``host_data``.

    Parameters
    ----------
    image : NetworkImage
    design : Design
    widths : dict of str to int

    Returns
    -------
    Program
        Segments ``[load Drive, Run, idle Drive, read Drive]``.

    Raises
    ------
    RomError
        If the image does not run on the design.
    """
    design.check(image)
    n, ml, S = image.topology.nodes, design.max_lanes, image.steps
    bus, size = buses(design), load_group(design)
    groups = -(-n // size)
    lanes, n_load = lane_images(image, design)  # [addr, n * ml, W]
    per = max(S, n_load)
    frames = groups * per + 1  # group by group; the last frame clears the write enables
    f = np.arange(frames)
    g, a = np.minimum(f // per, groups - 1), f % per  # group and address of each frame
    tab_live = (f < groups * per) & (a < S)
    lane_live = (f < groups * per) & (a < n_load)
    pad = groups * size - n
    eb = bus["tab_data"].field_bits
    bits = np.concatenate([image.table_bits(design.slots, eb), np.zeros((pad, S, eb), dtype=np.uint8)])
    table = np.zeros((frames, size, eb), dtype=np.uint8)  # frame -> its group's entries at step a
    rows = np.nonzero(tab_live)[0]
    table[rows] = bits.reshape(groups, size, S, eb)[g[rows], :, a[rows]]
    lane_we = np.zeros((groups * size, bus["load_we"].field_bits), dtype=np.uint8)
    for v in range(n):
        lane_we[v, : len(design.lanes(v))] = 1
    we = np.zeros((frames, size, lane_we.shape[1]), dtype=np.uint8)
    rows = np.nonzero(lane_live)[0]
    we[rows] = lane_we.reshape(groups, size, -1)[g[rows]]
    W = lanes.shape[2]
    lanes = np.concatenate([lanes, np.zeros((n_load, pad * ml, W), dtype=np.uint32)], axis=1)
    load_data = np.zeros((frames, size * ml, W), dtype=np.uint32)
    load_data[rows] = lanes.reshape(n_load, groups, size * ml, W)[a[rows], g[rows]]
    load = Drive(
        frames,
        split(
            design,
            {
                "steps": scalar(np.full(frames, S), widths["steps"]),
                "group": scalar(g, widths["group"]),
                "tab_we": scalar(tab_live, 1),
                "tab_addr": scalar(np.minimum(a, S - 1), widths["tab_addr"]),
                "tab_data": pack_bits(table.reshape(frames, -1)),
                "load_addr": scalar(np.minimum(a, max(n_load - 1, 0)), widths["load_addr"]),
                "load_we": pack_bits(we.reshape(frames, -1)),
                "load_data": load_data.reshape(frames, -1),
            },
        ),
    )
    no_we = np.zeros((1, bus["load_we"].fields * bus["load_we"].field_bits // 32), dtype=np.uint32)
    # host_addr is set here too, for the host read's latency less one frame: the first read frames
    # capture the addresses of these (and a simulator with X values must see a defined one).
    n_idle = max(1, design.host_latency - 1)
    idle = Drive(
        n_idle,
        split(
            design,
            {
                "tab_we": scalar([0] * n_idle, 1),
                "load_we": np.repeat(no_we, n_idle, 0),
                "host_addr": scalar([0] * n_idle, widths["host_addr"]),
            },
        ),
        ["cycles"] + [p for p, _ in bus["busy"].ports()],
    )
    n_read = final_reads(image)
    frames = n_read + design.host_latency - 1  # the last address is held while the reads drain
    read = Drive(
        frames,
        {"host_addr": scalar(np.minimum(np.arange(frames), n_read - 1), widths["host_addr"])},
        [p for p, _ in bus["host_data"].ports()],
    )
    limit = design.run_cycles(image.steps) + 16
    return Program([load, Run(limit), idle, read], widths)


def read_back(design: Design, out: dict) -> np.ndarray:
    """The lanes read back, one row per address, from the captures of a program's read frames.

    Parameters
    ----------
    design : Design
    out : dict
        A backend's records.

    Returns
    -------
    numpy.ndarray
        uint32 ``[reads, words]``: the ``host_data`` captures less the first host_latency - 1 frames.
    """
    return join(design, out, "host_data")[design.host_latency - 1 :]


def final_reads(image: NetworkImage) -> int:
    """Addresses to read back: up to the highest flit of the collective's result.

    Parameters
    ----------
    image : NetworkImage

    Returns
    -------
    int
        (highest final slot + 1) x chunk_flits; 0 if there is no result.
    """
    top = max((slot for d in image.final for _, slot in d.values()), default=-1)
    return (top + 1) * image.chunk_flits


def final_entries(image: NetworkImage) -> np.ndarray:
    """int64 ``[entries, 5]``: node, lane, slot, root, chunk of every result chunk.

    Parameters
    ----------
    image : NetworkImage
        Its ``final`` placement.

    Returns
    -------
    numpy.ndarray
    """
    e = [
        (v, lane, slot, root, c)
        for v in range(image.topology.nodes)
        for (root, c), (lane, slot) in image.final[v].items()
    ]
    return np.array(e, dtype=np.int64).reshape(-1, 5)


@dataclass
class Outcome:
    """What a backend measured, checked against the schedule.

    Attributes
    ----------
    cycles : int
        Edges counted by the backend, start to done.
    rtl_cycles : int
        The statistics block's cycle counter.
    busy : numpy.ndarray
        int64, shape (L,): the statistics block's busy counter per link.
    mismatches : int
        Result flits that differ from what the collective defines.
    first_mismatch : str or None
        The first of them: node, lane, flit, got and expected values.
    bit_exact : bool
        No mismatches.
    """

    cycles: int  # edges counted by the backend, start to done
    rtl_cycles: int  # the statistics block's cycle counter
    busy: np.ndarray  # the statistics block's busy counter per link
    mismatches: int
    first_mismatch: str | None

    @property
    def bit_exact(self) -> bool:
        """No result flit differs from what the collective defines."""
        return self.mismatches == 0


def check(
    image: NetworkImage, design: Design, cycles: int, rtl_cycles: int, busy: np.ndarray, host_data: np.ndarray
) -> Outcome:
    """Compare the lanes read back (``host_data``: uint32 ``[reads, nodes * max_lanes * words]``) with
    what the collective defines at every node (sim/pattern.py).

    Parameters
    ----------
    image : NetworkImage
    design : Design
    cycles : int
        Edges counted by the backend, start to done.
    rtl_cycles : int
        The statistics block's cycle counter.
    busy : numpy.ndarray
        Busy cycles per link.
    host_data : numpy.ndarray
        uint32 ``[reads, nodes * max_lanes * words]``.

    Returns
    -------
    Outcome
    """
    F, ml, W = image.chunk_flits, design.max_lanes, design.flit_bits // WORD_BITS
    n = image.topology.nodes
    got = host_data.reshape(host_data.shape[0], n * ml, W)
    e = final_entries(image)
    # The distinct (root, chunk) pairs, as one integer each (a row-wise unique sorts 4 million rows of a
    # 32x32 AllGather as byte strings: seconds).
    span = int(e[:, 4].max(initial=0)) + 1
    keys, inverse = np.unique(e[:, 3] * span + e[:, 4], return_inverse=True)
    roots, chunks = np.divmod(keys, span)
    want = expected_chunks(image.collective, n, roots, chunks, F, design.flit_bits)[inverse.ravel()]
    addr = e[:, 2, None] * F + np.arange(F)  # [entries, F]
    have = got[addr, (e[:, 0] * ml + e[:, 1])[:, None]]  # [entries, F, W]
    bad = np.nonzero((have != want).any(axis=2))
    first = None
    if len(bad[0]):
        i, fl = bad[0][0], bad[1][0]
        v, lane, slot = e[i, :3]
        first = (
            f"node {v} lane {image.routers[v].lanes[lane]} flit {slot * F + fl}: "
            f"got {_hex(have[i, fl])}, expected {_hex(want[i, fl])}"
        )
    return Outcome(int(cycles), int(rtl_cycles), np.asarray(busy, dtype=np.int64), len(bad[0]), first)


def _hex(words: np.ndarray) -> str:
    return hex(sum(int(w) << (32 * j) for j, w in enumerate(words)))
