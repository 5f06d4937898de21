"""A dependency-free progress line on stderr (quiet when stderr is not a terminal)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str, stream=None):
        self.total, self.label, self.done = max(1, total), label, 0
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.t0 = time.perf_counter()

    def step(self, what: str = "") -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        if self.live:
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "." * (30 - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                              f"{elapsed:5.0f}s {what[:40]:<40}")
            if self.done >= self.total:
                self.stream.write("\n")
            self.stream.flush()
        else:
            self.stream.write(f"{self.label} {self.done}/{self.total} {what} ({elapsed:.0f}s)\n")
            self.stream.flush()
