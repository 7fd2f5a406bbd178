"""The crossbar: ``inputs`` x ``outputs`` one-hot multiplexers (Constellation's ``Switch``).

Each output selects one input or is idle. The select is checked in simulation.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Module, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .flit import flit_layout

__all__ = ["Crossbar", "select_layout"]


def select_layout(inputs: int) -> data.StructLayout:
    """One output's select: ``valid`` (1 bit) and ``input`` (max(1, ceil(log2 inputs)) bits).

    Parameters
    ----------
    inputs : int
        The crossbar's inputs.

    Returns
    -------
    amaranth.lib.data.StructLayout
    """
    return data.StructLayout({"valid": 1, "input": unsigned(max(1, (inputs - 1).bit_length()))})


class Crossbar(wiring.Component):
    """``inputs`` x ``outputs`` crossbar of ``flit_bits``-wide flits.

    Parameters
    ----------
    inputs, outputs : int
        The number of inputs and outputs.
    flit_bits : int
        The flit width, a positive multiple of 32 (default 64).

    Attributes
    ----------
    inputs, outputs : int
        As given.

    Ports
    -----
    i : In(ArrayLayout(flit, inputs))
    sel : In(ArrayLayout(select, outputs))
        ``sel[o].input`` names the input that drives output ``o`` when ``sel[o].valid``.
    o : Out(ArrayLayout(flit, outputs))
        Combinational; zero when idle.
    """

    def __init__(self, inputs: int, outputs: int, flit_bits: int = 64):
        self.inputs, self.outputs = inputs, outputs
        flit = flit_layout(flit_bits)
        super().__init__(
            {
                "i": In(data.ArrayLayout(flit, inputs)),
                "sel": In(data.ArrayLayout(select_layout(inputs), outputs)),
                "o": Out(data.ArrayLayout(flit, outputs)),
            }
        )

    def elaborate(self, platform):
        """Build the hardware: one multiplexer per output, asserting a legal select.

        Parameters
        ----------
        platform : object or None
            Unused.

        Returns
        -------
        amaranth.hdl.Module
        """
        m = Module()
        for o in range(self.outputs):
            sel = self.sel[o]
            if 1 << len(sel.input) != self.inputs:  # some select codes name no input
                m.d.sync += Assert(
                    ~sel.valid | (sel.input < self.inputs), f"crossbar output {o} selects a missing input"
                )
            with m.If(sel.valid):
                with m.Switch(sel.input):
                    for i in range(self.inputs):
                        with m.Case(i):
                            m.d.comb += self.o[o].eq(self.i[i])
                    with m.Default():  # an illegal select (asserted above) gives an idle output
                        m.d.comb += self.o[o].eq(0)
        return m
