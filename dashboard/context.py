"""What every page and the API share: settings, the ports to the outside, metrics and a clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dashboard.metrics import DashboardMetrics
from dashboard.ports import IngestScraper, QueryRepository, TopicSource
from dashboard.settings import DashboardSettings

__all__ = ["AppContext"]


@dataclass
class AppContext:
    settings: DashboardSettings
    repo: QueryRepository
    topics: TopicSource
    scraper: IngestScraper
    metrics: DashboardMetrics = field(default_factory=DashboardMetrics)
    clock: Callable[[], float] = time.time
