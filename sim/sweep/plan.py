"""Sweep plans: a TOML file (or the same grid from the command line) naming a command and the values of
its axes; every combination of the axes' values is one point (docs/sweeps.md "Plans").

A plan holds one sweep (``command``, ``[axes]``, ``[options]`` at the top level) or several
(``[[sweep]]`` tables, each with its own ``command``, ``axes`` and ``options``). Everything is checked
here, before any task starts: an unknown command, axis, option or value is a :class:`PlanError` whose
message names it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ...rtl.rom import MAX_CHUNK_FLITS
from ...rtl.timing import DEFAULT_PIPELINE, PIPELINES
from ...schedules import schedule as schedfile
from ...schedules.routing import ALGORITHMS as ROUTING_ALGORITHMS
from ...schedules.synth import ALGORITHMS as SYNTH_ALGORITHMS
from ...schedules.topology import KINDS, TopologyError, parse_sizes

__all__ = [
    "AXES",
    "COMMANDS",
    "OPTIONS",
    "Plan",
    "PlanError",
    "Sweep",
    "load_plan",
    "plan_from_dict",
    "point_key",
    "project_version",
]

COLLECTIVES = ("allgather", "reducescatter", "allreduce")


class PlanError(ValueError):
    """A plan that cannot run; the message (one line) names the command, axis, option or value."""


def _choice(values):
    def check(v):
        if v not in values:
            raise ValueError(f"expected one of {', '.join(map(str, values))}")
        return v

    return check


def _int(lo, hi):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"expected an integer {lo}..{hi}")
        return v

    return check


def _rate(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise ValueError("expected a number in (0, 1] (offered load, flits per node per cycle)")
    return float(v)


def _size(v):
    if not isinstance(v, str):
        raise ValueError('expected a string RxC such as "4x4"')
    try:
        ((r, c),) = parse_sizes(v, "size")
    except (TopologyError, ValueError) as e:
        raise ValueError(str(e)) from None
    return f"{r}x{c}"


def _text(v):
    if not isinstance(v, str) or not v:
        raise ValueError("expected a non-empty string")
    return v


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ValueError("expected a number > 0")
    return float(v)


# Each axis: its check (a value in, the canonical value out or ValueError) and its default.
AXES = {
    "kind": (_choice(KINDS), "equimesh"),
    "size": (_size, "4x4"),
    "K": (_int(1, schedfile.MAX_CHUNKS), 4),
    "F": (_int(1, MAX_CHUNK_FLITS), 16),
    "pipeline": (_choice(PIPELINES), DEFAULT_PIPELINE),
    "collective": (_choice(COLLECTIVES), "allgather"),
    "seed": (_int(1, 100), 1),
    "rate": (_rate, 0.1),
    "nodes": (_int(2, 1 << 20), 64),
    "wavelengths": (_int(1, 1 << 10), 1),
}

# The axes of each command (seed 000's K, F; the OpTree ring's N and w, seed 002) and its fixed options.
COMMANDS = {
    "schedule": ("kind", "size", "K", "collective"),
    "simulate": ("kind", "size", "K", "F", "pipeline", "collective"),
    "compare": ("kind", "size", "K", "F", "pipeline", "collective"),
    "fpga": ("kind", "size", "K", "F", "pipeline", "collective", "seed"),
    "traffic": ("kind", "size", "pipeline", "seed", "rate"),
    "evaluate": ("size", "K", "collective"),
    "llm": ("size",),
    "optree": ("nodes", "wavelengths"),
}


def _message(v):
    from ..analytic.evaluate import parse_size

    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError('expected a message size per node such as "64M" (bytes, K/M/G binary multiples)')
    parse_size(str(v))  # raises ValueError naming the value
    return str(v)


def _eval_algorithm(v):
    from ..analytic.evaluate import ALGORITHMS

    return _choice(tuple(ALGORITHMS))(v)


def _llm_model(v):
    from ..analytic.llm import load_models

    return _choice(("all", *(m.name for m in load_models())))(v)


def _part(v):
    from ...rtl.flow.ecp5 import PARTS

    return _choice(tuple(PARTS))(v.upper() if isinstance(v, str) else v)


BACKENDS = ("amaranth", "verilator", "icarus")
OPTIONS = {
    "schedule": {"algorithm": (_choice(SYNTH_ALGORITHMS), "auto")},
    "simulate": {"backend": (_choice(BACKENDS), "amaranth")},
    "compare": {"backend": (_choice(BACKENDS), "amaranth")},
    "fpga": {
        "part": (_part, "LFE5U-25F"),
        "package": (_text, "CABGA381"),
        "speed": (_choice((6, 7, 8)), 6),
        "flit_bits": (_int(32, 1024), 64),
        "clock_mhz": (_number, 150.0),
    },
    "traffic": {
        "pattern": (_choice(("unicast", "multicast")), "unicast"),
        "routing": (_choice(ROUTING_ALGORITHMS), "shortcut"),
        "payload_flits": (_int(1, 64), 7),
        "cycles": (_int(1, 100_000), 3000),
        "warmup": (_int(0, 100_000), 1000),
        "fanout": (_int(1, 1023), 4),
    },
    "evaluate": {"algorithm": (_eval_algorithm, "equimesh-xtree"), "message": (_message, "64M")},
    "llm": {"model": (_llm_model, "all"), "seq_len": (_int(1, 1 << 24), 2048), "micro_batch": (_int(1, 1 << 16), 1)},
    "optree": {"stages": (_int(0, 64), 0)},
}


@dataclass
class Sweep:
    """One command over the product of its axes' values, with fixed options.

    Attributes
    ----------
    command : str
        The command of every point, one of :data:`COMMANDS`.
    axes : dict[str, list]
        Each axis (of :data:`AXES`) and its values, in the plan's order.
    options : dict
        Options fixed for every point.
    name : str
        The sweep's title on a results page.
    about : str
        What the sweep measures, under the title.
    """

    command: str
    axes: dict[str, list] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    name: str = ""  # the sweep's title on a results page (.report)
    about: str = ""  # what the sweep measures, under the title

    def points(self) -> list[dict]:
        """Every point: ``{"command", axis: value..., "options": {...}}``, in the plan's order."""
        names = list(self.axes)
        return [
            {"command": self.command, **dict(zip(names, combo)), "options": dict(self.options)}
            for combo in itertools.product(*(self.axes[n] for n in names))
        ]


@dataclass
class Plan:
    """The sweeps of one plan; ``store`` is the plan's SQLite file unless the command line names one.

    Attributes
    ----------
    sweeps : list of Sweep
        The sweeps, in the plan's order.
    store : str or None
        The plan's store file.
    about : str
        A results page's first paragraph.
    """

    sweeps: list[Sweep]
    store: str | None = None
    about: str = ""  # a results page's first paragraph (.report)

    def points(self) -> list[dict]:
        return [p for s in self.sweeps for p in s.points()]


def _values(command: str, axis: str, raw) -> list:
    check, _ = AXES[axis]
    values = raw if isinstance(raw, list) else [raw]
    if not values:
        raise PlanError(f"{command}: axis {axis} has no values")
    out = []
    for v in values:
        try:
            out.append(check(v))
        except ValueError as e:
            raise PlanError(f"{command}: axis {axis}: bad value {v!r}: {e}") from None
    return list(dict.fromkeys(out))


def _sweep(d: dict, where: str) -> Sweep:
    if not isinstance(d, dict):
        raise PlanError(f"{where}: a sweep is a table with command, axes and options")
    extra = set(d) - {"command", "axes", "options", "name", "about", "store"}
    if extra:
        raise PlanError(f"{where}: unknown key {sorted(extra)[0]!r}; a sweep has command, axes, options, name, about")
    for text in ("name", "about"):
        if not isinstance(d.get(text, ""), str):
            raise PlanError(f"{where}: {text} must be a string")
    command = d.get("command")
    if command not in COMMANDS:
        raise PlanError(f"{where}: unknown command {command!r}; expected one of {', '.join(COMMANDS)}")
    axes = {}
    for axis, raw in (d.get("axes") or {}).items():
        if axis not in COMMANDS[command]:
            raise PlanError(f"{command}: unknown axis {axis!r}; {command} sweeps {', '.join(COMMANDS[command])}")
        axes[axis] = _values(command, axis, raw)
    for axis in COMMANDS[command]:  # the axes not given take their default: every point names them all
        axes.setdefault(axis, [AXES[axis][1]])
    options = {}
    given = d.get("options") or {}
    for name, (check, default) in OPTIONS[command].items():
        options[name] = default
        if name in given:
            try:
                options[name] = check(given[name])
            except ValueError as e:
                raise PlanError(f"{command}: option {name}: bad value {given[name]!r}: {e}") from None
    unknown = set(given) - set(OPTIONS[command])
    if unknown:
        raise PlanError(
            f"{command}: unknown option {sorted(unknown)[0]!r}; {command} takes {', '.join(OPTIONS[command]) or 'none'}"
        )
    return Sweep(command, axes, options, d.get("name", ""), d.get("about", ""))


def plan_from_dict(doc: dict, where: str = "plan") -> Plan:
    """A checked plan from a parsed TOML document (or the command line's equivalent).

    Parameters
    ----------
    doc : dict
        ``{"command", "axes", "options"}`` (one sweep) or ``{"sweep": [...]}``, optionally ``"store"``.
    where : str
        The plan's name in error messages.

    Returns
    -------
    Plan
        Every axis and option checked; a :class:`PlanError` naming the first bad one otherwise.
    """
    if "sweep" in doc:
        extra = set(doc) - {"sweep", "store", "about"}
        if extra:
            raise PlanError(f"{where}: unknown key {sorted(extra)[0]!r} beside [[sweep]]")
        if not isinstance(doc["sweep"], list) or not doc["sweep"]:
            raise PlanError(f"{where}: [[sweep]] must be a non-empty array of tables")
        sweeps = [_sweep(s, f"{where}: sweep {i + 1}") for i, s in enumerate(doc["sweep"])]
    else:
        sweeps = [_sweep(doc, where)]
    store = doc.get("store")
    if store is not None and not isinstance(store, str):
        raise PlanError(f"{where}: store must be a file name")
    if "sweep" in doc and not isinstance(doc.get("about", ""), str):
        raise PlanError(f"{where}: about must be a string")
    return Plan(sweeps, store, doc.get("about", "") if "sweep" in doc else "")


def load_plan(path: str | Path) -> Plan:
    """Read and check a TOML plan.

    Parameters
    ----------
    path : str or Path
        The plan file.

    Returns
    -------
    Plan
        As :func:`plan_from_dict`; a missing file or a TOML syntax error is a :class:`PlanError`.
    """
    try:
        doc = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise PlanError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"{path}: not TOML: {e}") from None
    return plan_from_dict(doc, str(path))


def project_version() -> str:
    """The installed equimesh's version: part of every point's key, and of the store's header.

    Returns
    -------
    str
        The package's version, or ``unknown`` when it is not installed.
    """
    try:
        return version("equimesh")
    except PackageNotFoundError:
        return "unknown"


def point_key(point: dict) -> str:
    """The store's key of a point.

    Parameters
    ----------
    point : dict
        A point of :meth:`Plan.points`.

    Returns
    -------
    str
        24 hex digits of the SHA-256 of the point's canonical JSON (command, axes, options) and the
        project version, so that a new version never reuses an old result.
    """
    text = json.dumps({"point": point, "version": project_version()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]
