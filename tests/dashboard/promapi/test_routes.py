"""The Prometheus read API through the dashboard's whole app (auth, routing, the blueprint)
over an in-memory repository that bounds reads as the real one does: Prometheus' JSON for
every endpoint, its error JSON and status codes, the limits, and the dashboard's auth in the
forms Grafana sends (Bearer, Basic), with Basic attempts under the login throttle."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import OperationTimedOut
from werkzeug.security import generate_password_hash

from apm.query import StoredQuery, WindowResult, parse
from dashboard.app import create_app
from dashboard.context import AppContext
from dashboard.settings import DashboardSettings
from storage.reader import ms_ceil
from tests.dashboard.test_api_errors import MemoryRepo, _Scraper, _Topics
from tests.support.servers import FakeServerSeries

pytestmark = pytest.mark.unit

TOKEN = "tok-Qx7vLm2Rp9Zc4Wn8Ht3Kb6Yd"
USER, PASSWORD = "ops", "s3cret"
T0 = 1_700_000_000


class ResultRepo(MemoryRepo):
    """MemoryRepo with windows: read_results as the repository bounds it (whole ms,
    lo <= window_start < hi, ascending); per-server series are tests.support.servers' fake of
    the repository's (contract-tested against it). ``reads``, ``server_reads``,
    ``window_reads`` and ``listings`` record each call, ``rows_read`` the windows handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.windows: dict[str, list[WindowResult]] = {}
        self.reads: list[tuple[str, float, float]] = []
        self.rows_read = 0  # windows handed out, as storage would read them
        self.per_server = FakeServerSeries()
        self.server_reads: list[tuple[str, str]] = []
        self.window_reads: list[tuple[str, float]] = []
        self.listings: list[str] = []

    def add(self, text: str, qid: str) -> StoredQuery:
        self.queries[qid] = StoredQuery(qid, parse(text))
        return self.queries[qid]

    def add_windows(self, rows: list[WindowResult]) -> None:
        self.per_server.upsert_server_rows(rows)

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self._check(query_id)
        self.reads.append((query_id, start, end))
        lo, hi = ms_ceil(max(0.0, start)), ms_ceil(end)
        found = [
            w for w in self.windows.get(query_id, []) if lo <= round(w.window_start * 1000) < hi
        ]
        self.rows_read += len(found)
        return iter(sorted(found, key=lambda w: w.window_start))

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float
    ) -> Iterator[WindowResult]:
        self._check(query_id)
        self.server_reads.append((query_id, server))
        return self._count(self.per_server.read_server_results(query_id, server, start, end))

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        self._check(query_id)
        self.window_reads.append((query_id, window_start))
        return self._count(self.per_server.read_window_servers(query_id, window_start))

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        self._check(query_id)
        self.listings.append(query_id)
        return self.per_server.list_result_servers(query_id, start, end)

    def _count(self, rows: Iterator[WindowResult]) -> Iterator[WindowResult]:
        found = list(rows)
        self.rows_read += len(found)
        return iter(found)


@pytest.fixture
def repo() -> ResultRepo:
    r = ResultRepo()
    r.add("FROM * SELECT cpu WINDOW 10s COMPUTE min, p99", "qa")
    r.add("FROM web-* SELECT mem.used WINDOW 1m COMPUTE avg", "qb")
    r.windows["qa"] = [
        WindowResult("qa", float(T0 + 10 * i), 10, {"min": float(i), "p99": i + 0.5}, 4, 1.0)
        for i in range(10)
        if i != 4
    ]
    r.windows["qb"] = [WindowResult("qb", float(T0), 60, {"avg": 2.25}, 9, 1.0)]
    return r


@pytest.fixture
def server(repo: ResultRepo) -> Any:
    settings = DashboardSettings(
        user=USER,
        password_hash=generate_password_hash(PASSWORD),
        token=TOKEN,
        secret_key="k" * 32,
        login_client_burst=2,
        login_client_per_minute=1,
    )
    return create_app(AppContext(settings, repo, _Topics(), _Scraper())).server


@pytest.fixture
def api(server: Any) -> Any:
    client = server.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def _ok(answer: Any) -> Any:
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body = answer.get_json()
    assert body["status"] == "success", body
    return body["data"]


def _err(answer: Any, status: int, error_type: str) -> str:
    assert answer.status_code == status, answer.get_data(as_text=True)
    body = answer.get_json()
    assert set(body) == {"status", "errorType", "error"}, body
    assert body["status"] == "error" and body["errorType"] == error_type, body
    return str(body["error"])


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_query_range_returns_each_stored_window_at_its_end(api: Any) -> None:
    params = {"query": 'apm_query{id="qa"}', "start": T0 + 10, "end": T0 + 100, "step": "10s"}
    data = _ok(api.get("/api/v1/query_range", query_string=params))
    assert data["resultType"] == "matrix"
    got = {r["metric"]["fn"]: r for r in data["result"]}
    assert got["min"]["metric"] == {
        "__name__": "apm_query",
        "fn": "min",
        "id": "qa",
        "metric": "cpu",
        "window": "10s",
    }
    assert got["min"]["values"] == [[T0 + 10 * (i + 1), str(i)] for i in range(10) if i != 4]
    assert got["p99"]["values"][0] == [T0 + 10, "0.5"]
    assert [r["metric"]["fn"] for r in data["result"]] == ["min", "p99"]  # sorted by labels


def test_post_form_encoded_as_grafana_sends(api: Any) -> None:
    form = {"query": 'apm_query{fn="avg"}', "start": str(T0), "end": str(T0 + 120), "step": "60"}
    data = _ok(api.post("/api/v1/query_range", data=form))
    assert data["result"] == [
        {
            "metric": {
                "__name__": "apm_query",
                "fn": "avg",
                "id": "qb",
                "metric": "mem.used",
                "window": "1m",
            },
            "values": [[T0 + 60, "2.25"]],  # no window ends at T0 + 120: no point
        }
    ]


def test_rfc3339_times_and_regex_matchers(api: Any) -> None:
    params = {
        "query": 'apm_query{fn=~"p9.*", metric!~"mem.*"}',
        "start": "2023-11-14T22:13:30Z",
        "end": "2023-11-14T22:13:40.000Z",
        "step": "10",
    }
    data = _ok(api.get("/api/v1/query_range", query_string=params))
    assert [(r["metric"]["id"], r["values"]) for r in data["result"]] == [
        ("qa", [[T0 + 10, "0.5"], [T0 + 20, "1.5"]])
    ]


def test_instant_query_vector_and_scalar(api: Any) -> None:
    data = _ok(
        api.get(
            "/api/v1/query", query_string={"query": 'apm_query{id="qa", fn="min"}', "time": T0 + 35}
        )
    )
    assert data == {
        "resultType": "vector",
        "result": [
            {
                "metric": {
                    "__name__": "apm_query",
                    "fn": "min",
                    "id": "qa",
                    "metric": "cpu",
                    "window": "10s",
                },
                "value": [T0 + 35, "2"],
            }
        ],
    }
    # The missing window (T0+40 .. T0+50) is no point, not the previous one repeated.
    gap = _ok(
        api.get("/api/v1/query", query_string={"query": 'apm_query{id="qa"}', "time": T0 + 55})
    )
    assert gap["result"] == []
    # Grafana's health check.
    assert _ok(api.post("/api/v1/query", data={"query": "1+1", "time": "1700000000.5"})) == {
        "resultType": "scalar",
        "result": [1700000000.5, "2"],
    }


def test_series_labels_and_label_values(api: Any) -> None:
    series = _ok(api.get("/api/v1/series", query_string={"match[]": 'apm_query{id="qb"}'}))
    assert series == [
        {"__name__": "apm_query", "fn": "avg", "id": "qb", "metric": "mem.used", "window": "1m"}
    ]
    union = _ok(
        api.post(
            "/api/v1/series",
            data={"match[]": ['{__name__="apm_query", fn="avg"}', 'apm_query{fn="min"}']},
        )
    )
    assert [(s["id"], s["fn"]) for s in union] == [("qb", "avg"), ("qa", "min")]
    assert _ok(api.get("/api/v1/labels")) == ["__name__", "fn", "id", "metric", "window"]
    assert _ok(api.get("/api/v1/label/__name__/values")) == ["apm_query"]
    assert _ok(api.get("/api/v1/label/fn/values")) == ["avg", "min", "p99"]
    assert _ok(
        api.get("/api/v1/label/metric/values", query_string={"match[]": 'apm_query{id="qa"}'})
    ) == ["cpu"]
    assert _ok(api.get("/api/v1/label/nothing/values")) == []
    assert _ok(api.get("/api/v1/status/buildinfo"))["version"]
    assert "apm_query" in _ok(api.get("/api/v1/metadata"))


@pytest.mark.parametrize(
    ("path", "params", "words"),
    [
        ("/api/v1/query_range", {"start": "0", "end": "1", "step": "1"}, '"query": missing'),
        (
            "/api/v1/query_range",
            {"query": "rate(apm_query[5m])", "start": "0", "end": "1", "step": "1"},
            "rate() is not supported",
        ),
        (
            "/api/v1/query_range",
            {"query": "apm_query", "start": "0", "end": "20000", "step": "1"},
            "11,000",
        ),
        (
            "/api/v1/query_range",
            {"query": "apm_query", "start": "5", "end": "1", "step": "1"},
            "before start",
        ),
        (
            "/api/v1/query_range",
            {"query": "apm_query", "start": "0", "end": "1", "step": "0"},
            "zero or negative",
        ),
        (
            "/api/v1/query_range",
            {"query": "apm_query", "start": "0", "end": "1", "step": "0.0001"},
            "1ms",
        ),
        ("/api/v1/query_range", {"query": "apm_query", "end": "1", "step": "1"}, '"start"'),
        ("/api/v1/query", {"query": "apm_query", "time": "yesterday"}, '"time"'),
        ("/api/v1/query", {"query": 'apm_query{id=~"a(?=b)"}'}, "invalid perl operator"),
        ("/api/v1/query", {"query": "apm_query", "timeout": "soon"}, '"timeout"'),
        ("/api/v1/series", {}, "no match[]"),
        ("/api/v1/series", {"match[]": "up"}, "unknown metric"),
        ("/api/v1/label/bad-name/values", {}, "invalid label name"),
        ("/api/v1/labels", {"start": "x"}, '"start"'),
    ],
)
def test_bad_input_is_400_bad_data(api: Any, path: str, params: dict[str, str], words: str) -> None:
    assert words in _err(api.get(path, query_string=params), 400, "bad_data")


def test_limits_are_422_execution_before_any_read(
    server: Any, repo: ResultRepo, monkeypatch: Any
) -> None:
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_SAMPLES", "2")
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_POINTS", "100")
    app = create_app(AppContext(DashboardSettings(token=TOKEN), repo, _Topics(), _Scraper())).server
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    params = {"query": "apm_query", "start": T0, "end": T0 + 60, "step": "10"}
    assert (
        "too many samples into memory in query execution: the selector matches more than 2"
        in _err(client.get("/api/v1/query_range", query_string=params), 422, "execution")
    )
    monkeypatch.delenv("APM_DASHBOARD_PROM_MAX_SAMPLES")
    app = create_app(AppContext(DashboardSettings(token=TOKEN), repo, _Topics(), _Scraper())).server
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    many = {"query": 'apm_query{id="qa"}', "start": T0, "end": T0 + 1000, "step": "10"}
    assert "2 series x 101 steps" in _err(
        client.get("/api/v1/query_range", query_string=many), 422, "execution"
    )
    assert repo.reads == []
    fits = {"query": 'apm_query{id="qa"}', "start": T0, "end": T0 + 490, "step": "10"}
    _ok(client.get("/api/v1/query_range", query_string=fits))


def test_storage_down_is_503_unavailable_and_a_driver_timeout_is_503_timeout(
    api: Any, repo: ResultRepo
) -> None:
    repo.down = True
    params = {"query": "apm_query", "start": T0, "end": T0 + 60, "step": "10"}
    assert "storage unavailable" in _err(
        api.get("/api/v1/query_range", query_string=params), 503, "unavailable"
    )
    repo.failure = OperationTimedOut("timed out (fake)")
    _err(api.get("/api/v1/query_range", query_string=params), 503, "timeout")
    _err(api.get("/api/v1/series", query_string={"match[]": "apm_query"}), 503, "timeout")


def _ticking_client(repo: ResultRepo) -> Any:
    """The API with a 5 s deadline and a clock 10 s later at each look."""
    from flask import Flask

    from dashboard.promapi import Access, PromApiSettings, build_promapi
    from dashboard.sessions import SignedSessions
    from dashboard.telemetry import DashboardTelemetry
    from dashboard.throttle import LoginThrottle

    settings = DashboardSettings(token=TOKEN)
    ticks = iter(range(0, 10**9, 10))
    app = Flask("t")
    app.secret_key = "k" * 32
    telemetry = DashboardTelemetry()
    access = Access(settings, SignedSessions(60), LoginThrottle(5, 5, 20, 2), telemetry, 0)
    app.register_blueprint(
        build_promapi(
            repo,
            settings,
            PromApiSettings(timeout_seconds=5),
            telemetry,
            access,
            monotonic=lambda: float(next(ticks)),
        )
    )
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def test_the_evaluation_deadline_is_503_timeout(repo: ResultRepo) -> None:
    params = {"query": "apm_query", "start": T0, "end": T0 + 60, "step": "10"}
    client = _ticking_client(repo)
    assert "timed out" in _err(
        client.get("/api/v1/query_range", query_string=params), 503, "timeout"
    )


def test_compiling_many_match_selectors_counts_against_the_deadline() -> None:
    """64 match[] of 32 regexes each may take RE2 seconds to compile: the deadline is checked
    between them, even when no series is left to evaluate."""
    params = {"match[]": ['apm_query{id=~"a.*"}', 'apm_query{id=~"b.*"}']}
    client = _ticking_client(ResultRepo())
    for path in ("/api/v1/series", "/api/v1/labels", "/api/v1/label/id/values"):
        assert "timed out" in _err(client.get(path, query_string=params), 503, "timeout")


def test_without_credentials_401_with_both_challenges(server: Any) -> None:
    anon = server.test_client()
    answer = anon.get("/api/v1/query", query_string={"query": "apm_query"})
    _err(answer, 401, "unauthorized")
    assert answer.headers.getlist("WWW-Authenticate") == ['Basic realm="apm"', 'Bearer realm="apm"']
    _err(anon.get("/api/v1/labels", headers={"Authorization": "Bearer nope"}), 401, "unauthorized")
    _err(anon.get("/api/v1/labels", headers={"Authorization": "Digest x"}), 401, "unauthorized")
    _err(anon.post("/api/v1/query", data={"query": "1"}), 401, "unauthorized")


def test_every_route_of_the_read_api_requires_credentials(server: Any) -> None:
    """Auth for /api/v1/ is delegated to the blueprint: no route of it may answer anyone."""
    anon = server.test_client()
    rules = [r for r in server.url_map.iter_rules() if r.rule.startswith("/api/v1/")]
    assert len(rules) >= 10
    for rule in rules:
        path = rule.rule.replace("<name>", "fn")
        for method in sorted(rule.methods - {"OPTIONS"}):
            answer = anon.open(path, method=method, query_string={"query": "1"})
            assert answer.status_code == 401, (method, path)


def test_grafana_probes(api: Any) -> None:
    assert _ok(api.get("/api/v1/rules")) == {"groups": []}
    assert _ok(api.get("/api/v1/alerts")) == {"alerts": []}
    assert _ok(api.get("/api/v1/query_exemplars", query_string={"query": "apm_query"})) == []


def test_basic_auth_with_the_password_or_the_token(server: Any) -> None:
    anon = server.test_client()  # each from its own address: the throttle is the next test's
    for i, (headers, ok) in enumerate(
        [
            (_basic(USER, PASSWORD), True),
            (_basic("grafana", TOKEN), True),
            (_basic(USER, "x"), False),
        ]
    ):
        answer = anon.get(
            "/api/v1/labels", headers=headers, environ_overrides={"REMOTE_ADDR": f"10.0.0.{i}"}
        )
        _ok(answer) if ok else _err(answer, 401, "unauthorized")


def test_basic_guesses_are_throttled_but_a_known_credential_keeps_working(server: Any) -> None:
    anon = server.test_client()
    _ok(anon.get("/api/v1/labels", headers=_basic(USER, PASSWORD)))  # 1 of the burst of 2
    _err(anon.get("/api/v1/labels", headers=_basic(USER, "guess1")), 401, "unauthorized")
    refused = anon.get("/api/v1/labels", headers=_basic(USER, "guess2"))
    _err(refused, 429, "unavailable")
    assert int(refused.headers["Retry-After"]) >= 1
    # The credential that passed is remembered: no scrypt, no throttle token.
    _ok(anon.get("/api/v1/labels", headers=_basic(USER, PASSWORD)))
    # The login page shares the buckets.
    page = anon.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    login = anon.post("/login", data={"csrf_token": csrf, "user": USER, "password": PASSWORD})
    assert login.status_code == 429


def test_bearer_guesses_are_throttled_and_counted(server: Any) -> None:
    anon = server.test_client()
    anon.environ_base["REMOTE_ADDR"] = "10.0.1.1"
    answers = [
        anon.get("/api/v1/labels", headers={"Authorization": f"Bearer guess{i}"}) for i in range(60)
    ]
    assert [a.status_code for a in answers[:2]] == [401, 401]  # the burst of 2
    assert {a.status_code for a in answers[2:]} == {429}
    _err(answers[-1], 429, "unavailable")
    assert int(answers[-1].headers["Retry-After"]) >= 1
    # The right token waits too (no oracle), the dashboard's own API shares the bucket, and
    # another client is not held up.
    assert (
        anon.get("/api/v1/labels", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 429
    )
    assert anon.get("/api/queries", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 429
    other = server.test_client()
    other.environ_base["REMOTE_ADDR"] = "10.0.1.2"
    _ok(other.get("/api/v1/labels", headers={"Authorization": f"Bearer {TOKEN}"}))
    text = other.get("/metrics").get_data(as_text=True)
    assert 'apm_dashboard_refused_total{reason="throttled_bearer"} 60.0' in text
    assert 'apm_dashboard_refused_total{reason="bad_token"} 2.0' in text


def test_session_reads_and_its_posts_need_the_csrf_token(server: Any) -> None:
    client = server.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    assert (
        client.post(
            "/login", data={"csrf_token": csrf, "user": USER, "password": PASSWORD}
        ).status_code
        == 302
    )
    _ok(client.get("/api/v1/query", query_string={"query": "1"}))
    _err(client.post("/api/v1/query", data={"query": "1"}), 403, "forbidden")
    token = client.get_cookie("_csrf_token").value
    _ok(client.post("/api/v1/query", data={"query": "1"}, headers={"X-CSRFToken": token}))


def test_delegation_opens_nothing_else(server: Any) -> None:
    anon = server.test_client()
    # The dashboard's own API still takes only Bearer or a session.
    assert anon.get("/api/queries", headers=_basic(USER, PASSWORD)).status_code == 401
    # An unknown path under /api/v1/ is a 404, never Dash's page or data.
    assert anon.get("/api/v1/nothing").status_code == 404
    assert anon.get("/api/v1/query/").status_code == 404
    # Dot segments stay under the delegated prefix: they reach no other route.
    for path in ("/api/v1/../queries", "/api/v1/%2e%2e/queries", "/api/v1/../../_dash-layout"):
        assert anon.get(path).status_code == 404, path


def test_body_over_the_cap_is_413(api: Any) -> None:
    _err(api.post("/api/v1/query", data={"query": "x" * 70_000}), 413, "bad_data")


def test_requests_are_counted_by_endpoint_and_code(api: Any) -> None:
    _ok(api.get("/api/v1/labels"))
    api.get("/api/v1/series")
    text = api.get("/metrics").get_data(as_text=True)
    assert 'apm_dashboard_prom_requests_total{code="200",endpoint="labels"} 1.0' in text
    assert 'apm_dashboard_prom_requests_total{code="400",endpoint="series"} 1.0' in text


def _fleet(repo: ResultRepo) -> None:
    """``qs``, a BY server query over three servers: web-1 in every window of T0..T0+100,
    web-2 in the first five only, web-3 in the last five only (it appears as web-2 vanishes);
    web-0 two days before."""
    repo.add("FROM web-* SELECT cpu WINDOW 10s COMPUTE avg, max BY server", "qs")
    repo.add_windows([WindowResult("qs", T0 - 2 * 86_400.0, 10, {"avg": 0.0}, 1, 1.0, "web-0")])
    present = {"web-1": range(10), "web-2": range(5), "web-3": range(5, 10)}
    repo.add_windows(
        [
            WindowResult(
                "qs", float(T0 + 10 * i), 10, {"avg": i + n, "max": 10.0 * n + i}, 4, 1.0, s
            )
            for n, (s, windows) in enumerate(present.items(), start=1)
            for i in windows
        ]
    )


def _by_server(found: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    return {(s["metric"].get("server", ""), s["metric"]["fn"]): s for s in found}


def test_a_by_server_querys_series_carry_a_server_label(api: Any, repo: ResultRepo) -> None:
    _fleet(repo)
    # The servers with results on the days the span touches (web-3's first window ends at
    # T0 + 60, the same day): not web-0's, two days before.
    first = {"start": T0, "end": T0 + 50}
    series = _ok(api.get("/api/v1/series", query_string={"match[]": 'apm_query{id="qs"}', **first}))
    assert sorted((s["server"], s["fn"]) for s in series) == [
        (server, fn) for server in ("web-1", "web-2", "web-3") for fn in ("avg", "max")
    ]
    assert series[0] == {
        "__name__": "apm_query",
        "fn": "avg",
        "id": "qs",
        "metric": "cpu",
        "window": "10s",
        "server": "web-1",
    }
    last = {"start": T0 + 60, "end": T0 + 100}
    only = _ok(
        api.get("/api/v1/series", query_string={"match[]": 'apm_query{server="web-3"}', **last})
    )
    assert [(s["id"], s["server"], s["fn"]) for s in only] == [
        ("qs", "web-3", "avg"),
        ("qs", "web-3", "max"),
    ]
    # A plain query's series have no server label, so server="" is exactly them.
    plain = _ok(api.get("/api/v1/series", query_string={"match[]": 'apm_query{server=""}', **last}))
    assert sorted((s["id"], s["fn"]) for s in plain) == [
        ("qa", "min"),
        ("qa", "p99"),
        ("qb", "avg"),
    ]
    assert all("server" not in s for s in plain)

    assert "server" in _ok(api.get("/api/v1/labels", query_string=last))
    assert "server" not in _ok(
        api.get("/api/v1/labels", query_string={"match[]": 'apm_query{id="qa"}'})
    )
    values = "/api/v1/label/server/values"
    assert _ok(api.get(values, query_string={"start": T0 - 3 * 86_400, "end": T0})) == [
        "web-0",
        "web-1",
        "web-2",
        "web-3",
    ]
    narrowed = {"match[]": 'apm_query{server!~"web-1"}', **last}
    assert _ok(api.get(values, query_string=narrowed)) == ["web-2", "web-3"]
    # Without start and end: servers with results in the last day (T0 is long ago).
    assert _ok(api.get(values)) == []


def test_per_server_series_over_a_range_one_read_a_server(api: Any, repo: ResultRepo) -> None:
    _fleet(repo)
    params = {
        "query": 'apm_query{id="qs", fn="avg"}',
        "start": T0 + 10,
        "end": T0 + 100,
        "step": 10,
    }
    found = _by_server(_ok(api.get("/api/v1/query_range", query_string=params))["result"])
    assert [[t - T0, float(v)] for t, v in found["web-1", "avg"]["values"]] == [
        [10 * (i + 1), float(i + 1)] for i in range(10)
    ]
    assert [t - T0 for t, _ in found["web-2", "avg"]["values"]] == [10, 20, 30, 40, 50]
    assert [t - T0 for t, _ in found["web-3", "avg"]["values"]] == [60, 70, 80, 90, 100]
    assert sorted(repo.server_reads) == [("qs", "web-1"), ("qs", "web-2"), ("qs", "web-3")]
    assert repo.listings == ["qs"]


@pytest.mark.parametrize(
    ("query", "want"),
    [
        # At T0 + 50 (the fifth windows): web-1 avg 5, max 14; web-2 avg 6, max 24.
        ('topk(1, apm_query{id="qs", fn="avg"})', {("web-2", "avg"): 6.0}),
        ('bottomk(1, apm_query{id="qs", fn="max"})', {("web-1", "max"): 14.0}),
        ('avg by (server) (apm_query{id="qs"})', {("web-1", ""): 9.5, ("web-2", ""): 15.0}),
        ('max without (server) (apm_query{id="qs"})', {("", "avg"): 6.0, ("", "max"): 24.0}),
        ('count(apm_query{id="qs", fn="avg"})', {("", ""): 2.0}),
        ('max_over_time(apm_query{fn="max", server=~"web-[13]"}[1m])', {("web-1", "max"): 14.0}),
        ('sum by (server) (apm_query{id="qs", fn="avg"}) > 5', {("web-2", ""): 6.0}),
    ],
)
def test_promql_over_per_server_series(api: Any, repo: ResultRepo, query: str, want: dict) -> None:
    _fleet(repo)
    found = _ok(api.get("/api/v1/query", query_string={"query": query, "time": T0 + 50}))
    got = {
        (r["metric"].get("server", ""), r["metric"].get("fn", "")): float(r["value"][1])
        for r in found["result"]
    }
    assert got == want


def test_a_server_matcher_reads_only_its_servers_of_ten_thousand(
    api: Any, repo: ResultRepo
) -> None:
    repo.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server", "qs")
    repo.add_windows(
        [
            WindowResult("qs", float(T0), 10, {"avg": n, "max": n}, 1, 1.0, f"web-{n}")
            for n in range(10_000)
        ]
    )
    at = {"time": T0 + 10}
    one = _ok(
        api.get(
            "/api/v1/query", query_string={"query": 'apm_query{server="web-42", fn="avg"}', **at}
        )
    )
    assert [(r["metric"]["server"], r["value"][1]) for r in one["result"]] == [("web-42", "42")]
    assert repo.server_reads == [("qs", "web-42")] and repo.listings == ["qs"]
    expr = 'max_over_time(apm_query{server=~"web-4[0-9]", fn="max"}[1m])'
    ten = _ok(api.get("/api/v1/query", query_string={"query": expr, **at}))["result"]
    assert sorted(r["metric"]["server"] for r in ten) == [f"web-4{i}" for i in range(10)]
    assert len(repo.server_reads) == 11
    # Every server: 20,000 series, far past the old 1,000-series cap, within the samples budget
    # (the one window that can give the point, read once for every server).
    top = _ok(api.get("/api/v1/query", query_string={"query": 'topk(3, apm_query{id="qs"})', **at}))
    assert sorted(r["value"][1] for r in top["result"]) == ["9998", "9999", "9999"]
    assert len(repo.server_reads) == 11 and repo.window_reads == [("qs", float(T0))]
    # Grafana's server variable lists them all: a label's values are not series.
    span = {"start": T0, "end": T0 + 10}
    assert len(_ok(api.get("/api/v1/label/server/values", query_string=span))) == 10_000


def test_most_servers_at_few_windows_are_read_a_window_at_a_time(
    repo: ResultRepo, monkeypatch: Any
) -> None:
    """topk over every one of 10,000 servers at an instant reads its look-back's windows newest
    first, each every server's row, until every server has one (here: one window), not
    10,000 partitions; a range, each window after its first step and of the look-back before
    it the same; a bare selector the one window that can give its point."""
    app = create_app(AppContext(DashboardSettings(token=TOKEN), repo, _Topics(), _Scraper())).server
    api = app.test_client()
    api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    repo.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server", "qs")
    repo.add_windows(
        [
            WindowResult(
                "qs", float(T0 + 10 * i), 10, {"avg": (n * 7 + i) % 10_000}, 1, 1.0, f"w{n}"
            )
            for n in range(10_000)
            for i in range(10)
        ]
    )
    top = {"query": 'topk(3, apm_query{id="qs", fn="avg"})', "time": T0 + 10}
    found = _ok(api.get("/api/v1/query", query_string=top))["result"]
    assert sorted(float(r["value"][1]) for r in found) == [9997.0, 9998.0, 9999.0]
    assert all(r["metric"]["server"].startswith("w") for r in found)
    # Of the 31 windows of the 5-minute look-back, the newest: every server is in it.
    assert repo.window_reads == [("qs", float(T0))] and repo.server_reads == []
    ranged = {
        "query": 'count(apm_query{id="qs", fn="avg"})',
        "start": T0 + 10,
        "end": T0 + 100,
        "step": 10,
    }
    counts = _ok(api.get("/api/v1/query_range", query_string=ranged))["result"]
    assert [float(v) for _, v in counts[0]["values"]] == [10_000.0] * 10
    assert repo.server_reads == []
    # The range's 9 windows after its first step, and of its look-back the newest (T0's).
    assert repo.window_reads[1:] == [("qs", float(T0 + 10 * i)) for i in range(10)]
    bare = {"query": 'apm_query{id="qs", fn="avg"}', "time": T0 + 20}  # one window, no look-back
    assert len(_ok(api.get("/api/v1/query", query_string=bare))["result"]) == 10_000
    assert repo.window_reads[-1] == ("qs", float(T0 + 10)) and len(repo.window_reads) == 12
