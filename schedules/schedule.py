"""The schedule: timesteps of ``(link, root, chunk)`` transfers, and its JSON interchange format.

The format is fixed by ``shared/design.md``: ``steps[s]`` lists the transfers
of timestep ``s`` as ``[link_id, root, chunk]``; an ``allreduce`` file carries
``phases`` (ReduceScatter, then AllGather) instead of ``steps``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .topology import Topology, TopologyError, from_json as topology_from_json

FORMAT = "equimesh-schedule"
VERSION = 1
COLLECTIVES = ("allgather", "reducescatter", "allreduce")


class ScheduleFileError(ValueError):
    """A schedule file that is missing, unreadable, malformed or self-inconsistent."""


@dataclass
class Phase:
    """One collective run as a list of timesteps; ``steps[s]`` is an int array of shape (n, 3)."""

    collective: str
    steps: list[np.ndarray]

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def transfers(self) -> int:
        return int(sum(len(s) for s in self.steps))


@dataclass
class Schedule:
    collective: str
    algorithm: str
    chunks: int
    topology: Topology
    phases: list[Phase]
    meta: dict = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        return sum(p.num_steps for p in self.phases)

    # ----- interchange ------------------------------------------------------
    def to_json(self) -> dict:
        d = {
            "format": FORMAT,
            "version": VERSION,
            "collective": self.collective,
            "algorithm": self.algorithm,
            "chunks": self.chunks,
            "topology": self.topology.to_json(),
        }
        if self.collective == "allreduce":
            d["phases"] = [{"collective": p.collective, "steps": _steps_json(p.steps)} for p in self.phases]
        else:
            d["steps"] = _steps_json(self.phases[0].steps)
        d.update(self.meta)
        return d

    def dumps(self) -> str:
        """Deterministic text: one timestep per line, so equal inputs give byte-identical files."""
        d = self.to_json()
        head = {k: v for k, v in d.items() if k not in ("steps", "phases", "topology")}
        parts = ["{"]
        for k, v in head.items():
            parts.append(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)},")
        topo = d["topology"]
        parts.append('  "topology": {' + ", ".join(
            f"{json.dumps(k)}: {json.dumps(v)}" for k, v in topo.items() if k != "links") + ',')
        parts.append('    "links": [' + ", ".join(json.dumps(l) for l in topo["links"]) + "]},")
        if "phases" in d:
            parts.append('  "phases": [')
            for i, p in enumerate(d["phases"]):
                parts.append(f'    {{"collective": {json.dumps(p["collective"])}, "steps": [')
                parts.append(",\n".join("      " + json.dumps(s) for s in p["steps"]))
                parts.append("    ]}" + ("," if i + 1 < len(d["phases"]) else ""))
            parts.append("  ]")
        else:
            parts.append('  "steps": [')
            parts.append(",\n".join("    " + json.dumps(s) for s in d["steps"]))
            parts.append("  ]")
        parts.append("}")
        return "\n".join(parts) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps())


def _steps_json(steps: list[np.ndarray]) -> list[list[list[int]]]:
    # Sorted by link id inside a step: the order carries no meaning, so fix it.
    out = []
    for s in steps:
        a = np.asarray(s, dtype=np.int64).reshape(-1, 3)
        a = a[np.lexsort((a[:, 2], a[:, 1], a[:, 0]))]
        out.append(a.tolist())
    return out


def _parse_steps(raw, where: str, n_links: int, nodes: int, chunks: int) -> list[np.ndarray]:
    if not isinstance(raw, list):
        raise ScheduleFileError(f"{where}: 'steps' must be a list of timesteps")
    steps = []
    for s, step in enumerate(raw):
        if not isinstance(step, list):
            raise ScheduleFileError(f"{where}: step {s} is not a list of transfers")
        try:
            a = np.array(step, dtype=np.int64).reshape(-1, 3) if step else np.zeros((0, 3), dtype=np.int64)
        except (ValueError, TypeError):
            raise ScheduleFileError(f"{where}: step {s} must hold [link, root, chunk] integer triples") from None
        if a.ndim != 2 or (len(step) and a.shape[0] != len(step)):
            raise ScheduleFileError(f"{where}: step {s} must hold [link, root, chunk] integer triples")
        bad = np.nonzero((a[:, 0] < 0) | (a[:, 0] >= n_links))[0]
        if len(bad):
            raise ScheduleFileError(f"{where}: step {s}: link {a[bad[0], 0]} does not exist (the topology has {n_links} links)")
        bad = np.nonzero((a[:, 1] < 0) | (a[:, 1] >= nodes))[0]
        if len(bad):
            raise ScheduleFileError(f"{where}: step {s}: root {a[bad[0], 1]} is not a node (0..{nodes - 1})")
        bad = np.nonzero((a[:, 2] < 0) | (a[:, 2] >= chunks))[0]
        if len(bad):
            raise ScheduleFileError(f"{where}: step {s}: chunk {a[bad[0], 2]} is out of range (0..{chunks - 1})")
        steps.append(a)
    return steps


def load(path: str | Path) -> Schedule:
    """Read and structurally check a schedule file; every problem is one ScheduleFileError line."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ScheduleFileError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScheduleFileError(f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScheduleFileError(f"{p}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    return from_dict(d, str(p))


def from_dict(d, where: str = "schedule") -> Schedule:
    if not isinstance(d, dict):
        raise ScheduleFileError(f"{where}: top level must be a JSON object")
    if d.get("format") != FORMAT:
        raise ScheduleFileError(f"{where}: 'format' must be {FORMAT!r} (got {d.get('format')!r})")
    if d.get("version") != VERSION:
        raise ScheduleFileError(f"{where}: unsupported version {d.get('version')!r} (this reader knows {VERSION})")
    for key in ("collective", "algorithm", "chunks", "topology"):
        if key not in d:
            raise ScheduleFileError(f"{where}: missing key {key!r}")
    collective = d["collective"]
    if collective not in COLLECTIVES:
        raise ScheduleFileError(f"{where}: unknown collective {collective!r}; expected one of {', '.join(COLLECTIVES)}")
    chunks = d["chunks"]
    if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks < 1:
        raise ScheduleFileError(f"{where}: 'chunks' must be an integer >= 1 (got {chunks!r})")
    t = d["topology"]
    if not isinstance(t, dict):
        raise ScheduleFileError(f"{where}: 'topology' must be an object")
    for key in ("kind", "rows", "cols", "nodes", "links"):
        if key not in t:
            raise ScheduleFileError(f"{where}: topology is missing key {key!r}")
    try:
        topo = topology_from_json(t)
    except (TypeError, ValueError, KeyError, TopologyError) as e:
        raise ScheduleFileError(f"{where}: topology links must be [src, dst, src_port, dst_port] ({e})") from None
    if topo.rows < 1 or topo.cols < 1 or t["nodes"] != topo.nodes:
        raise ScheduleFileError(f"{where}: topology says nodes={t['nodes']} but rows x cols = {topo.rows}x{topo.cols}")
    for i, l in enumerate(topo.links):
        if not (0 <= l.src < topo.nodes and 0 <= l.dst < topo.nodes) or l.src == l.dst:
            raise ScheduleFileError(f"{where}: topology link {i} [{l.src}, {l.dst}] does not join two distinct nodes 0..{topo.nodes - 1}")
    n_links = len(topo.links)
    meta = {k: v for k, v in d.items()
            if k not in ("format", "version", "collective", "algorithm", "chunks", "topology", "steps", "phases")}
    if collective == "allreduce":
        phases_raw = d.get("phases")
        if not isinstance(phases_raw, list) or len(phases_raw) != 2:
            raise ScheduleFileError(f"{where}: an allreduce file needs 'phases': [reducescatter, allgather]")
        phases = []
        for i, (want, ph) in enumerate(zip(("reducescatter", "allgather"), phases_raw)):
            if not isinstance(ph, dict) or ph.get("collective") != want:
                raise ScheduleFileError(f"{where}: phase {i} must be {want!r}")
            phases.append(Phase(want, _parse_steps(ph.get("steps"), f"{where}: phase {i} ({want})", n_links, topo.nodes, chunks)))
    else:
        if "steps" not in d:
            raise ScheduleFileError(f"{where}: missing key 'steps'")
        phases = [Phase(collective, _parse_steps(d["steps"], where, n_links, topo.nodes, chunks))]
    return Schedule(collective, str(d["algorithm"]), chunks, topo, phases, meta)


def lower_bound(topology: Topology, chunks: int, collective: str) -> int:
    """The step bound of design.md and seed 000, Section III-A.

    AllGather: max(D, ceil(K (N-1) / min in-degree)); ReduceScatter uses the
    min out-degree; AllReduce is the sum of both.
    """
    if collective == "allreduce":
        return lower_bound(topology, chunks, "reducescatter") + lower_bound(topology, chunks, "allgather")
    deg = topology.in_degree if collective == "allgather" else topology.out_degree
    n = topology.nodes
    return max(topology.diameter, math.ceil(chunks * (n - 1) / int(deg.min())))
