"""Delivery from the durable outbox, one thread per receiver, so a receiver that is down or
hangs delays neither the evaluation nor the other receivers. At least once: a notice leaves the
outbox only after its receiver took it; a failed group is retried with ``apm.retry``'s backoff
within ``retry_deadline_s``, then again on the next pass, for as long as it takes. Each pass
sends everything waiting as one group (the alerts of one evaluation travel together)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from alerting.senders import Sender, SendRefused, describe
from alerting.telemetry import AlertingTelemetry
from apm.retry import Backoff, call_with_retry
from storage.alerts import OutboxRow

__all__ = ["Dispatcher", "Outbox"]

log = logging.getLogger(__name__)


class Outbox(Protocol):
    def pending(self, receiver: str, limit: int = 500) -> list[OutboxRow]: ...
    def delivered(self, receiver: str, ids: Any) -> None: ...


class Dispatcher:
    def __init__(
        self,
        outbox: Outbox,
        senders: list[Sender],
        telemetry: AlertingTelemetry,
        *,
        retry_deadline_s: float,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.outbox, self.senders, self.telemetry = outbox, senders, telemetry
        self.retry_deadline_s, self.interval_s, self.clock = retry_deadline_s, interval_s, clock
        self.active = active  # False on a standby evaluator: only the lease holder sends
        self.stop = threading.Event()
        self.wakes = {s.name: threading.Event() for s in senders}
        self.threads: list[threading.Thread] = []

    def pass_once(self, sender: Sender) -> int:
        """Sends what waits for ``sender``; returns how many notices left the outbox."""
        rows = sorted(self.outbox.pending(sender.name), key=lambda r: r.id)
        self.telemetry.outbox.labels(sender.name).set(len(rows))
        if not rows:
            return 0
        attempts = 0

        def send() -> None:
            nonlocal attempts
            if attempts:
                self.telemetry.failures.labels(sender.name).inc()
            attempts += 1
            sender.send([r.body for r in rows], self.clock())

        try:
            call_with_retry(
                send,
                deadline_s=self.retry_deadline_s,
                backoff=Backoff(initial=0.5, cap=10.0),
                stop=self.stop,
            )
            self.telemetry.sent.labels(sender.name).inc(len(rows))
        except SendRefused as exc:
            log.error(
                "%s refused %d notices for good, dropped: %s", sender.name, len(rows), describe(exc)
            )
            self.telemetry.refused.labels(sender.name).inc(len(rows))
        except Exception as exc:  # still failing at the deadline: kept, retried next pass
            self.telemetry.failures.labels(sender.name).inc()
            log.warning(
                "%s: %d notices not delivered yet: %s", sender.name, len(rows), describe(exc)
            )
            return 0
        self.outbox.delivered(sender.name, [r.id for r in rows])
        self.telemetry.outbox.labels(sender.name).set(0)
        return len(rows)

    def _loop(self, sender: Sender) -> None:
        while not self.stop.is_set():
            try:
                if self.active():
                    self.pass_once(sender)
            except Exception as exc:  # the outbox itself (Cassandra) is unreachable
                log.warning("%s outbox pass failed: %s", sender.name, exc)
            self.wakes[sender.name].wait(self.interval_s)
            self.wakes[sender.name].clear()

    def notify(self) -> None:
        """New notices are in the outbox: every receiver looks now rather than at its tick."""
        for event in self.wakes.values():
            event.set()

    def start(self) -> None:
        for sender in self.senders:
            t = threading.Thread(target=self._loop, args=(sender,), name=f"send-{sender.name}")
            t.daemon = True
            t.start()
            self.threads.append(t)

    def close(self) -> None:
        self.stop.set()
        self.notify()
        for t in self.threads:
            t.join(timeout=5)
