"""What the dashboard needs from the outside world, as Protocols, so that pages and the API are
built with the real storage repository, Kafka and ingest scrapes, or with fakes in unit tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from apm.query import StoredQuery, WindowResult
from apm.ranking import Ranked

__all__ = ["AgentVersions", "IngestScraper", "QueryRepository", "TopicSource"]


class QueryRepository(Protocol):
    """The subset of ``storage.repository.Repository`` the dashboard reads and writes."""

    def save_query(self, text: str) -> StoredQuery: ...
    def get_query(self, query_id: str) -> StoredQuery | None: ...
    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]: ...
    def update_query(self, query_id: str, text: str) -> StoredQuery: ...
    def set_paused(self, query_id: str, paused: bool) -> StoredQuery: ...
    def delete_query(self, query_id: str) -> bool: ...
    def read_results(
        self,
        query_id: str,
        start: float,
        end: float,
        page_size: int = 5000,
        tier: str | None = None,
    ) -> Iterator[WindowResult]:
        """The query's windows in [start, end), ascending; with ``tier`` its rollup rows."""
        ...

    def read_results_at(self, query_id: str, starts: Sequence[float]) -> Iterator[WindowResult]:
        """The windows that start exactly at ``starts`` (epoch seconds), ascending."""
        ...

    def last_result_at(self, query_id: str) -> float | None: ...
    def read_server_results(
        self, query_id: str, server: str, start: float, end: float
    ) -> Iterator[WindowResult]:
        """One server's series of a ``BY server`` query, ascending, windows in [start, end)."""
        ...

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        """Every server's result of one window of a ``BY server`` query."""
        ...

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        """The servers with per-server results of the query in [start, end), sorted."""
        ...

    def read_ranked(self, query_id: str, start: float, end: float) -> Iterator[Ranked]:
        """Every window's ranking in [start, end), by window_start then rank."""
        ...

    def list_servers(self) -> dict[str, float]: ...
    def list_metrics(self) -> dict[str, float]:
        """metric -> epoch seconds of its newest sample that some aggregator job read."""
        ...

    def get_status(self) -> dict[str, dict]:
        """component -> its published payload plus ``updated_at`` (epoch seconds)."""
        ...


class TopicSource(Protocol):
    def metrics(self) -> list[str]:
        """The metrics that have a topic in Kafka, sorted; raises OSError when unreachable."""
        ...


class AgentVersions(Protocol):
    def versions(self) -> Mapping[str, Any]:
        """server -> its agent's newest reported version (``dashboard.agents.AgentSeen``);
        raises OSError when the source cannot be read."""
        ...


class IngestScraper(Protocol):
    def scrape(self) -> list[Mapping[str, object]]:
        """One entry per ingest endpoint: url, ok, error, accepted_total, rejected_by_reason,
        accepted_per_s, rejected_per_s (rates from the previous scrape, None on the first)."""
        ...
