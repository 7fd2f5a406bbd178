"""Formal wrapper of :class:`~equimesh.rtl.crossbar.Crossbar` as the packet-carrying router builds it:
one input per lane plus ``inject``, one output per lane port; binary selects (the schedule router's)
and one-hot ones (the packet routers')."""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Signal

from ..crossbar import Crossbar, one_hot
from . import Params, Prop, Wrapper

__all__ = ["PROPERTIES", "build"]

PROPERTIES = {
    "xbar_select": Prop(
        "xbar_select",
        "every output carries exactly the flit of the one input its select names, and zero when idle "
        "(at most one input drives an output), with binary and with one-hot selects",
        "a valid select names an existing input (the router's selects come from table entries, whose "
        "lane field has no code beyond the lanes, and from the packet owners, one-hot registers)",
    ),
}


def build(p: Params, prop: str):
    """The formal wrapper of one crossbar property: two :class:`~equimesh.rtl.crossbar.Crossbar` s with
    one input per lane plus ``inject`` and one output per lane, one with binary and one with one-hot
    selects, on the same inputs. Each output's select is a free valid bit and input index, given to
    the binary crossbar as it is and to the other as its one-hot code; both outputs are checked
    against a sum of products of the inputs over the index.

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
    m = Module()
    m.submodules.binary = binary = Crossbar(lanes + 1, lanes, p.flit_bits)
    m.submodules.hot = hot = Crossbar(lanes + 1, lanes, p.flit_bits, hot=True)
    m.d.comb += hot.i.eq(binary.i)
    ports = [binary.i.as_value()]
    for o in range(lanes):
        valid, index = Signal(name=f"valid_{o}"), Signal(range(binary.inputs), name=f"index_{o}")
        # The contract of the selects' drivers: the schedule table's lane field and the packet owner registers.
        m.d.comb += Assume(index < binary.inputs)
        m.d.comb += [binary.sel[o].valid.eq(valid), binary.sel[o].input.eq(index)]
        m.d.comb += hot.sel[o].eq(one_hot(valid, index, hot.inputs))
        # The named input, as a sum of products (a variable-index select would be a 160-bit shifter).
        want = 0
        for k in range(binary.inputs):
            want = want | ((index == k).replicate(p.flit_bits) & binary.i[k].as_value())
        want = valid.replicate(p.flit_bits) & want
        for name, dut in (("binary", binary), ("one-hot", hot)):
            m.d.comb += Assert(dut.o[o].as_value() == want, f"xbar_select: {name} output {o}")
        m.d.comb += Cover(
            valid & (index == binary.inputs - 1) & (binary.i[binary.inputs - 1].as_value() != 0),
            f"xbar_select cover: output {o} carries the last input",
        )
        ports += [valid, index]
    return Wrapper(m, [*ports, binary.o.as_value(), hot.o.as_value()], 2, 2)
