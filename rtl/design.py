"""A network design: everything its Verilog depends on, and nothing about the schedule it runs.

docs/architecture.md, "Schedule tables in hardware": the schedule table and the lanes are
memories the host loads, so one design (and one compiled simulator model) runs
any schedule that fits it. A design is the topology (kind, size, ring
directions), the flit width, the chunk size, the lane depth in chunk slots, the
table depth in timesteps, whether the routers have the ReduceScatter adders, and
the routers' pipeline depth (``rtl/router.py``; ``rtl/rom.py`` has its timing model).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..schedules.topology import Topology, format_ring_dirs
from .rom import NetworkImage, RomError, design_ports, same_topology
from .timing import DEFAULT_PIPELINE, PIPELINES, period, run_cycles

__all__ = ["Design", "FLIT_BITS", "MAX_DEPTH", "MAX_LANE_FLITS", "MIN_DEPTH", "fit"]

MIN_DEPTH = 16  # the smallest table and lane sizes a fitted design gets (powers of two above)
FLIT_BITS = 64  # the flit width of every design the CLI builds
MAX_DEPTH = 1 << 20  # schedule-table entries (timesteps) of a design
MAX_LANE_FLITS = 1 << 24  # flits of one lane (slots x chunk flits): 128 MB of 64-bit flits per lane


def _pow2(n: int, floor: int = 1) -> int:
    return max(floor, 1 << max(0, n - 1).bit_length())


@dataclass(frozen=True)
class Design:
    """One network design: every setting its Verilog depends on, none about the schedule it runs.

    Attributes
    ----------
    topology : Topology
        Kind, size, ring directions and links.
    chunk_flits : int
        F, flits per chunk.
    slots : int
        Chunk slots per lane (>= 1); a lane holds slots x F flits, at most :data:`MAX_LANE_FLITS`.
    depth : int
        Schedule-table entries (timesteps), 1..:data:`MAX_DEPTH`.
    reduce : bool
        The routers have the ReduceScatter adders.
    flit_bits : int
        Bits per flit (default :data:`FLIT_BITS`, 64).
    pipeline : int
        The routers' pipeline depth, one of ``PIPELINES`` (0, 1, 2; default 2).
    period : int
        Cycles per timestep.
    host_latency : int
        Cycles from ``host_addr`` to its ``host_data``: 1 + pipeline.
    lane_flits : int
        Flits per lane: slots x F.
    nodes : int
        N.
    max_lanes : int
        The most lanes of any router.

    Raises
    ------
    RomError
        On construction, if ``pipeline``, ``depth``, ``slots`` or the lane size is out of range.
    """

    topology: Topology
    chunk_flits: int
    slots: int
    depth: int
    reduce: bool
    flit_bits: int = FLIT_BITS
    pipeline: int = DEFAULT_PIPELINE

    def __post_init__(self):
        if self.pipeline not in PIPELINES:
            raise RomError(f"pipeline depth {self.pipeline} is not one of {', '.join(map(str, PIPELINES))}")
        if not 1 <= self.depth <= MAX_DEPTH:
            raise RomError(f"the schedule tables hold 1..{MAX_DEPTH} entries (got {self.depth})")
        if self.slots < 1 or self.lane_flits > MAX_LANE_FLITS:
            raise RomError(
                f"a lane holds 1..{MAX_LANE_FLITS} flits (got {self.slots} slots of {self.chunk_flits} flits)"
            )

    @property
    def period(self) -> int:
        """Cycles per timestep."""
        return period(self.chunk_flits, self.pipeline)

    @property
    def host_latency(self) -> int:
        """Cycles from ``host_addr`` to its ``host_data``: the read port, from pipeline 1 on its output register,
        and with pipeline 2 the registered read address."""
        return 1 + self.pipeline

    def run_cycles(self, steps: int) -> int:
        """Clock edges from the one that takes ``start`` to ``done`` for a schedule of ``steps`` steps.

        Parameters
        ----------
        steps : int
            Timesteps of the schedule.

        Returns
        -------
        int
            Cycles (:func:`.timing.run_cycles`).
        """
        return run_cycles(steps, self.chunk_flits, self.pipeline)

    @property
    def lane_flits(self) -> int:
        """Flits per lane: slots x chunk_flits."""
        return self.slots * self.chunk_flits

    @property
    def nodes(self) -> int:
        """N, the topology's node count."""
        return self.topology.nodes

    def lanes(self, node: int) -> tuple[str, ...]:
        """The ports of ``node`` that carry links, in lane order.

        Parameters
        ----------
        node : int

        Returns
        -------
        tuple of str
            One lane per port, in canonical port order.
        """
        return tuple(self.topology.ports(node))

    def ports(self, node: int) -> tuple[str, ...]:
        """The ports of ``node``'s router design: N E S W plus its extra ports (:func:`.rom.design_ports`).

        Parameters
        ----------
        node : int

        Returns
        -------
        tuple of str
            Ports without a link stay in the design and are tied off.
        """
        return design_ports(self.topology, node)

    @property
    def max_lanes(self) -> int:
        """The most lanes of any router."""
        return max(len(self.lanes(v)) for v in range(self.nodes))

    def describe(self) -> str:
        """One line naming every setting, e.g. for reports and progress messages.

        Returns
        -------
        str
            Topology name, ring directions (if any), flit width, flits per chunk, slots per lane,
            table depth, adders and pipeline depth.
        """
        t = self.topology
        dirs = f", rings {format_ring_dirs(t.ring_dirs)}" if t.ring_dirs is not None else ""
        return (
            f"{t.name}{dirs}, {self.flit_bits}-bit flits, {self.chunk_flits} flits/chunk, "
            f"{self.slots} slots/lane, table depth {self.depth}, {'with' if self.reduce else 'no'} adders, "
            f"pipeline {self.pipeline}"
        )

    def key(self) -> str:
        """A short digest of the parameters (the links stand for kind, size and ring directions).

        Returns
        -------
        str
            16 hex digits of the SHA-256 of the parameters; equal designs give equal keys.
        """
        t = self.topology
        text = repr(
            (
                t.kind,
                t.rows,
                t.cols,
                [l.as_list() for l in t.links],
                self.chunk_flits,
                self.slots,
                self.depth,
                self.reduce,
                self.flit_bits,
                self.pipeline,
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def check(self, image: NetworkImage) -> None:
        """Raise :class:`RomError` (one line) if ``image`` does not run on this design.

        Parameters
        ----------
        image : NetworkImage

        Raises
        ------
        RomError
            If the topology or flits per chunk differ, the schedule has more steps than ``depth``,
            needs more slots than ``slots``, or needs adders the design lacks.
        """
        if not same_topology(image.topology, self.topology):
            raise RomError(f"the schedule is for the {image.topology.name}, the design is the {self.topology.name}")
        if image.chunk_flits != self.chunk_flits:
            raise RomError(
                f"the schedule was compiled for {image.chunk_flits} flits per chunk, the design has {self.chunk_flits}"
            )
        if image.steps > self.depth:
            raise RomError(
                f"the schedule has {image.steps} steps; the design's tables hold {self.depth} (use a deeper table)"
            )
        if image.slots > self.slots:
            raise RomError(
                f"the schedule needs {image.slots} slots per lane; the design's lanes hold {self.slots} "
                f"(use deeper lanes)"
            )
        if image.reduce and not self.reduce:
            raise RomError(f"the {image.collective} needs the ReduceScatter adders; the design has none")


def fit(
    image: NetworkImage,
    flit_bits: int = 64,
    slots: int | None = None,
    depth: int | None = None,
    reduce: bool | None = None,
    pipeline: int = DEFAULT_PIPELINE,
) -> Design:
    """The design that runs ``image``: the given sizes, else powers of two (at least 16) that hold it,
    so that schedules of similar length and storage share one design and one compiled model.

    Parameters
    ----------
    image : NetworkImage
        The compiled schedule.
    flit_bits : int
        Bits per flit.
    slots : int or None
        Slots per lane; None: the next power of two >= the image's, at least :data:`MIN_DEPTH`.
    depth : int or None
        Table entries; None: the next power of two >= the image's steps, at least :data:`MIN_DEPTH`.
    reduce : bool or None
        Adders; None: what the image needs.
    pipeline : int
        The routers' pipeline depth.

    Returns
    -------
    Design

    Raises
    ------
    RomError
        If the design is out of range or the image does not run on it.
    """
    d = Design(
        image.topology,
        image.chunk_flits,
        slots if slots is not None else _pow2(image.slots, MIN_DEPTH),
        depth if depth is not None else _pow2(image.steps, MIN_DEPTH),
        image.reduce if reduce is None else reduce,
        flit_bits,
        pipeline,
    )
    d.check(image)
    return d
