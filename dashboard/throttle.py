"""Login throttling: token buckets per client address and for the whole process.

Every login attempt runs scrypt (tens of milliseconds of CPU), so an unthrottled ``/login`` lets
one client burn the dashboard's CPU and guess passwords as fast as it likes. An attempt first
takes a token from its client's bucket and from the global one; when either is empty the
answer is 429 with ``Retry-After`` and scrypt never runs. The clock is injected (tests never
sleep).

A Bearer token costs no scrypt, so only its failures take from the client's bucket
(:meth:`LoginThrottle.client_wait`, :meth:`LoginThrottle.failed`): a client whose bucket is
empty is refused before its token is compared, so guessing gets no answer at all while it
waits, and a right token never spends the budget. Not the global bucket: failures from many
addresses would then lock every API client out; guessing from many addresses is what the
token's 128-bit floor (:mod:`dashboard.settings`) answers.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LoginThrottle", "TokenBucket"]

# Client buckets remembered at most; past it, the full (idle) ones are forgotten first, and if
# all are busy the oldest go: a flood of addresses still meets the global bucket.
MAX_CLIENTS = 10_000


@dataclass
class TokenBucket:
    """``burst`` tokens at most, refilled at ``rate`` tokens a second."""

    burst: float
    rate: float
    tokens: float
    stamp: float

    def _refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self, now: float) -> float:
        """Seconds until one token is there (0 when one is there now)."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.burst


class LoginThrottle:
    """``check(client)`` is 0 when the attempt may go on (a token taken from both buckets), else
    the whole seconds to wait (the ``Retry-After``) and which bucket refused."""

    def __init__(
        self,
        client_burst: int,
        client_per_minute: float,
        global_burst: int,
        global_per_second: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_burst, self._client_rate = float(client_burst), client_per_minute / 60
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self._global = TokenBucket(float(global_burst), global_per_second, global_burst, now)
        self._clients: dict[str, TokenBucket] = {}

    def check(self, client: str) -> tuple[int, str | None]:
        with self._lock:
            now = self._clock()
            bucket = self._bucket(client, now)
            for name, b in (("client", bucket), ("global", self._global)):
                wait = b.wait(now)
                if wait > 0:
                    return max(1, math.ceil(wait)), name
            bucket.take()
            self._global.take()
            return 0, None

    def client_wait(self, client: str) -> int:
        """Whole seconds until ``client`` may try again (0: now); takes nothing."""
        with self._lock:
            now = self._clock()
            bucket = self._clients.get(client)
            wait = 0.0 if bucket is None else bucket.wait(now)
            return max(1, math.ceil(wait)) if wait > 0 else 0

    def failed(self, client: str) -> None:
        """A failed attempt that ran no hash: one token from ``client``'s bucket only."""
        with self._lock:
            now = self._clock()
            bucket = self._bucket(client, now)
            bucket.wait(now)  # refill first
            bucket.take()

    def _bucket(self, client: str, now: float) -> TokenBucket:
        bucket = self._clients.get(client)
        if bucket is None:
            self._forget(now)
            bucket = TokenBucket(self._client_burst, self._client_rate, self._client_burst, now)
            self._clients[client] = bucket
        return bucket

    def _forget(self, now: float) -> None:
        if len(self._clients) < MAX_CLIENTS:
            return
        self._clients = {k: b for k, b in self._clients.items() if not b.full(now)}
        while len(self._clients) >= MAX_CLIENTS:  # dicts keep insertion order: oldest first
            del self._clients[next(iter(self._clients))]
