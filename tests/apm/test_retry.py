"""apm.retry: the one backoff and retry helper (jitter, cap, deadline, shutdown)."""

from __future__ import annotations

import threading

import pytest

from apm.retry import Backoff, RetryableError, call_with_retry
from tests.support.clock import AdvancingEvent, FakeClock

pytestmark = pytest.mark.unit


def test_backoff_doubles_from_10ms_to_the_cap_without_jitter():
    b = Backoff(initial=0.01, cap=0.5, jitter=0.0)
    assert [round(b.next_delay(), 6) for _ in range(8)] == [
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.5,
        0.5,
    ]
    b.reset()
    assert b.next_delay() == 0.01


def test_backoff_jitter_bounds_and_retry_after():
    low = Backoff(jitter=0.2, rand=lambda: 0.0)
    high = Backoff(jitter=0.2, rand=lambda: 1.0)
    assert low.next_delay() == pytest.approx(0.008) and high.next_delay() == pytest.approx(0.012)
    assert Backoff(rand=lambda: 0.5).next_delay(retry_after=7.0) == 7.0
    assert Backoff(rand=lambda: 0.5).next_delay(retry_after=0.001) == pytest.approx(0.01)


def test_call_with_retry_succeeds_after_failures_and_respects_deadline():
    clock = FakeClock()
    stop = AdvancingEvent(clock)
    attempts = iter([RetryableError("a"), RetryableError("b", retry_after=2.0), "ok"])

    def call():
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    assert (
        call_with_retry(call, deadline_s=10, backoff=Backoff(jitter=0), stop=stop, clock=clock)
        == "ok"
    )
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


def test_a_classifier_decides_which_other_exceptions_are_retried():
    clock = FakeClock()
    stop = AdvancingEvent(clock)
    attempts = iter([TimeoutError("slow"), "ok"])

    def call():
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    def transient(exc):
        return isinstance(exc, TimeoutError)

    got = call_with_retry(
        call, deadline_s=10, backoff=Backoff(jitter=0), stop=stop, clock=clock, transient=transient
    )
    assert got == "ok" and stop.waits == [0.01]

    calls = []

    def refused():
        calls.append(1)
        raise ValueError("refused: the same answer every time")

    with pytest.raises(ValueError):
        call_with_retry(refused, deadline_s=10, stop=stop, clock=clock, transient=transient)
    assert calls == [1]  # a deterministic failure is never retried
