"""On the real engines (issue 14 items 1 and 11): a poison value that overflows a window's sum
does not stop the job, and a host whose clock runs ahead does not move the watermark.
In-process jobs on the session's SparkSession reading the real Kafka; the poison test writes
through the real Repository into Cassandra (which refuses non-finite values)."""

from __future__ import annotations

import contextlib
import time

import pytest

from aggregator.evaluate import OVERFLOW_KEY
from aggregator.job import Aggregator
from aggregator.settings import AggregatorSettings
from tests.aggregator.conftest import BASE, assert_matches, expected
from tests.support.keyspaces import scratch_repository

pytestmark = pytest.mark.integration

HUGE = 1.7e308  # finite, accepted by the ingest; two of them overflow a double's sum


@pytest.fixture
def repository(stack):
    with scratch_repository("aggp") as repo:
        yield repo


def _settings(kafka_bootstrap, metric, path, **more) -> AggregatorSettings:
    return AggregatorSettings(
        kafka_bootstrap=kafka_bootstrap,
        metrics=metric,
        checkpoint_dir=path,
        trigger_seconds=0.5,
        servers_trigger_seconds=0.5,
        metrics_port=0,
        storage_retry_seconds=20,
        **more,
    )


def _drain(job: Aggregator) -> None:
    assert job.windows is not None
    job.windows.processAllAvailable()
    job.touches.flush(force=True)
    assert job.failed() is None


def test_two_samples_of_1_7e308_in_a_window_do_not_stop_the_job(
    repository, spark, kafka_bootstrap, metric_topics, produce, fleet_rows, tmp_path
):
    # Fails before: the window's sum and avg were inf, Cassandra's repository refused the row,
    # the upsert was retried until its deadline and the stream stopped, on every replay.
    metric = metric_topics()
    every = repository.save_query(
        f"FROM * SELECT {metric} WINDOW 10s COMPUTE avg, sum, max, p50, count"
    )
    web = repository.save_query(f"FROM web-* SELECT {metric} WINDOW 10s COMPUTE avg, sum, count")
    job = Aggregator(spark, repository, _settings(kafka_bootstrap, metric, tmp_path))
    job.start()
    try:
        rows = fleet_rows(3, 30)
        poison = [("poison-1", BASE + 12.5, HUGE), ("poison-2", BASE + 13.5, HUGE)]
        produce(metric, rows + poison)
        _drain(job)
        more = fleet_rows(3, 10, start=BASE + 30, seed=5)
        produce(metric, more)  # the job still runs: later windows are written, exactly
        _drain(job)
    finally:
        job.stop()

    def stored(q):
        return {r.window_start: r for r in repository.read_results(q.id, BASE - 60, BASE + 600)}

    assert_matches(stored(web), expected(rows + more, web.query))
    got, want = stored(every), expected(rows + more, every.query)
    poisoned = got.pop(BASE + 10.0)
    normal = want.pop(BASE + 10.0)
    assert_matches(got, want)  # every other window of the same query is exact
    assert poisoned.values.keys() == {"max", "p50", "count", OVERFLOW_KEY}
    assert poisoned.values["max"] == HUGE and poisoned.values[OVERFLOW_KEY] == 2.0
    assert poisoned.values["count"] == normal["count"] + 2 == poisoned.samples
    assert job.telemetry.overflowed.labels("avg")._value.get() >= 1
    assert job.restarts.failures == 0


def test_a_host_whose_clock_runs_ahead_does_not_move_the_watermark(
    spark, fake_store, kafka_bootstrap, metric_topics, produce, fleet_rows, tmp_path
):
    # Fails before: the skewed sample (ingest accepts 300 s ahead) moved the one watermark to
    # its time minus the delay, so every host's samples behind that were dropped as late.
    metric = metric_topics()
    q = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, max")
    job = Aggregator(
        spark,
        fake_store,
        _settings(kafka_bootstrap, metric, tmp_path, allowed_lateness_seconds=60),
    )
    job.start()
    try:
        first = fleet_rows(3, 20)
        produce(metric, first)
        _drain(job)
        # 200 s ahead of its arrival (Kafka's timestamp), which the ingest would accept.
        skewed = [("skewed-1", time.time() + 200.0, 1.0)]
        produce(metric, skewed)
        _drain(job)
        produce(metric, fleet_rows(1, 1, start=BASE + 21, seed=3))  # a batch after it
        _drain(job)
        # 3 minutes after the first rows in event time: within the lateness of the
        # watermark the fleet's own clocks set, far behind the skewed host's.
        later = fleet_rows(3, 10, start=BASE + 40, seed=4)
        produce(metric, later)
        _drain(job)
        status = job.publish_status()
    finally:
        job.stop()
    everything = first + fleet_rows(1, 1, start=BASE + 21, seed=3) + later
    assert_matches(fake_store.of(q.id), expected(everything, q.query))
    assert job.set_aside.by_metric[metric]["future"] == 1
    assert status["set_aside"][metric]["future"] == 1
    # Every test sample is historic: counted as arrived past the lateness, not dropped here
    # (the job's own watermark is still behind them).
    assert status["set_aside"][metric]["backlog"] == len(everything)
    assert "skewed-1" not in fake_store.servers


def test_storage_away_past_the_retry_deadline_restarts_the_stream_and_loses_nothing(
    spark, fake_store, kafka_bootstrap, metric_topics, produce, fleet_rows, tmp_path
):
    # Fails before: the stopped stream made the job (and the process) exit.
    import threading

    from cassandra import OperationTimedOut

    class Away:
        """The fake store, timing out like the driver while ``away`` is set."""

        def __init__(self, inner):
            self.inner, self.away, self.tries = inner, True, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def upsert_results(self, rows):
            self.tries += 1
            if self.away:
                raise OperationTimedOut("Cassandra away")
            return self.inner.upsert_results(rows)

    metric = metric_topics()
    q = fake_store.add(f"FROM * SELECT {metric} WINDOW 10s COMPUTE count, sum, max")
    store = Away(fake_store)
    settings = _settings(
        kafka_bootstrap, metric, tmp_path, track_servers=False, stream_restart_cap_seconds=1
    )
    job = Aggregator(spark, store, settings.model_copy(update={"storage_retry_seconds": 1.0}))
    job.start()
    try:
        rows = fleet_rows(3, 20)
        produce(metric, rows)
        assert job.windows is not None
        with contextlib.suppress(Exception):  # the failure, as a StreamingQueryException
            job.windows.awaitTermination(120)
        assert job.failed() is not None and store.tries > 1  # retried, then gave up
        store.away = False
        job.recover(threading.Event())
        assert job.failed() is None and job.restarts.failures == 1
        job.windows.processAllAvailable()
    finally:
        job.stop()
    assert_matches(fake_store.of(q.id), expected(rows, q.query))  # the failed batch replayed
    assert job.telemetry.stream_failures.labels("windows")._value.get() == 1
