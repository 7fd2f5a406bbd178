"""The crossbar: ``inputs`` x ``outputs`` one-hot multiplexers (Constellation's ``Switch``).

Each output's select is one-hot: bit ``i`` set, input ``i`` drives the output; no bit set, the output is
idle (zero). Each output bit is then an AND-OR of the inputs' bits and the select bits, two LUT levels on
an ECP5, with no decoder between a select register and the data multiplexers (a binary select puts one
in front of the select's fan-out, the whole flit width: docs/fpga.md). Where a select starts binary
(a schedule table's lane field) :func:`one_hot` decodes it, ahead of the register when there is one.
More than one bit set is checked in simulation.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Assert, Cat, Module, Mux, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .flit import flit_layout

__all__ = ["Crossbar", "one_hot", "select_layout"]


def select_layout(inputs: int) -> unsigned:
    """One output's select: ``inputs`` bits, one-hot (bit ``i``: input ``i`` drives it), zero when idle.

    Parameters
    ----------
    inputs : int
        The crossbar's inputs.

    Returns
    -------
    amaranth.hdl.Shape
    """
    return unsigned(inputs)


def one_hot(valid: Value, index: Value, inputs: int) -> Value:
    """The one-hot select of a binary one: bit ``i`` is ``valid & (index == i)``.

    Parameters
    ----------
    valid : Value
        The output is driven.
    index : Value
        The input that drives it (binary).
    inputs : int
        The crossbar's inputs.

    Returns
    -------
    Value
        ``inputs`` bits.
    """
    return Cat(valid & (index == i) for i in range(inputs))


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
        ``sel[o]``: one-hot, the input that drives output ``o``; zero: ``o`` is idle.
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
        """Build the hardware: one AND-OR multiplexer per output, asserting a one-hot select.

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
            m.d.sync += Assert((sel & (sel - 1)) == 0, f"crossbar output {o} selects two inputs")
            m.d.comb += self.o[o].eq(reduce(operator.or_, [Mux(sel[i], self.i[i], 0) for i in range(self.inputs)]))
        return m
