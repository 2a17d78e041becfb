"""What every page and the API share: settings, the ports to the outside, the dashboard's
telemetry (``metrics``) and a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dashboard.cache import ResultCache
from dashboard.ports import AgentVersions, IngestScraper, QueryRepository, TopicSource
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry

__all__ = ["AppContext"]


@dataclass
class AppContext:
    settings: DashboardSettings
    repo: QueryRepository
    topics: TopicSource
    scraper: IngestScraper
    metrics: DashboardTelemetry = field(default_factory=DashboardTelemetry)
    clock: Callable[[], float] = time.time
    cache: ResultCache | None = None
    agents: AgentVersions | None = None  # the health page's Agents card (none: not shown)

    def __post_init__(self) -> None:
        if self.cache is None:
            self.cache = ResultCache(
                self.repo, self.settings.reread_seconds, self.settings.full_refresh_seconds
            )
