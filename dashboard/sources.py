"""Live facts the dashboard reads besides storage: which metric topics exist in Kafka, and the
ingest's counters scraped from its Prometheus endpoint(s)."""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from apm.kafka import new_admin
from apm.model import metric_for_topic

__all__ = ["IngestCounters", "IngestNames", "KafkaTopics", "PrometheusScraper", "parse_ingest"]

log = logging.getLogger(__name__)


class KafkaTopics:
    """Metric names that have a topic, cached briefly so page loads do not hammer the broker."""

    def __init__(
        self, bootstrap: str, cache_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._bootstrap = bootstrap
        self._cache_s = cache_s
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, list[str]] | None = None
        self._admin: Any = None

    def metrics(self) -> list[str]:
        with self._lock:
            if self._cached and self._clock() - self._cached[0] < self._cache_s:
                return self._cached[1]
            try:
                topics = self._list_topics()
            except Exception as exc:  # kafka-python raises its own error tree; all mean down
                self._admin = None
                raise OSError(f"Kafka at {self._bootstrap} unreachable: {exc}") from exc
            names = sorted(m for t in topics if (m := metric_for_topic(t)))
            self._cached = (self._clock(), names)
            return names

    def _list_topics(self) -> list[str]:
        if self._admin is None:
            self._admin = new_admin(self._bootstrap, "apm-dashboard", request_timeout_ms=5000)
        return list(self._admin.list_topics())


class IngestCounters(dict[str, object]):
    """One endpoint's reading: url, ok, error, accepted_total, rejected_by_reason (totals),
    accepted_per_s, rejected_per_s_by_reason (None until a second scrape gives a rate)."""


@dataclass(frozen=True)
class IngestNames:
    """Which counters and labels to read (DashboardSettings.ingest_*), without ``_total``."""

    samples: str = "apm_ingest_samples"
    requests: str = "apm_ingest_requests"
    outcome_label: str = "outcome"
    reason_label: str = "reason"


def parse_ingest(text: str, names: IngestNames) -> tuple[float, dict[str, float]]:
    """From Prometheus text: accepted samples in total, and rejected requests per reason."""
    accepted_total = 0.0
    by_reason: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        name = family.name.removesuffix("_total")
        if name not in (names.samples, names.requests):
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue  # the _created series of counters
            outcome = sample.labels.get(names.outcome_label)
            if name == names.samples and outcome == "accepted":
                accepted_total += sample.value
            elif name == names.requests and outcome == "rejected":
                reason = sample.labels.get(names.reason_label, "unknown")
                by_reason[reason] = by_reason.get(reason, 0.0) + sample.value
    return accepted_total, by_reason


class PrometheusScraper:
    """Scrapes each ingest endpoint and derives rates from the previous scrape of it."""

    def __init__(
        self,
        urls: Sequence[str],
        names: IngestNames,
        timeout_s: float = 2.0,
        fetch: Callable[[str, float], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._urls = list(urls)
        self._names = names
        self._timeout = timeout_s
        self._fetch = fetch or _http_get
        self._clock = clock
        self._lock = threading.Lock()
        self._previous: dict[str, tuple[float, float, dict[str, float]]] = {}

    def scrape(self) -> list[Mapping[str, object]]:
        return [self._one(url) for url in self._urls]

    def _one(self, url: str) -> IngestCounters:
        out = IngestCounters(
            url=url,
            ok=False,
            error=None,
            accepted_total=None,
            rejected_by_reason={},
            accepted_per_s=None,
            rejected_per_s_by_reason={},
        )
        try:
            accepted, by_reason = parse_ingest(self._fetch(url, self._timeout), self._names)
        except (OSError, ValueError) as exc:
            out["error"] = str(exc)
            return out
        now = self._clock()
        out.update(ok=True, accepted_total=accepted, rejected_by_reason=by_reason)
        with self._lock:
            prev = self._previous.get(url)
            self._previous[url] = (now, accepted, by_reason)
        if prev and now > prev[0] and accepted >= prev[1]:  # a restart resets counters
            dt = now - prev[0]
            out["accepted_per_s"] = (accepted - prev[1]) / dt
            out["rejected_per_s_by_reason"] = {
                r: max(0.0, (v - prev[2].get(r, 0.0)) / dt) for r, v in by_reason.items()
            }
        return out


def _http_get(url: str, timeout_s: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # a configured URL
        data: bytes = response.read()
    return data.decode("utf-8", errors="replace")
