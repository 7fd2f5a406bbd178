"""BookSim2 beside the compiled packet model: the same traffic on BookSim's mesh, for ``bench packets``.

BookSim2 (Jiang et al., the Stanford cycle-level NoC simulator) is what a NoC researcher would run
instead of this model. It is not a Python package, so the user builds it and names the binary
(``equimesh bench packets --booksim PATH``). :func:`booksim_config` writes the configuration of the
run to compare with: a ``k`` x ``k`` mesh with dimension-order routing, 2 virtual channels of 8
flits (its input-queued router with iSLIP allocators), the traffic pattern by the same name, packets
of the same length, the same offered load in flits per node per cycle, and one sample period of the
same number of cycles without warm-up. :func:`run_booksim` runs it and times the process, as the
compiled model's run is timed: cycles per second of wall clock.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

__all__ = ["BOOKSIM_PATTERNS", "BookSimError", "booksim_config", "run_booksim"]

# The equimesh traffic patterns BookSim has, by its names (``unicast`` is uniform random unicast).
BOOKSIM_PATTERNS = {"unicast": "uniform", "uniform": "uniform", "transpose": "transpose", "bitcomp": "bitcomp"}


class BookSimError(RuntimeError):
    """BookSim2 could not run the configuration; the message is one line."""


def booksim_config(k: int, pattern: str, packet_flits: int, load: float, cycles: int) -> str:
    """The BookSim2 configuration of a run to compare with the compiled model's (module docstring).

    Parameters
    ----------
    k : int
        The mesh's side (BookSim's ``k``; ``n`` = 2).
    pattern : str
        An equimesh pattern of :data:`BOOKSIM_PATTERNS`.
    packet_flits : int
        Flits per packet (header, bitmap flits and payload in the compiled model).
    load : float
        Offered load, flits per node per cycle.
    cycles : int
        Cycles of injection (one sample period, no warm-up).

    Returns
    -------
    str
        The configuration file's text.
    """
    settings = {
        "topology": "mesh",
        "k": k,
        "n": 2,
        "routing_function": "dor",
        "num_vcs": 2,
        "vc_buf_size": 8,
        "wait_for_tail_credit": 1,
        "vc_allocator": "islip",
        "sw_allocator": "islip",
        "alloc_iters": 1,
        "credit_delay": 2,
        "routing_delay": 0,
        "vc_alloc_delay": 1,
        "sw_alloc_delay": 1,
        "input_speedup": 2,
        "output_speedup": 1,
        "internal_speedup": 1.0,
        "traffic": BOOKSIM_PATTERNS[pattern],
        "packet_size": packet_flits,
        "sim_type": "latency",
        "injection_rate": load,
        "injection_rate_uses_flits": 1,
        "warmup_periods": 0,
        "sample_period": cycles,
        "max_samples": 1,
        "sim_count": 1,
    }
    return "".join(f"{name} = {value};\n" for name, value in settings.items())


def run_booksim(exe: str, config: str, workdir: Path) -> dict:
    """Run BookSim2 on ``config`` and time it.

    Parameters
    ----------
    exe : str
        The ``booksim`` binary.
    config : str
        The configuration (:func:`booksim_config`).
    workdir : Path
        Where the configuration file is written.

    Returns
    -------
    dict
        ``seconds`` (the process's wall time) and ``latency`` (BookSim's packet latency average, in
        cycles; ``None`` if it printed none). A run that fails or prints no statistics raises
        :class:`BookSimError`.
    """
    path = Path(workdir) / "booksim.cfg"
    path.write_text(config)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([exe, str(path)], capture_output=True, text=True)
    except OSError as e:
        raise BookSimError(f"cannot run BookSim2 ({exe}): {e.strerror}") from None
    seconds = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    latency = re.search(r"^Packet latency average = ([0-9.eE+-]+)", out, re.M)
    if proc.returncode != 0 or not re.search(r"^Total run time", out, re.M):
        last = out.strip().splitlines()[-1] if out.strip() else f"exit {proc.returncode}"
        raise BookSimError(f"BookSim2 ({exe}) did not finish its run: {last}")
    return {"seconds": seconds, "latency": float(latency.group(1)) if latency else None}
