"""The agent's own counters, shared by its threads and reported as agent.* metrics, so that a
gap or a delay in the data can be explained from the data itself."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["AgentStats"]


@dataclass
class AgentStats:
    clock: Callable[[], float]
    started: float = 0.0
    pushed: int = 0  # snapshots acknowledged by the ingest
    retries: int = 0  # failed push attempts that will be tried again
    rejected: int = 0  # snapshots the ingest refused for good (422, 413 alone), set aside
    blocked: int = 0  # push attempts answered with a configuration error (401, 404, 3xx ...)
    blocked_status: int = 0  # the status that blocks pushing now; 0 when none does
    tls_errors: int = 0  # pushes that failed in the TLS handshake (an untrusted certificate ...)
    splits: int = 0  # batches halved after a 413
    push_thread_up: int = 1  # 0 once the runner finds the push thread dead or hung
    collector_errors: int = 0
    collectors_failing: int = 0  # collectors whose last collection failed (each logged once)
    statsd_packets: int = 0
    statsd_malformed: int = 0
    statsd_tags_dropped: int = 0  # unbounded-looking tags left out of names
    names_refused: int = 0  # samples refused because max_metric_names was reached
    names_known: int = 0  # distinct metric names admitted so far
    last_push: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def pushed_ok(self, snapshots: int) -> None:
        with self._lock:
            self.pushed += snapshots
            self.last_push = self.clock()

    def push_age(self) -> float:
        """Seconds since the last acknowledged push (since start when there was none yet)."""
        return max(
            0.0, self.clock() - (self.last_push if self.last_push is not None else self.started)
        )
