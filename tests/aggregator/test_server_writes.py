"""Per-server results written by the executors (aggregator/server_writes.py,
io.apm.aggregator.ServerResults) on the real Cassandra: each server's windows equal numpy's,
each ranking is apm.ranking's rule over them, and the JVM's ranking and values are the Python
rule's on random windows."""

from __future__ import annotations

import math
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py4j.java_gateway import get_field

from aggregator.evaluate import evaluate
from aggregator.plan import admit, queries_frame, window_summaries
from aggregator.server_writes import JVM_OPS, ServerWrites, WriteCounts, series_queries, write
from apm.functions import CATALOGUE
from apm.query import WindowResult, parse
from apm.ranking import OTHERS, rank
from storage.settings import StorageSettings
from tests.aggregator.conftest import BASE, FakeStore, assert_matches, expected
from tests.aggregator.test_semantics import _raw, _records

pytestmark = pytest.mark.integration


def test_every_catalogue_function_has_a_jvm_operation():
    assert set(JVM_OPS) == set(CATALOGUE)


def test_executors_write_each_servers_windows_and_rankings(
    spark, fleet_rows, server_keyspace, server_repo
):
    keyspace, repo = server_keyspace, server_repo
    store = FakeStore()
    rows = fleet_rows(n_servers=5, seconds=35)
    rows += [("web-x", BASE + 12.5 + i, 80.0 + i) for i in range(3)]  # appears and vanishes
    rows += [("web-twin", ts, v) for s, ts, v in rows if s == "web-1"]  # a tie with web-1
    per = store.add(
        "FROM * SELECT cpu WINDOW 10s COMPUTE min, max, avg, count, sum, p50, p99 "
        "BY server TOP 3 BY avg"
    )
    low = store.add("FROM web-* SELECT cpu WINDOW 10s COMPUTE avg, p90 BY server BOTTOM 2 BY p90")
    queries = {q.id: q.query for q in (per, low)}
    table = queries_frame(spark, [per, low])
    resent = rows[::4][::-1]
    records = _records("cpu", rows) + _records("cpu", resent, 500)
    summaries = window_summaries(admit(_raw(spark, records), table), table, 600)
    evaluated = evaluate(summaries, table).persist()
    writes = ServerWrites(StorageSettings(), keyspace, retry_s=10)
    counts = WriteCounts(spark, f"t-{uuid.uuid4().hex[:6]}")
    write(evaluated, series_queries(spark, queries), writes, 1_900_000_000.0, counts)
    done = counts.drain()
    evaluated.unpersist()
    assert done["refused"] == 0 and done["written"] > 0
    for stored in (per, low):
        servers = sorted({s for s, _, _ in rows if stored.query.matches(s)})
        for server in servers:
            got = {
                r.window_start: r
                for r in repo.read_server_results(stored.id, server, BASE - 100, BASE + 100)
            }
            assert_matches(got, expected([x for x in rows if x[0] == server], stored.query))
        windows = sorted(
            {
                r.window_start
                for s in servers
                for r in repo.read_server_results(stored.id, s, BASE - 100, BASE + 100)
            }
        )
        assert windows, "no window written"
        for ws in windows:
            stored_rows = list(repo.read_window_servers(stored.id, ws))
            want = rank(stored.query, stored_rows)
            got_ranking = [r for r in repo.read_ranked(stored.id, ws, ws + 1)]
            assert [(r.rank, r.server, r.samples) for r in got_ranking] == [
                (r.rank, r.server, r.samples) for r in want
            ]
            for g, w in zip(got_ranking, want, strict=True):
                assert g.values == pytest.approx(w.values, rel=0, abs=0)
            assert got_ranking[-1].server == OTHERS or len(got_ranking) <= stored.query.top.n


_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(min_value=-100, max_value=100),
    st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e308]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.lists(
        st.tuples(
            st.sampled_from([f"s{i}" for i in range(12)]),
            st.dictionaries(st.sampled_from(["avg", "min", "max", "count", "sum", "p99"]), _values),
            st.integers(min_value=0, max_value=10**6),
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda t: t[0],
    ),
    n=st.integers(min_value=1, max_value=5),
    bottom=st.booleans(),
)
def test_the_jvm_ranking_is_the_python_rule(spark, data, n, bottom):
    clause = f"{'BOTTOM' if bottom else 'TOP'} {n} BY avg"
    text = f"FROM * SELECT cpu WINDOW 10s COMPUTE avg, min, max, count, sum, p99 BY server {clause}"
    query = parse(text)
    jvm = spark._jvm
    java_query = series_queries(spark, {"q": query}).get(0)
    entry = getattr(jvm.io.apm.aggregator, "Ranking$Entry")
    rows = [
        WindowResult("q", 0.0, 10, vals, samples, 100.0, server) for server, vals, samples in data
    ]
    java_rows = jvm.java.util.ArrayList()
    for r in rows:
        values = jvm.java.util.LinkedHashMap()
        for k, v in r.values.items():
            values.put(k, float(v))
        java_rows.add(entry(r.server, values, r.samples, 100_000))
    got = [
        (get_field(g, "server"), get_field(g, "samples"), dict(get_field(g, "values")))
        for g in jvm.io.apm.aggregator.Ranking.rank(java_query, java_rows)
    ]
    want = rank(query, rows)
    assert [(s, n) for s, n, _ in got] == [(w.server, w.samples) for w in want]
    for (_, _, values), w in zip(got, want, strict=True):
        gv = {k: float(v) for k, v in values.items()}
        assert gv.keys() == w.values.keys()
        for k in gv:
            assert gv[k] == w.values[k] or (math.isnan(gv[k]) and math.isnan(w.values[k]))


def test_a_window_new_to_this_jvm_is_ranked_with_the_rows_storage_already_holds(
    spark, server_keyspace, server_repo
):
    """The executors' cache has never seen this window: its earlier rows (written here through
    the repository, as a previous process would have) are read before the task writes its own,
    and the ranking holds both."""
    from pyspark.sql import Row

    query = parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server TOP 2 BY max")
    qid, start = f"q-{uuid.uuid4().hex[:8]}", 1_900_000_100
    earlier = [
        WindowResult(qid, float(start), 10, {"avg": v, "max": v}, 3, 1_899_999_000.0, s)
        for s, v in (("old-a", 50.0), ("old-b", 5.0))
    ]
    server_repo.upsert_results(earlier)
    rows = spark.createDataFrame(
        [
            Row(qid, s, 10, start, 2, 2 * v, v, v, None)
            for s, v in (("new-a", 30.0), ("new-b", 70.0))
        ],
        "query_id string, server string, window_seconds int, window_start long, n long, "
        "sum double, min double, max double, percentiles array<double>",
    )
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    counts = WriteCounts(spark, f"t-{uuid.uuid4().hex[:6]}")
    write(rows, series_queries(spark, {qid: query}), writes, 1_900_000_200.0, counts)
    done = counts.drain()
    assert done["reads"] == 1 and done["ranked"] == 1
    ranked = list(server_repo.read_ranked(qid, float(start), start + 1.0))
    assert [(r.server, r.values.get("max")) for r in ranked] == [
        ("new-b", 70.0),
        ("old-a", 50.0),
        (OTHERS, 30.0),
    ]
    assert ranked[-1].samples == 3 + 2  # old-b's 3 and new-a's 2
