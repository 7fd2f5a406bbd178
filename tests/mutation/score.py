"""The mutation score of one ``mutmut run``: killed / all mutants, read from mutmut 2's ``.mutmut-cache``.

Usage: ``python tests/mutation/score.py NAME [CACHE]``. Killed counts mutmut's "killed" and "suspicious"
(the tests failed, slowly); survivors, timeouts and untested mutants count against the score.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter


def score(cache: str) -> tuple[Counter, str]:
    con = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)  # read-only: safe while mutmut writes
    rows = con.execute(
        "SELECT s.filename, m.status FROM Mutant m JOIN Line l ON m.line = l.id "
        "JOIN SourceFile s ON l.sourcefile = s.id"
    ).fetchall()
    files = sorted({f for f, _ in rows})
    return Counter(status for _, status in rows), ", ".join(files)


if __name__ == "__main__":
    name, cache = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else ".mutmut-cache")
    c, files = score(cache)
    total = sum(c.values())
    killed = c["ok_killed"] + c["ok_suspicious"]
    pct = 100 * killed / total if total else float("nan")
    print(
        f"{name} ({files}): {killed}/{total} killed = {pct:.1f} %; survived {c['bad_survived']}, "
        f"timeout {c['bad_timeout']}, untested {c['untested']}"
    )
