"""A progress bar on stderr: one line, redrawn at most five times a second."""

from __future__ import annotations

import sys
import time


class Progress:
    """``Progress(total, unit)``; :meth:`update` adds done units, :meth:`close` ends the line."""

    def __init__(self, total: int, unit: str = "items", enabled: bool = True, stream=None, width: int = 30):
        self.total, self.unit, self.enabled, self.width = max(int(total), 0), unit, enabled, width
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.start, self.last = 0, time.perf_counter(), 0.0

    def update(self, n: int) -> None:
        self.done += int(n)
        now = time.perf_counter()
        if self.enabled and (now - self.last >= 0.2 or self.done >= self.total):
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        share = self.done / self.total if self.total else 1.0
        filled = int(round(self.width * min(share, 1.0)))
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta = f", {left:.0f} s left" if left == left and self.done < self.total else ""
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (self.width - filled)}] {100 * share:5.1f}% "
            f"{self.done}/{self.total} {self.unit}, {rate:.0f}/s{eta}   "
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.total:
            if self.done < self.total or self.last == 0.0:
                self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
