"""A dependency-free progress bar on stderr, shown only for long jobs on a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """``update(done)`` redraws at most ten times a second; ``close()`` ends the line.

    enabled: True / False, or None to show it only when stderr is a terminal.
    """

    def __init__(self, total: int, label: str, enabled: bool | None = None):
        self.total, self.label = max(int(total), 1), label
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self._last = 0.0
        self._start = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if not self.enabled or (now - self._last < 0.1 and done < self.total):
            return
        self._last = now
        filled = int(30 * done / self.total)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total} "
                         f"{now - self._start:.0f}s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self.update(self.total)
            sys.stderr.write("\n")
            sys.stderr.flush()
