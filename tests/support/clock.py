"""A clock the test moves, and a stop event whose waits move it instead of sleeping."""

from __future__ import annotations

import threading

__all__ = ["AdvancingEvent", "FakeClock"]


class FakeClock:
    """A ``time.monotonic`` stand-in: returns ``now``, which the test (or a wait) moves."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class AdvancingEvent(threading.Event):
    """A stop event whose ``wait()`` advances the fake clock instead of sleeping, and records
    each timeout it was asked to wait."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock, self.waits = clock, []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        self.clock.now += timeout or 0
        return self.is_set()
