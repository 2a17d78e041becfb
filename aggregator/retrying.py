"""The aggregator's storage calls with transient failures retried: every call of
:class:`aggregator.store.AggregatorStore` goes through :func:`apm.retry.call_with_retry` with
``storage.errors.is_transient`` as its classifier (backoff with jitter up to a cap, a
deadline, and a stop event that interrupts the waits on shutdown).

A deterministic failure (Cassandra's ``InvalidRequest``, a value the repository refuses)
propagates at once: sending it again gives the same answer. A transient one still failing at
the deadline propagates too; the job then restarts the stream from its checkpoint with a
backoff (``aggregator.job``), so a batch whose results were not written is replayed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from aggregator.store import AggregatorStore
from apm.query import StoredQuery, WindowResult
from apm.retry import Backoff, call_with_retry
from storage.errors import is_transient

__all__ = ["RetryingStore", "write_results"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class RetryingStore:
    """An AggregatorStore whose calls retry transient failures for ``deadline_s`` seconds.
    ``retried`` is told the call's name at every retry (the job counts them on /metrics)."""

    def __init__(
        self,
        store: AggregatorStore,
        deadline_s: float = 60.0,
        *,
        stop: threading.Event | None = None,
        retried: Callable[[str], None] = lambda call: None,
        backoff: Callable[[], Backoff] = lambda: Backoff(initial=0.1, cap=5.0),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner, self.deadline_s = store, deadline_s
        self.stop = stop or threading.Event()
        self._retried, self._backoff, self._clock = retried, backoff, clock

    def _call(self, name: str, call: Callable[[], T]) -> T:
        def attempt() -> T:
            try:
                return call()
            except Exception as exc:
                if is_transient(exc):
                    log.warning("storage: %s failed, retrying: %r", name, exc)
                    self._retried(name)
                raise

        return call_with_retry(
            attempt,
            deadline_s=self.deadline_s,
            backoff=self._backoff(),
            stop=self.stop,
            clock=self._clock,
            transient=is_transient,
        )

    def retry(self, name: str, call: Callable[[], T]) -> T:
        """Another storage call of the job (the rollup tiers'), retried alike."""
        return self._call(name, call)

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        return self._call("list_queries", lambda: self.inner.list_queries(include_paused))

    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        batch = list(rows)  # a retry must see the same rows
        return self._call("upsert_results", lambda: self.inner.upsert_results(batch))

    def touch_servers(self, last_seen: Mapping[str, float]) -> None:
        self._call("touch_servers", lambda: self.inner.touch_servers(last_seen))

    def touch_metrics(self, last_seen: Mapping[str, float]) -> None:
        self._call("touch_metrics", lambda: self.inner.touch_metrics(last_seen))

    def put_status(self, component: str, payload: Mapping[str, object]) -> None:
        self._call("put_status", lambda: self.inner.put_status(component, payload))

    def get_status(self) -> dict[str, dict]:
        return self._call("get_status", self.inner.get_status)


def write_results(
    store: AggregatorStore,
    results: list[WindowResult],
    refused: Callable[[WindowResult], None] = lambda row: None,
) -> int:
    """Upserts a batch's results; returns the number written. A batch refused for a
    deterministic reason is written row by row and each refused row is set aside: logged and
    told to ``refused``. Raising would fail the same batch again on every replay and stop the
    job for good. A transient failure (at the store's deadline) propagates, so the batch is
    not committed and is replayed when the stream starts again."""
    try:
        return store.upsert_results(results)
    except Exception as exc:
        if is_transient(exc):
            raise
        log.error("storage refused %d results (%r): writing them one by one", len(results), exc)
    written = 0
    for row in results:
        try:
            written += store.upsert_results([row])
        except Exception as one:
            if is_transient(one):
                raise
            refused(row)
            log.error("storage refused a result, set aside: %r (%r)", row, one)
    return written
