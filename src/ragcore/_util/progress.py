"""A dependency-free progress bar on stderr, for the long steps (encoding a corpus,
indexing a large BM25 corpus, benchmark sweeps)."""

from __future__ import annotations

import sys
import time


class Progress:
    """``update(done, note)`` / ``step(note)`` redraw one line; ``close()`` ends it.

    enabled: True / False, or None for "when the stream is a terminal".
    log_lines: when the stream is not a terminal, write one plain line per step
    instead of nothing (for logs of long benchmark runs).
    """

    def __init__(self, total: int, label: str, enabled: bool | None = None, stream=None,
                 log_lines: bool = False):
        self.total, self.label, self.done = max(int(total), 1), label, 0
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if enabled is None else bool(enabled)
        self.log_lines = log_lines and not self.stream.isatty()
        self._last = 0.0
        self._start = time.perf_counter()

    def step(self, note: str = "") -> None:
        self.update(self.done + 1, note)

    def update(self, done: int, note: str = "") -> None:
        self.done = done
        now = time.perf_counter()
        elapsed = now - self._start
        if self.log_lines:
            self.stream.write(f"{self.label} {done}/{self.total} {note} ({elapsed:.0f}s)\n")
        elif self.live and (now - self._last >= 0.1 or done >= self.total):
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
