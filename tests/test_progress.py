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


def test_many_short_runs_in_a_log_do_not_print_a_line_each(monkeypatch):
    """A search (e.g. ``--ring-dirs auto``) runs hundreds of syntheses that each end at 100 %."""
    clock = iter(range(0, 100000, 1))
    monkeypatch.setattr(progress.time, "perf_counter", lambda: float(next(clock)) / 10)
    out = io.StringIO()
    p = progress.Progress("search", delay=0.0, stream=out)
    for run in range(200):  # 200 runs of 5 calls: 100 fake seconds in all
        for i in range(1, 6):
            p(i, 5)
    lines = out.getvalue().splitlines()
    # the first end at once, then about one line per LOG_EVERY (10 s) and the end that follows it
    assert 5 <= len(lines) <= 25 and all(l.startswith("search: ") for l in lines)
