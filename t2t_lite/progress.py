"""Progress lines for long loops: how far, how fast, and the time left.

t2t-train's progress lines, a long file decode and datagen's encoding all
end with the same estimate (`eta=1h02m`, or `eta=40s` under a minute).
"""

import time
from collections.abc import Callable

from absl import logging

EVERY_S = 30.0  # at most one line per this many seconds


def duration(seconds: float) -> str:
    """Seconds as "1h02m" (a minute or more, rounded to minutes) or "40s"."""
    if seconds < 60:
        return f"{max(seconds, 0.0):.0f}s"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


def rate(
    start: tuple[int, float] | None, done: int, now: float, total: int | None = None
) -> tuple[float, float | None] | None:
    """(items a second since `start` (done, time), seconds left until `total`: None
    without one or once reached); None before there is a rate. Counted from a
    first update, not from the loop's start, so start-up (tracing a graph,
    reading a vocabulary) does not spoil the estimate."""
    if start is None or done <= start[0]:
        return None
    per_second = (done - start[0]) / max(now - start[1], 1e-9)
    left = (total - done) / per_second if total and total > done else None
    return per_second, left


class Progress:
    """Logs "<label>: done/total unit (pct%), rate unit/s, eta=..." at most every
    `every_s` seconds (without a total: the count and the rate only).

    The rate is counted from the first `update`, so start-up (tracing a
    graph, reading a vocabulary) does not spoil the estimate.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "lines",
        every_s: float | None = None,
        clock: Callable[[], float] | None = None,
    ):
        self.label, self.total, self.unit = label, total, unit
        self.every_s = EVERY_S if every_s is None else every_s
        self.clock = clock or (lambda: time.perf_counter())
        self.start: tuple[int, float] | None = None
        self.last_log = self.clock()

    def line(self, done: int, now: float) -> str | None:
        """The progress line for `done` items at time `now` (None before a rate exists)."""
        measured = rate(self.start, done, now, self.total)
        if measured is None:
            return None
        per_second, left = measured
        text = f"{self.label}: {done:,}"
        if self.total:
            text += f"/{self.total:,} {self.unit} ({100 * done / self.total:.0f}%)"
        else:
            text += f" {self.unit}"
        text += f", {per_second:,.1f} {self.unit}/s"
        if left is not None:
            text += f", eta={duration(left)}"
        return text

    def update(self, done: int) -> None:
        """Records that `done` items are finished; logs a line when one is due."""
        now = self.clock()
        if self.start is None:
            self.start = (done, now)
            return
        if now - self.last_log >= self.every_s:
            text = self.line(done, now)
            if text:
                logging.info("%s", text)
                self.last_log = now
