"""The artifact cache shared by the flows: compiled Verilator models, Verilog records, Icarus builds,
ECP5 place-and-route results and formal verdicts.

Entries live under ``EQUIMESH_CACHE`` (else ``$XDG_CACHE_HOME/equimesh``, else ``~/.cache/equimesh``),
one directory per key. A build is made in a private directory, sealed with its key and the digest of its
payload file, and published with one atomic rename; an entry whose payload does not match its record is
rebuilt, never used. Several processes (Dask workers, pytest-xdist) may build the same key at once: the
first to publish wins and the others drop theirs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path

__all__ = ["CacheError", "cache_root", "json_record", "publish", "seal", "tool_version", "valid_entry"]


class CacheError(RuntimeError):
    """A cache entry that can be neither used nor replaced; the message names it."""


def cache_root() -> Path:
    """The cache's root directory (see the module docstring).

    Returns
    -------
    Path
        ``$EQUIMESH_CACHE``, else ``$XDG_CACHE_HOME/equimesh``, else ``~/.cache/equimesh``; not created here.
    """
    env = os.environ.get("EQUIMESH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "equimesh"


def json_record(path: Path, fields: tuple[str, ...], make) -> dict:
    """The JSON record cached at ``path``, or, when it is missing, damaged or lacks one of ``fields``,
    ``make()`` written there in its place (atomically: a reader sees the whole record or none).

    Parameters
    ----------
    path : Path
        The record's file.
    fields : tuple of str
        The keys a usable record has.
    make : callable
        Returns the record (a JSON-ready dict with ``fields``); called only when the file is not usable.

    Returns
    -------
    dict
        The record.
    """
    try:
        rec = json.loads(path.read_text())
        if isinstance(rec, dict) and all(k in rec for k in fields):
            return rec
    except (OSError, ValueError):
        pass
    rec = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rec))
    os.replace(tmp, path)
    return rec


def _digest_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(tmp: Path, key: str, payload: str = "model", **info) -> None:
    """Record the finished build in ``tmp``: its key, its ``payload`` file's digest and ``info``.

    Parameters
    ----------
    tmp : Path
        The private build directory; ``entry.json`` is written there.
    key : str
        The cache key.
    payload : str
        The payload file's name in ``tmp``; its SHA-256 is recorded as ``<payload>_sha256``.
    **info
        Further JSON-ready fields of the record.
    """
    (tmp / "entry.json").write_text(json.dumps({"key": key, **info, f"{payload}_sha256": _digest_file(tmp / payload)}))


def valid_entry(entry: Path, key: str, payload: str = "model") -> bool:
    """Whether ``entry`` is a sealed build of ``key`` whose payload matches its recorded digest.

    Parameters
    ----------
    entry : Path
        The entry directory.
    key : str
    payload : str
        The payload file's name.

    Returns
    -------
    bool
        False for a missing, unreadable or mismatching entry.
    """
    try:
        rec = json.loads((entry / "entry.json").read_text())
        return rec["key"] == key and _digest_file(entry / payload) == rec[f"{payload}_sha256"]
    except (OSError, ValueError, KeyError):
        return False


def publish(tmp: Path, entry: Path, key: str, payload: str = "model") -> None:
    """Make the finished build in ``tmp`` (sealed by :func:`seal`) the cache entry ``entry`` with one atomic
    rename. A damaged entry in the way is removed first; if another process published a valid one first,
    ours is dropped.

    Parameters
    ----------
    tmp : Path
        The sealed build directory (consumed).
    entry : Path
        The entry directory.
    key : str
    payload : str
        The payload file's name.

    Raises
    ------
    CacheError
        If the rename fails and the entry found there is not valid.
    """
    if entry.exists():
        if valid_entry(entry, key, payload):
            shutil.rmtree(tmp, ignore_errors=True)
            return
        trash = entry.with_name(f"{entry.name}.damaged-{os.getpid()}")
        try:
            os.rename(entry, trash)
            shutil.rmtree(trash, ignore_errors=True)
        except OSError:  # another process moved it away first
            pass
    try:
        os.rename(tmp, entry)
    except OSError:  # published by another process between the check and the rename
        shutil.rmtree(tmp, ignore_errors=True)
        if not valid_entry(entry, key, payload):
            raise CacheError(f"the cache entry {entry} is unusable; delete it and run again") from None


def tool_version(name: str) -> str:
    """The installed version of a Python package (the yowasp tools), for cache keys.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
        The version, or ``"unknown"`` if the package is not installed.
    """
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"
