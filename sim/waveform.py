"""GTKWave save files for the network's VCDs: start, done, then each router's out-links in a group."""

from __future__ import annotations

from pathlib import Path

from ..schedules.topology import Topology

__all__ = ["SCOPES", "link_name", "write_gtkw"]

# Where each backend's waveform puts the network top.
SCOPES = {"amaranth": "bench.top", "icarus": "equimesh_top", "verilator": "TOP.equimesh_sim.equimesh_top"}

# GTKWave trace flags: 1-bit binary trace, group begin (open), group end.
_BIT, _GROUP_BEGIN, _GROUP_END = "@28", "@800200", "@1000200"


def link_name(topo: Topology, i: int) -> str:
    """The name of link ``i``'s valid signal in the network top (see rtl/network.py).

    Parameters
    ----------
    topo : Topology
    i : int
        A link id.

    Returns
    -------
    str
        ``link<i>_<src><src_port>_<dst><dst_port>``.
    """
    l = topo.links[i]
    return f"link{i}_{l.src}{l.src_port}_{l.dst}{l.dst_port}"


def write_gtkw(path: str | Path, vcd: str | Path, topo: Topology, backend: str = "amaranth") -> None:
    """Write a GTKWave save file: start, done, then each router's out-links in a group.

    Parameters
    ----------
    path : str or Path
        The ``.gtkw`` file to write.
    vcd : str or Path
        The waveform it opens (written as an absolute path).
    topo : Topology
    backend : str
        One of :data:`SCOPES`' keys; gives the scope of the network top.
    """
    scope = SCOPES[backend]
    lines = [f'[dumpfile] "{Path(vcd).resolve()}"', "[timestart] 0", _BIT, f"{scope}.start", f"{scope}.done"]
    for v in range(topo.nodes):
        lines += [_GROUP_BEGIN, f"-router {v}", _BIT]
        lines += [f"{scope}.{link_name(topo, i)}" for i in topo.out_links[v]]
        lines += [_GROUP_END, f"-router {v}"]
    Path(path).write_text("\n".join(lines) + "\n")
