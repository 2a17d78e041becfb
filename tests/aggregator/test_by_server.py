"""``BY server`` and ``TOP n`` on the session SparkSession, against numpy: per-server series
come out of the same pass as the plain ones, with the same dedup, and each window's ranking
is apm.ranking's over numpy's per-server answers."""

from __future__ import annotations

import math

import pytest

from aggregator.evaluate import evaluate, to_results
from aggregator.plan import admit, queries_frame, window_summaries
from aggregator.server_writes import ServerWrites, WriteCounts, series_queries, write
from apm.query import WindowResult
from apm.ranking import OTHERS, rank
from storage.settings import StorageSettings
from tests.aggregator.conftest import BASE, FakeStore, assert_matches, expected
from tests.aggregator.test_semantics import _raw, _records

pytestmark = pytest.mark.integration


def _results(spark, records, queries, dedup: bool = True) -> list[WindowResult]:
    table = queries_frame(spark, queries)
    summaries = window_summaries(admit(_raw(spark, records), table), table, 600, dedup=dedup)
    return to_results(evaluate(summaries, table).collect(), {q.id: q.query for q in queries})


def _fleet(fleet_rows):
    rows = fleet_rows(n_servers=5, seconds=35) + fleet_rows(2, 35, prefix="db", seed=2)
    # A server that appears and vanishes inside one window, and a twin of web-1 (a tie).
    rows += [("web-x", BASE + 12.5 + i, 80.0 + i) for i in range(3)]
    rows += [("web-twin", ts, v) for s, ts, v in rows if s == "web-1"]
    return rows


@pytest.mark.parametrize("dedup", [True, False], ids=["operator", "sql"])
def test_per_server_series_match_numpy_beside_the_plain_series(spark, fleet_rows, dedup):
    store = FakeStore()
    rows = _fleet(fleet_rows)
    plain = store.add("FROM * SELECT cpu WINDOW 10s COMPUTE min, max, avg, count, sum, p50, p99")
    per = store.add(
        "FROM * SELECT cpu WINDOW 10s COMPUTE min, max, avg, count, sum, p50, p99 BY server"
    )
    web = store.add("FROM web-* SELECT cpu WINDOW 1m COMPUTE avg, p90 BY server TOP 3 BY avg")
    resent = rows[::4][::-1]  # an agent's retry: other records, another order
    records = _records("cpu", rows) + ([] if not dedup else _records("cpu", resent, 500))
    results = _results(spark, records, [plain, per, web], dedup)
    got_plain = {r.window_start: r for r in results if r.query_id == plain.id}
    assert all(r.server == "" for r in got_plain.values())
    assert_matches(got_plain, expected(rows, plain.query))
    for q in (per, web):
        servers = sorted({s for s, _, _ in rows if q.query.matches(s)})
        mine = [r for r in results if r.query_id == q.id]
        assert all(r.server for r in mine), "a BY server query has no series over all servers"
        assert sorted({r.server for r in mine}) == servers
        for server in servers:
            got = {r.window_start: r for r in mine if r.server == server}
            assert_matches(got, expected([x for x in rows if x[0] == server], q.query))


def test_each_windows_ranking_is_the_rule_applied_to_numpys_answers(
    spark, fleet_rows, server_keyspace, server_repo
):
    """Rankings as the executors write them (aggregator/server_writes.py) on Cassandra."""
    from pyspark.sql import functions as F

    store = FakeStore()
    rows = _fleet(fleet_rows)
    q = store.add(
        "FROM * SELECT cpu WINDOW 10s COMPUTE avg, max, count, p99 BY server TOP 3 BY max"
    )
    low = store.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server BOTTOM 2 BY avg")
    table = queries_frame(spark, [q, low])
    summaries = window_summaries(admit(_raw(spark, _records("cpu", rows)), table), table, 600)
    evaluated = evaluate(summaries, table).where(F.col("server") != "").persist()
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    counts = WriteCounts(spark, "by-server-ranks")
    java = series_queries(spark, {s.id: s.query for s in (q, low)})
    # Half the servers first, then the rest, as two batches would: the cache and storage meet.
    write(evaluated.where(F.col("server") < "web-2"), java, writes, 1_900_000_000.0, counts)
    write(evaluated.where(F.col("server") >= "web-2"), java, writes, 1_900_000_001.0, counts)
    evaluated.unpersist()
    assert counts.drain()["refused"] == 0
    ranked = {
        (stored.id, ws): list(server_repo.read_ranked(stored.id, ws, ws + 1))
        for stored in (q, low)
        for ws in {r.window_start for r in server_repo.read_ranked(stored.id, BASE - 60, BASE + 60)}
    }
    for stored in (q, low):
        truth: dict[float, list[WindowResult]] = {}
        for server in sorted({s for s, _, _ in rows}):
            windows = expected([x for x in rows if x[0] == server], stored.query)
            for ws, values in windows.items():
                n = int(values.get("count", 0)) or sum(
                    1 for s, ts, _ in rows if s == server and ws <= ts < ws + 10
                )
                truth.setdefault(ws, []).append(
                    WindowResult(stored.id, ws, 10, values, n, 0, server)
                )
        assert sorted(ws for qid, ws in ranked if qid == stored.id) == sorted(truth)
        for ws, servers in truth.items():
            want = rank(stored.query, servers)
            got = ranked[(stored.id, ws)]
            assert [(r.rank, r.server) for r in got] == [(r.rank, r.server) for r in want]
            for g, w in zip(got, want, strict=True):
                assert g.samples == w.samples
                assert g.values.keys() == w.values.keys()
                for key in w.values:
                    assert g.values[key] == pytest.approx(w.values[key], rel=1e-9)
            assert got[-1].server == OTHERS
    # web-1 and its twin tie on every function: the name decides, web-1 first.
    tied = [
        [r.server for r in ranking if r.server in ("web-1", "web-twin")]
        for ranking in ranked.values()
    ]
    assert all(t in ([], ["web-1", "web-twin"], ["web-1"]) for t in tied)
    assert not any(
        math.isnan(v) for ranks in ranked.values() for r in ranks for v in r.values.values()
    )


def _per_server(repo, query_id: str, server: str) -> dict[float, WindowResult]:
    return {
        r.window_start: r for r in repo.read_server_results(query_id, server, BASE - 60, BASE + 600)
    }


def _complete(job, produce, metric: str, up_to: float, rows=()) -> None:
    """``rows``, then the job's newest event time moved past ``up_to`` by a sample of a server
    no query here selects, in two batches: a server's window is written once the newest
    event time passes its end plus the grace, and the operator reads that from the watermark
    of the batch before (v5, io.apm.aggregator.HeldPartials)."""
    produce(metric, [*rows, ("clock", up_to, 0.0)])
    job.windows.processAllAvailable()
    produce(metric, [("clock", up_to + 0.5, 0.0)])
    job.windows.processAllAvailable()


def test_the_streaming_job_refines_per_server_windows_with_late_data_and_reranks_them(
    fake_store, job_factory, metric_topics, produce, fleet_rows, server_keyspace, server_repo
):
    metric = metric_topics()
    q = fake_store.add(f"FROM web-* SELECT {metric} WINDOW 10s COMPUTE count, max, avg BY server")
    top = fake_store.add(f"{q.query.text} TOP 2 BY max")
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    job = job_factory(metrics=metric, allowed_lateness_seconds=60, server_writes=writes)
    first = fleet_rows(3, 20)  # three servers a second, in order of time
    produce(metric, first[:33])  # up to BASE + 10.9: the first window is not complete
    job.windows.processAllAvailable()
    assert not _per_server(server_repo, q.id, "web-0"), "the windows are open: none written"
    # The rest, a retry of every other sample, and the newest event time at BASE + 30: the
    # two windows are complete once the grace (2 s) passed in a batch before.
    _complete(job, produce, metric, BASE + 30, first[33:] + first[::2])
    assert set(_per_server(server_repo, q.id, "web-1")) == {BASE + 0.0, BASE + 10.0}
    late = [("web-1", BASE + 5.5, 1000.0)]  # within the lateness: web-1's first window refined
    produce(metric, late)
    job.windows.processAllAvailable()
    assert _per_server(server_repo, q.id, "web-1")[BASE + 0.0].values["max"] == 1000.0
    ahead = fleet_rows(3, 5, start=BASE + 200, seed=9)
    produce(metric, ahead)
    job.windows.processAllAvailable()
    produce(metric, [("web-2", BASE + 3.0, 5000.0)])  # past the lateness: counted, not used
    job.windows.processAllAvailable()
    _complete(job, produce, metric, BASE + 300)
    everything = first + late + ahead
    for stored in (q, top):
        for server in ("web-0", "web-1", "web-2"):
            rows = [x for x in everything if x[0] == server]
            assert_matches(
                _per_server(server_repo, stored.id, server), expected(rows, stored.query)
            )
    assert job.late_rows_total >= 1
    refined = list(server_repo.read_ranked(top.id, float(BASE), BASE + 1.0))
    assert [r.server for r in refined][:1] == ["web-1"], "the late 1000.0 tops the window"
    assert refined[-1].server == OTHERS
    assert not list(server_repo.read_ranked(q.id, float(BASE), BASE + 1.0))


def test_a_checkpoint_of_the_live_path_runs_on_when_windows_are_held(
    fake_store,
    job_factory,
    metric_topics,
    produce,
    fleet_rows,
    server_keyspace,
    server_repo,
    tmp_path,
):
    """The upgrade to v5: a checkpoint written by the path that writes a server's open windows
    with every batch (v4's, ``server_windows_live``: its dedup state is version 1) is read on
    by a job that holds them, with resends of what the old run counted."""
    metric = metric_topics()
    q = fake_store.add(f"FROM web-* SELECT {metric} WINDOW 10s COMPUTE count, max, avg BY server")
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    checkpoint = tmp_path / "upgraded"
    rows = fleet_rows(3, 30)
    old = job_factory(
        metrics=metric, checkpoint_dir=checkpoint, server_windows_live=True, server_writes=writes
    )
    produce(metric, rows[:45])  # 15 s: the second window is open
    old.windows.processAllAvailable()
    assert BASE + 10.0 in _per_server(server_repo, q.id, "web-0"), "the live path: open windows"
    old.stop()
    new = job_factory(metrics=metric, checkpoint_dir=checkpoint, server_writes=writes)
    _complete(new, produce, metric, BASE + 60, rows[45:] + rows[:45:3])
    for server in ("web-0", "web-1", "web-2"):
        mine = [x for x in rows if x[0] == server]
        assert_matches(_per_server(server_repo, q.id, server), expected(mine, q.query))


def test_a_window_held_across_a_jump_of_event_time_past_the_lateness_is_written(
    fake_store, job_factory, metric_topics, produce, fleet_rows, server_keyspace, server_repo
):
    """A backlog read in one batch can carry a window's samples and samples far past its end:
    the next batch's watermark is then already past the window when its held partials fall
    due. They are written all the same (the aggregation does not drop them as late)."""
    metric = metric_topics()
    q = fake_store.add(f"FROM web-* SELECT {metric} WINDOW 10s COMPUTE count, max BY server")
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    job = job_factory(metrics=metric, allowed_lateness_seconds=60, server_writes=writes)
    rows = fleet_rows(3, 10)
    produce(metric, [*rows, ("clock", BASE + 500.0, 0.0)])  # one record: one batch
    job.windows.processAllAvailable()
    _complete(job, produce, metric, BASE + 501)
    for server in ("web-0", "web-1", "web-2"):
        mine = [x for x in rows if x[0] == server]
        assert_matches(_per_server(server_repo, q.id, server), expected(mine, q.query))
