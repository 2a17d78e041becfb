"""The read API's PromQL against Debian's Prometheus on the same data: windows written to real
Cassandra and served by the real dashboard, the same series (its labels read back from
``/api/v1/series``) imported into Prometheus with ``promtool tsdb create-blocks-from
openmetrics``; every expression of a table, as range queries at several steps and ranges and
as instant queries, answers the same series with the same values (to 1e-9 relative).

Query A has no gaps; query B misses a few windows (less than the 5 m look-back); query C
misses 40 windows (more than the look-back) and stops 200 s before the others, so instant
selectors inside expressions are compared where the look-back fills a gap, where it runs out
(exactly 5 m after a window, both ends included) and after every series has stopped. Bare
selectors keep their one-window look-back: they equal a second Prometheus started with
``--query.lookback-delta=9999ms``, as do expressions asked with ``lookback_delta=9999ms``.
Query S is ``BY server``: its series carry a ``server`` label, one per server (web-1 in every
window, web-2 vanishing at window 60, web-3 appearing at window 40, web-4 missing every fifth,
and 36 more each missing every eleventh window), and expressions group, rank and match on that
label; with 40 servers, instants over most of them read one window of every server at a time
(``read_window_servers``), ranges and instants over a few read each server's own series.
Values are distinct (no ties for topk/bottomk)."""

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
import promql_parser
import pytest

from apm.query import WindowResult
from dashboard.promapi.budget import TOO_MANY_SAMPLES
from tests.dashboard.conftest import PASSWORD, TOKEN, USER
from tests.support.promql_peer import normalise, openmetrics, reference_prometheus, same

pytestmark = pytest.mark.integration

WINDOWS = 120  # 10 s windows: 20 minutes
GAPS = {30, 31, 32, 33, 34, 35, 80}  # query B's missing windows
LONG_GAPS = {*range(40, 80), *range(100, WINDOWS)}  # query C's: 400 s, and its last 200 s
A, B, C, AB, ABC = "{A}", "{B}", "{C}", "{AB}", "{ABC}"  # placeholders for the matchers
S, S3, S12, SN1 = "{S}", "{S3}", "{S12}", "{SN1}"  # query S; its web-3; web-1|2; all but web-1
CID, AT, GAP = "{CID}", "{AT}", "{GAP}"  # query C's id; a unix time; one in C's long gap
SERVERS = {  # query S's windows of each server
    "web-1": set(range(WINDOWS)),
    "web-2": set(range(60)),
    "web-3": set(range(40, WINDOWS)),
    "web-4": {i for i in range(WINDOWS) if i % 5},
    # More servers than the 31 windows of a 5-minute look-back, so instants over most of them
    # read a window at a time, newest first, going further back for those a window misses.
    **{f"db-{n:02}": {i for i in range(WINDOWS) if (i * 7 + n) % 11} for n in range(36)},
}

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
    "abs(apm_query{A} - 50)",
    "round(apm_query{AB})",
    "round(apm_query{A} / 3, 0.25)",
    "round(max_over_time(apm_query{AB}[1m]), 10)",
    "clamp(apm_query{AB}, 20, 60)",
    "clamp(apm_query{A}, 60, 20) or apm_query{B}",  # max below min: an empty vector
    "clamp_min(apm_query{ABC}, 30)",
    "clamp_max(avg_over_time(apm_query{AB}[1m]), 40)",
    "sum by (fn) (clamp_max(abs(apm_query{S} - 50), 30))",
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
    "apm_query{ABC} * 1",  # PromQL's look-back: each of the above, over C's gaps
    "sum by (id) (apm_query{ABC})",
    "count(apm_query{ABC})",
    "quantile(0.5, apm_query{ABC})",
    "topk(1, apm_query{ABC})",
    "apm_query{C} > bool 50",
    "apm_query{C} - on(fn) apm_query{B}",
    "apm_query{C} or on(fn) (apm_query{B} * 0)",
    "avg without (fn) (apm_query{AB}) unless on(id) apm_query{C}",
    "2 ^ 3",
    "1 > bool 2",
    # sort/sort_desc: instant queries compare the order too (NaN last both ways; ties none
    # but NaN's); over a range the identity, labels and __name__ kept.
    "sort(apm_query{A})",
    "sort_desc(apm_query{ABC})",
    "sort((apm_query{AB} - 50) ^ 0.5)",  # NaN below 50
    "sort_desc((apm_query{AB} - 50) ^ 0.5)",
    "sort_desc(sum by (server) (apm_query{S}))",
    "sort(max_over_time(apm_query{S}[1m]))",
    "sort(apm_query{A}) * 2",  # inside an expression: values only
    # label_replace/label_join: anchored regex, $1/${name} expansion, "" deletes the label.
    'label_replace(apm_query{A}, "f", "fn-$1", "fn", "p?(.*)")',
    r'label_replace(apm_query{A}, "x", "${name}/$2$3", "metric", "(?P<name>[a-z]+)\\.(.)(.*)")',
    'label_replace(apm_query{AB}, "window", "", "fn", "max")',  # deleted where it matches
    'label_replace(apm_query{A}, "x", "$1x", "fn", "(m.*)")',  # the group "1x": "", no x
    'label_replace(apm_query{A}, "x", "$$1 $1 ${1", "id", "a)|(.*")',  # ^(?:a)|(.*)$, as Go
    'label_replace(max_over_time(apm_query{AB}[1m]), "__name__", "m_$1", "fn", "(.*)")',
    'label_replace(apm_query{S}, "server", "$1", "server", "web-(.*)")',
    'sum by (host) (label_replace(apm_query{S}, "host", "$1", "server", "([a-z]+)-.*"))',
    'label_join(apm_query{A}, "key", "/", "id", "fn", "absent")',
    'label_join(apm_query{ABC}, "id", ",", "absent")',  # "" deletes id: still unique by fn
    'sort_desc(label_join(max by (server) (apm_query{S}), "s", "", "server", "server"))',
    # Per-server series (query S): the PromQL Grafana users write over them.
    "apm_query{S} * 1",
    "topk(2, apm_query{S})",
    "bottomk(1, apm_query{S})",
    "topk by (fn) (3, max_over_time(apm_query{S}[1m]))",
    "bottomk by (server) (1, apm_query{S})",
    "avg by (server) (apm_query{S})",
    "max without (server) (apm_query{S})",
    "sum without (server, fn) (apm_query{S})",
    "count(apm_query{S})",
    "count by (fn) (apm_query{S})",
    "quantile by (fn) (0.5, apm_query{S})",
    "max_over_time(apm_query{S12}[1m])",
    "avg_over_time(apm_query{SN1}[2m])",
    "apm_query{S3} * 2",
    "sum by (server) (apm_query{SN1}) > 100",
    "apm_query{S} / on(server) group_left sum by (server) (apm_query{S})",
    "apm_query{S12} - ignoring(server) group_left max without (server) (apm_query{S})",
    "topk(1, apm_query{S}) or apm_query{S3}",
    # offset and @ (unix time, start(), end()): each step's value is the selector's at the
    # step less the offset, or at the @ time, less the offset, for every step.
    "apm_query{A} offset 1m * 1",
    "apm_query{ABC} offset -45s * 1",
    "sum by (fn) (apm_query{AB} offset 2m)",
    "max_over_time(apm_query{AB}[1m] offset 30s)",
    "avg_over_time(apm_query{AB}[2m] offset -1m)",
    "apm_query{A} - apm_query{A} offset 10s",
    "topk(2, apm_query{S} offset 1m)",
    "apm_query{A} @ {AT} * 1",
    "apm_query{ABC} @ {GAP} offset 1m + 0",
    "max_over_time(apm_query{AB}[1m] @ {AT} offset 1m)",
    "apm_query{A} @ start() offset -1m - apm_query{A} @ end() offset 2m",
    "sum by (fn) (apm_query{S} @ end() offset 5m)",
    "last_over_time(apm_query{ABC}[1m] @ end() offset 7m)",
    "count_over_time(apm_query{S}[30s] @ start() offset -1m)",
    # absent and absent_over_time: labels from a selector's = matchers, else none.
    "absent(apm_query{A} > 99)",
    'absent(apm_query{id="{CID}", fn="max", metric=~"promql.*"} @ {GAP})',
    'absent(apm_query{id="gone", fn="p99", fn!="x", window="10s"})',
    "absent_over_time(apm_query{C}[30s])",
    'absent_over_time(apm_query{id="{CID}", fn="min"}[1m] @ {GAP})',
    'absent_over_time(apm_query{id="gone", id=~"g.*", fn="avg"}[1m] offset 1m)',
    # Subqueries: the expression at every multiple of the step (of the epoch) in the range,
    # [range:] at Prometheus' default evaluation_interval, 1m.
    "max_over_time(apm_query{AB}[2m:30s])",
    "avg_over_time(sum by (fn) (apm_query{A})[5m:])",
    "min_over_time((apm_query{ABC} * 2)[3m:15s])",
    "count_over_time(apm_query{C}[5m:20s])",
    "last_over_time(apm_query{A}[1m:7s])",
    "quantile_over_time(0.5, max by (server) (apm_query{S})[2m:20s])",
    "max_over_time(apm_query{S}[1m:15s])",
    "max_over_time(apm_query{AB}[2m:30s] offset 1m)",
    "sum_over_time(apm_query{A}[1m:10s] @ {AT})",
    "stddev_over_time(max_over_time(apm_query{AB}[1m])[5m:1m])",
    "max_over_time(max_over_time(apm_query{A}[30s:10s])[2m:1m])",
    "absent_over_time(apm_query{C}[30s:10s] offset -5m)",
    "topk(2, avg_over_time(apm_query{S}[1m:])) > 10",
    "max_over_time((apm_query{A} @ start() offset -1m)[1m:10s])",  # the query's start
    "min_over_time(apm_query{AB}[1m:20s] offset -30s)",
]
# One-window look-back: bare selectors, and expressions asked with lookback_delta=9999ms.
SHORT = [
    ("apm_query{ABC}", {}),
    ("apm_query{S}", {}),
    ("apm_query{SN1}", {}),
    # Fewer windows than servers: read a window at a time (instants: newest first).
    ("topk(2, apm_query{SN1})", {"lookback_delta": "9999ms"}),
    ("count by (fn) (apm_query{SN1})", {"lookback_delta": "9.999"}),
    ("sum by (fn) (apm_query{ABC})", {"lookback_delta": "9999ms"}),
    ("apm_query{ABC} < bool 50", {"lookback_delta": "9.999"}),
    # A bare selector with offset or @ keeps its one-window look-back at the shifted time.
    ("apm_query{ABC} offset 1m", {}),
    ("apm_query{ABC} offset -30s", {}),
    ("apm_query{S} offset 15s", {}),
    ("apm_query{ABC} @ end() offset 7m", {}),
    ("apm_query{AB} @ {AT} offset 20s", {}),
    ("apm_query{A} @ start() offset -30s", {}),
    ("max_over_time(apm_query{SN1}[1m] offset 1m)", {"lookback_delta": "9999ms"}),
]

# Expressions Prometheus refuses while evaluating: the same status, type and reason.
# (our client, Prometheus' URL, the matchers, the first window's start, the 9999 ms look-back
# Prometheus' URL, the URL of one with --query.max-samples=BUDGET)
Both = tuple[Any, str, dict, int, str, str]
BUDGET = 50  # samples, for both sides of test_the_samples_budget_refuses_as_prometheus_does
# Query S's 40 servers x 2 functions are 80 series: past BUDGET in Prometheus' count (the peak:
# the 80-series result, plus one series' 6 samples of [1m] at a time) and in ours (80 series
# selected, before any read). Over web-3 alone: 2 + 6 in Prometheus', 2 + 2 x 7 windows read in
# ours, within it.
BUDGETED = [
    ("max_over_time(apm_query{S}[1m])", False),
    ("topk(3, max_over_time(apm_query{S}[1m]))", False),
    ("max_over_time(apm_query{S3}[1m])", True),
    ("topk(1, max_over_time(apm_query{S3}[1m]))", True),
]

REFUSED = [
    ("apm_query{A} + on(metric) apm_query{A}", "many-to-many matching not allowed"),
    ("apm_query{AB} - ignoring(fn) group_left apm_query{A}", "many-to-many matching not allowed"),
    ("apm_query{A} / on(id) group_right max by (id) (apm_query{A})", "on the left hand-side"),
    ("apm_query{A} + on(id) max by (id) (apm_query{A})", "many-to-one matching must be explicit"),
    ('label_replace(apm_query{A}, "fn", "", "fn", "m.*")', "the same labelset"),
    ('label_join(apm_query{S12}, "server", "", "absent")', "the same labelset"),
    ('label_replace(apm_query{A}, "a-b", "x", "fn", ".*")', "invalid destination label name"),
    ('label_replace(apm_query{A}, "d", "x", "fn", "(")', "invalid regular expression"),
    ('label_join(apm_query{A}, "d", ",", "b-c")', "invalid source label name"),
    ('label_join(apm_query{A}, "", ",", "fn")', "invalid destination label name"),
]


@pytest.fixture(scope="module")
def both(repo: Any, served: Any, tmp_path_factory: Any) -> Iterator[Both]:
    """(our client, Prometheus' URL, the matchers by placeholder, the first window's start,
    the URL of a Prometheus with a look-back delta of 9999 ms, that of one with a samples
    budget of ``BUDGET``)."""
    from launch.probe import free_port

    rng = random.Random(26)
    base = int(time.time() // 10 * 10) - 1500
    qa = repo.save_query("FROM * SELECT promql.cpu WINDOW 10s COMPUTE min, max, p99")
    qb = repo.save_query("FROM * SELECT promql.mem WINDOW 10s COMPUTE min, max")
    qc = repo.save_query("FROM * SELECT promql.disk WINDOW 10s COMPUTE min, max")
    queries = ((qa, ("min", "max", "p99"), set()), (qb, ("min", "max"), GAPS))
    queries += ((qc, ("min", "max"), LONG_GAPS),)
    rows = [
        WindowResult(q.id, float(base + 10 * i), 10, {f: rng.uniform(0, 100) for f in fns}, 5, base)
        for q, fns, gaps in queries
        for i in range(WINDOWS)
        if i not in gaps
    ]
    qs = repo.save_query("FROM web-* SELECT promql.load WINDOW 10s COMPUTE avg, max BY server")
    rows += [
        WindowResult(
            qs.id,
            float(base + 10 * i),
            10,
            {f: rng.uniform(0, 100) for f in ("avg", "max")},
            5,
            base,
            server,
        )
        for server, present in SERVERS.items()
        for i in sorted(present)
    ]
    repo.upsert_results(rows)
    client = httpx.Client(
        base_url=served.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    matchers = {A: f'{{id="{qa.id}"}}', B: f'{{id="{qb.id}"}}', C: f'{{id="{qc.id}"}}'}
    matchers[AB] = f'{{id=~"{qa.id}|{qb.id}"}}'
    matchers[ABC] = f'{{id=~"{qa.id}|{qb.id}|{qc.id}"}}'
    matchers[S] = f'{{id="{qs.id}"}}'
    matchers[S3] = f'{{id="{qs.id}", server="web-3"}}'
    matchers[S12] = f'{{id="{qs.id}", server=~"web-[12]"}}'
    matchers[SN1] = f'{{id="{qs.id}", server!="web-1"}}'
    matchers[CID], matchers[AT], matchers[GAP] = qc.id, str(base + 605.5), str(base + 750)
    every = {"match[]": [f"apm_query{matchers[ABC]}", f"apm_query{matchers[S]}"]}
    listed = client.get("/api/v1/series", params=every).json()
    samples: dict[tuple, list[tuple[int, float]]] = {}
    for w in rows:
        for fn, v in w.values.items():
            at = round(w.window_start + 10) * 1000
            samples.setdefault((w.query_id, fn, w.server), []).append((at, v))
    series = [
        (labels, samples[labels["id"], labels["fn"], labels.get("server", "")])
        for labels in listed["data"]
    ]
    assert len(series) == 7 + 2 * len(SERVERS)
    text = openmetrics(series)
    home, short = tmp_path_factory.mktemp("promql-reference"), tmp_path_factory.mktemp("short")
    small = tmp_path_factory.mktemp("budget")
    with (
        reference_prometheus(home, text, free_port()) as url,
        reference_prometheus(short, text, free_port(), lookback_delta="9999ms") as short_url,
        reference_prometheus(small, text, free_port(), max_samples=BUDGET) as small_url,
    ):
        yield client, url, matchers, base, short_url, small_url
    client.close()


def _expr(template: str, matchers: dict[str, str]) -> str:
    for placeholder, matcher in matchers.items():
        template = template.replace(placeholder, matcher)
    return template


def _ask(client: httpx.Client, path: str, params: dict[str, Any]) -> Any:
    answer = client.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return normalise(answer.json()["data"])


def _sorted_outermost(query: str) -> bool:
    """Whether an instant query's order is Prometheus' to compare: its outermost function
    (parentheses aside) is sort() or sort_desc()."""
    tree = promql_parser.parse(query)
    while isinstance(tree, promql_parser.ParenExpr):
        tree = tree.expr
    return isinstance(tree, promql_parser.Call) and tree.func.name in ("sort", "sort_desc")


def _compare(ours: httpx.Client, url: str, query: str, base: int, extra: dict) -> None:
    last = base + 10 * WINDOWS  # the last window's end (A's and B's; C stops at last - 200)
    ranges = [(base + 300, last, 10), (base + 5, last, 15), (base, last - 100, 60), (base, last, 7)]
    ranges.append((last - 600, last + 400, 10))  # past every series' end by more than 5 m
    # Fewer windows than query S's 40 servers (look-back included): read a window at a time.
    ranges.append((base + 1005, base + 1045, 10))
    with httpx.Client(base_url=url, timeout=30) as prometheus:
        for start, end, step in ranges:
            params = {"query": query, "start": start, "end": end, "step": step}
            mine = _ask(ours, "/api/v1/query_range", {**params, **extra})
            theirs = _ask(prometheus, "/api/v1/query_range", params)
            assert theirs != {}, f"Prometheus answers nothing to {query}"
            assert same(mine, theirs), (query, start - base, step, mine, theirs)
        ordered = _sorted_outermost(query)
        for at in (base + 600, base + 605.5, base + 700, base + 701, last, last + 300, last + 301):
            mine = _ask(ours, "/api/v1/query", {"query": query, "time": at, **extra})
            theirs = _ask(prometheus, "/api/v1/query", {"query": query, "time": at})
            assert same(mine, theirs, ordered=ordered), (query, at - base, mine, theirs)


@pytest.mark.parametrize("template", EXPRESSIONS)
def test_answers_equal_prometheus(template: str, both: Both) -> None:
    ours, url, matchers, base, _, _ = both
    _compare(ours, url, _expr(template, matchers), base, {})


@pytest.mark.parametrize(("template", "extra"), SHORT)
def test_one_window_look_back_equals_prometheus_with_9999ms(
    template: str, extra: dict[str, str], both: Both
) -> None:
    """A bare selector's documented look-back (a point while ``t - end < window``) is
    Prometheus' with a look-back delta of one window less 1 ms; ``lookback_delta`` gives an
    expression the same."""
    ours, _, matchers, base, short_url, _ = both
    _compare(ours, short_url, _expr(template, matchers), base, extra)


@pytest.mark.parametrize(("template", "reason"), REFUSED)
def test_refusals_equal_prometheus(template: str, reason: str, both: Both) -> None:
    ours, url, matchers, base, _, _ = both
    params = {"query": _expr(template, matchers), "time": base + 600}
    mine = ours.get("/api/v1/query", params=params)
    with httpx.Client(base_url=url, timeout=30) as prometheus:
        theirs = prometheus.get("/api/v1/query", params=params)
    assert (mine.status_code, theirs.status_code) == (422, 422), (mine.text, theirs.text)
    assert mine.json()["errorType"] == theirs.json()["errorType"] == "execution"
    assert reason in mine.json()["error"] and reason in theirs.json()["error"], theirs.text
    assert mine.json()["error"].split(":")[0] == theirs.json()["error"].split(":")[0]


@pytest.mark.parametrize(("template", "fits"), BUDGETED)
def test_the_samples_budget_refuses_as_prometheus_does(
    template: str, fits: bool, both: Both, repo: Any, monkeypatch: Any
) -> None:
    """With the same budget (APM_DASHBOARD_PROM_MAX_SAMPLES, --query.max-samples), a query
    well past it is refused by both with Prometheus' error, one well within it answered alike
    (the two count differently: ours adds the series selected and every window read)."""
    from dashboard.app import create_app
    from dashboard.context import AppContext
    from dashboard.settings import DashboardSettings
    from tests.dashboard.test_api_errors import _Scraper, _Topics

    _, _, matchers, base, _, small_url = both
    monkeypatch.setenv("APM_DASHBOARD_PROM_MAX_SAMPLES", str(BUDGET))
    app = create_app(AppContext(DashboardSettings(token=TOKEN), repo, _Topics(), _Scraper()))
    ours = app.server.test_client()
    ours.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    params: dict[str, Any] = {"query": _expr(template, matchers), "time": base + 600}
    mine = ours.get("/api/v1/query", query_string=params)
    with httpx.Client(base_url=small_url, timeout=30) as prometheus:
        theirs = prometheus.get("/api/v1/query", params=params)
    if fits:
        assert (mine.status_code, theirs.status_code) == (200, 200), (mine.text, theirs.text)
        answer = normalise(mine.get_json()["data"])
        assert answer and same(answer, normalise(theirs.json()["data"]))
        return
    assert (mine.status_code, theirs.status_code) == (422, 422), (mine.text, theirs.text)
    assert mine.get_json()["errorType"] == theirs.json()["errorType"] == "execution"
    assert theirs.json()["error"] == TOO_MANY_SAMPLES
    assert mine.get_json()["error"].startswith(TOO_MANY_SAMPLES + ":")


def test_debian_promtool_queries_an_over_time_function(both: Both, served: Any) -> None:
    """The issue's example: ``promtool query instant ... 'max_over_time(...[1m])'`` (Basic
    credentials in the URL, as Go's HTTP client sends them) answers as Prometheus does."""
    _, url, matchers, base, _, _ = both
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
