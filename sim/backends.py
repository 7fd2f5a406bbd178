"""One entry point for every simulator backend: image -> design -> program -> run -> checked result.

Backends (docs/architecture.md, "Simulation backends and measuring"): ``verilator`` (the default: a compiled model
per design, cached), ``icarus`` (cocotb 2 on Icarus Verilog, the user-facing
cycle-test path) and ``amaranth`` (the Amaranth simulator, the reference for
small networks). All execute the same :class:`~equimesh.sim.program.Program` on
the same network top and are judged by the same :func:`~equimesh.sim.program.check`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..rtl.design import Design, fit
from ..rtl.network import Network, top_ports
from ..rtl.rom import NetworkImage
from .metrics import LinkStats, link_stats
from .program import Outcome, check, join, make_program, read_back

__all__ = ["BACKENDS", "FLAT_NODES", "MODELS", "RunResult", "judge", "model_kind", "run_image", "trace_kind"]

BACKENDS = ("verilator", "icarus", "amaranth")
MODELS = ("auto", "flat", "tiled", "modules", "hierarchical")
FLAT_NODES = 64  # measured: docs/rtl.md, "Compiled model"


def model_kind(model: str, nodes: int, pipeline: int = 2, trace: str | None = None) -> str:
    """The Verilator model kind ``auto`` stands for: flat up to :data:`FLAT_NODES` nodes, tiled above
    (:mod:`~equimesh.sim.tiled_network`), or modules where the tiled model cannot run (pipeline 0,
    or a waveform). Hierarchical only when asked for: its build does not grow with the network, but
    it runs far slower.

    Parameters
    ----------
    model : str
        One of :data:`MODELS`.
    nodes : int
        The network's node count.
    pipeline : int
        The design's pipeline depth.
    trace : str or None
        The waveform format, if any.

    Returns
    -------
    str
        ``model`` itself unless it is ``"auto"``; then ``"flat"``, ``"tiled"`` or ``"modules"``.
    """
    if model != "auto":
        return model
    if nodes <= FLAT_NODES:
        return "flat"
    return "tiled" if pipeline > 0 and trace is None else "modules"


@dataclass
class RunResult:
    """One checked run of a backend.

    Attributes
    ----------
    backend : str
        One of :data:`BACKENDS`.
    design : Design
        The design the image ran on.
    outcome : Outcome
        What the backend measured, checked against the schedule.
    stats : LinkStats
        Link metrics from the statistics block's counters.
    run_seconds : float
        Wall-clock seconds of the run phase (start to done) only.
    build_seconds : float
        Seconds of Verilog export and compile; 0 for a cached model.
    cached : bool
        The compiled model came from the cache.
    threads : int
        The threads that clocked the tiled model.
    solo_cycles : int
        Cycles its caller clocked alone, every share in turn, because that was faster
        (:data:`~equimesh.sim.tiles.PRELUDE`, ``Shares``).
    bit_exact : bool
        Every node's final memory matched the collective, bit for bit.
    cycles : int
        Clock edges the backend counted, start to done.
    cycles_per_second : float
        ``cycles / run_seconds`` (0 if no run time was measured).
    counters_agree : bool
        The statistics block counted the same cycles as the backend.
    """

    backend: str
    design: Design
    outcome: Outcome
    stats: LinkStats
    run_seconds: float  # the run phase (start to done) only
    build_seconds: float  # Verilog export and compile; 0 for a cached model
    cached: bool
    threads: int = 1  # the tiled model's threads
    solo_cycles: int = 0  # cycles the tiled model's caller clocked alone

    @property
    def bit_exact(self) -> bool:
        """Every node's final memory matched the collective, bit for bit."""
        return self.outcome.bit_exact

    @property
    def cycles(self) -> int:
        """Clock edges the backend counted, start to done."""
        return self.outcome.cycles

    @property
    def cycles_per_second(self) -> float:
        """Simulated cycles per wall-clock second of the run phase (0.0 without a run time)."""
        return self.cycles / self.run_seconds if self.run_seconds else 0.0

    @property
    def counters_agree(self) -> bool:
        """The statistics block counted the same cycles as the backend."""
        return self.outcome.rtl_cycles == self.outcome.cycles


def trace_kind(path: str | None) -> str | None:
    """The waveform format a path asks for.

    Parameters
    ----------
    path : str or None

    Returns
    -------
    str or None
        ``"fst"`` for a name ending in ``.fst``, ``"vcd"`` for any other, None without a path.
    """
    if path is None:
        return None
    return "fst" if str(path).endswith(".fst") else "vcd"


def run_image(
    image: NetworkImage,
    backend: str = "verilator",
    design: Design | None = None,
    vcd: str | None = None,
    workdir: str | Path | None = None,
    log=None,
    progress=None,
    model: str = "auto",
    threads: int = 1,
) -> RunResult:
    """Run ``image`` on ``design`` (default: the fitted design) with ``backend`` and check it.

    ``vcd``: write a waveform there (``.fst`` for FST with Verilator). ``log(line)`` reports build steps.
    ``model`` (Verilator): ``flat`` inlines every router into one model (slow to build, fast to run),
    ``tiled`` compiles each router module once and wires the nodes in C++
    (:mod:`~equimesh.sim.tiled_network`; pipeline 1 or 2, no waveform), ``modules`` keeps every
    router an instance of its module's C++ class (faster to build, somewhat slower to run),
    ``hierarchical`` compiles each distinct router once (its build does not grow with the node
    count, its run is much slower; docs/rtl.md); ``auto``: :func:`model_kind`.

    Parameters
    ----------
    image : NetworkImage
        The compiled schedule.
    backend : str
        One of :data:`BACKENDS`.
    design : Design or None
        Default: :func:`~equimesh.rtl.design.fit` of the image.
    vcd : str or None
        Waveform path.
    workdir : str or Path or None
        Build and run directory (default: a temporary one).
    log : callable or None
        ``log(line)`` for build steps.
    progress : callable or None
        Passed to the Amaranth simulator harness.
    model : str
        One of :data:`MODELS` (Verilator only).
    threads : int
        Threads of the tiled model, each clocking a share of the routers (the same records for any
        count); more than one on another model kind raises :class:`~equimesh.sim.verilator.VerilatorError`.

    Returns
    -------
    RunResult

    Raises
    ------
    RomError
        If the image does not run on the design.
    ValueError
        On an unknown backend.
    """
    design = design or fit(image)
    design.check(image)
    kind = model_kind(model, design.nodes, design.pipeline, trace_kind(vcd))  # the Verilator model
    if threads > 1 and (backend != "verilator" or kind != "tiled"):
        from .verilator import VerilatorError

        runs_on = f"the {kind} model" if backend == "verilator" else f"the {backend} simulator"
        raise VerilatorError(f"--threads needs the tiled model (this run uses {runs_on})")
    if backend == "amaranth":
        from .harness import execute

        net = Network(design)
        program = make_program(image, design, top_ports(net)[2])
        out = execute(net, program, vcd=vcd, progress=progress)[0]
        build_seconds, cached = 0.0, False
    elif backend == "verilator" and kind == "tiled":
        from .tiled_network import build_tiled_network
        from .verilator import VerilatorError, build_directory

        if design.pipeline == 0 or vcd:
            raise VerilatorError("the tiled model needs pipeline 1 or 2 and writes no waveform: use --model flat")
        tiled, widths = build_tiled_network(design, log=log)
        with build_directory(workdir, "equimesh-") as work:
            out = tiled.run(make_program(image, design, widths), work, threads=threads)
        build_seconds, cached = tiled.build_seconds, tiled.cached
    else:
        import time

        from ..rtl.cache import cache_root
        from ..rtl.verilog import network_verilog
        from .verilator import build_directory

        t0 = time.perf_counter()
        nv = network_verilog(design, cache=cache_root() / "verilog")
        export_seconds = time.perf_counter() - t0
        text, ins, outs, widths = nv.text, nv.ins, nv.outs, nv.widths
        program = make_program(image, design, widths)
        with build_directory(workdir, "equimesh-") as work:
            if backend == "verilator":
                from .verilator import build_model

                model = build_model(
                    text,
                    ins,
                    outs,
                    widths,
                    trace=trace_kind(vcd),
                    log=log,
                    hier_blocks=nv.modules if kind == "hierarchical" else [],
                    inline=kind != "modules",
                )
                out = model.run(program, work, trace=str(Path(vcd).resolve()) if vcd else None)
                build_seconds, cached = model.build_seconds, model.cached
            elif backend == "icarus":
                from .verilog_sim import run_icarus

                out, build_seconds, cached = run_icarus(text, program, ins, outs, work, vcd, log=log)
            else:
                raise ValueError(f"unknown backend {backend!r}")
        build_seconds += 0.0 if cached else export_seconds
    outcome, stats = judge(image, design, out)
    solo = out.get("solo_cycles", 0)  # the compiled models' record (Model.run); the simulators have none
    return RunResult(backend, design, outcome, stats, out["run_seconds"], build_seconds, cached, threads, solo)


def judge(image: NetworkImage, design: Design, out: dict) -> tuple[Outcome, LinkStats]:
    """Check a backend's records of one program (:func:`~equimesh.sim.program.check`) and measure its links.

    Parameters
    ----------
    image : NetworkImage
    design : Design
    out : dict
        The backend's records: ``run_cycles``, the captured ``cycles``, ``busy`` and ``host_data``
        ports (uint32 ``[frames, words]``).

    Returns
    -------
    tuple of (Outcome, LinkStats)
    """
    busy = join(design, out, "busy")[0].astype("int64")[: len(image.topology.links)]
    outcome = check(image, design, out["run_cycles"], int(out["cycles"][0, 0]), busy, read_back(design, out))
    return outcome, link_stats(image, outcome.busy, outcome.cycles, design.period)
