"""Each query's state and its reason (:mod:`apm.query_state`), for the queries page, the chart
page and the API alike: one read of the jobs' status rows and of the metrics' last samples per
render, plus each query's last result time (remembered briefly)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import NamedTuple

from apm.query import StoredQuery
from apm.query_state import QueryState, query_states
from dashboard.guard import guarded
from dashboard.ports import QueryRepository
from dashboard.telemetry import DashboardTelemetry

__all__ = ["Evaluated", "QueryStates"]


class Evaluated(NamedTuple):
    state: str  # one of apm.query_state.STATES
    reason: str
    last_result_at: float | None

    @property
    def query_state(self) -> QueryState:
        return QueryState(self.state, self.reason)


class QueryStates:
    """States of stored queries; every storage call goes through ``guarded`` (a failure is a
    StorageUnavailable: a banner on the pages, a 503 from the API).

    ``ttl_s``: how long a query's last result time is remembered. A query with no result yet
    makes storage search back through many day buckets, and the list refreshes every few
    seconds; 0 reads it every time."""

    def __init__(
        self,
        repo: QueryRepository,
        metrics: DashboardTelemetry,
        clock: Callable[[], float] = time.time,
        ttl_s: float = 10.0,
    ) -> None:
        self._repo, self._metrics, self._clock, self._ttl = repo, metrics, clock, ttl_s
        self._seen: dict[str, tuple[float, float | None]] = {}

    def last_result_at(self, query_id: str) -> float | None:
        now = time.monotonic()
        hit = self._seen.get(query_id)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        value = guarded(
            self._metrics, "last_result_at", partial(self._repo.last_result_at, query_id)
        )
        if self._ttl > 0:
            self._seen[query_id] = (now, value)
        return value

    def evaluate(self, queries: Iterable[StoredQuery]) -> dict[str, Evaluated]:
        """query id -> its state, reason and last result time."""
        wanted = list(queries)
        if not wanted:
            return {}
        status = guarded(self._metrics, "get_status", self._repo.get_status)
        seen = guarded(self._metrics, "list_metrics", self._repo.list_metrics)
        got = query_states(
            wanted,
            now=self._clock(),
            status=status,
            metrics_seen=seen,
            last_result_at=self.last_result_at,
        )
        out = {
            qid: Evaluated(state.state, state.reason, last) for qid, (state, last) in got.items()
        }
        if len(self._seen) > 4 * len(wanted) + 1000:  # deleted queries: forget them
            self._seen = {k: v for k, v in self._seen.items() if k in out}
        return out

    def one(self, query: StoredQuery) -> Evaluated:
        return self.evaluate([query])[query.id]
