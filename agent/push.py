"""Pushes spooled snapshots to the ingest: oldest first, gzip'd, many per request when there
is a backlog, at a bounded rate, with exponential backoff (apm.retry.Backoff) on failure.

What each answer does to the batch is agent.answers' rule: delivered, retried, split (413),
set aside (422), or kept while the agent is blocked by its configuration (401, 404, 3xx ...).
Collection never waits for this: it runs on its own thread and only reads the spool. The thread
survives anything a server sends, and beats a heartbeat (``beat``) that the runner watches.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent.answers import Action, classify, rejected_by_index, retry_after_seconds
from agent.http import HttpClient, HttpResponse
from agent.rejected import RejectedFile
from agent.spool import Spool
from agent.stats import AgentStats
from agent.tls import TlsRefused, describe_error
from apm.retry import Backoff

__all__ = ["BEAT_S", "BLOCKED_MIN_DELAY_S", "Pusher", "retry_after_seconds"]

log = logging.getLogger(__name__)
# A configuration error backs off from 1 s, doubling to the backoff cap.
BLOCKED_MIN_DELAY_S = 1.0
# Longest single wait of the push loop, so that its heartbeat stays fresh during long backoffs.
BEAT_S = 1.0


class Pusher:
    def __init__(
        self,
        spool: Spool,
        client: HttpClient,
        url: str,
        api_key: str,
        backoff: Backoff,
        stats: AgentStats,
        *,
        timeout_s: float = 10.0,
        max_snapshots: int = 300,
        max_bytes: int = 1024 * 1024,
        drain_rate: float = 200.0,
        retry_after_cap_s: float = 120.0,
        rejected_path: Path | None = None,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spool = spool
        self.client = client
        self.url = url
        self.backoff = backoff
        self.stats = stats
        self.timeout_s = timeout_s
        self.max_snapshots = max_snapshots
        self.max_bytes = max_bytes
        self.drain_rate = drain_rate
        self.retry_after_cap_s = retry_after_cap_s
        self.rejected = RejectedFile(rejected_path)
        self.wall_clock = wall_clock
        self.monotonic = monotonic
        self.beat = monotonic()
        # A configuration error has its own schedule, from 1 s: it does not go away in 10 ms.
        self._blocked_backoff = Backoff(
            BLOCKED_MIN_DELAY_S, max(backoff.cap, BLOCKED_MIN_DELAY_S), backoff.jitter, backoff.rand
        )
        self._limit = max_snapshots  # lowered by a 413 until the backlog is through
        self.headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    @property
    def max_wait_s(self) -> float:
        """The longest delay the loop ever waits: a capped, jittered hint or the backoff cap."""
        return max(self.backoff.cap, self.retry_after_cap_s * (1 + self.backoff.jitter))

    def push_once(self) -> float | None:
        """One request at most. Returns how long to wait before the next one, or None when the
        spool is empty (wait for the next snapshot)."""
        batch = self.spool.peek(self._limit, self.max_bytes)
        if not batch:
            return None
        body = gzip.compress(b'{"snapshots":[' + b",".join(batch) + b"]}", compresslevel=5)
        try:
            response = self.client.post(self.url, body, self.headers, self.timeout_s)
        except (ssl.SSLError, TlsRefused) as exc:
            return self._tls_failed(exc, len(batch))
        except OSError as exc:
            return self._retry(f"ingest unreachable: {exc}", None, len(batch))
        action = classify(response.status, len(batch))
        if action is not Action.BLOCKED and self.stats.blocked_status:
            log.warning(
                "ingest answers %d: pushing resumes (%d snapshots waiting)",
                response.status,
                self.spool.depth,
            )
            self.stats.blocked_status = 0
        if action is not Action.BLOCKED:
            self._blocked_backoff.reset()
        if action is Action.DELIVERED:
            return self._delivered(batch, response)
        why = f"ingest answered {response.status}: {_detail(response)}"
        if action is Action.RETRY:
            return self._retry(why, self._hint(response), len(batch))
        if action is Action.SPLIT:
            self._limit = max(1, len(batch) // 2)
            self.stats.add("splits")
            log.warning("%s; sending batches of %d snapshots at most", why, self._limit)
            return 0.0
        if action is Action.REFUSED:
            reason = _reason(response)
            self._set_aside([(record, reason) for record in batch], response.status)
            self.spool.ack(len(batch))
            self.backoff.reset()
            return 0.0
        return self._blocked(why, response, len(batch))

    def _delivered(self, batch: list[bytes], response: HttpResponse) -> float:
        refused = rejected_by_index(response.body, len(batch))
        if refused:
            self._set_aside([(batch[i], reason) for i, reason in sorted(refused.items())], 422)
        self.spool.ack(len(batch))
        self.backoff.reset()
        self.stats.pushed_ok(len(batch) - len(refused))
        if not self.spool.depth:
            self._limit = self.max_snapshots
        # Catching up: pace the backlog so that a fleet coming back does not swamp the ingest.
        return len(batch) / self.drain_rate if self.spool.depth else 0.0

    def _hint(self, response: HttpResponse) -> float | None:
        hint = retry_after_seconds(
            response.headers.get("retry-after"), self.wall_clock(), self.retry_after_cap_s
        )
        if hint is None:
            return None
        # Every agent got the same hint at the same moment: spread them, never before it ends.
        return hint * (1 + self.backoff.jitter * self.backoff.rand())

    def _retry(self, why: str, retry_after: float | None, size: int) -> float:
        delay = self.backoff.next_delay(retry_after)
        self.stats.add("retries")
        log.warning(
            "push of %d snapshots failed (%s); retry #%d in %.3fs",
            size,
            why,
            self.backoff.attempt,
            delay,
        )
        return delay

    def _blocked(self, why: str, response: HttpResponse, size: int) -> float:
        self.stats.add("blocked")
        self.stats.blocked_status = response.status
        delay = min(self.max_wait_s, self._blocked_backoff.next_delay(self._hint(response)))
        location = response.headers.get("location")
        log.error(
            "push blocked: %s%s. This is a configuration problem (ingest_url, api_key, a proxy), "
            "not a verdict on the data: the spool keeps all %d snapshots (this batch: %d); "
            "trying again in %.1fs",
            why,
            f" (redirected to {location[:200]}; set ingest_url to the final URL)"
            if location
            else "",
            self.spool.depth,
            size,
            delay,
        )
        return delay

    def _tls_failed(self, exc: OSError, size: int) -> float:
        """A certificate the agent does not trust, or one the ingest does not: a configuration
        problem, retried on the blocked schedule (from 1 s) until the CA file or the settings
        are fixed; nothing leaves the spool."""
        self.stats.add("tls_errors")
        delay = min(self.max_wait_s, self._blocked_backoff.next_delay())
        log.error(
            "push failed: %s. The spool keeps all %d snapshots (this batch: %d); "
            "trying again in %.1fs",
            describe_error(exc, urlsplit(self.url).netloc),
            self.spool.depth,
            size,
            delay,
        )
        return delay

    def _set_aside(self, entries: list[tuple[bytes, dict[str, Any]]], status: int) -> None:
        log.error(
            "ingest refused %d snapshots for good with %d: %s; set aside in %s",
            len(entries),
            status,
            entries[0][1],
            self.rejected.path,
        )
        self.rejected.write(entries, status, self.wall_clock())
        self.stats.add("rejected", len(entries))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.step(stop)

    def step(self, stop: threading.Event) -> None:
        """One turn of the loop: a push, then its wait. Nothing a server sends, and no bug in
        here, may end the thread: the spool keeps everything, so retrying is always safe."""
        self.beat = self.monotonic()
        try:
            delay = self.push_once()
        except Exception:
            log.exception("push failed unexpectedly")
            delay = self.backoff.next_delay()
        try:
            if delay is None:
                self.spool.wait(0.5)
            else:
                self._wait(stop, delay)
        except Exception:
            log.exception("push wait failed unexpectedly")
            stop.wait(BEAT_S)

    def _wait(self, stop: threading.Event, delay: float) -> None:
        delay = min(delay, self.max_wait_s) if not math.isnan(delay) else self.max_wait_s
        end = self.monotonic() + max(0.0, delay)
        while (left := end - self.monotonic()) > 0:
            self.beat = self.monotonic()
            if stop.wait(min(left, BEAT_S)):
                return


def _detail(response: HttpResponse) -> str:
    return response.body[:300].decode("utf-8", "replace")


def _reason(response: HttpResponse) -> dict[str, Any]:
    """The ingest's error body (``{"error", "detail", "at"}``) if it is one, else its text."""
    try:
        doc = json.loads(response.body[:65536])
    except (ValueError, RecursionError):
        doc = None
    return doc if isinstance(doc, dict) else {"detail": _detail(response)}
