"""What the job does when a stream stops on an error: it starts the streams again from their
checkpoints after a backoff, instead of exiting (issue 14 item 10). A batch that failed was
not committed, so it is replayed; the failures are counted and published in the status.

The backoff doubles from 1 s up to ``APM_AGGREGATOR_STREAM_RESTART_CAP_SECONDS`` while
failures follow each other, and starts from 1 s again once the streams have run for
``STABLE_S`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from apm.retry import Backoff

__all__ = ["STABLE_S", "StreamRestarts"]

log = logging.getLogger(__name__)

STABLE_S = 300.0


class StreamRestarts:
    """The restart state of one job: failures so far, the last error, the backoff."""

    def __init__(
        self,
        cap_s: float,
        counted: Callable[[str], None] = lambda stream: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = 0
        self.last_error: str | None = None
        self.backoff = Backoff(initial=1.0, cap=cap_s)
        self.broken = False  # a failed stream waits to be started again
        self._counted, self._clock = counted, clock
        self._started_at = clock()

    def started(self) -> None:
        self.broken = False
        self._started_at = self._clock()

    def handle(
        self, failure: str | None, stop: threading.Event, restart: Callable[[], None]
    ) -> None:
        """``failure`` is '<stream name> stopped: <error>' or None; ``restart`` starts the
        streams again (it may raise: Kafka or Spark briefly away too; tried next round)."""
        if failure is None and not self.broken:
            if self._clock() - self._started_at > STABLE_S:
                self.backoff.reset()  # up long enough: the next failure is a new one
            return
        if failure is not None:
            self.failures += 1
            self.last_error = failure[:2000]
            name = failure.split()[1] if len(failure.split()) > 1 else "stream"
            self._counted(name.rsplit("-", 1)[-1])
        delay = self.backoff.next_delay()
        log.error("%s; starting the streams again in %.1fs", failure or "restart failed", delay)
        self.broken = True
        if stop.wait(delay):
            return
        try:
            restart()
            self.started()
        except Exception as exc:
            log.error("cannot start the streams again: %r", exc)
