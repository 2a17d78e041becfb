"""The Prometheus read API served by the real dashboard (a real WSGI server) over real
Cassandra: windows written with the storage repository, across a UTC day (two partitions) and
with gaps, read back exactly, by plain HTTP and by a Prometheus API client from PyPI
(prometheus-api-client), with the dashboard's Bearer token and Basic credentials."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from apm.query import WindowResult
from tests.dashboard.conftest import PASSWORD, TOKEN, USER

pytestmark = pytest.mark.integration

FNS = ("max", "min", "p99")
GAPS = {7, 8, 150}


@pytest.fixture(scope="module")
def stored(repo: Any) -> tuple[str, int, list[WindowResult]]:
    """A 10 s query with 300 windows around the last UTC midnight, three of them missing."""
    query = repo.save_query("FROM * SELECT promread.cpu WINDOW 10s COMPUTE min, max, p99")
    base = int(time.time() // 86_400 * 86_400) - 1500
    now = time.time()
    rows = [
        WindowResult(
            query.id,
            float(base + 10 * i),
            10,
            {"min": i / 3, "max": i * 1e-7, "p99": 1e21 + i},  # every format case of a value
            5,
            now,
        )
        for i in range(300)
        if i not in GAPS
    ]
    repo.upsert_results(rows)
    return query.id, base, rows


def _expected(rows: list[WindowResult]) -> dict[str, list[tuple[float, float]]]:
    return {fn: [(w.window_start + 10, w.values[fn]) for w in rows] for fn in FNS}


def _points(result: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    return {r["metric"]["fn"]: [(float(t), float(v)) for t, v in r["values"]] for r in result}


def test_query_range_over_http_returns_exactly_the_stored_windows(
    served: Any, stored: tuple[str, int, list[WindowResult]]
) -> None:
    qid, base, rows = stored
    params = {
        "query": f'apm_query{{id="{qid}"}}',
        "start": base + 10,
        "end": base + 3000,
        "step": 10,
    }
    with httpx.Client(base_url=served.url, timeout=30) as client:
        bearer = client.get(
            "/api/v1/query_range", params=params, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert bearer.status_code == 200, bearer.text
        body = bearer.json()
        assert body["status"] == "success" and body["data"]["resultType"] == "matrix"
        assert _points(body["data"]["result"]) == _expected(rows)
        assert body["data"]["result"][0]["metric"] == {
            "__name__": "apm_query",
            "fn": "max",
            "id": qid,
            "metric": "promread.cpu",
            "window": "10s",
        }
        # Grafana's way: POST, form-encoded, Basic auth.
        basic = client.post("/api/v1/query_range", data=params, auth=(USER, PASSWORD))
        assert basic.status_code == 200, basic.text
        assert basic.json() == body
        anon = client.post("/api/v1/query_range", data=params)
        assert anon.status_code == 401 and anon.json()["errorType"] == "unauthorized"


def test_prometheus_api_client_reads_back_the_stored_windows(
    served: Any, stored: tuple[str, int, list[WindowResult]]
) -> None:
    from prometheus_api_client import PrometheusConnect

    qid, base, rows = stored
    start = datetime.fromtimestamp(base + 10, UTC)
    end = datetime.fromtimestamp(base + 3000, UTC)
    for method, credentials in (
        ("GET", {"headers": {"Authorization": f"Bearer {TOKEN}"}}),
        ("POST", {"auth": (USER, PASSWORD)}),
    ):
        prom = PrometheusConnect(url=served.url, method=method, **credentials)  # type: ignore[arg-type]
        result = prom.custom_query_range(f'apm_query{{id="{qid}"}}', start, end, step="10s")
        assert _points(result) == _expected(rows), method
        one = prom.custom_query_range(f'apm_query{{id="{qid}", fn="min"}}', start, end, step="10s")
        assert [r["metric"]["fn"] for r in one] == ["min"]
        assert qid in prom.get_label_values("id")
        assert "fn" in prom.get_label_names()
        now = prom.custom_query(f'apm_query{{id="{qid}", fn=~"m.*"}}', params={"time": base + 25})
        assert {(r["metric"]["fn"], r["value"][1]) for r in now} == {
            ("min", "0.3333333333333333"),
            ("max", "1e-07"),
        }


def test_series_and_instant_gap(served: Any, stored: tuple[str, int, list[WindowResult]]) -> None:
    qid, base, _ = stored
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, timeout=30, headers=headers) as client:
        series = client.get("/api/v1/series", params={"match[]": f'apm_query{{id="{qid}"}}'})
        assert [s["fn"] for s in series.json()["data"]] == list(FNS)
        # Windows 7 and 8 are missing: their ends give no point.
        gap = client.get(
            "/api/v1/query", params={"query": f'apm_query{{id="{qid}"}}', "time": base + 85}
        )
        assert gap.json()["data"]["result"] == []
        assert "apm_dashboard_prom_requests_total" in client.get("/metrics").text


def test_prometheus_api_client_reads_the_alerts_series(served: Any, repo: Any) -> None:
    """ALERTS{alertname, alertstate, severity, rule_id} = 1 for each alert pending or firing
    after a real evaluation cycle, as Prometheus exposes its own; a normal one has no series;
    a range query answers each step from the history the evaluator wrote: the state of the
    alert's last change at or before the step (at its window's end), from before the range
    too; /series and label values over a span list the alerts on at some time in it."""
    from prometheus_api_client import PrometheusConnect

    from alerting.evaluator import Evaluator
    from alerting.rulebook import Rulebook
    from alerting.settings import AlertingSettings
    from storage.alerts import AlertStore

    tables = AlertStore(repo.session, repo.keyspace)
    book = Rulebook(repo, tables)
    query = repo.save_query("FROM web-* SELECT promread.alerts WINDOW 10s COMPUTE avg")
    now = time.time()
    base = now // 10 * 10 + 10  # windows after the query's and the rules' creation
    repo.upsert_results(
        WindowResult(query.id, base + 10 * i, 10, {"avg": 95.0}, 5, now) for i in range(5)
    )
    body = {
        "query_id": query.id,
        "function": "avg",
        "comparison": ">",
        "nodata_windows": 1000,
        "labels": {"team": "promread"},
    }
    levels = {"warning": 80, "critical": 90}
    made = {
        name: book.create({**body, "name": name, "thresholds": t, "for_s": f}, now).id
        for name, t, f in (
            ("promread fires", levels, 0),
            ("promread waits", {"warning": 80}, 3600),
            ("promread calm", {"warning": 99}, 0),
        )
    }
    settings = AlertingSettings(settle_s=0, lateness_s=3600, backfill_windows=1000)
    Evaluator(repo, tables, settings, ()).run_once(base + 60)  # the evaluator's clock

    ours = "|".join(made.values())
    prom = PrometheusConnect(url=served.url, headers={"Authorization": f"Bearer {TOKEN}"})
    got = prom.custom_query(f'ALERTS{{rule_id=~"{ours}"}}')
    assert sorted(
        (
            r["metric"]["alertname"],
            r["metric"]["alertstate"],
            r["metric"]["severity"],
            r["value"][1],
        )
        for r in got
    ) == [
        ("promread fires", "firing", "critical", "1"),
        ("promread waits", "pending", "warning", "1"),
    ]
    assert {r["metric"]["rule_id"] for r in got} == {made["promread fires"], made["promread waits"]}
    firing = prom.custom_query(f'ALERTS{{alertstate="firing", rule_id=~"{ours}"}}')
    assert [r["metric"]["alertname"] for r in firing] == ["promread fires"]
    assert "promread waits" in prom.get_label_values("alertname")
    assert "alertstate" in prom.get_label_names()
    # The value falls to 50 from the window at base + 50: both alerts are normal from its end.
    repo.upsert_results(
        WindowResult(query.id, base + 10 * i, 10, {"avg": 50.0}, 5, now) for i in range(5, 10)
    )
    Evaluator(repo, tables, settings, ()).run_once(base + 110)
    ranged = prom.custom_query_range(
        f'ALERTS{{rule_id=~"{ours}"}}',
        datetime.fromtimestamp(base + 35, UTC),  # after the alerts' first change, at base + 10
        datetime.fromtimestamp(base + 100, UTC),
        "5s",
    )
    steps = [base + 35 + 5 * i for i in range(5)]  # to base + 55: normal from base + 60 on
    assert sorted(
        (r["metric"]["alertname"], r["metric"]["alertstate"], r["metric"]["severity"])
        for r in ranged
    ) == [("promread fires", "firing", "critical"), ("promread waits", "pending", "warning")]
    for r in ranged:
        assert [(float(t), v) for t, v in r["values"]] == [(t, "1") for t in steps]
        assert r["metric"]["team"] == "promread"  # the rule's own labels, as Prometheus'
    by_team = prom.custom_query_range(
        f'ALERTS{{team="promread", rule_id=~"{ours}"}}',
        datetime.fromtimestamp(base + 35, UTC),
        datetime.fromtimestamp(base + 100, UTC),
        "5s",
    )
    assert by_team == ranged
    pending = prom.custom_query_range(
        f'ALERTS{{alertstate="pending", rule_id=~"{ours}"}}',
        datetime.fromtimestamp(base, UTC),
        datetime.fromtimestamp(base + 100, UTC),
        "10s",
    )
    assert [(r["metric"]["alertname"], len(r["values"])) for r in pending] == [
        ("promread waits", 5)  # base + 10 to base + 50
    ]
    # /series and label values over a span: the alerts on at some time in it, from the history.
    mine = {"match[]": f'ALERTS{{rule_id=~"{ours}"}}'}
    at = datetime.fromtimestamp
    during = prom.get_series(at(base + 20, UTC), at(base + 30, UTC), params=dict(mine))
    assert sorted(s["alertname"] for s in during) == ["promread fires", "promread waits"]
    assert prom.get_series(at(base + 65, UTC), at(base + 100, UTC), params=dict(mine)) == []
    span = {**mine, "start": base + 55, "end": base + 100}  # normal from base + 60
    assert prom.get_label_values("alertname", params=span) == ["promread fires", "promread waits"]
    assert prom.get_label_values("alertname", params=mine) == []  # now: both normal
    for rule_id in made.values():
        book.delete(rule_id)
        tables.delete_current(rule_id)
