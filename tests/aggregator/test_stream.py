"""The streaming job in-process on the session SparkSession, reading the real Kafka: lateness,
duplicates across micro-batches, query changes without a process restart, new topics, shards
and lag. Results land in the in-memory store (the Cassandra chain is test_chain.py)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from aggregator.job import Aggregator
from apm.model import topic_for
from apm.query_state import shard_of
from tests.aggregator.conftest import BASE, assert_matches, expected

pytestmark = pytest.mark.integration


def _drain(job: Aggregator) -> None:
    assert job.windows is not None
    job.windows.processAllAvailable()


def test_late_samples_refine_their_window_duplicates_do_not_too_late_ones_are_counted(
    fake_store, job_factory, metric_topics, produce, fleet_rows
):
    metric = metric_topics()
    q = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, sum, max, p50")
    job = job_factory(metrics=metric, allowed_lateness_seconds=60)
    first = fleet_rows(3, 20)
    produce(metric, first)
    _drain(job)
    assert_matches(fake_store.of(q.id), expected(first, q.query))

    late = [("late-1", BASE + 5.5, 1000.0)]  # within the lateness: window BASE is refined
    ahead = fleet_rows(3, 5, start=BASE + 200, seed=9)  # event time moves past the lateness
    produce(metric, first[::2] + late + ahead)  # first[::2]: an agent's retry, in a new batch
    _drain(job)
    everything = first + late + ahead
    assert_matches(fake_store.of(q.id), expected(everything, q.query))

    produce(metric, [("too-late", BASE + 3.0, -1.0)])  # window BASE is now past the lateness
    _drain(job)
    assert_matches(fake_store.of(q.id), expected(everything, q.query))
    status = job.publish_status()
    assert status["late_rows_dropped"] == job.late_rows_total >= 1
    # The watermark passed the first windows: the aggregation evicted them from its state
    # (window_end carries the event-time mark; without it state would grow for ever).
    assert job.windows is not None
    evicted = sum(
        op.get("numRowsRemoved", 0)
        for p in job.windows.recentProgress
        for op in p["stateOperators"]
        if op["operatorName"] == "stateStoreSave"
    )
    assert evicted >= 1
    assert fake_store.status[job.settings.identity]["lag_total"] == 0
    job.touches.flush(force=True)
    assert set(fake_store.servers) >= {"web-0", "web-1", "web-2", "late-1"}


def test_resends_in_later_batches_change_nothing_even_after_their_window_was_written(
    fake_store, job_factory, metric_topics, produce, fleet_rows
):
    from aggregator.partials import DEDUP_BLOCK_SECONDS, DEDUP_BUCKETS
    from aggregator.progress import DEDUP_OPERATOR

    metric = metric_topics()
    q = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, sum, min, max, p90")
    job = job_factory(metrics=metric, allowed_lateness_seconds=600)
    rows = fleet_rows(4, 40)
    produce(metric, rows)
    _drain(job)
    want = expected(rows, q.query)
    assert_matches(fake_store.of(q.id), want)
    written = dict(fake_store.of(q.id))
    # The same samples again, in two later batches, in other records and another order: one
    # resend of every sample (its windows are already written and closed), then a second
    # resend of a third of them, as an agent's retries would.
    produce(metric, rows[::-1], chunk_bytes=700)
    _drain(job)
    produce(metric, rows[::3])
    _drain(job)
    assert_matches(fake_store.of(q.id), want)
    assert {ws: r.samples for ws, r in fake_store.of(q.id).items()} == {
        ws: r.samples for ws, r in written.items()
    }
    # The dedup state is one row per (metric, server bucket, block), not one per sample.
    assert job.windows is not None
    dedup_rows = [
        op["numRowsTotal"]
        for p in job.windows.recentProgress
        for op in p["stateOperators"]
        if op["operatorName"] == DEDUP_OPERATOR
    ]
    blocks = 40 // DEDUP_BLOCK_SECONDS + 2
    assert 0 < dedup_rows[-1] <= min(4, DEDUP_BUCKETS) * blocks < len(rows)


def _drain_until(job: Aggregator, check, timeout_s: float = 90) -> None:
    """Drains until ``check`` stops failing: a window may arrive over two batches."""
    deadline = time.monotonic() + timeout_s
    while True:
        _drain(job)
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_pausing_the_last_query_on_a_metric_unsubscribes_it_and_resuming_reads_new_data(
    fake_store, job_factory, metric_topics, produce, fleet_rows
):
    m1, m2 = metric_topics(), metric_topics()
    q1 = fake_store.add(f"FROM * SELECT {m1} WINDOW 10s COMPUTE count, sum, min")
    q2 = fake_store.add(f"FROM * SELECT {m2} WINDOW 10s COMPUTE count, max")
    job = job_factory()
    assert job.reads == sorted([m1, m2])
    part1 = fleet_rows(2, 15)
    produce(m1, part1)
    produce(m2, part1)
    _drain(job)

    q3 = fake_store.add(f"FROM web-1 SELECT {m1} WINDOW 1m COMPUTE max, count")
    fake_store.queries[q2.id].paused = True  # the last query on m2
    assert job.refresh_queries()
    assert job.reads == [m1]
    assert job.publish_status()["reads"] == [m1]
    part2 = fleet_rows(2, 15, start=BASE + 15, seed=4)  # shares window BASE+10 with part1
    produce(m1, part2)
    paused_rows = fleet_rows(2, 10, start=BASE + 30, seed=7)
    produce(m2, paused_rows)  # sent while nothing reads m2
    _drain(job)
    # q1's window state carried over the restart: BASE+10 holds samples from both parts.
    assert_matches(fake_store.of(q1.id), expected(part1 + part2, q1.query))
    assert_matches(fake_store.of(q3.id), expected(part2, q3.query))
    assert_matches(fake_store.of(q2.id), expected(part1, q2.query))

    # Resuming makes q2 active from now: m2 joins again at the data that arrives from now on,
    # although Spark reads the rejoining topic from its earliest offset.
    fake_store.queries[q2.id] = replace(
        fake_store.queries[q2.id], paused=False, active_since=datetime.now(UTC)
    )
    assert job.refresh_queries()
    assert job.reads == sorted([m1, m2])
    # m2's records from before the resume are read once and dropped, under a cap raised by
    # their number for one batch; then the job goes back to its configured cap.
    assert job.join_cap.raised
    after = fleet_rows(2, 10, start=BASE + 60, seed=8)
    produce(m2, after)
    _drain_until(
        job, lambda: assert_matches(fake_store.of(q2.id), expected(part1 + after, q2.query))
    )
    job.settle()
    assert not job.join_cap.raised and job.windows is not None and job.reads == sorted([m1, m2])
    _drain(job)
    assert_matches(fake_store.of(q1.id), expected(part1 + part2, q1.query))
    assert_matches(fake_store.of(q2.id), expected(part1 + after, q2.query))

    del fake_store.queries[q3.id]
    fake_store.queries[q1.id].paused = True
    fake_store.queries[q2.id].paused = True
    assert job.refresh_queries()
    assert not job.refresh_queries()  # nothing changed: no restart
    # No active query: no stream at all, the job only polls the query table.
    assert job.windows is None and job.reads == []
    status = job.publish_status()
    assert status["idle"] is True and status["reads"] == [] and status["lag"] == {}


def test_a_query_on_a_metric_with_no_topic_waits_for_it_and_reads_it_when_it_comes(
    fake_store, job_factory, produce, fleet_rows, unique_name, kafka_bootstrap, own_topics
):
    from apm.kafka import TopicSpec, ensure_topics

    metric = unique_name("aggnew")  # no topic yet: nothing ever sent it
    q = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, sum, min, max")
    job = job_factory()
    assert job.reads == [metric]
    time.sleep(2)
    job.check()  # the stream is alive, waiting for the topic
    assert job.publish_status()["lag"] == {}
    own_topics.append(topic_for(metric))
    ensure_topics(kafka_bootstrap, own_topics, TopicSpec(partitions=1))
    rows = fleet_rows(3, 12)
    produce(metric, rows)
    _drain_until(job, lambda: assert_matches(fake_store.of(q.id), expected(rows, q.query)))
    # The same pass records the metric's newest sample (a query's "no-data" state).
    job.touches.flush(force=True)
    assert fake_store.metrics[metric] == max(ts for _, ts, _ in rows)


def test_new_topics_are_picked_up_shards_split_metrics_and_lag_reaches_zero(
    fake_store, job_factory, metric_topics, produce, fleet_rows, unique_name
):
    prefix = unique_name("aggp")
    # Two shards, and names drawn until m1 and m2 share one and m3 has the other. (Searching
    # a shard count that fits three random names failed now and then: no n in range divides
    # crc32(m1) - crc32(m2) when that difference is prime, about 1 draw in 20.)
    n = 2
    m1 = metric_topics(prefix)
    m2 = next(
        m for m in iter(lambda: metric_topics(prefix), None) if shard_of(m, n) == shard_of(m1, n)
    )
    m3 = next(
        m for m in iter(lambda: metric_topics(prefix), None) if shard_of(m, n) != shard_of(m1, n)
    )
    queries = [fake_store.add(f"FROM * SELECT {m} WINDOW 10s COMPUTE count") for m in (m1, m3)]
    rows = fleet_rows(2, 12)
    produce(m1, rows)
    produce(m3, rows)
    job = job_factory(shard=f"{shard_of(m1, n)}/{n}")
    assert [q.id for q in job.active] == [queries[0].id]  # m3 belongs to another shard
    _drain(job)
    assert_matches(fake_store.of(queries[0].id), expected(rows, queries[0].query))

    late_topic = metric_topics(prefix)  # a metric topic created while the job runs
    if shard_of(late_topic, n) == shard_of(m1, n):
        q_new = fake_store.add(f"FROM * SELECT {late_topic} WINDOW 10s COMPUTE count")
    else:
        q_new = fake_store.add(f"FROM * SELECT {m2} WINDOW 10s COMPUTE count")
        late_topic = m2
    job.refresh_queries()
    produce(late_topic, rows)
    _drain_until(job, lambda: assert_matches(fake_store.of(q_new.id), expected(rows, q_new.query)))
    assert not fake_store.of(queries[1].id)

    status = job.publish_status()
    # It reads exactly its queries' topics: m3's query is another shard's.
    assert status["lag"] == {topic_for(m1): 0, topic_for(late_topic): 0}
    assert status["reads"] == sorted([m1, late_topic])
    assert status["scope"] == {"metrics": [], "shard": [shard_of(m1, n), n]}


def test_a_record_across_dedup_keys_and_windows_is_split_and_a_resend_in_another_counts_once(
    fake_store, job_factory, metric_topics, produce
):
    """One record whose samples belong to many dedup keys (servers in different buckets, times
    on both sides of an 8 s block's end) and to two 10 s windows, then a later batch whose one
    record mixes new samples with a resend of one old sample: every window equals numpy's, and
    the resend changes nothing."""
    from aggregator.partials import DEDUP_BLOCK_SECONDS

    metric = metric_topics(partitions=1)
    ten = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, sum, min, max, p50")
    minute = fake_store.add(f"FROM web-1* SELECT {metric} WINDOW 1m COMPUTE count, sum, avg")
    job = job_factory(metrics=metric, allowed_lateness_seconds=600)
    edge = BASE + DEDUP_BLOCK_SECONDS  # a block's end inside the first window
    times = [BASE + 1.25, edge - 0.001, edge, edge + 0.5, BASE + 9.999, BASE + 10.0, BASE + 13.5]
    first = [
        (f"web-{s}", t, float(s * 100 + i) + 0.125)
        for i, t in enumerate(times)
        for s in range(12)  # 12 servers: several of the 32 server buckets
    ]
    produce(metric, first, chunk_bytes=1 << 20)  # all of it in one record
    _drain(job)
    assert_matches(fake_store.of(ten.id), expected(first, ten.query))
    assert set(fake_store.of(ten.id)) == {float(BASE), float(BASE + 10)}

    resent = first[17]  # one old sample, now in a new record with new ones
    later = [("web-3", BASE + 15.5, 7.0), resent, ("web-10", BASE + 2.0, -3.5)]
    produce(metric, later, chunk_bytes=1 << 20)
    _drain(job)
    everything = [*first, later[0], later[2]]
    assert_matches(fake_store.of(ten.id), expected(everything, ten.query))
    assert_matches(fake_store.of(minute.id), expected(everything, minute.query))
