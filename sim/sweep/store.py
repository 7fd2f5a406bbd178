"""The results store of sweeps: one SQLite file (docs/sweeps.md "The store").

Table ``results``, one row per point, primary key ``key`` (:func:`.plan.point_key`: a hash of the
point's inputs and the project version). The axes and the standard results are columns; the whole
result is the ``result`` JSON column. Table ``meta`` holds the store's schema version and the
equimesh version that created it: a store of another schema or version is refused
(:class:`StoreError`), never mixed into the results.

Only the sweep's client process writes the store (the Dask tasks return their results to it), and
it upserts by key: a point retried after a worker died is stored once.

Load into pandas in one line::

    pandas.read_sql("SELECT * FROM results", sqlite3.connect("sweep.db"))
"""

from __future__ import annotations

import csv
import json
import sqlite3
import time
from pathlib import Path

from .plan import AXES, project_version

__all__ = ["COLUMNS", "METRICS", "SCHEMA_VERSION", "Store", "StoreError"]

SCHEMA_VERSION = 1
METRICS = (
    "steps",
    "bound",
    "cycles",
    "utilization",
    "time_s",
    "fmax_mhz",
    "luts",
    "ffs",
    "latency_mean",
    "latency_p99",
    "accepted",
)
_AXIS_SQL = {
    "kind": "TEXT",
    "size": "TEXT",
    "K": "INTEGER",
    "F": "INTEGER",
    "pipeline": "INTEGER",
    "collective": "TEXT",
    "seed": "INTEGER",
    "rate": "REAL",
    "nodes": "INTEGER",
    "wavelengths": "INTEGER",
}
assert set(_AXIS_SQL) == set(AXES)
COLUMNS = [
    "key",
    "command",
    *AXES,
    "rows",
    "cols",
    "options",
    "status",
    "error",
    *METRICS,
    "seconds",
    "worker",
    "version",
    "finished",
    "result",
]
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    {", ".join(f'"{a}" {t}' for a, t in _AXIS_SQL.items())},
    rows INTEGER, cols INTEGER,
    options TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error TEXT,
    {", ".join(f"{m} REAL" for m in METRICS)},
    seconds REAL, worker TEXT, version TEXT NOT NULL, finished TEXT NOT NULL,
    result TEXT
);
"""


class StoreError(RuntimeError):
    """A store that cannot be used (another schema or equimesh version, not SQLite); one line."""


class Store:
    """An open results store; ``Store(path)`` creates it or checks that it is compatible.

    Parameters
    ----------
    path : str or Path
        The SQLite file; one of another schema or equimesh version raises :class:`StoreError`.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
            meta = dict(self.db.execute("SELECT name, value FROM meta"))
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a sweep store ({e})") from None
        want = {"schema": str(SCHEMA_VERSION), "equimesh": project_version()}
        if not meta:
            with self.db:
                self.db.executemany("INSERT INTO meta VALUES (?, ?)", want.items())
        elif meta != want:
            raise StoreError(
                f"{self.path}: written by equimesh {meta.get('equimesh')} (store schema "
                f"{meta.get('schema')}); this is equimesh {want['equimesh']} (schema {want['schema']}): "
                f"use another store file"
            )

    def close(self) -> None:
        self.db.close()

    def keys(self) -> set[str]:
        return {k for (k,) in self.db.execute("SELECT key FROM results")}

    def forget_failed(self, keys: set[str]) -> int:
        """Delete the rows of ``keys`` stored as failed, so that a sweep runs those points again.

        Parameters
        ----------
        keys : set of str
            Point keys (:func:`.plan.point_key`); rows of other keys, and rows stored ok, stay.

        Returns
        -------
        int
            The number of rows deleted.
        """
        failed = [k for (k,) in self.db.execute("SELECT key FROM results WHERE status = 'failed'") if k in keys]
        with self.db:
            self.db.executemany("DELETE FROM results WHERE key = ?", [(k,) for k in failed])
        return len(failed)

    def put(self, key: str, point: dict, outcome: dict) -> None:
        """Store one point's outcome, replacing any row of the same key.

        Parameters
        ----------
        key : str
            :func:`.plan.point_key` of ``point``.
        point : dict
            The point (its axes become columns).
        outcome : dict
            :func:`.points.run_point`'s dict.
        """
        result = outcome.get("result") or {}
        rows, cols = point["size"].split("x") if "size" in point else (None, None)
        row = {
            "key": key,
            "command": point["command"],
            **{a: point.get(a) for a in AXES},
            "rows": rows and int(rows),
            "cols": cols and int(cols),
            "options": json.dumps(point["options"], sort_keys=True),
            "status": "failed" if "error" in outcome else "ok",
            "error": outcome.get("error"),
            **{m: result.get(m) for m in METRICS},
            "seconds": outcome.get("seconds"),
            "worker": f"{outcome['host']}:{outcome['pid']}" if "pid" in outcome else None,
            "version": project_version(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "result": json.dumps(result, sort_keys=True, default=str),
        }
        if "kind" in result and row["kind"] is None:
            row["kind"] = result["kind"]
        names = ", ".join(f'"{c}"' for c in row)
        with self.db:
            self.db.execute(
                f"INSERT OR REPLACE INTO results ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values())
            )

    def rows(self) -> list[dict]:
        order = ", ".join(f'"{c}"' for c in ("command", "kind", "rows", "cols", *AXES))
        cur = self.db.execute(f"SELECT * FROM results ORDER BY {order}")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur]

    def write_csv(self, path) -> int:
        rows = self.rows()
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        return len(rows)

    def write_json(self, path) -> int:
        rows = self.rows()
        for r in rows:
            r["options"] = json.loads(r["options"])
            r["result"] = json.loads(r["result"]) if r["result"] else None
        Path(path).write_text(json.dumps(rows, indent=1) + "\n")
        return len(rows)
