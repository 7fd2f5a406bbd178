"""Formal wrappers of the routers' blocks and their properties (issue 40; ``docs/formal.md``).

One module per block; each has ``PROPERTIES`` (name -> :class:`Prop`) and ``build(params, prop)``,
which returns the wrapper (the block, the ``Assume`` of its environment's contract, the ``Assert`` of
its properties, and a ``Cover`` per property showing that its precondition is reached) and its ports.
The properties talk to the blocks through their ports; where k-induction needs it, a wrapper also
reads a block's registers (:func:`~equimesh.rtl.formal.probe.internals`) to state the strengthening
invariant. :mod:`~equimesh.rtl.formal.sby` runs them; :mod:`~equimesh.rtl.formal.mutations` breaks
the blocks on purpose to show that each property can fail.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ...schedules.topology import build as build_topology
from ..timing import DEFAULT_PIPELINE

BLOCKS = ("crossbar", "router", "input_buffer", "relay", "packet_router")


@dataclass(frozen=True)
class Prop:
    """A property: its ``name`` (the prefix of its ``Assert`` and ``Cover`` messages), what it states,
    what its wrapper assumes, and how it is checked: ``unbounded`` (k-induction; every property so far)
    or a bounded check."""

    name: str
    states: str
    assumes: str
    unbounded: bool = True


@dataclass
class Wrapper:
    """A built wrapper: its top module and ports, the default proof depth (the induction length tried,
    or the bound) and the depth within which every cover must be reached."""

    top: object
    ports: list
    depth: int
    cover_depth: int


@dataclass(frozen=True)
class Params:
    """The design a wrapper is built for: the topology (its routers' ports and, for packets, the bitmap
    width), the pipeline, the schedule router's chunk size, lane slots and table depth, the packets'
    payload length and the input buffer depth (``None``: packet length + 2, as ``PacketSetup``), the flit
    width (the crossbar's and lanes' flits; a packet's bitmap is ``ceil(nodes / flit_bits)`` flits)."""

    kind: str = "equimesh"
    rows: int = 4
    cols: int = 4
    pipeline: int = DEFAULT_PIPELINE
    chunk_flits: int = 2
    slots: int = 4
    table_depth: int = 4
    payload_flits: int = 2
    buffer_depth: int | None = None
    flit_bits: int = 32
    reduce: bool = True

    @property
    def topology(self):
        return build_topology(self.kind, self.rows, self.cols)

    @property
    def nodes(self) -> int:
        return self.rows * self.cols

    @property
    def fmt(self):
        """The packets' format (:class:`~equimesh.rtl.packet.PacketFormat`): nodes, payload flits, flit width."""
        from ..packet import PacketFormat

        return PacketFormat(self.nodes, self.payload_flits, self.flit_bits)

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lane ports of node 0's router (every EquiMesh router has the four ports N, E, S, W)."""
        return tuple(self.topology.ports(0))

    def describe(self) -> str:
        return (
            f"{self.kind} {self.rows}x{self.cols}, pipeline {self.pipeline}, {len(self.lanes)} ports, "
            f"F={self.chunk_flits}, {self.slots} slots, table depth {self.table_depth}, "
            f"{self.flit_bits}-bit flits, {self.payload_flits} payload flits, "
            f"{-(-self.nodes // self.flit_bits)} bitmap flit(s)"
        )


def prefixes(mod, prop: str) -> tuple[str, ...]:
    """The message prefixes of ``prop``'s assertions: its name, and the block's own assertions it adopts
    (a wrapper module's ``DESIGN``)."""
    return (prop,) + tuple(getattr(mod, "DESIGN", {}).get(prop, ()))


def block(name: str):
    """The wrapper module of block ``name`` (one of :data:`BLOCKS`)."""
    return importlib.import_module(f".{name}", __name__)


def prove(
    name: str, prop: str, params: Params, timeout: int, depth: int | None = None, waveforms: Path = Path("waveforms")
):
    """Build block ``name``'s wrapper for ``prop`` and run it (:func:`.sby.run_property`).

    Parameters
    ----------
    name, prop : str
        A block of :data:`BLOCKS` and one of its ``PROPERTIES``.
    params : Params
        The design the wrapper is built for.
    timeout : int
        Seconds for the solver; past it the verdict is UNKNOWN.
    depth : int or None
        The induction or check depth; None: the wrapper's own.
    waveforms : Path
        Where a counterexample's VCD and GTKWave file go.

    Returns
    -------
    sby.Verdict
    """
    from .sby import run_property

    mod = block(name)
    w = mod.build(params, prop)
    return run_property(
        w.top,
        w.ports,
        name,
        prop,
        prefixes(mod, prop),
        depth or w.depth,
        timeout,
        mod.PROPERTIES[prop].unbounded,
        cover_depth=w.cover_depth,
        waveforms=waveforms,
    )
