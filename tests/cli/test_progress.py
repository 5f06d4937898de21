"""Progress lines for logs: at most one every log_every seconds, the last always, with an ETA."""

from __future__ import annotations

import io

from ragcore._util import progress as progress_module
from ragcore._util.progress import Progress, eta_text


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_log_lines_are_spaced_and_the_last_is_always_written(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress_module.time, "perf_counter", clock)
    log = io.StringIO()  # not a terminal
    bar = Progress(10, "indexing", stream=log, log_lines=True, log_every=5.0)
    for done in range(1, 11):
        clock.now += 1.0
        bar.update(done, f"{done * 3} chunks")
    bar.close()
    lines = log.getvalue().splitlines()
    # written at 1 s, then 5 s later (6 s), then the last update (10 s)
    assert lines == ["indexing 1/10 3 chunks (1s, ETA 9s)",
                     "indexing 6/10 18 chunks (6s, ETA 4s)",
                     "indexing 10/10 30 chunks (10s)"]


def test_log_every_zero_writes_every_update():
    log = io.StringIO()
    bar = Progress(3, "sweep", stream=log, log_lines=True)
    for _ in range(3):
        bar.step()
    assert len(log.getvalue().splitlines()) == 3


def test_eta_text():
    assert eta_text(0.0, 0, 10) == "ETA unknown"
    assert eta_text(10.0, 1, 10) == "ETA 1m30s"
    assert eta_text(10.0, 10, 10) == "ETA 0s"
