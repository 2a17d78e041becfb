"""The pusher: the backoff schedule (10, 20, 40, 80 ms ... capped, jittered, Retry-After),
what is retried and what is set aside, gzip and the bearer key, and backlog pacing."""

from __future__ import annotations

import gzip
import json

import pytest

from agent.http import HttpResponse
from agent.push import retry_after_seconds

pytestmark = pytest.mark.unit


def test_a_push_is_gzip_json_with_the_bearer_key(make_pusher, make_http) -> None:
    http = make_http()
    pusher = make_pusher(http, snapshots=3)
    assert pusher.push_once() is not None
    url, body, headers = http.requests[0]
    assert url == "http://ingest/v1/metrics"
    assert headers["Authorization"] == "Bearer k3y"
    assert headers["Content-Encoding"] == "gzip"
    sent = json.loads(gzip.decompress(body))
    assert [s["ts"] for s in sent["snapshots"]] == [1000.0, 1001.0, 1002.0]
    assert pusher.spool.depth == 0
    assert pusher.stats.pushed == 3
    assert pusher.push_once() is None  # nothing left


@pytest.mark.parametrize("rand", [0.0, 0.5, 0.999999])
def test_backoff_schedule_doubles_from_10ms_to_the_cap_within_jitter(
    make_pusher, make_http, rand
) -> None:
    pusher = make_pusher(make_http(ConnectionRefusedError(111, "refused")), rand=lambda: rand)
    delays = [pusher.push_once() for _ in range(16)]
    for n, delay in enumerate(delays):
        base = min(30.0, 0.010 * 2**n)
        assert delay is not None
        assert base * 0.8 - 1e-9 <= delay <= min(30.0, base * 1.2) + 1e-9, (n, delay)
    assert delays[-1] == pytest.approx(30.0 if rand >= 0.5 else 24.0)
    assert pusher.stats.retries == 16
    assert pusher.spool.depth == 1  # nothing lost while failing


def test_the_midpoint_schedule_is_exactly_10_20_40_80_ms(make_pusher, make_http) -> None:
    pusher = make_pusher(make_http(HttpResponse(503, {}, b"")))
    assert [pusher.push_once() for _ in range(4)] == pytest.approx([0.01, 0.02, 0.04, 0.08])


def test_retry_after_wins_when_longer_and_success_resets(make_pusher, make_http) -> None:
    http = make_http(
        HttpResponse(503, {"retry-after": "7"}, b""),
        HttpResponse(429, {"retry-after": "0"}, b""),
        HttpResponse(408, {}, b""),
        HttpResponse(202, {}, b"{}"),
        HttpResponse(500, {}, b""),
    )
    pusher = make_pusher(http, snapshots=2, max_snapshots=1)
    assert pusher.push_once() == pytest.approx(7.0 * 1.1)  # the hint, jittered upwards only
    assert pusher.push_once() == pytest.approx(0.02)  # a shorter hint does not shorten it
    assert pusher.push_once() == pytest.approx(0.04)
    pusher.push_once()  # 202: the backoff starts again from 10 ms
    assert pusher.push_once() == pytest.approx(0.01)


def test_retry_after_as_an_http_date(clock) -> None:
    from email.utils import formatdate

    assert retry_after_seconds(
        formatdate(clock() + 12, usegmt=True), clock(), 120.0
    ) == pytest.approx(12, abs=1)
    assert retry_after_seconds("soon", clock(), 120.0) is None


def test_a_backlog_drains_oldest_first_in_batches_at_a_bounded_rate(make_pusher, make_http) -> None:
    http = make_http()
    pusher = make_pusher(http, snapshots=250, max_snapshots=100, drain_rate=50.0)
    waits = []
    while (wait := pusher.push_once()) is not None:
        waits.append(wait)
    assert waits == pytest.approx([2.0, 2.0, 0.0])  # 100 snapshots at 50/s, last one: caught up
    sent = [
        s["ts"]
        for _u, body, _h in http.requests
        for s in json.loads(gzip.decompress(body))["snapshots"]
    ]
    assert sent == [1000.0 + i for i in range(250)]
