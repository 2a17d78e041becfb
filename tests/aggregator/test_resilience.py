"""Storage faults and poison values must not stop the aggregator (issue 14 items 1 and 10):
transient storage failures are retried, deterministic ones are not, a refused row is set
aside, and a stream that stopped is started again. Unit tests: the store is the in-memory
fake, made to fail like the Cassandra driver does; waits advance a fake clock."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest, OperationTimedOut, WriteTimeout

from aggregator.job import Aggregator
from aggregator.retrying import RetryingStore
from aggregator.settings import AggregatorSettings
from apm.query import WindowResult
from apm.retry import Backoff
from storage.codec import result_error
from tests.aggregator.conftest import FakeStore
from tests.support.clock import AdvancingEvent, FakeClock

pytestmark = pytest.mark.unit


class _Flaky(FakeStore):
    """Fails the next calls with the given exceptions, then behaves."""

    def __init__(self, *failures: Exception) -> None:
        super().__init__()
        self.failures, self.calls = list(failures), 0

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)

    def upsert_results(self, rows):
        rows = list(rows)
        self._maybe_fail()
        for row in rows:  # the real repository refuses non-finite values, one bad row: none
            if (err := result_error(row)) is not None:
                raise ValueError(err)
        return super().upsert_results(rows)

    def touch_servers(self, last_seen):
        self._maybe_fail()
        super().touch_servers(last_seen)


def _retrying(
    store: FakeStore, deadline: float = 60.0
) -> tuple[RetryingStore, AdvancingEvent, list]:
    clock = FakeClock()
    stop = AdvancingEvent(clock)
    retried: list[str] = []
    wrapped = RetryingStore(
        store,
        deadline,
        stop=stop,
        retried=retried.append,
        backoff=lambda: Backoff(initial=0.1, cap=5.0, jitter=0.0),
        clock=clock,
    )
    return wrapped, stop, retried


def _row(qid: str, value: float) -> WindowResult:
    return WindowResult(qid, 1_700_000_000.0, 10, {"max": value}, 1, 1_700_000_001.0)


def test_transient_storage_failures_are_retried_with_backoff_until_they_pass():
    store = _Flaky(OperationTimedOut("timed out"), WriteTimeout("replicas", write_type=0))
    wrapped, stop, retried = _retrying(store)
    assert wrapped.upsert_results([_row("a", 1.0)]) == 1
    assert store.calls == 3 and stop.waits == [0.1, 0.2]
    assert retried == ["upsert_results", "upsert_results"]


def test_a_deterministic_refusal_is_never_retried():
    # Fails before: every failure was retried for 60 s as if it were transient.
    store = _Flaky(InvalidRequest("Error from server: code=2200 [Invalid query]"))
    wrapped, stop, retried = _retrying(store)
    with pytest.raises(InvalidRequest):
        wrapped.upsert_results([_row("a", 1.0)])
    assert store.calls == 1 and stop.waits == [] and retried == []


def test_a_transient_failure_past_the_deadline_propagates():
    store = _Flaky(*[OperationTimedOut("down")] * 100)
    wrapped, stop, _ = _retrying(store, deadline=10.0)
    with pytest.raises(OperationTimedOut):
        wrapped.upsert_results([_row("a", 1.0)])
    assert sum(stop.waits) <= 10.0 and max(stop.waits) <= 5.0


def test_the_server_last_seen_writes_are_retried_too():
    # Fails before: touch_servers had no retry, so one timeout stopped the (then separate)
    # servers stream and with it the process (issue 14 item 10).
    store = _Flaky(OperationTimedOut("timed out"))
    job = Aggregator(None, store, AggregatorSettings())  # type: ignore[arg-type]
    assert isinstance(job.store, RetryingStore)
    job.store.stop = AdvancingEvent(FakeClock())
    job._touch({"web-1": 1_700_000_000.0}, {})
    assert store.servers == {"web-1": 1_700_000_000.0} and store.calls == 2
    assert job.telemetry.storage_retries.labels("touch_servers")._value.get() == 1


def test_a_row_storage_refuses_is_set_aside_and_the_others_are_written():
    # Fails before: the refusal was retried for 60 s, then the batch failed, and on every
    # replay again: the job stopped for good.
    store = _Flaky()
    job = Aggregator(None, store, AggregatorSettings())  # type: ignore[arg-type]
    job._write([_row("a", 1.0), _row("poison", float("inf")), _row("b", 2.0)])
    assert sorted(qid for qid, _ in store.results) == ["a", "b"]
    assert job.telemetry.refused._value.get() == 1
    assert job.telemetry.results._value.get() == 2


def test_a_transient_failure_at_the_deadline_fails_the_batch_so_it_is_replayed():
    store = _Flaky(*[OperationTimedOut("down")] * 1000)
    job = Aggregator(None, store, AggregatorSettings(storage_retry_seconds=5))  # type: ignore[arg-type]
    job.store.stop = AdvancingEvent(FakeClock())
    job.store._clock = job.store.stop.clock
    with pytest.raises(OperationTimedOut):
        job._write([_row("a", 1.0)])
    assert store.results == {}


class _Stream:
    def __init__(self, name: str, active: bool = True) -> None:
        self.name, self.isActive, self.stopped = name, active, False
        self.recentProgress: list = []
        self.lastProgress = None

    def exception(self):
        return "OperationTimedOut('down')"

    def stop(self):
        self.stopped, self.isActive = True, False


def test_a_stopped_stream_is_started_again_with_backoff_and_the_job_keeps_running():
    # Fails before: run() raised on any stopped stream and the process exited.
    store = FakeStore()
    job = Aggregator(None, store, AggregatorSettings())  # type: ignore[arg-type]
    started: list[object] = []

    def apply(active):
        started.append(active)
        job.windows = _Stream("aggregator-windows")

    job._apply = apply  # type: ignore[method-assign]
    job.restarts.backoff = Backoff(initial=1.0, cap=60.0, jitter=0.0)
    stop = AdvancingEvent(FakeClock())
    for expected_wait in (1.0, 2.0, 4.0):
        job.windows = _Stream("aggregator-windows", active=False)
        job.recover(stop)
        assert stop.waits[-1] == expected_wait
    assert started == [job.active] * 3 and job.restarts.failures == 3
    assert job.failed() is None and "OperationTimedOut" in (job.restarts.last_error or "")
    assert job.telemetry.stream_failures.labels("windows")._value.get() == 3
    status = job.publish_status()
    assert status["stream_failures"] == 3
