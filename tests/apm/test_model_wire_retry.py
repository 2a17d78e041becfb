from __future__ import annotations

import itertools
import math
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.model import (
    BYTES_PER_SAMPLE,
    PARTITION_BYTES_PER_S,
    TOPIC_PARTITIONS,
    Snapshot,
    metric_for_topic,
    metric_name_error,
    partitions_for,
    server_name_error,
    topic_for,
    value_error,
)
from apm.retry import Backoff, RetryableError, call_with_retry
from apm.wire import decode, encode_chunks

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["cpu.util", "rpc.latency.max", "a", "disk_used-pct"])
def test_valid_metric_names(name):
    assert metric_name_error(name) is None
    assert metric_for_topic(topic_for(name)) == name


@pytest.mark.parametrize("name", ["", "9cpu", "cpu util", "cpu\tx", "é", "x" * 201, None, 3])
def test_invalid_metric_names(name):
    assert metric_name_error(name)


@pytest.mark.parametrize("name", ["web-042", "10.0.0.1", "Host_A"])
def test_server_names(name):
    assert server_name_error(name) is None
    assert server_name_error(name + "\n")


@pytest.mark.parametrize(("value", "ok"), [(1, True), (0.5, True), (-3e300, True),
                                           (math.nan, False), (math.inf, False),
                                           (True, False), ("1", False), (None, False)])
def test_values(value, ok):
    assert (value_error(value) is None) is ok


def test_snapshot_samples():
    snap = Snapshot("web-1", 10.0, {"a": 1.0, "b": 2.0})
    assert [(s.metric, s.value) for s in snap.samples()] == [("a", 1.0), ("b", 2.0)]


@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9\-]{0,10}", fullmatch=True),
                          st.floats(0, 2e9), st.floats(allow_nan=False, allow_infinity=False)),
                min_size=1, max_size=200))
def test_wire_round_trip_is_exact_and_chunked(rows):
    chunks = list(encode_chunks(rows, max_bytes=256))
    assert all(len(c) <= 256 or b"\n" not in c for c in chunks)
    # Full: the next chunk's first line would not have fit (an off-by-one once cut early).
    for chunk, following in itertools.pairwise(chunks):
        assert len(chunk) + 1 + len(following.split(b"\n")[0]) > 256
    assert [r for c in chunks for r in decode(c)] == [(s, float(t), float(v)) for s, t, v in rows]


def test_backoff_doubles_from_10ms_to_the_cap_without_jitter():
    b = Backoff(initial=0.01, cap=0.5, jitter=0.0)
    assert [round(b.next_delay(), 6) for _ in range(8)] == [0.01, 0.02, 0.04, 0.08, 0.16, 0.32,
                                                            0.5, 0.5]
    b.reset()
    assert b.next_delay() == 0.01


def test_backoff_jitter_bounds_and_retry_after():
    low = Backoff(jitter=0.2, rand=lambda: 0.0)
    high = Backoff(jitter=0.2, rand=lambda: 1.0)
    assert low.next_delay() == pytest.approx(0.008) and high.next_delay() == pytest.approx(0.012)
    assert Backoff(rand=lambda: 0.5).next_delay(retry_after=7.0) == 7.0
    assert Backoff(rand=lambda: 0.5).next_delay(retry_after=0.001) == pytest.approx(0.01)


class _FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _AdvancingEvent(threading.Event):
    """wait() advances the fake clock instead of sleeping."""

    def __init__(self, clock):
        super().__init__()
        self.clock, self.waits = clock, []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        self.clock.now += timeout or 0
        return self.is_set()


def test_call_with_retry_succeeds_after_failures_and_respects_deadline():
    clock = _FakeClock()
    stop = _AdvancingEvent(clock)
    attempts = iter([RetryableError("a"), RetryableError("b", retry_after=2.0), "ok"])

    def call():
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    assert call_with_retry(call, deadline_s=10, backoff=Backoff(jitter=0), stop=stop,
                           clock=clock) == "ok"
    assert stop.waits == [0.01, 2.0]

    def always():
        raise RetryableError("down")

    with pytest.raises(RetryableError):
        call_with_retry(always, deadline_s=1.0, backoff=Backoff(jitter=0), stop=stop, clock=clock)
    assert clock.now <= 2.01 + 1.0


def test_call_with_retry_stops_when_shutdown_is_set():
    stop = threading.Event()
    stop.set()
    calls = []

    def failing():
        calls.append(1)
        raise RetryableError("down")

    with pytest.raises(RetryableError):
        call_with_retry(failing, deadline_s=60, stop=stop)
    assert len(calls) == 1


def test_partitions_for_sizes_a_topic_by_its_bytes_per_second():
    assert partitions_for(1) == 1  # 34 B/s: never fewer than one partition
    assert TOPIC_PARTITIONS == partitions_for(10_000) == 1  # 340 KB/s
    assert partitions_for(100_000) == 4  # 3.4 MB/s
    # Exactly one partition's worth stays at 1; one more server needs a second.
    at = PARTITION_BYTES_PER_S // BYTES_PER_SAMPLE
    assert partitions_for(10, bytes_per_sample=100, partition_bytes_per_s=1000) == 1
    assert partitions_for(11, bytes_per_sample=100, partition_bytes_per_s=1000) == 2
    assert partitions_for(at, bytes_per_sample=BYTES_PER_SAMPLE) == 1
    assert partitions_for(at + 1, bytes_per_sample=BYTES_PER_SAMPLE) == 2
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ValueError, match="servers must be"):
            partitions_for(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be > 0"):
        partitions_for(10, bytes_per_sample=0)
    with pytest.raises(ValueError, match="must be > 0"):
        partitions_for(10, partition_bytes_per_s=math.nan)
