"""Progress output: one redrawn line on a terminal, occasional plain lines in logs."""

import io

from equimesh import progress


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_plain_lines_and_no_carriage_returns(monkeypatch):
    clock = iter(range(0, 1000, 3))
    monkeypatch.setattr(progress.time, "perf_counter", lambda: float(next(clock)))
    out = io.StringIO()
    p = progress.Progress("run", delay=0.0, stream=out)
    for i in range(1, 101):
        p(i, 100)
    p.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    # one line per LOG_EVERY (10 s) of the 300 fake seconds, plus the last
    assert 25 <= len(lines) <= 32 and lines[-1].startswith("run: 100% (100/100)")


def test_a_terminal_gets_one_redrawn_line(monkeypatch):
    clock = iter(range(0, 1000, 1))
    monkeypatch.setattr(progress.time, "perf_counter", lambda: float(next(clock)))
    out = _Tty()
    p = progress.Progress("run", delay=0.0, stream=out)
    for i in range(1, 51):
        p(i, 50)
    p.close()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.count("\r") == 50 and "100.0%" in text
