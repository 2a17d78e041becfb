"""Whether Kafka is reachable, as /readyz tells it: a cached state that a background probe
refreshes every ``interval_s`` and publishes update as they go (issue 14, item 8).

Why cached: /readyz is unauthenticated and called often; it used to take the publisher's lock
and list every topic's metadata on each call, so probes stalled behind publishes and cost the
broker a full metadata request each. Reading a flag costs nothing and blocks on nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["Readiness"]

log = logging.getLogger(__name__)


class Readiness:
    """``probe`` (one look at Kafka, True when it answered) runs in a daemon thread started by
    the first ``ready`` call, which alone waits for its first answer (up to ``first_wait_s``:
    the service's startup, in a worker thread); later calls never block."""

    def __init__(self, probe: Callable[[], bool], interval_s: float, first_wait_s: float) -> None:
        self._probe = probe
        self.interval_s = interval_s
        self.first_wait_s = first_wait_s
        self.healthy = False  # a plain attribute: publishes set it too
        self._probed = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()  # only to start the thread once
        self._thread: threading.Thread | None = None

    def ready(self) -> bool:
        first = False
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stop.is_set():
                    self._thread = threading.Thread(
                        target=self._loop, name="kafka-probe", daemon=True
                    )
                    self._thread.start()
                    first = True
        if first:
            self._probed.wait(self.first_wait_s)
        return self.healthy

    def stop(self) -> None:
        self._stop.set()

    def refresh(self) -> bool:
        """Probes now (in the caller's thread) and keeps the answer."""
        try:
            self.healthy = self._probe()
        except Exception:  # a probe that breaks must not end the loop
            log.exception("the Kafka probe failed")
            self.healthy = False
        return self.healthy

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._probed.set()
            self._stop.wait(self.interval_s)
