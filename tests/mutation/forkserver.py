"""A fork server for ``make mutate``: mutmut starts one test run per mutant, and importing numpy, scipy,
amaranth and pytest costs more than the tests aimed at a module. The server imports those once; each
run forks it and runs pytest in the child, which imports the project (and so the mutant) afresh.

``python -P tests/mutation/forkserver.py serve SOCKET`` starts it; ``python -P -S tests/mutation/forkserver.py
run SOCKET PYTEST-ARGS...`` (the runner given to mutmut) runs pytest once and exits with its status.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

RUN_LIMIT = int(os.environ.get("MUTATE_RUN_LIMIT", "60"))  # seconds: a mutant that loops forever ends here


def serve(path: str) -> None:
    import amaranth  # noqa: F401 -- the heavy imports, shared by every forked run
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest
    import scipy.sparse  # noqa: F401
    import scipy.sparse.csgraph  # noqa: F401

    # A mutant often has the size of the original, and .pyc files are validated by size and mtime in
    # whole seconds: a cached .pyc would hide it. So nothing is cached and run.sh removes old caches.
    sys.dont_write_bytecode = True
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        conn, _ = srv.accept()
        with conn:
            args = json.loads(conn.makefile().readline())
            pid = os.fork()
            if pid == 0:
                srv.close()
                signal.alarm(RUN_LIMIT)
                os._exit(int(pytest.main(args)))
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            conn.sendall(f"{code}\n".encode())


def run(path: str, args: list[str]) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((json.dumps(args) + "\n").encode())
        reply = s.makefile().readline()
    # mutmut 2 counts a mutant killed only on exit status 1: a run the limit ended, or a mutant that
    # breaks the import (pytest's status 2), failed the tests too.
    return 0 if reply.strip() == "0" else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3:]))
