"""Pushes spooled snapshots to the ingest: oldest first, gzip'd, many per request when there
is a backlog, at a bounded rate, with exponential backoff (apm.retry.Backoff) on failure.

Collection never waits for this: it runs on its own thread and only reads the spool.
"""

from __future__ import annotations

import email.utils
import gzip
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agent.http import HttpClient, HttpResponse
from agent.spool import Spool
from agent.stats import AgentStats
from apm.retry import Backoff

__all__ = ["Pusher", "retry_after_seconds"]

log = logging.getLogger(__name__)
_RETRIED_4XX = {408, 429}
# The rejected-batch file is for a person to read, so it stays bounded.
_REJECTED_MAX_BYTES = 10 * 1024 * 1024


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from ``now``."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


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
        timeout_s: float = 5.0,
        max_snapshots: int = 300,
        max_bytes: int = 1024 * 1024,
        drain_rate: float = 200.0,
        rejected_path: Path | None = None,
        wall_clock: Callable[[], float] = time.time,
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
        self.rejected_path = rejected_path
        self.wall_clock = wall_clock
        self.headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def push_once(self) -> float | None:
        """One request at most. Returns how long to wait before the next one, or None when the
        spool is empty (wait for the next snapshot)."""
        batch = self.spool.peek(self.max_snapshots, self.max_bytes)
        if not batch:
            return None
        body = gzip.compress(b'{"snapshots":[' + b",".join(batch) + b"]}", compresslevel=5)
        try:
            response = self.client.post(self.url, body, self.headers, self.timeout_s)
        except OSError as exc:
            return self._retry(f"ingest unreachable: {exc}", None, len(batch))
        if 200 <= response.status < 300:
            self.spool.ack(len(batch))
            self.backoff.reset()
            self.stats.pushed_ok(len(batch))
            # Catching up: pace the backlog so that a fleet coming back does not swamp the ingest.
            return len(batch) / self.drain_rate if self.spool.depth else 0.0
        if response.status >= 500 or response.status in _RETRIED_4XX:
            hint = retry_after_seconds(response.headers.get("retry-after"), self.wall_clock())
            return self._retry(
                f"ingest answered {response.status}: {_detail(response)}", hint, len(batch)
            )
        self._set_aside(batch, response)
        return 0.0

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

    def _set_aside(self, batch: list[bytes], response: HttpResponse) -> None:
        log.error(
            "ingest refused %d snapshots for good with %d: %s; set aside in %s",
            len(batch),
            response.status,
            _detail(response),
            self.rejected_path,
        )
        if self.rejected_path is not None:
            try:
                if (
                    self.rejected_path.exists()
                    and self.rejected_path.stat().st_size > _REJECTED_MAX_BYTES
                ):
                    self.rejected_path.replace(self.rejected_path.with_suffix(".old"))
                with open(self.rejected_path, "ab") as handle:
                    handle.write(b"\n".join(batch) + b"\n")
            except OSError as exc:
                log.error("cannot write %s: %s", self.rejected_path, exc)
        self.spool.ack(len(batch))
        self.stats.add("rejected", len(batch))
        self.backoff.reset()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                delay = self.push_once()
            except Exception:  # never let the push thread die: the spool keeps everything
                log.exception("push failed unexpectedly")
                delay = self.backoff.next_delay()
            if delay is None:
                self.spool.wait(0.5)
            elif delay > 0:
                stop.wait(delay)


def _detail(response: HttpResponse) -> str:
    return response.body[:300].decode("utf-8", "replace")
