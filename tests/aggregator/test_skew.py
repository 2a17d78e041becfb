"""Samples ahead of their arrival and backlogs older than the lateness (issue 14 item 11):
counted per metric, published in the job's status, shown by `apm aggregator status` and on
the health page. Unit tests; the Spark side is in test_poison.py (integration)."""

from __future__ import annotations

import time

import pytest

from aggregator.job import Aggregator
from aggregator.settings import AggregatorSettings
from aggregator.skew import SetAside
from tests.aggregator.conftest import FakeStore

pytestmark = pytest.mark.unit


def test_set_aside_counts_per_metric_and_reason_and_tells_the_counter():
    told = []
    counts = SetAside(lambda m, r, n: told.append((m, r, n)))
    counts.add(
        [{"metric": "cpu", "future": 3, "backlog": 0}, {"metric": "mem", "future": 0, "backlog": 0}]
    )
    counts.add([{"metric": "cpu", "future": 1, "backlog": 5}])
    assert counts.by_metric == {"cpu": {"future": 4, "backlog": 5}}
    assert counts.totals() == {"future": 4, "backlog": 5}
    assert told == [("cpu", "future", 3), ("cpu", "future", 1), ("cpu", "backlog", 5)]


def test_the_status_the_cli_and_the_health_page_show_set_aside_samples_per_metric(tmp_path):
    # Fails before: backlogs were dropped as late with one total, no metric named anywhere.
    from aggregator.status import _job, render
    from dashboard.health import build_health
    from dashboard.pages.health import render as page

    store = FakeStore()
    job = Aggregator(None, store, AggregatorSettings(checkpoint_dir=tmp_path))  # type: ignore[arg-type]
    job.set_aside.add([{"metric": "cpu.util", "future": 2, "backlog": 7200}])
    payload = job.publish_status()
    assert payload["set_aside"] == {"cpu.util": {"future": 2, "backlog": 7200}}
    assert job.telemetry.set_aside.labels("cpu.util", "backlog")._value.get() == 7200

    now = time.time()
    published = {**store.status["aggregator"], "updated_at": now}
    row = _job("aggregator", published, AggregatorSettings(checkpoint_dir=tmp_path), None, now)
    text = render([row])
    assert "cpu.util" in text and "too late 7200" in text and "ahead 2" in text
    assert "set_aside_total: {'future': 2, 'backlog': 7200}" in text

    view = build_health(
        {"aggregator": published, "aggregator-shard-0-of-2": published}, {}, [], now, 60
    )
    assert view.set_aside == {"cpu.util": {"future": 4, "backlog": 14400}}
    html = str(page(view))
    assert "h-set-aside" in html and "14,400" in html
