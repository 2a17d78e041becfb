"""What answering a query from storage needs, one object for both evaluators
(:class:`~.run.Evaluator` for selectors, :class:`~.promql_run.PromqlRunner` for
expressions): the repository, the API's limits, the guard every storage call goes through
(its telemetry and its errors as 503), and the counter of points answered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dashboard.ports import QueryRepository
from dashboard.promapi.alert_range import Guard
from dashboard.promapi.settings import PromApiSettings

__all__ = ["Store"]


@dataclass(frozen=True)
class Store:
    repo: QueryRepository
    limits: PromApiSettings
    guard: Guard
    on_points: Callable[[int], None]
