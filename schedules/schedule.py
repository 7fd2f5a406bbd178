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
        """Deterministic text: one timestep per line, so equal inputs give byte-identical files.

        The step lines are formatted with numpy (:func:`_format_steps`) rather than through
        ``to_json()``'s Python lists; the text is the same as ``json.dumps`` of those lists.
        """
        meta = dict(self.meta)
        if {"steps", "phases", "topology"} & meta.keys():
            # meta shadows a structural key: to_json() decides what is written, as it always has.
            return _render(self.to_json(), _format_lists)
        d = {"format": FORMAT, "version": VERSION, "collective": self.collective,
             "algorithm": self.algorithm, "chunks": self.chunks, "topology": self.topology.to_json()}
        if self.collective == "allreduce":
            d["phases"] = [{"collective": p.collective, "steps": p.steps} for p in self.phases]
        else:
            d["steps"] = self.phases[0].steps
        d.update(meta)
        return _render(d, _format_steps)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.dumps())


def _render(d: dict, fmt) -> str:
    """The file text of the ``to_json()``-shaped ``d``; ``fmt(steps, indent)`` gives one step list's lines."""
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
            parts.append(fmt(p["steps"], "      "))
            parts.append("    ]}" + ("," if i + 1 < len(d["phases"]) else ""))
        parts.append("  ]")
    else:
        parts.append('  "steps": [')
        parts.append(fmt(d["steps"], "    "))
        parts.append("  ]")
    parts.append("}")
    return "\n".join(parts) + "\n"


def _format_lists(steps, indent: str) -> str:
    """Step lines of already-JSON steps (``to_json()`` output), one ``json.dumps`` per step."""
    return ",\n".join(indent + json.dumps(s) for s in steps)


def _steps_json(steps: list[np.ndarray]) -> list[list[list[int]]]:
    # Sorted by link id inside a step: the order carries no meaning, so fix it.
    out = []
    for s in steps:
        a = np.asarray(s, dtype=np.int64).reshape(-1, 3)
        a = a[np.lexsort((a[:, 2], a[:, 1], a[:, 0]))]
        out.append(a.tolist())
    return out


_POW10 = 10 ** np.arange(19, dtype=np.int64)
_BIG = 1 << 62   # |values| past this could overflow the int64 arithmetic below; such steps go through json


def _digits(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``str(v[i])`` as ASCII in row ``i`` of a uint8 matrix, right-padded with zero bytes; and its length."""
    neg = v < 0
    mag = np.abs(v)
    nd = np.ones(len(v), dtype=np.int64)
    for k in range(1, 19):
        more = mag >= _POW10[k]
        if not more.any():
            break
        nd += more
    length = nd + neg
    out = np.zeros((len(v), int(length.max()) if len(v) else 1), dtype=np.uint8)
    for j in range(out.shape[1]):
        exp = length - 1 - j                  # the power of ten of column j's digit; < 0 past the end
        ok = (exp >= 0) & ~(neg & (j == 0))   # column 0 of a negative number holds its sign
        out[ok, j] = 48 + (mag[ok] // _POW10[exp[ok]]) % 10
        if j == 0:
            out[neg, 0] = ord("-")
    return out, length


def _field(v: np.ndarray, prefix: bytes, suffix: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``prefix + str(v[i]) + suffix`` as ASCII with zero bytes after the digits, padded to whole
    uint64 words: an (n, words) uint64 array, and the length of each text.

    The texts of ``min(v)..max(v)`` are built once and gathered when that range is small.
    """
    lo, hi = int(v.min()), int(v.max())
    small = hi - lo < max(len(v), 1 << 12)
    digits, length = _digits(np.arange(lo, hi + 1, dtype=np.int64) if small else v)
    p, d = len(prefix), digits.shape[1]
    width = p + d + len(suffix)
    table = np.zeros((len(digits), -(-width // 8) * 8), dtype=np.uint8)
    table[:, :p] = np.frombuffer(prefix, dtype=np.uint8)
    table[:, p:p + d] = digits
    table[:, p + d:width] = np.frombuffer(suffix, dtype=np.uint8)
    words = table.view(np.uint64)
    length = length + (p + len(suffix))
    if not small:
        return words, length
    i = v - lo
    if words.shape[1] == 1:
        return words[:, 0][i][:, None], length[i]
    return words[i], length[i]


def _format_steps(steps, indent: str) -> str:
    """``_format_lists(_steps_json(steps), indent)``, built in numpy as one byte buffer.

    Every transfer becomes a row of uint64 words holding ``[l, r, c], `` (no ``, `` after a
    step's last transfer) with zero bytes after each number; dropping the zero bytes of the
    whole array leaves the text of all the steps, which is then cut into lines.
    """
    arrays = [np.asarray(s, dtype=np.int64).reshape(-1, 3) for s in steps]
    if not arrays:
        return ""
    counts = np.array([len(a) for a in arrays], dtype=np.int64)
    n = int(counts.sum())
    a = np.concatenate(arrays) if n else np.zeros((0, 3), dtype=np.int64)
    if n and (int(a.min()) < -_BIG or int(a.max()) > _BIG):
        return _format_lists(_steps_json(arrays), indent)
    bounds = np.zeros(len(arrays) + 1, dtype=np.int64)   # byte offsets of the steps in the buffer
    buf = b""
    if n:
        # Order by (step, link, root, chunk): one int64 key when the ranges allow it, else lexsort.
        step = np.repeat(np.arange(len(arrays), dtype=np.int64), counts)
        lo = [int(a[:, i].min()) for i in range(3)]
        span = [int(a[:, i].max()) - lo[i] + 1 for i in range(3)]
        if len(arrays) * span[0] * span[1] * span[2] < 1 << 62:
            key = ((step * span[0] + (a[:, 0] - lo[0])) * span[1] + (a[:, 1] - lo[1])) * span[2] + (a[:, 2] - lo[2])
            if not (key[1:] >= key[:-1]).all():
                key = np.sort(key)
                rest, c = np.divmod(key, span[2])
                rest, r = np.divmod(rest, span[1])
                a = np.stack([rest % span[0] + lo[0], r + lo[1], c + lo[2]], axis=1)
            del step, key
        else:
            a = a[np.lexsort((a[:, 2], a[:, 1], a[:, 0], step))]
        last = np.cumsum(counts)[counts > 0] - 1   # the row of each non-empty step's last transfer
        lw, ll = _field(a[:, 0], b"[", b", ")
        rw, rl = _field(a[:, 1], b"", b", ")
        cw, cl = _field(a[:, 2], b"", b"], ")
        end, _ = _field(a[last, 2], b"", b"]")    # a step's last transfer: no ", " after it
        cw[last] = 0
        cw[last, :end.shape[1]] = end
        words = np.hstack([lw, rw, cw]).view(np.uint8)
        buf = words[words != 0]
        row_len = ll + rl + cl
        row_len[last] -= 2
        bounds[1:][counts > 0] = np.cumsum(row_len)[last]
        bounds = np.maximum.accumulate(bounds)
    bounds = bounds.tolist()
    mv = memoryview(buf)
    head = (indent + "[").encode("ascii")
    parts = []
    for i in range(len(arrays)):
        parts.append(head)
        parts.append(mv[bounds[i]:bounds[i + 1]])
        parts.append(b"],\n" if i + 1 < len(arrays) else b"]")
    return b"".join(parts).decode("ascii")


def _parse_steps(raw, where: str, n_links: int, nodes: int, chunks: int) -> list[np.ndarray]:
    if not isinstance(raw, list):
        raise ScheduleFileError(f"{where}: 'steps' must be a list of timesteps")
    steps = []
    for s, step in enumerate(raw):
        if isinstance(raw, _Read):
            a = step
        else:
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


class _Read(list):
    """Steps that :func:`_load_canonical` has already read into (n, 3) int64 arrays."""


_STEP_PUNCT = bytes.maketrans(b"[],", b"   ")


def _load_canonical(text: str, where: str) -> Schedule | None:
    """Read a file laid out exactly as :meth:`Schedule.dumps` writes it, without ``json.loads`` of the steps.

    The step lines are cut out and the rest (a few lines) goes through ``json.loads``; each
    step line's numbers are read with ``np.fromstring``. The result is kept only if its
    ``dumps()`` gives back ``text`` byte for byte: then ``json.loads(text)`` holds the same
    steps in the same order, so :func:`load` returns what the json path would. Any other
    text, malformed or not, gives None and is left to the json path and its error messages.
    """
    if not text.endswith("\n}\n"):
        return None
    try:
        data = text.encode("ascii")    # dumps() writes ASCII only
    except UnicodeEncodeError:
        return None
    lines = data.split(b"\n")
    skeleton, regions, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        skeleton.append(line)
        i += 1
        if line.endswith(b'"steps": ['):
            j = i
            while j < len(lines) and lines[j][:16].lstrip().startswith(b"["):
                j += 1
            if j == i and j < len(lines) and not lines[j]:
                j += 1                 # an empty step list: dumps() leaves one empty line
            regions.append(lines[i:j])
            i = j
    if not regions:
        return None
    try:
        d = json.loads(b"\n".join(skeleton))
        holders = d["phases"] if d.get("collective") == "allreduce" else [d]
        if len(holders) != len(regions) or any(h.get("steps") != [] for h in holders):
            return None
        for h, region in zip(holders, regions):
            steps = _Read()
            for line in region:
                nums = line.translate(_STEP_PUNCT)
                steps.append(np.fromstring(nums, dtype=np.int64, sep=" ").reshape(-1, 3) if nums.strip()
                             else np.zeros((0, 3), dtype=np.int64))
            h["steps"] = steps
        sched = from_dict(d, where)
        if sched.dumps() != text:
            return None
    except Exception:                  # noqa: BLE001 -- whatever it is, the json path decides and reports
        return None
    return sched


def load(path: str | Path) -> Schedule:
    """Read and structurally check a schedule file; every problem is one ScheduleFileError line."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ScheduleFileError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScheduleFileError(f"{p}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    sched = _load_canonical(text, str(p))
    if sched is not None:
        return sched
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
