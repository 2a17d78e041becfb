"""Sends ticks through the real ingest contract over many concurrent connections.

asyncio paces the ticks and bounds what is in flight; each request runs on a worker thread
with a shared ``httpx.Client`` (one pooled connection per worker), inside
:func:`apm.retry.call_with_retry`, so 503/429 with ``Retry-After`` and refused connections are
retried by the project's one retry helper.
"""

from __future__ import annotations

import logging
import threading
import time

import httpx

from apm.retry import Backoff, RetryableError, call_with_retry
from apm.tls import client_context
from loadgen.fleet import Fleet, Tick
from loadgen.inflight import BoundedExecutor
from loadgen.payload import Batch, Request, build_request, split_tick, stamp, template
from loadgen.settings import LoadgenSettings
from loadgen.stats import Stats

__all__ = ["HttpSink", "retry_after_seconds"]

log = logging.getLogger("loadgen.http")
_RETRY_STATUSES = (429, 503)
# Sent but unanswered: the ingest may have published it, so a retry may duplicate (at least once).
_AMBIGUOUS = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError, httpx.ReadError)
# Never reached the server: retrying duplicates nothing.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def retry_after_seconds(value: str | None) -> float | None:
    """The delay-seconds form of ``Retry-After``; the HTTP-date form is not used by the ingest."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
        code = body.get("error") if isinstance(body, dict) else None
    except ValueError:
        code = None
    return f"{response.status_code}:{code}" if code else f"http_{response.status_code}"


class HttpSink:
    def __init__(
        self,
        settings: LoadgenSettings,
        fleet: Fleet,
        stats: Stats,
        *,
        client: httpx.Client | None = None,
        stop: threading.Event | None = None,
        backoff_initial_s: float = 0.05,
        backoff_cap_s: float = 5.0,
    ) -> None:
        self.settings, self.fleet, self.stats = settings, fleet, stats
        self.url = settings.url
        self.stop = stop or threading.Event()
        limits = httpx.Limits(
            max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency
        )
        self._own_client = client is None
        # A private CA (tls_ca) replaces the roots; without it httpx's defaults, as before.
        verify = client_context(settings.tls_ca) if settings.tls_ca is not None else True
        self.client = client or httpx.Client(
            timeout=settings.request_timeout_s, limits=limits, verify=verify
        )
        self._work = BoundedExecutor(settings.concurrency, settings.concurrency, "loadgen-http")
        self._backoff = (backoff_initial_s, backoff_cap_s)
        self._logged: set[str] = set()
        # Replay mode: each (second of the cycle, batch) encoded once, at a placeholder time.
        self._templates: dict[tuple[int, int], Request] = {}

    async def submit(self, tick: Tick) -> None:
        """Queues the tick's requests, waiting while ``concurrency`` requests are in flight."""
        batches = split_tick(tick, self.settings.servers_per_request)
        for number, batch in enumerate(batches):
            key = None if tick.replay_index is None else (tick.replay_index, number)
            await self._work.submit(self._send, batch, key)

    async def drain(self) -> None:
        await self._work.drain()

    def close(self) -> None:
        self._work.shutdown()
        if self._own_client:
            self.client.close()

    def _request(self, batch: Batch, key: tuple[int, int] | None) -> Request:
        names, metrics, api_key = self.fleet.names, self.fleet.metric_names, self.settings.api_key
        tags = self.fleet.tags if self.settings.tags else None
        if key is None:
            return build_request(batch, names, metrics, api_key, self.settings.gzip_level, tags)
        plain = self._templates.get(key)
        if plain is None:  # two threads may both build it: the same bytes, no harm
            plain = self._templates[key] = template(batch, names, metrics, api_key, tags)
        return stamp(plain, batch.ts, self.settings.gzip_level)

    def _send(self, batch: Batch, key: tuple[int, int] | None = None) -> None:
        request = self._request(batch, key)
        self.stats.add(sent=request.samples, requests=1)
        attempts = 0

        def attempt() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                self.stats.add(retries=1)
            started = time.monotonic()
            try:
                response = self.client.post(self.url, content=request.body, headers=request.headers)
            except _UNSENT as exc:
                raise RetryableError(f"connect: {type(exc).__name__}") from exc
            except _AMBIGUOUS as exc:
                self.stats.add(ambiguous_retries=1)
                raise RetryableError(f"no answer: {type(exc).__name__}") from exc
            self.stats.latency(time.monotonic() - started)
            if response.status_code in _RETRY_STATUSES:
                raise RetryableError(
                    _reason(response), retry_after_seconds(response.headers.get("Retry-After"))
                )
            return response

        backoff = Backoff(initial=self._backoff[0], cap=self._backoff[1])
        try:
            response = call_with_retry(
                attempt, deadline_s=self.settings.retry_deadline_s, backoff=backoff, stop=self.stop
            )
        except RetryableError as exc:
            self.stats.error(f"gave up: {exc}", request.samples)
            return
        except httpx.HTTPError as exc:  # anything else the transport raised: not retried
            self.stats.error(f"transport: {type(exc).__name__}", request.samples)
            return
        if response.status_code in (200, 202):
            self._accepted(response, request.samples)
            return
        reason = _reason(response)
        if reason not in self._logged:  # say each distinct refusal once, with the server's words
            self._logged.add(reason)
            log.error("ingest refused a batch (%s): %s", reason, response.text[:300])
        self.stats.error(reason, request.samples, rejected=True)

    def _accepted(self, response: httpx.Response, samples: int) -> None:
        try:
            counted = response.json().get("accepted")
        except (ValueError, AttributeError):
            counted = None
        if counted is not None and counted != samples:
            # The contract says the count of accepted samples; a mismatch is a platform bug.
            self.stats.error(f"accepted {counted} of {samples}")
        self.stats.add(accepted=samples)
