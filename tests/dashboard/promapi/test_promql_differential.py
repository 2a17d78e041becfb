"""The read API's PromQL against Debian's Prometheus on the same data: windows written to real
Cassandra and served by the real dashboard, the same series (its labels read back from
``/api/v1/series``) imported into Prometheus with ``promtool tsdb create-blocks-from
openmetrics``; every expression of a table, as range queries at several steps and ranges and
as instant queries, answers the same series with the same values (to 1e-9 relative).

Query A has no gaps (its instant selectors agree with Prometheus' 5 m look-back wherever the
range ends by its last window); query B misses some windows, so it appears only under range
selectors, which have no look-back. Values are distinct (no ties for topk/bottomk)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from apm.query import WindowResult
from tests.dashboard.conftest import PASSWORD, TOKEN, USER
from tests.support.promql_peer import normalise, openmetrics, reference_prometheus, same

pytestmark = pytest.mark.integration

WINDOWS = 120  # 10 s windows: 20 minutes
GAPS = {30, 31, 32, 33, 34, 35, 80}  # query B's missing windows
A, B, AB = "{A}", "{B}", "{AB}"  # placeholders for the selectors' matchers

EXPRESSIONS = [
    *(f"{fn}_over_time(apm_query{AB}[1m])" for fn in ("avg", "min", "max", "sum", "count")),
    "last_over_time(apm_query{AB}[45s])",
    "avg_over_time(apm_query{AB}[5m])",
    "count_over_time(apm_query{AB}[30s])",  # range = window: both ends of the range count
    "quantile_over_time(0.9, apm_query{AB}[2m])",
    "quantile_over_time(0.5, apm_query{AB}[35s])",
    *(f"{op}(apm_query{A})" for op in ("sum", "avg", "min", "max", "count")),
    "sum by (fn) (apm_query{A})",
    "avg without (fn) (apm_query{A})",
    "max by (metric, fn) (apm_query{A})",
    "count without (id, fn) (apm_query{A})",
    "sum by (id) (max_over_time(apm_query{AB}[1m]))",
    "min without (fn) (avg_over_time(apm_query{AB}[5m]))",
    "quantile(0.5, apm_query{A})",
    "quantile by (fn) (0.9, last_over_time(apm_query{AB}[30s]))",
    "quantile without (fn) (0.25, max_over_time(apm_query{AB}[1m]))",
    "quantile(1.5, apm_query{A})",
    "quantile(-1, apm_query{A})",
    "stddev(apm_query{A})",
    "stdvar by (id) (apm_query{A})",
    "stddev without (fn) (avg_over_time(apm_query{AB}[2m]))",
    'count_values("v", apm_query{A} / 4)',
    'count_values by (fn) ("v", count_over_time(apm_query{AB}[1m]))',
    'count_values without (id) ("n", count_over_time(apm_query{AB}[1m]))',
    "stddev_over_time(apm_query{AB}[1m])",
    "stdvar_over_time(apm_query{AB}[2m])",
    "topk(2, apm_query{A})",
    "bottomk(1, apm_query{A})",
    "topk by (fn) (1, max_over_time(apm_query{AB}[1m]))",
    "bottomk without (id) (2, min_over_time(apm_query{AB}[2m]))",
    "apm_query{A} * 2 + 1",
    "100 - apm_query{A}",
    "apm_query{A} / 0",
    "apm_query{A} % 7",
    "apm_query{A} ^ 0.5",
    "-apm_query{A}",
    "apm_query{A} > 50",
    "50 < apm_query{A}",
    "apm_query{A} >= bool 50",
    "max_over_time(apm_query{AB}[1m]) != 3",
    "sum by (fn) (apm_query{A}) <= 100",
    "-sum(apm_query{A}) / 3",
    "apm_query{A} + apm_query{A}",
    "apm_query{A} - on(id) group_left max by (id) (apm_query{A})",
    "max by (id) (apm_query{A}) - on(id) group_right apm_query{A}",
    "apm_query{A} / on(id, fn) max_over_time(apm_query{AB}[1m])",
    "apm_query{A} % on(id) group_left(window) max by (id, window) (apm_query{A})",
    "max by (fn) (apm_query{A}) ^ on(fn) avg by (fn) (max_over_time(apm_query{AB}[1m]))",
    "apm_query{A} > on(fn) min by (fn) (avg_over_time(apm_query{AB}[1m]))",
    "apm_query{A} <= bool ignoring(id, metric) last_over_time(apm_query{B}[30s])",
    "sum by (fn) (apm_query{A}) == bool on(fn) group_right max_over_time(apm_query{AB}[1m])",
    "min_over_time(apm_query{AB}[1m]) < on(id) group_left max by (id) (apm_query{A})",
    "apm_query{A} * on(fn) group_left(id) count_over_time(apm_query{B}[1m])",
    "apm_query{A} and apm_query{A} > 50",
    "apm_query{A} and on(fn) max_over_time(apm_query{B}[30s])",
    "last_over_time(apm_query{AB}[30s]) unless on(fn) apm_query{A} > 70",
    "apm_query{A} > 60 or apm_query{A} < 30",
    "apm_query{A} > 60 or on(fn) max_over_time(apm_query{B}[1m])",
    "max_over_time(apm_query{B}[15s]) or ignoring(id, metric) apm_query{A}",
    "2 ^ 3",
    "1 > bool 2",
]

# Expressions Prometheus refuses while evaluating: the same status, type and reason.
REFUSED = [
    ("apm_query{A} + on(metric) apm_query{A}", "many-to-many matching not allowed"),
    ("apm_query{AB} - ignoring(fn) group_left apm_query{A}", "many-to-many matching not allowed"),
    ("apm_query{A} / on(id) group_right max by (id) (apm_query{A})", "on the left hand-side"),
    ("apm_query{A} + on(id) max by (id) (apm_query{A})", "many-to-one matching must be explicit"),
]


@pytest.fixture(scope="module")
def both(repo: Any, served: Any, tmp_path_factory: Any) -> Iterator[tuple[Any, str, dict, int]]:
    """(our client, Prometheus' URL, the matchers by placeholder, the first window's start)."""
    from launch.probe import free_port

    rng = random.Random(26)
    base = int(time.time() // 10 * 10) - 1500
    qa = repo.save_query("FROM * SELECT promql.cpu WINDOW 10s COMPUTE min, max, p99")
    qb = repo.save_query("FROM * SELECT promql.mem WINDOW 10s COMPUTE min, max")
    rows = [
        WindowResult(q.id, float(base + 10 * i), 10, {f: rng.uniform(0, 100) for f in fns}, 5, base)
        for q, fns, gaps in ((qa, ("min", "max", "p99"), set()), (qb, ("min", "max"), GAPS))
        for i in range(WINDOWS)
        if i not in gaps
    ]
    repo.upsert_results(rows)
    client = httpx.Client(
        base_url=served.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    matchers = {A: f'{{id="{qa.id}"}}', B: f'{{id="{qb.id}"}}', AB: f'{{id=~"{qa.id}|{qb.id}"}}'}
    listed = client.get("/api/v1/series", params={"match[]": f"apm_query{matchers[AB]}"}).json()
    samples: dict[tuple, list[tuple[int, float]]] = {}
    for w in rows:
        for fn, v in w.values.items():
            samples.setdefault((w.query_id, fn), []).append((round(w.window_start + 10) * 1000, v))
    series = [(labels, samples[labels["id"], labels["fn"]]) for labels in listed["data"]]
    assert len(series) == 5
    home = tmp_path_factory.mktemp("promql-reference")
    with reference_prometheus(home, openmetrics(series), free_port()) as url:
        yield client, url, matchers, base
    client.close()


def _expr(template: str, matchers: dict[str, str]) -> str:
    for placeholder, matcher in matchers.items():
        template = template.replace(placeholder, matcher)
    return template


def _ask(client: httpx.Client, path: str, params: dict[str, Any]) -> Any:
    answer = client.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return normalise(answer.json()["data"])


@pytest.mark.parametrize("template", EXPRESSIONS)
def test_answers_equal_prometheus(template: str, both: tuple[Any, str, dict, int]) -> None:
    ours, url, matchers, base = both
    query = _expr(template, matchers)
    last = base + 10 * WINDOWS  # the last window's end: instant selectors agree up to it
    ranges = [(base + 300, last, 10), (base + 5, last, 15), (base, last - 100, 60), (base, last, 7)]
    with httpx.Client(base_url=url, timeout=30) as prometheus:
        for start, end, step in ranges:
            params = {"query": query, "start": start, "end": end, "step": step}
            mine = _ask(ours, "/api/v1/query_range", params)
            theirs = _ask(prometheus, "/api/v1/query_range", params)
            assert theirs != {}, f"Prometheus answers nothing to {query}"
            assert same(mine, theirs), (query, start - base, step, mine, theirs)
        for at in (base + 600, base + 605.5, last):
            mine = _ask(ours, "/api/v1/query", {"query": query, "time": at})
            theirs = _ask(prometheus, "/api/v1/query", {"query": query, "time": at})
            assert same(mine, theirs), (query, at - base, mine, theirs)


@pytest.mark.parametrize(("template", "reason"), REFUSED)
def test_refusals_equal_prometheus(
    template: str, reason: str, both: tuple[Any, str, dict, int]
) -> None:
    ours, url, matchers, base = both
    params = {"query": _expr(template, matchers), "time": base + 600}
    mine = ours.get("/api/v1/query", params=params)
    with httpx.Client(base_url=url, timeout=30) as prometheus:
        theirs = prometheus.get("/api/v1/query", params=params)
    assert (mine.status_code, theirs.status_code) == (422, 422), (mine.text, theirs.text)
    assert mine.json()["errorType"] == theirs.json()["errorType"] == "execution"
    assert reason in mine.json()["error"] and reason in theirs.json()["error"], theirs.text
    assert mine.json()["error"].split(":")[0] == theirs.json()["error"].split(":")[0]


def test_debian_promtool_queries_an_over_time_function(
    both: tuple[Any, str, dict, int], served: Any
) -> None:
    """The issue's example: ``promtool query instant ... 'max_over_time(...[1m])'`` (Basic
    credentials in the URL, as Go's HTTP client sends them) answers as Prometheus does."""
    _, url, matchers, base = both
    promtool = shutil.which("promtool")
    assert promtool is not None
    query = _expr("max_over_time(apm_query{A}[1m])", matchers)
    at = str(base + 600)
    authed = str(served.url).replace("http://", f"http://{USER}:{quote(PASSWORD, safe='')}@")
    done = subprocess.run(
        [promtool, "query", "instant", "-o", "json", "--time", at, authed, query],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    got = {frozenset(r["metric"].items()): float(r["value"][1]) for r in json.loads(done.stdout)}
    with httpx.Client(base_url=url, timeout=30) as prometheus:
        theirs = _ask(prometheus, "/api/v1/query", {"query": query, "time": at})
    assert isinstance(theirs, dict) and len(got) == 3
    assert got == {labels: points[0][1] for labels, points in theirs.items()}
