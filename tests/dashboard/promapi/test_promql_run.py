"""PromQL expressions through the whole app over the in-memory repository of test_routes:
hand-computed answers, and the API's limits (the samples budget: series, series x steps,
windows read; points answered) as 422 ``execution``, the budget's before any read, the
deadline as 503 ``timeout``, storage down as 503 ``unavailable``, a refused expression as
400 ``bad_data``: never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apm.query import WindowResult
from dashboard.app import create_app
from dashboard.context import AppContext
from dashboard.promapi.budget import TOO_MANY_SAMPLES
from dashboard.settings import DashboardSettings
from tests.dashboard.promapi.test_routes import (
    T0,
    TOKEN,
    ResultRepo,
    _err,
    _fleet,
    _ok,
    _ticking_client,
)
from tests.dashboard.test_api_errors import _Scraper, _Topics

pytestmark = pytest.mark.unit


@pytest.fixture
def repo() -> ResultRepo:
    from tests.dashboard.promapi.test_routes import repo as routes_repo

    return routes_repo.__wrapped__()  # type: ignore[attr-defined]


def _client(repo: ResultRepo) -> Any:
    app = create_app(AppContext(DashboardSettings(token=TOKEN), repo, _Topics(), _Scraper()))
    client = app.server.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def test_over_time_and_aggregation_answers(repo: ResultRepo) -> None:
    # qa: 10 s windows i = 0..9 but 4, min = i, p99 = i + 0.5, each at its end T0 + 10 (i + 1)
    api = _client(repo)
    params = {"query": 'max_over_time(apm_query{id="qa"}[20s])', "time": T0 + 60}
    data = _ok(api.get("/api/v1/query", query_string=params))
    got = {r["metric"]["fn"]: r["value"] for r in data["result"]}
    assert got == {"min": [T0 + 60, "5"], "p99": [T0 + 60, "5.5"]}  # ends 40 (i=3), 60 (i=5)
    assert all("__name__" not in r["metric"] for r in data["result"])
    ranged = {
        "query": 'sum without (fn) (apm_query{id="qa"}) * 2',
        "start": T0 + 40,
        "end": T0 + 60,
        "step": 10,
    }
    data = _ok(api.get("/api/v1/query_range", query_string=ranged))
    assert data == {
        "resultType": "matrix",
        "result": [
            {
                "metric": {"id": "qa", "metric": "cpu", "window": "10s"},
                # no window ends at T0 + 50: the one ending at T0 + 40, within 5 minutes
                "values": [[T0 + 40, "13"], [T0 + 50, "13"], [T0 + 60, "21"]],
            }
        ],
    }
    scalar = _ok(api.get("/api/v1/query", query_string={"query": "2 ^ 3", "time": T0}))
    assert scalar == {"resultType": "scalar", "result": [T0, "8"]}


def test_lookback_delta_applies_to_expressions_only(repo: ResultRepo) -> None:
    api = _client(repo)
    expr = {"query": 'sum without (fn) (apm_query{id="qa"})', "time": T0 + 50}
    assert _ok(api.get("/api/v1/query", query_string=expr))["result"][0]["value"][1] == "6.5"
    for short in ("9s", "9.999", "9999ms"):  # the window ending at T0 + 40 is 10 s old
        params = {**expr, "lookback_delta": short}
        assert _ok(api.get("/api/v1/query", query_string=params))["result"] == []
    ranged = {**expr, "start": T0 + 40, "end": T0 + 60, "step": 10, "lookback_delta": "10s"}
    [row] = _ok(api.get("/api/v1/query_range", query_string=ranged))["result"]
    assert [t for t, _ in row["values"]] == [T0 + 40, T0 + 50, T0 + 60]  # 10 s: both ends
    for default in ("0", "-1", ""):
        params = {**expr, "lookback_delta": default}
        assert len(_ok(api.get("/api/v1/query", query_string=params))["result"]) == 1
    bare = {"query": 'apm_query{id="qa"}', "time": T0 + 50, "lookback_delta": "1h"}
    assert _ok(api.get("/api/v1/query", query_string=bare))["result"] == []  # one window
    huge = {**expr, "lookback_delta": "10000d"}  # the windows it would read: refused first
    assert "lookback_delta" in _err(api.get("/api/v1/query", query_string=huge), 422, "execution")
    wrong = {**expr, "lookback_delta": "soon"}
    message = _err(api.get("/api/v1/query", query_string=wrong), 400, "bad_data")
    assert 'invalid parameter "lookback_delta"' in message


def test_offset_and_at_on_a_bare_selector_keep_its_look_back(repo: ResultRepo) -> None:
    api = _client(repo)
    sel = 'apm_query{id="qa", fn="min"}'
    ranged = {"query": f"{sel} offset 20s", "start": T0 + 40, "end": T0 + 70, "step": 10}
    [row] = _ok(api.get("/api/v1/query_range", query_string=ranged))["result"]
    # read at T0 + 20 ... T0 + 50; no window ends at T0 + 50 (i = 4): no point at T0 + 70
    assert row["values"] == [[T0 + 40, "1"], [T0 + 50, "2"], [T0 + 60, "3"]]
    assert row["metric"]["__name__"] == "apm_query"
    at = {**ranged, "query": f"{sel} @ end()", "end": T0 + 75}
    [row] = _ok(api.get("/api/v1/query_range", query_string=at))["result"]
    assert row["values"] == [[T0 + t, "6"] for t in (40, 50, 60, 70)]  # at T0 + 75: i = 6
    instant = {"query": f"{sel} offset -1m", "time": T0 + 10}
    [one] = _ok(api.get("/api/v1/query", query_string=instant))["result"]
    assert one["value"] == [T0 + 10, "6"]
    gap = {"query": f"{sel} @ {T0 + 50}", "time": T0 + 10}
    assert _ok(api.get("/api/v1/query", query_string=gap))["result"] == []


def test_absent_answers_the_selectors_labels(repo: ResultRepo) -> None:
    api = _client(repo)
    params = {"query": 'absent(apm_query{id="gone", fn="min"})', "time": T0 + 60}
    [row] = _ok(api.get("/api/v1/query", query_string=params))["result"]
    assert row == {"metric": {"id": "gone", "fn": "min"}, "value": [T0 + 60, "1"]}
    there = {"query": 'absent_over_time(apm_query{id="qa"}[5s])', "start": T0 + 40, "end": T0 + 60}
    [row] = _ok(api.get("/api/v1/query_range", query_string={**there, "step": 5}))["result"]
    assert row["values"] == [[T0 + 50, "1"], [T0 + 55, "1"]]  # no window ends in 45..55


def test_subqueries_answer_and_are_bounded_before_any_read(repo: ResultRepo) -> None:
    api = _client(repo)
    # min at T0 + 20 ... T0 + 60 (each 10 s): i = 1, 2, 3, 3 (look-back over i = 4), 5
    sub = {"query": 'sum_over_time(apm_query{id="qa", fn="min"}[40s:10s])', "time": T0 + 60}
    [row] = _ok(api.get("/api/v1/query", query_string=sub))["result"]
    assert row == {"metric": {"fn": "min", "id": "qa", "metric": "cpu", "window": "10s"},
                   "value": [T0 + 60, "14"]}  # fmt: skip
    reads = len(repo.reads)
    long = {"query": 'max_over_time(apm_query{id="qa"}[30d:1s])', "time": T0 + 60}
    message = _err(api.get("/api/v1/query", query_string=long), 422, "execution")
    assert "the subquery evaluates its expression at 2592001 steps, more than 500000" in message
    assert len(repo.reads) == reads  # refused before any read


def test_limits_are_422_before_any_read(repo: ResultRepo, monkeypatch: Any) -> None:
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_SAMPLES", "2")
    many = {"query": "sum(apm_query)", "time": T0}  # 3 series, each at least one sample
    message = _err(_client(repo).get("/api/v1/query", query_string=many), 422, "execution")
    assert message.startswith(TOO_MANY_SAMPLES) and "more than 2 series" in message
    # 2 series x 101 steps (202 samples) leave 98: the planned 2 x 131 windows do not fit.
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_SAMPLES", "300")
    api = _client(repo)
    steps = {"query": 'sum(apm_query{id="qa"})', "start": T0, "end": T0 + 1000, "step": 10}
    assert "samples planned" in _err(
        api.get("/api/v1/query_range", query_string=steps), 422, "execution"
    )
    wide = {"query": 'max_over_time(apm_query{id="qa"}[1h])', "time": T0 + 60}
    assert "samples planned" in _err(api.get("/api/v1/query", query_string=wide), 422, "execution")
    assert repo.reads == []
    fits = {"query": 'max_over_time(apm_query{id="qa"}[5m])', "time": T0 + 60}
    _ok(api.get("/api/v1/query", query_string=fits))


def test_an_answer_past_max_points_is_422(repo: ResultRepo, monkeypatch: Any) -> None:
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_POINTS", "100")
    api = _client(repo)
    steps = {"query": 'sum(apm_query{id="qa"})', "start": T0, "end": T0 + 1000, "step": 10}
    assert "1 series x 101 steps" in _err(
        api.get("/api/v1/query_range", query_string=steps), 422, "execution"
    )
    steps["end"] = T0 + 990  # 100 steps
    _ok(api.get("/api/v1/query_range", query_string=steps))


def test_deadline_storage_and_refusals_are_prometheus_errors(repo: ResultRepo) -> None:
    params = {"query": "sum(apm_query)", "start": T0, "end": T0 + 60, "step": "10"}
    ticking = _ticking_client(repo)
    assert "timed out" in _err(
        ticking.get("/api/v1/query_range", query_string=params), 503, "timeout"
    )
    api = _client(repo)
    for query in (
        "group(apm_query)",
        "apm_query atan2 apm_query",
        "holt_winters(apm_query[1m], 0.5, 0.5)",
    ):
        message = _err(api.get("/api/v1/query", query_string={"query": query}), 400, "bad_data")
        assert "not supported" in message or "unknown" in message, message
    repo.down = True
    assert "storage unavailable" in _err(
        api.get("/api/v1/query_range", query_string=params), 503, "unavailable"
    )


_PIECES = st.sampled_from(
    ['apm_query{id="qa"}', "apm_query", "sum", "quantile", "count_values", "topk", "by",
     "without", "on", "ignoring", "group_left", "group_right", "(", ")", "(fn)", "(id)", "[30s]",
     "1", "0.5", '"v"', ",", "-", "+", "*", "/", "%", "^", ">", "==", "bool", "and", "or",
     "unless", "max_over_time", "stddev", " ", 'apm_query{server=~"web-.*"}', "(server)",
     'apm_query{id="qs", server="web-2"}', "bottomk", " offset ", "1m", "-30s", " @ ",
     "start()", "end()", str(T0 + 50), "absent", "absent_over_time", "[1m:10s]", "[2m:]",
     "[1d:1ms]"]
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(_PIECES, max_size=16).map("".join) | st.text(max_size=60))
def test_any_query_text_answers_below_500(text: str) -> None:
    """Whatever the text, the whole app answers 200, 400, 422 or 503 (never a 500), each
    answer within the API's limits and deadline (per-server series of test_routes' fleet
    included)."""
    from tests.dashboard.promapi.test_routes import repo as routes_repo

    repo = routes_repo.__wrapped__()  # type: ignore[attr-defined]
    _fleet(repo)
    api = _client(repo)
    params = {"query": text, "start": T0, "end": T0 + 100, "step": 5}
    for path, query in (("/api/v1/query_range", params), ("/api/v1/query", {"query": text})):
        answer = api.get(path, query_string=query)
        assert answer.status_code in (200, 400, 422, 503), (text, answer.get_data(as_text=True))


def _wide_fleet(repo: ResultRepo, servers: int = 1500) -> None:
    """``qw``, a BY server query of ``servers`` servers (2 functions: 3,000 series, past the
    old 1,000-series cap): server n's window i (ending at T0 + 10 (i + 1)) has avg n and
    max n + i."""
    repo.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server", "qw")
    repo.add_windows(
        [
            WindowResult("qw", float(T0 + 10 * i), 10, {"avg": n, "max": n + i}, 1, 1.0, f"w{n}")
            for n in range(servers)
            for i in range(10)
        ]
    )


def test_more_than_a_thousand_series_of_one_by_server_query_are_answered(
    repo: ResultRepo,
) -> None:
    """The issue's three expressions over 3,000 series, within the default samples budget."""
    _wide_fleet(repo)
    api = _client(repo)
    at = {"time": T0 + 100}  # window 9's end
    top = _ok(api.get("/api/v1/query", query_string={"query": 'topk(3, apm_query{id="qw"})', **at}))
    got = sorted((r["metric"]["server"], r["metric"]["fn"], r["value"][1]) for r in top["result"])
    assert got == [("w1497", "max", "1506"), ("w1498", "max", "1507"), ("w1499", "max", "1508")]
    query = 'avg by (metric) (apm_query{id="qw"})'  # avg: mean 749.5, max: mean 758.5
    [mean] = _ok(api.get("/api/v1/query", query_string={"query": query, **at}))["result"]
    assert mean == {"metric": {"metric": "cpu"}, "value": [T0 + 100, "754"]}
    query = 'max_over_time(apm_query{id="qw"}[1m])'
    found = _ok(api.get("/api/v1/query", query_string={"query": query, **at}))["result"]
    assert len(found) == 3000
    got = {(r["metric"]["server"], r["metric"]["fn"]): r["value"][1] for r in found}
    assert got["w7", "max"] == "16" and got["w7", "avg"] == "7"


def test_a_query_past_the_samples_budget_is_refused_before_reading(
    repo: ResultRepo, monkeypatch: Any
) -> None:
    """6 windows of [1m] x 3,000 series are 18,000 samples: past 10,000, refused with
    Prometheus' error before any row is read; 10 series of the same fit."""
    _wide_fleet(repo)
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_SAMPLES", "10000")
    api = _client(repo)
    at = {"time": T0 + 100}
    query = 'max_over_time(apm_query{id="qw"}[1m])'
    message = _err(api.get("/api/v1/query", query_string={"query": query, **at}), 422, "execution")
    assert message.startswith(TOO_MANY_SAMPLES) and "samples planned" in message
    assert repo.rows_read == 0 and repo.window_reads == [] and repo.server_reads == []
    few = 'max_over_time(apm_query{id="qw", server=~"w1[0-4]"}[1m])'
    assert len(_ok(api.get("/api/v1/query", query_string={"query": few, **at}))["result"]) == 10
    assert 0 < repo.rows_read <= 2 * 5 * 7  # at most twice the rows of the series wanted
