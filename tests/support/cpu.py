"""A bound on the CPU a block of a unit test may use: the test's own work, not the wall clock,
so that a loaded CI machine (other jobs taking the cores) cannot fail it, while a hang or a
blow-up (a backtracking regex, a loop that allocates until MemoryError) still does."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["TooSlow", "cpu_bound"]


class TooSlow(Exception):
    pass


@contextmanager
def cpu_bound(seconds: float) -> Iterator[None]:
    """Fails the block once the process has used ``seconds`` of CPU in it. SIGPROF, so that
    pytest-timeout's SIGALRM is left alone; a long call into C is failed when it returns."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TooSlow(f"more than {seconds} s of CPU")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
