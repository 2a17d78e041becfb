"""What answering a query from storage needs, one object for both evaluators
(:class:`~.run.Evaluator` for selectors, :class:`~.promql_run.PromqlRunner` for
expressions): the repository, the API's limits, the guard every storage call goes through
(its telemetry and its errors as 503), and the counter of points answered; and
:class:`PromRepository`, the reads it makes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from apm.query import WindowResult
from dashboard.ports import QueryRepository
from dashboard.promapi.alert_range import Guard
from dashboard.promapi.settings import PromApiSettings

__all__ = ["PromRepository", "Store"]


class PromRepository(QueryRepository, Protocol):
    """The dashboard's repository plus the per-server reads of ``storage.repository.
    Repository`` (issue 26) the read API's ``server`` label needs; times are epoch seconds of
    window starts, ranges ``[start, end)``."""

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float
    ) -> Iterator[WindowResult]:
        """One server's windows of a ``BY server`` query, ascending by start."""
        ...

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        """Every server's result of one window of a ``BY server`` query, by server name."""
        ...

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        """The servers with results of a ``BY server`` query in the range, sorted."""
        ...


@dataclass(frozen=True)
class Store:
    repo: PromRepository
    limits: PromApiSettings
    guard: Guard
    on_points: Callable[[int], None]
