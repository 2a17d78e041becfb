"""The one retry helper, modelled on OpenTelemetry's OTLP exporter: ``2**n`` backoff from an
initial delay up to a cap, with jitter, a deadline, ``Retry-After`` honoured, and waits on an
Event so that shutdown interrupts them. Clock and randomness are injected, so tests never sleep.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["Backoff", "RetryableError", "call_with_retry"]

T = TypeVar("T")


class RetryableError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Backoff:
    """Delays of ``initial * 2**n`` capped at ``cap``, each scaled by a factor drawn
    uniformly from ``[1 - jitter, 1 + jitter]`` (still capped). A ``Retry-After`` hint wins
    when it is longer than the computed delay."""

    initial: float = 0.010
    cap: float = 30.0
    jitter: float = 0.2
    rand: Callable[[], float] = random.random
    attempt: int = field(default=0, init=False)

    def next_delay(self, retry_after: float | None = None) -> float:
        base = min(self.cap, self.initial * (2 ** min(self.attempt, 60)))
        self.attempt += 1
        delay = min(self.cap, base * (1 - self.jitter + 2 * self.jitter * self.rand()))
        if retry_after is not None and retry_after > delay:
            return retry_after
        return delay

    def reset(self) -> None:
        self.attempt = 0


def call_with_retry(
    call: Callable[[], T],
    *,
    deadline_s: float,
    backoff: Backoff | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    transient: Callable[[BaseException], bool] | None = None,
) -> T:
    """Calls ``call`` until it returns, raising the last failure when the next wait would pass
    the deadline or ``stop`` is set. A :class:`RetryableError` is retried, and so is any
    exception ``transient`` says is (a storage timeout, say: the caller's classifier, so that a
    deterministic refusal is never retried as if it were transient). Others propagate at once."""
    backoff = backoff or Backoff()
    stop = stop or threading.Event()
    give_up_at = clock() + deadline_s
    while True:
        try:
            return call()
        except Exception as exc:
            if not isinstance(exc, RetryableError) and not (transient and transient(exc)):
                raise
            hint = exc.retry_after if isinstance(exc, RetryableError) else None
            delay = backoff.next_delay(hint)
            if clock() + delay > give_up_at or stop.wait(delay):
                raise
