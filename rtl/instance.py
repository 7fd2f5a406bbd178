"""A router in a network top: an Amaranth submodule, or an instance of its Verilog module.

Network tops (:class:`~equimesh.rtl.network.Network`,
:class:`~equimesh.rtl.packet_network.PacketNetwork`) wire their routers by port name either way, so
the same top simulates in Amaranth (submodules) and exports one Verilog module per distinct router
(instances, :mod:`~equimesh.rtl.verilog`).
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

__all__ = ["router_ports"]


def router_ports(m: Module, router: wiring.Component, label: str, module: str | None = None) -> dict[str, Value]:
    """Add ``router`` to ``m`` as submodule ``label`` (``module`` None), or as an instance ``label`` of
    the Verilog module ``module``; return its ports as plain values by Verilog name (``o_N__valid``,
    ``tab_data``, ...): the submodule's own, or the signals wired to the instance.

    Parameters
    ----------
    m : amaranth.hdl.Module
        The network top's module.
    router : amaranth.lib.wiring.Component
        The router (its signature names the ports).
    label : str
        The submodule's or instance's name.
    module : str, optional
        The Verilog module to instantiate; None adds the router itself.

    Returns
    -------
    dict of str to amaranth.hdl.Value
        The router's ports by Verilog name.
    """
    if module is None:
        m.submodules[label] = router
        return {"__".join(map(str, path)): Value.cast(value) for path, _, value in router.signature.flatten(router)}
    ports, conns = {}, {}
    for path, member, value in router.signature.flatten(router):
        name = "__".join(map(str, path))
        ports[name] = sig = Signal(len(Value.cast(value)), name=f"{label}__{name}")
        conns[("o_" if member.flow == Out else "i_") + name] = sig
    m.submodules[label] = Instance(module, i_clk=ClockSignal(), i_rst=ResetSignal(), **conns)
    return ports
