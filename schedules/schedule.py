"""The schedule: timesteps of ``(link, root, chunk)`` transfers, and its JSON interchange format.

The format is fixed by ``docs/architecture.md`` ("Schedule file"): ``steps[s]`` lists the transfers
of timestep ``s`` as ``[link_id, root, chunk]``; an ``allreduce`` file carries
``phases`` (ReduceScatter, then AllGather) instead of ``steps``. Version 2 adds the
overlapped AllReduce: one ``steps`` list of typed transfers ``[link_id, root, chunk, op]``
with ``op`` ``"r"`` (reduce) or ``"g"`` (gather); in memory that is a single phase of
collective ``allreduce`` whose step arrays have a fourth column, :data:`OP_REDUCE` or
:data:`OP_GATHER`. Files without typed transfers are still written as version 1.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import alltoall, jsonfile
from .failures import DegradedTopology
from .topology import KINDS, MAX_SIDE, Topology, TopologyError, build
from .topology import from_json as topology_from_json

__all__ = [
    "COLLECTIVES",
    "FORMAT",
    "MAX_CHUNKS",
    "OPS",
    "Phase",
    "RING_KINDS",
    "Schedule",
    "ScheduleFileError",
    "VERSION",
    "VERSION_OVERLAP",
    "from_dict",
    "load",
    "lower_bound",
    "schedule_bound",
]

RING_KINDS = ("equimesh", "mirror-equimesh")  # the kinds with Algorithm 1's edge rings

FORMAT = "equimesh-schedule"
VERSION = 1
VERSION_OVERLAP = 2  # docs/architecture.md: the overlapped AllReduce of typed transfers
MAX_CHUNKS = 1 << 24  # chunks per shard a schedule file may declare
OPS = ("r", "g")  # op letters in the file; their index is the op column in memory
OP_REDUCE, OP_GATHER = 0, 1
COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall")


class ScheduleFileError(ValueError):
    """A schedule file that is missing, unreadable, malformed or self-inconsistent.

    The message is one line starting with the file (or ``where``) it is about.
    """


@dataclass
class Phase:
    """One collective run as a list of timesteps; ``steps[s]`` is an int array of shape (n, 3).

    An overlapped AllReduce is one phase of collective ``allreduce`` with arrays of shape
    (n, 4): ``[link, root, chunk, op]``.

    Attributes
    ----------
    collective : str
        ``"allgather"``, ``"reducescatter"`` or (overlapped) ``"allreduce"``.
    steps : list of numpy.ndarray
        Per timestep, its n transfers as rows ``[link_id, root, chunk]`` (shape (n, 3)) or
        ``[link_id, root, chunk, op]`` with op :data:`OP_REDUCE` or :data:`OP_GATHER` (shape (n, 4)).
        ``root`` is the node whose shard the chunk belongs to; ``chunk`` is 0..K-1.
    num_steps : int
        The timesteps in the phase.
    transfers : int
        The chunk transfers over all timesteps.
    """

    collective: str
    steps: list[np.ndarray]

    @property
    def num_steps(self) -> int:
        """The timesteps in the phase."""
        return len(self.steps)

    @property
    def transfers(self) -> int:
        """The chunk transfers (rows of ``steps``) over all timesteps."""
        return int(sum(len(s) for s in self.steps))


@dataclass
class Schedule:
    """A collective schedule on a topology: one phase, or ReduceScatter then AllGather for an AllReduce.

    Attributes
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    algorithm : str
        The ``--algorithm`` asked for (e.g. ``"auto"``); ``meta["method"]`` says what was used.
    chunks : int
        K, the chunks per shard, 1..:data:`MAX_CHUNKS`.
    topology : Topology
        The network; link ids in the steps index ``topology.links``.
    phases : list of Phase
        One phase; or, for an AllReduce, ``[reducescatter, allgather]`` (version 1) or one
        ``allreduce`` phase of typed transfers (version 2, overlapped).
    meta : dict
        Further keys written at the top level of the file (e.g. ``method``, ``storage``).
    num_steps : int
        The timesteps summed over the phases.
    overlapped : bool
        An AllReduce of one phase (format version 2).
    version : int
        The file format version: :data:`VERSION_OVERLAP` if overlapped, else :data:`VERSION`.
    """

    collective: str
    algorithm: str
    chunks: int
    topology: Topology
    phases: list[Phase]
    meta: dict = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        """The timesteps summed over the phases."""
        return sum(p.num_steps for p in self.phases)

    @property
    def overlapped(self) -> bool:
        """An AllReduce whose reduce and gather transfers share one step list (format version 2)."""
        return self.collective == "allreduce" and len(self.phases) == 1

    @property
    def version(self) -> int:
        """The file format version: 2 for an overlapped AllReduce, else 1."""
        return VERSION_OVERLAP if self.overlapped else VERSION

    # ----- interchange ------------------------------------------------------
    def to_json(self) -> dict:
        """The schedule file as a JSON-ready dict (``docs/architecture.md``, "Schedule file").

        Returns
        -------
        dict
            ``format``, ``version``, ``collective``, ``algorithm``, ``chunks``, ``topology``, then
            ``steps`` (lists of ``[link, root, chunk]``, or ``[link, root, chunk, "r"|"g"]`` when
            overlapped) or, for a phased AllReduce, ``phases``; transfers are sorted inside each
            step. The ``meta`` keys are added last and may override the others.
        """
        d = {
            "format": FORMAT,
            "version": self.version,
            "collective": self.collective,
            "algorithm": self.algorithm,
            "chunks": self.chunks,
            "topology": self.topology.to_json(),
        }
        if self.overlapped:
            d["steps"] = _steps_json(self.phases[0].steps, typed=True)
        elif self.collective == "allreduce":
            d["phases"] = [{"collective": p.collective, "steps": _steps_json(p.steps)} for p in self.phases]
        else:
            d["steps"] = _steps_json(self.phases[0].steps)
        d.update(self.meta)
        return d

    def dumps(self) -> str:
        """Deterministic text: one timestep per line, so equal inputs give byte-identical files.

        The step lines are formatted with numpy (:func:`_format_steps`) rather than through
        ``to_json()``'s Python lists; the text is the same as ``json.dumps`` of those lists.

        Returns
        -------
        str
            The file text, ending in a newline; ASCII only.
        """
        meta = dict(self.meta)
        if {"steps", "phases", "topology"} & meta.keys():
            # meta shadows a structural key: to_json() decides what is written, as it always has.
            return _render(self.to_json(), _format_lists)
        d = {
            "format": FORMAT,
            "version": self.version,
            "collective": self.collective,
            "algorithm": self.algorithm,
            "chunks": self.chunks,
            "topology": self.topology.to_json(),
        }
        if self.collective == "allreduce" and not self.overlapped:
            d["phases"] = [{"collective": p.collective, "steps": p.steps} for p in self.phases]
        else:
            d["steps"] = self.phases[0].steps
        d.update(meta)
        return _render(d, _format_steps)

    def save(self, path: str | Path) -> None:
        """Write :meth:`dumps` to ``path``.

        Parameters
        ----------
        path : str or Path
            The file to write (replaced if it exists).
        """
        Path(path).write_text(self.dumps())


def _render(d: dict, fmt) -> str:
    """The file text of the ``to_json()``-shaped ``d``; ``fmt(steps, indent)`` gives one step list's lines."""
    head = {k: v for k, v in d.items() if k not in ("steps", "phases", "topology")}
    parts = ["{"]
    for k, v in head.items():
        parts.append(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)},")
    topo = d["topology"]
    parts.append(
        '  "topology": {'
        + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in topo.items() if k != "links")
        + ","
    )
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


def _steps_json(steps: list[np.ndarray], typed: bool = False) -> list[list[list]]:
    # Sorted by link id inside a step: the order carries no meaning, so fix it.
    out = []
    w = 4 if typed else 3
    for s in steps:
        a = np.asarray(s, dtype=np.int64).reshape(-1, w)
        a = a[np.lexsort(a.T[::-1])]
        out.append([[*t[:3], OPS[t[3]]] for t in a.tolist()] if typed else a.tolist())
    return out


_POW10 = 10 ** np.arange(19, dtype=np.int64)
_BIG = 1 << 62  # |values| past this could overflow the int64 arithmetic below; such steps go through json


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
        exp = length - 1 - j  # the power of ten of column j's digit; < 0 past the end
        ok = (exp >= 0) & ~(neg & (j == 0))  # column 0 of a negative number holds its sign
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
    table[:, p : p + d] = digits
    table[:, p + d : width] = np.frombuffer(suffix, dtype=np.uint8)
    words = table.view(np.uint64)
    length = length + (p + len(suffix))
    if not small:
        return words, length
    i = v - lo
    if words.shape[1] == 1:
        return words[:, 0][i][:, None], length[i]
    return words[i], length[i]


def _op_field(op: np.ndarray, suffix: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``'"r"' + suffix`` or ``'"g"' + suffix`` per op, as :func:`_field` lays its texts out."""
    texts = [f'"{o}"'.encode("ascii") + suffix for o in OPS]
    table = np.zeros((len(OPS), 8), dtype=np.uint8)
    for i, t in enumerate(texts):
        table[i, : len(t)] = np.frombuffer(t, dtype=np.uint8)
    return table.view(np.uint64)[op], np.array([len(t) for t in texts], dtype=np.int64)[op]


def _format_steps(steps, indent: str) -> str:
    """``_format_lists(_steps_json(steps), indent)``, built in numpy as one byte buffer.

    Every transfer becomes a row of uint64 words holding ``[l, r, c], `` (no ``, `` after a
    step's last transfer) with zero bytes after each number; dropping the zero bytes of the
    whole array leaves the text of all the steps, which is then cut into lines. Typed
    transfers (arrays of 4 columns, version 2) end in ``, "r"]`` or ``, "g"]`` instead.
    """
    arrays = [np.asarray(s, dtype=np.int64) for s in steps]
    w = 4 if arrays and arrays[0].ndim == 2 and arrays[0].shape[1] == 4 else 3
    arrays = [x.reshape(-1, w) for x in arrays]
    if not arrays:
        return ""
    counts = np.array([len(a) for a in arrays], dtype=np.int64)
    n = int(counts.sum())
    a = np.concatenate(arrays) if n else np.zeros((0, w), dtype=np.int64)
    if n and (int(a.min()) < -_BIG or int(a.max()) > _BIG):
        return _format_lists(_steps_json(arrays, typed=w == 4), indent)
    bounds = np.zeros(len(arrays) + 1, dtype=np.int64)  # byte offsets of the steps in the buffer
    buf = b""
    if n:
        # Order by (step, link, root, chunk[, op]): one int64 key when the ranges allow it, else lexsort.
        step = np.repeat(np.arange(len(arrays), dtype=np.int64), counts)
        lo = [int(a[:, i].min()) for i in range(w)]
        span = [int(a[:, i].max()) - lo[i] + 1 for i in range(w)]
        if len(arrays) * math.prod(span) < 1 << 62:
            key = step
            for i in range(w):
                key = key * span[i] + (a[:, i] - lo[i])
            if not (key[1:] >= key[:-1]).all():
                key = np.sort(key)
                cols = []
                for i in reversed(range(w)):
                    key, c = np.divmod(key, span[i])
                    cols.append(c + lo[i])
                a = np.stack(cols[::-1], axis=1)
            del step, key
        else:
            a = a[np.lexsort((*a.T[::-1], step))]
        last = np.cumsum(counts)[counts > 0] - 1  # the row of each non-empty step's last transfer
        fields = [_field(a[:, 0], b"[", b", "), _field(a[:, 1], b"", b", ")]
        if w == 3:
            fields.append(_field(a[:, 2], b"", b"], "))
            end, _ = _field(a[last, 2], b"", b"]")  # a step's last transfer: no ", " after it
        else:
            fields += [_field(a[:, 2], b"", b", "), _op_field(a[:, 3], b"], ")]
            end, _ = _op_field(a[last, 3], b"]")
        cw = fields[-1][0]
        cw[last] = 0
        cw[last, : end.shape[1]] = end
        words = np.hstack([f[0] for f in fields]).view(np.uint8)
        buf = words[words != 0]
        row_len = sum(f[1] for f in fields)
        row_len[last] -= 2
        bounds[1:][counts > 0] = np.cumsum(row_len)[last]
        bounds = np.maximum.accumulate(bounds)
    bounds = bounds.tolist()
    mv = memoryview(buf)
    head = (indent + "[").encode("ascii")
    parts = []
    for i in range(len(arrays)):
        parts.append(head)
        parts.append(mv[bounds[i] : bounds[i + 1]])
        parts.append(b"],\n" if i + 1 < len(arrays) else b"]")
    return b"".join(parts).decode("ascii")


def _typed_step(step: list, where: str, s: int) -> np.ndarray:
    """One version-2 step ``[[link, root, chunk, op], ...]`` as an (n, 4) array, op as its index in OPS."""
    rows = []
    for t in step:
        if not (isinstance(t, list) and len(t) == 4):
            raise ScheduleFileError(f"{where}: step {s} must hold [link, root, chunk, op] transfers (version 2)")
        if not isinstance(t[3], str) or t[3] not in OPS:
            raise ScheduleFileError(f"{where}: step {s}: op {t[3]!r} is neither 'r' (reduce) nor 'g' (gather)")
        if not all(type(v) is int for v in t[:3]):
            raise ScheduleFileError(f"{where}: step {s}: link, root and chunk must be integers")
        rows.append([*t[:3], OPS.index(t[3])])
    try:
        return np.array(rows, dtype=np.int64).reshape(-1, 4)
    except (ValueError, TypeError, OverflowError):
        raise ScheduleFileError(f"{where}: step {s}: link, root and chunk must be integers") from None


def _parse_steps(raw, where: str, n_links: int, nodes: int, chunks: int, typed: bool = False) -> list[np.ndarray]:
    if not isinstance(raw, list):
        raise ScheduleFileError(f"{where}: 'steps' must be a list of timesteps")
    steps = []
    for s, step in enumerate(raw):
        if isinstance(raw, _Read):
            a = step
        elif not isinstance(step, list):
            raise ScheduleFileError(f"{where}: step {s} is not a list of transfers")
        elif typed:
            a = _typed_step(step, where, s)
        else:
            try:  # JSON integers only: no floats, booleans or strings (numpy would convert them)
                a = np.array(step) if step else np.zeros((0, 3), dtype=np.int64)
            except (ValueError, TypeError, OverflowError):
                raise ScheduleFileError(f"{where}: step {s} must hold [link, root, chunk] integer triples") from None
            if (
                a.dtype.kind != "i"
                or a.ndim != 2
                or a.shape[1] != 3
                or (len(step) and a.shape[0] != len(step))
                or any(type(v) is bool for t in step for v in t)
            ):  # numpy reads true as 1
                raise ScheduleFileError(f"{where}: step {s} must hold [link, root, chunk] integer triples")
        bad = np.nonzero((a[:, 0] < 0) | (a[:, 0] >= n_links))[0]
        if len(bad):
            raise ScheduleFileError(
                f"{where}: step {s}: link {a[bad[0], 0]} does not exist (the topology has {n_links} links)"
            )
        bad = np.nonzero((a[:, 1] < 0) | (a[:, 1] >= nodes))[0]
        if len(bad):
            raise ScheduleFileError(f"{where}: step {s}: root {a[bad[0], 1]} is not a node (0..{nodes - 1})")
        bad = np.nonzero((a[:, 2] < 0) | (a[:, 2] >= chunks))[0]
        if len(bad):
            raise ScheduleFileError(f"{where}: step {s}: chunk {a[bad[0], 2]} is out of range (0..{chunks - 1})")
        if typed and ((a[:, 3] < 0) | (a[:, 3] >= len(OPS))).any():
            raise ScheduleFileError(f"{where}: step {s}: an op is neither 'r' (reduce) nor 'g' (gather)")
        steps.append(a)
    return steps


class _Read(list):
    """Steps that :func:`_load_canonical` has already read into (n, 3) or, typed, (n, 4) int64 arrays."""


_STEP_PUNCT = bytes.maketrans(b'[],"rg', b"    01")  # op letters become their index in OPS


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
        data = text.encode("ascii")  # dumps() writes ASCII only
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
                j += 1  # an empty step list: dumps() leaves one empty line
            regions.append(lines[i:j])
            i = j
    if not regions:
        return None
    try:
        d = json.loads(b"\n".join(skeleton))
        holders = d["phases"] if "phases" in d else [d]
        w = 4 if _typed(d) else 3
        if len(holders) != len(regions) or any(h.get("steps") != [] for h in holders):
            return None
        for h, region in zip(holders, regions):
            steps = _Read()
            for line in region:
                nums = line.translate(_STEP_PUNCT)
                steps.append(
                    np.fromstring(nums, dtype=np.int64, sep=" ").reshape(-1, w)
                    if nums.strip()
                    else np.zeros((0, w), dtype=np.int64)
                )
            h["steps"] = steps
        sched = from_dict(d, where)
        if sched.dumps() != text:
            return None
    except Exception:  # noqa: BLE001 -- whatever it is, the json path decides and reports
        return None
    return sched


def _typed(d: dict) -> bool:
    """A version-2 AllReduce with one ``steps`` list: its transfers carry an op."""
    return d.get("version") == VERSION_OVERLAP and d.get("collective") == "allreduce" and "phases" not in d


def load(path: str | Path) -> Schedule:
    """Read and structurally check a schedule file; every problem is one ScheduleFileError line.

    A file laid out exactly as :meth:`Schedule.dumps` writes it is read without ``json.loads``
    of its steps; any other text goes through :func:`from_dict`.

    Parameters
    ----------
    path : str or Path
        The schedule file.

    Returns
    -------
    Schedule
        Its topology is the one the file names (:func:`.topology.build`, less any failed links).

    Raises
    ------
    ScheduleFileError
        If the file is missing, unreadable, not JSON, or fails a check of :func:`from_dict`.
    """
    try:
        text = jsonfile.read_text(path)
        sched = _load_canonical(text, str(path))
        return sched if sched is not None else from_dict(jsonfile.parse(text, str(path)), str(path))
    except jsonfile.JsonFileError as e:
        raise ScheduleFileError(str(e)) from None


def from_dict(d, where: str = "schedule") -> Schedule:
    """Check a parsed schedule file and build the Schedule it describes.

    The checks: format and version, the required keys, the collective, ``chunks`` 1..MAX_CHUNKS,
    the topology (kind, sides 1..MAX_SIDE, links equal to the named topology's), and every
    transfer's link, root and chunk in range.

    Parameters
    ----------
    d : object
        The file's top-level JSON value (a dict when valid).
    where : str
        Prefix of the error messages, usually the file name.

    Returns
    -------
    Schedule
        Keys other than the structural ones go into ``meta``.

    Raises
    ------
    ScheduleFileError
        On the first failed check, one line.
    """
    if not isinstance(d, dict):
        raise ScheduleFileError(f"{where}: top level must be a JSON object")
    if d.get("format") != FORMAT:
        raise ScheduleFileError(f"{where}: 'format' must be {FORMAT!r} (got {d.get('format')!r})")
    if d.get("version") not in (VERSION, VERSION_OVERLAP):
        raise ScheduleFileError(
            f"{where}: unsupported version {d.get('version')!r} (this reader knows {VERSION} and {VERSION_OVERLAP})"
        )
    for key in ("collective", "algorithm", "chunks", "topology"):
        if key not in d:
            raise ScheduleFileError(f"{where}: missing key {key!r}")
    collective = d["collective"]
    if collective not in COLLECTIVES:
        raise ScheduleFileError(f"{where}: unknown collective {collective!r}; expected one of {', '.join(COLLECTIVES)}")
    chunks = d["chunks"]
    if not isinstance(chunks, int) or isinstance(chunks, bool) or not 1 <= chunks <= MAX_CHUNKS:
        raise ScheduleFileError(f"{where}: 'chunks' must be an integer 1..{MAX_CHUNKS} (got {chunks!r})")
    t = d["topology"]
    if not isinstance(t, dict):
        raise ScheduleFileError(f"{where}: 'topology' must be an object")
    for key in ("kind", "rows", "cols", "nodes", "links"):
        if key not in t:
            raise ScheduleFileError(f"{where}: topology is missing key {key!r}")
    if t["kind"] not in KINDS:
        raise ScheduleFileError(f"{where}: unknown topology kind {t['kind']!r}; expected one of {', '.join(KINDS)}")
    for key in ("rows", "cols", "nodes"):
        if type(t[key]) is not int:
            raise ScheduleFileError(f"{where}: topology {key!r} must be an integer (got {t[key]!r})")
    if not (1 <= t["rows"] <= MAX_SIDE and 1 <= t["cols"] <= MAX_SIDE):
        raise ScheduleFileError(f"{where}: topology rows and cols must be 1..{MAX_SIDE} (got {t['rows']}x{t['cols']})")
    try:
        topo = topology_from_json(t)
    except (TypeError, ValueError, KeyError, OverflowError, TopologyError) as e:
        raise ScheduleFileError(f"{where}: topology links must be [src, dst, src_port, dst_port] ({e})") from None
    if t["nodes"] != topo.nodes:
        raise ScheduleFileError(f"{where}: topology says nodes={t['nodes']} but rows x cols = {topo.rows}x{topo.cols}")
    for i, l in enumerate(topo.links):
        if not (0 <= l.src < topo.nodes and 0 <= l.dst < topo.nodes) or l.src == l.dst:
            raise ScheduleFileError(
                f"{where}: topology link {i} [{l.src}, {l.dst}] does not join two distinct nodes 0..{topo.nodes - 1}"
            )
    topo = _named_topology(t, topo, where)
    n_links = len(topo.links)
    meta = {
        k: v
        for k, v in d.items()
        if k not in ("format", "version", "collective", "algorithm", "chunks", "topology", "steps", "phases")
    }
    if _typed(d):
        if "steps" not in d:
            raise ScheduleFileError(
                f"{where}: a version-2 allreduce file needs 'steps' of [link, root, chunk, op] transfers, or 'phases'"
            )
        phases = [Phase("allreduce", _parse_steps(d["steps"], where, n_links, topo.nodes, chunks, typed=True))]
    elif collective == "allreduce":
        if "steps" in d and "phases" not in d:
            raise ScheduleFileError(
                f"{where}: an allreduce file with one 'steps' list (overlapped) must be version "
                f"{VERSION_OVERLAP}; version {VERSION} needs 'phases'"
            )
        phases_raw = d.get("phases")
        if not isinstance(phases_raw, list) or len(phases_raw) != 2:
            raise ScheduleFileError(f"{where}: an allreduce file needs 'phases': [reducescatter, allgather]")
        phases = []
        for i, (want, ph) in enumerate(zip(("reducescatter", "allgather"), phases_raw)):
            if not isinstance(ph, dict) or ph.get("collective") != want:
                raise ScheduleFileError(f"{where}: phase {i} must be {want!r}")
            phases.append(
                Phase(want, _parse_steps(ph.get("steps"), f"{where}: phase {i} ({want})", n_links, topo.nodes, chunks))
            )
    else:
        if "steps" not in d:
            raise ScheduleFileError(f"{where}: missing key 'steps'")
        # alltoall: the chunk field is destination * K + part (docs/alltoall.md)
        fields = chunks * topo.nodes if collective == "alltoall" else chunks
        phases = [Phase(collective, _parse_steps(d["steps"], where, n_links, topo.nodes, fields))]
    return Schedule(collective, str(d["algorithm"]), chunks, topo, phases, meta)


def _named_topology(t: dict, topo: Topology, where: str) -> Topology:
    """The topology the file names: ``build(kind, rows, cols, ring_dirs)`` (seed 000, Algorithm 1 for the
    rings), less the links listed in ``failed_links`` (:mod:`.failures`). The file's links must equal it
    exactly -- endpoints, ports and order, the order :func:`.topology.build` gives -- otherwise one
    :class:`ScheduleFileError` line names the first difference: a schedule is checked against the
    network it claims to run on, not against whatever links its file lists."""
    if "ring_dirs" in t and t["kind"] not in RING_KINDS:
        raise ScheduleFileError(f"{where}: topology 'ring_dirs' is given but a {t['kind']} has no rings")
    failed = t.get("failed_links", [])
    if not (isinstance(failed, list) and all(isinstance(f, list) and len(f) == 4 for f in failed)):
        raise ScheduleFileError(f"{where}: topology 'failed_links' must be a list of [src, dst, src_port, dst_port]")
    try:
        named = build(topo.kind, topo.rows, topo.cols, topo.ring_dirs)
    except TopologyError as e:
        raise ScheduleFileError(f"{where}: {e}") from None
    have = {(l.src, l.dst, l.src_port, l.dst_port) for l in named.links}
    for f in failed:
        if tuple(f) not in have:
            raise ScheduleFileError(f"{where}: topology failed link {f} is not a link of the {named.name}")
    if failed:
        named = DegradedTopology(named, failed)
    want, got = named.links, topo.links
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            raise ScheduleFileError(
                f"{where}: topology link {i} is {a.as_list()} but link {i} of the {named.name} is {b.as_list()}"
            )
    if len(got) != len(want):
        extra = (
            f"link {len(want)} {got[len(want)].as_list()} is extra"
            if len(got) > len(want)
            else f"link {len(got)} {want[len(got)].as_list()} is missing"
        )
        raise ScheduleFileError(f"{where}: topology has {len(got)} links but the {named.name} has {len(want)}: {extra}")
    return named


def lower_bound(topology: Topology, chunks: int, collective: str, overlapped: bool = False) -> int:
    """The step bound of docs/architecture.md ("Lower bound and efficiency") and seed 000, Section III-A.

    AllGather: max(D, ceil(K (N-1) / min in-degree)); ReduceScatter uses the
    min out-degree; AllReduce is the sum of both. The overlapped AllReduce (docs/architecture.md,
    version 2): its 2 K N (N-1) chunk transfers share all L links, and every node
    still sends K (N-1) partials and receives K (N-1) sums, so
    max(ceil(2 K N (N-1) / L), ceil(K (N-1) / min out-degree), ceil(K (N-1) / min in-degree)).

    Parameters
    ----------
    topology : Topology
        The network (N nodes, L links, diameter D); must be strongly connected.
    chunks : int
        K, the chunks per shard.
    collective : str
        ``"allgather"``, ``"reducescatter"`` or ``"allreduce"``.
    overlapped : bool
        For ``"allreduce"``: the bound of the overlapped (version 2) AllReduce.

    Returns
    -------
    int
        The least number of timesteps any schedule can take.

    Raises
    ------
    TopologyError
        If the topology is not strongly connected (no diameter); the overlapped bound does not need one.
    """
    n = topology.nodes
    if collective == "alltoall":
        return alltoall.lower_bound(topology, chunks)
    if collective == "allreduce" and overlapped:
        work = chunks * (n - 1)
        return max(
            math.ceil(2 * work * n / len(topology.links)),
            math.ceil(work / int(topology.out_degree.min())),
            math.ceil(work / int(topology.in_degree.min())),
        )
    if collective == "allreduce":
        return lower_bound(topology, chunks, "reducescatter") + lower_bound(topology, chunks, "allgather")
    deg = topology.in_degree if collective == "allgather" else topology.out_degree
    return max(topology.diameter, math.ceil(chunks * (n - 1) / int(deg.min())))


def schedule_bound(sched: Schedule) -> int:
    """The bound for the whole of ``sched``: per phase, summed; an overlapped AllReduce has its own.

    Parameters
    ----------
    sched : Schedule

    Returns
    -------
    int
        Timesteps (:func:`lower_bound`, seed 000, Section III-A).
    """
    if sched.overlapped:
        return lower_bound(sched.topology, sched.chunks, "allreduce", overlapped=True)
    if sched.collective == "alltoall":
        return alltoall.lower_bound(sched.topology, sched.chunks, sched.meta.get("counts"))
    return sum(lower_bound(sched.topology, sched.chunks, p.collective) for p in sched.phases)
