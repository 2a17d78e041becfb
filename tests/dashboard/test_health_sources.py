"""The health model and the ingest scrape: pure logic with injected fetch and clock."""

from __future__ import annotations

import pytest

from dashboard.health import build_health
from dashboard.sources import IngestNames, PrometheusScraper, parse_ingest

pytestmark = pytest.mark.unit

EXPOSITION = """# HELP apm_ingest_samples_total samples
# TYPE apm_ingest_samples_total counter
apm_ingest_samples_total{{outcome="accepted",reason="ok"}} {accepted}
apm_ingest_samples_created{{outcome="accepted",reason="ok"}} 1.7e9
apm_ingest_samples_total{{outcome="rejected",reason="bad_value"}} 50
# HELP apm_ingest_requests_total requests
# TYPE apm_ingest_requests_total counter
apm_ingest_requests_total{{outcome="accepted",reason="ok"}} 12
apm_ingest_requests_total{{outcome="rejected",reason="bad_value"}} {bad}
apm_ingest_requests_total{{outcome="rejected",reason="too_old"}} 3
apm_ingest_requests_created{{outcome="rejected",reason="too_old"}} 1.7e9
# TYPE other_total counter
other_total 99
"""


def test_parse_ingest_sums_counters_by_reason() -> None:
    accepted, by_reason = parse_ingest(EXPOSITION.format(accepted=10, bad=4), IngestNames())
    assert accepted == 10
    assert by_reason == {"bad_value": 4, "too_old": 3}


def test_scraper_rates_come_from_consecutive_scrapes() -> None:
    pages = iter(
        [
            EXPOSITION.format(accepted=100, bad=4),
            EXPOSITION.format(accepted=300, bad=8),
            EXPOSITION.format(accepted=5, bad=0),
        ]
    )
    times = iter([10.0, 12.0, 14.0])
    scraper = PrometheusScraper(
        ["http://i/metrics"],
        IngestNames(),
        fetch=lambda url, timeout: next(pages),
        clock=lambda: next(times),
    )
    first = scraper.scrape()[0]
    assert first["ok"] and first["accepted_per_s"] is None
    second = scraper.scrape()[0]
    assert second["accepted_per_s"] == 100.0
    assert second["rejected_per_s_by_reason"] == {"bad_value": 2.0, "too_old": 0.0}
    restarted = scraper.scrape()[0]  # counters went down: the ingest restarted, no rate
    assert restarted["accepted_per_s"] is None and restarted["accepted_total"] == 5


def test_scraper_reports_an_unreachable_endpoint() -> None:
    def fail(url: str, timeout: float) -> str:
        raise OSError("connection refused")

    out = PrometheusScraper(["http://down/metrics"], IngestNames(), fetch=fail).scrape()
    assert out == [
        {
            "url": "http://down/metrics",
            "ok": False,
            "error": "connection refused",
            "accepted_total": None,
            "rejected_by_reason": {},
            "accepted_per_s": None,
            "rejected_per_s_by_reason": {},
        }
    ]


def test_health_view_splits_servers_and_reads_the_aggregator_status() -> None:
    status = {
        "aggregator": {
            "updated_at": 95.0,
            "batch_duration_s": 1.5,
            "freshness_s": 7,
            "consumer_lag": {"apm.metric.cpu": 10, "apm.metric.mem": 0},
            "late_samples": 4,
        }
    }
    servers = {"web-1": 99.0, "web-2": 40.0, "db-1": 10.0}
    view = build_health(status, servers, [], now=100.0, silent_after_s=30)
    [agg] = view.components
    assert (agg.age_s, agg.batch_duration_s, agg.freshness_s) == (5.0, 1.5, 7.0)
    assert agg.other == {"late_samples": 4}
    assert view.lag == {"apm.metric.cpu": 10, "apm.metric.mem": 0}
    assert [s.server for s in view.silent] == ["db-1", "web-2"]  # longest silent first
    assert [s.server for s in view.reporting] == ["web-1"]


def test_an_aggregator_jobs_scope_reads_and_liveness_are_read_apart() -> None:
    status = {
        "aggregator-shard-1-of-2": {
            "updated_at": 60.0,
            "scope": {"metrics": [], "shard": [1, 2]},
            "reads": ["cpu.util", "load.1"],
            "checkpoint": "/x",
            "identity": "a",
            "idle": False,
        }
    }
    [job] = build_health(status, {}, [], now=100.0, silent_after_s=30).components
    assert job.scope == "shard 1/2" and job.reads == ["cpu.util", "load.1"]
    assert job.other == {"idle": False}  # the long keys have columns of their own
    assert not job.live  # 40 s since it published: not running
    [job] = build_health(status, {}, [], now=70.0, silent_after_s=30).components
    assert job.live


def test_freshness_falls_back_to_the_watermark() -> None:
    status = {
        "agg": {"watermark": "1970-01-01T00:01:00.000Z", "lag": {"apm.metric.a": 3}, "lag_total": 3}
    }
    view = build_health(status, {}, [], now=100.0, silent_after_s=30)
    assert view.components[0].freshness_s == 40.0
    assert view.components[0].other == {"lag_total": 3, "watermark": "1970-01-01T00:01:00.000Z"}
    assert view.lag == {"apm.metric.a": 3}


def test_health_view_tolerates_unknown_or_odd_payloads() -> None:
    view = build_health({"x": {"batch_duration_s": "slow", "lag": "n/a"}}, {}, [], 0.0, 30)
    [x] = view.components
    assert x.batch_duration_s is None and x.age_s is None and x.other == {"lag": "n/a"}
    assert view.servers == [] and view.lag == {}
