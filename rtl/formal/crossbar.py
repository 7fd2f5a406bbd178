"""Formal wrapper of :class:`~equimesh.rtl.crossbar.Crossbar` as the packet-carrying router builds it:
one input per lane plus ``inject``, one output per lane port."""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module

from ..crossbar import Crossbar
from . import Params, Prop, Wrapper

__all__ = ["PROPERTIES", "build"]

PROPERTIES = {
    "xbar_select": Prop(
        "xbar_select",
        "every output carries exactly the flit of the one input its select names, and zero when idle "
        "(at most one input drives an output)",
        "a valid select names an existing input (the router's selects come from table entries, whose "
        "lane field has no code beyond the lanes, and from the packet owners)",
    ),
}


def build(p: Params, prop: str):
    """The formal wrapper of one crossbar property: a :class:`~equimesh.rtl.crossbar.Crossbar` with one input per lane plus ``inject`` and one
    output per lane, its selects assumed to name existing inputs, each output checked against a sum of
    products of the inputs.

    Parameters
    ----------
    p : Params
        The design the wrapper is built for (its lanes and flit width).
    prop : str
        The property, a key of :data:`PROPERTIES`; the wrapper states its assertions and covers.

    Returns
    -------
    Wrapper
        The top module, its ports, the default proof depth and the cover depth.
    """
    lanes = len(p.lanes)
    dut = Crossbar(lanes + 1, lanes, p.flit_bits)
    m = Module()
    m.submodules.dut = dut
    for o in range(lanes):
        sel = dut.sel[o]
        # The contract of the selects' drivers: the schedule table's lane field and the packet owner registers.
        m.d.comb += Assume(~sel.valid | (sel.input < dut.inputs))
        # The named input, as a sum of products (a variable-index select would be a 160-bit shifter).
        want = 0
        for k in range(dut.inputs):
            want = want | ((sel.input == k).replicate(p.flit_bits) & dut.i[k].as_value())
        m.d.comb += Assert(dut.o[o].as_value() == (sel.valid.replicate(p.flit_bits) & want), f"xbar_select: output {o}")
        m.d.comb += Cover(
            sel.valid & (sel.input == dut.inputs - 1) & (dut.i[dut.inputs - 1].as_value() != 0),
            f"xbar_select cover: output {o} carries the last input",
        )
    return Wrapper(m, [dut.i.as_value(), dut.sel.as_value(), dut.o.as_value()], 2, 2)
