"""A dependency-free progress bar on stderr, for the long steps (encoding a corpus,
indexing a large BM25 corpus, benchmark sweeps)."""

from __future__ import annotations

import sys
import time


class Progress:
    """``update(done, note)`` / ``step(note)`` redraw one line; ``close()`` ends it.

    enabled: True / False, or None for "when the stream is a terminal".
    log_lines: when the stream is not a terminal, write plain lines instead of nothing
    (for logs of long runs, and commands whose output goes to a file or a pipe).
    log_every: seconds between two log lines (0: one per update); the last update is
    always written, so a log ends with the total.
    """

    def __init__(self, total: int, label: str, enabled: bool | None = None, stream=None,
                 log_lines: bool = False, log_every: float = 0.0):
        self.total, self.label, self.done = max(int(total), 1), label, 0
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if enabled is None else bool(enabled)
        self.log_lines = log_lines and not self.stream.isatty()
        self.log_every = float(log_every)
        self._last = float("-inf")
        self._start = time.perf_counter()

    def step(self, note: str = "") -> None:
        self.update(self.done + 1, note)

    def update(self, done: int, note: str = "") -> None:
        self.done = done
        now = time.perf_counter()
        elapsed = now - self._start
        finished = done >= self.total
        if self.log_lines:
            if now - self._last < self.log_every and not finished:
                return
            eta = "" if finished else f", {eta_text(elapsed, done, self.total)}"
            self.stream.write(f"{self.label} {done}/{self.total} {note} ({elapsed:.0f}s{eta})\n")
        elif self.live and (now - self._last >= 0.1 or finished):
            filled = int(30 * min(done, self.total) / self.total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] "
                              f"{done:,}/{self.total:,} {elapsed:.0f}s {note[:40]:<40}")
        else:
            return
        self._last = now
        self.stream.flush()

    def close(self) -> None:
        if self.live and not self.log_lines:
            self.stream.write("\n")
            self.stream.flush()


def eta_text(elapsed: float, done: int, total: int) -> str:
    """'ETA 1m05s' at the rate so far, or 'ETA unknown' before the first item is done."""
    if done <= 0 or elapsed <= 0:
        return "ETA unknown"
    seconds = round(elapsed * (total - done) / done)
    minutes, seconds = divmod(max(seconds, 0), 60)
    return f"ETA {minutes}m{seconds:02d}s" if minutes else f"ETA {seconds}s"
