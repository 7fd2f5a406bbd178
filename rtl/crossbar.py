"""The crossbar: ``inputs`` x ``outputs`` multiplexers (Constellation's ``Switch``), each output
selecting one input or idle (zero).

A select comes in one of two codes, chosen per crossbar by what drives it:

* **binary** (``valid``, ``input``): the schedule router's, straight from a table entry's lane field.
  Synthesis maps each output bit to one multiplexer of the inputs.
* **one-hot** (bit ``i``: input ``i`` drives the output): the packet crossbars', whose selects are
  registers (the packet owners, :mod:`~equimesh.rtl.packet_router`; :func:`one_hot` decodes a binary
  select, for the proof that both codes switch alike). Each output bit is an AND-OR of the inputs' and
  the select's bits, with no decoder between the select registers and their fan-out over the flit
  width (docs/packets.md, "Packet router clock"). In the 5-port schedule router this code cost twice
  the LUTs (its four inputs map to one wide LUT per bit), so that one stays binary.

A select naming no input (binary) or two inputs (one-hot) is checked in simulation.
"""

from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Assert, Cat, Module, Mux, Shape, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .flit import flit_layout

__all__ = ["Crossbar", "one_hot", "select_layout"]


def select_layout(inputs: int, hot: bool = False) -> data.StructLayout | Shape:
    """One output's select.

    Parameters
    ----------
    inputs : int
        The crossbar's inputs.
    hot : bool
        One-hot: ``inputs`` bits, bit ``i`` set when input ``i`` drives the output, zero when idle.
        Otherwise binary: ``valid`` (1 bit) and ``input`` (max(1, ceil(log2 inputs)) bits).

    Returns
    -------
    amaranth.lib.data.StructLayout or amaranth.hdl.Shape
    """
    if hot:
        return unsigned(inputs)
    return data.StructLayout({"valid": 1, "input": unsigned(max(1, (inputs - 1).bit_length()))})


def one_hot(valid: Value, index: Value, inputs: int) -> Value:
    """The one-hot code of a binary select: bit ``i`` is ``valid & (index == i)``.

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
    hot : bool
        One-hot selects (:func:`select_layout`); default binary.

    Attributes
    ----------
    inputs, outputs : int
        As given.
    hot : bool
        As given.

    Ports
    -----
    i : In(ArrayLayout(flit, inputs))
    sel : In(ArrayLayout(select, outputs))
        ``sel[o]`` names the input that drives output ``o``, or none (:func:`select_layout`).
    o : Out(ArrayLayout(flit, outputs))
        Combinational; zero when idle.
    """

    def __init__(self, inputs: int, outputs: int, flit_bits: int = 64, hot: bool = False):
        self.inputs, self.outputs, self.hot = inputs, outputs, hot
        flit = flit_layout(flit_bits)
        super().__init__(
            {
                "i": In(data.ArrayLayout(flit, inputs)),
                "sel": In(data.ArrayLayout(select_layout(inputs, hot), outputs)),
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
            if self.hot:
                m.d.sync += Assert((sel & (sel - 1)) == 0, f"crossbar output {o} selects two inputs")
                terms = [Mux(sel[i], self.i[i], 0) for i in range(self.inputs)]
                m.d.comb += self.o[o].eq(reduce(operator.or_, terms))
                continue
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
