"""Formal wrapper of :class:`~equimesh.rtl.crossbar.Crossbar` as the packet-carrying router builds it:
one input per lane plus ``inject``, one output per lane port."""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Const, Cover, Module, Mux, Signal

from ..crossbar import Crossbar
from . import Params, Prop, Wrapper

__all__ = ["PROPERTIES", "build"]

PROPERTIES = {
    "xbar_select": Prop(
        "xbar_select",
        "every output carries exactly the flit of the one input its select names, and zero when idle "
        "(at most one input drives an output)",
        "a select is one-hot or zero (the router's selects are decoded from table entries' lane fields "
        "or are the packet owner registers, whose one-hotness the packet router's proofs show)",
    ),
}


def build(p: Params, prop: str):
    """The formal wrapper of one crossbar property: a :class:`~equimesh.rtl.crossbar.Crossbar` with one
    input per lane plus ``inject`` and one output per lane, each select driven as the one-hot code of a
    free valid bit and input index, each output checked against the input that index names, a sum of
    products over the index.

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
    ports = [dut.i.as_value()]
    for o in range(lanes):
        # The select as a binary index and a valid bit (free inputs), driven as that pair's one-hot code.
        valid, index = Signal(name=f"valid_{o}"), Signal(range(dut.inputs), name=f"index_{o}")
        m.d.comb += Assume(index < dut.inputs)
        m.d.comb += dut.sel[o].eq(Mux(valid, Const(1, dut.inputs) << index, 0))
        want = 0
        for k in range(dut.inputs):
            want = want | ((index == k).replicate(p.flit_bits) & dut.i[k].as_value())
        m.d.comb += Assert(dut.o[o].as_value() == (valid.replicate(p.flit_bits) & want), f"xbar_select: output {o}")
        m.d.comb += Cover(
            valid & (index == dut.inputs - 1) & (dut.i[dut.inputs - 1].as_value() != 0),
            f"xbar_select cover: output {o} carries the last input",
        )
        ports += [valid, index]
    return Wrapper(m, [*ports, dut.o.as_value()], 2, 2)
