"""The HTTP sender's logic against a scripted fake ingest (httpx.MockTransport): retries,
Retry-After, refusals, and that every generated sample reaches the target exactly once.
The real ingest is exercised by the integration tests."""

import threading

import httpx
import pytest

from apm.query import parse
from loadgen.http_sink import HttpSink, retry_after_seconds
from loadgen.runner import expected_samples, run_load

pytestmark = pytest.mark.unit


def _run(settings, ingest, queries=()):
    def factory(s, fleet, stats, stop):
        return HttpSink(
            s,
            fleet,
            stats,
            client=ingest.client(),
            stop=stop,
            backoff_initial_s=0.001,
            backoff_cap_s=0.002,
        )

    return run_load(settings, queries=queries, sink_factory=factory, progress=False)


def test_every_generated_sample_arrives_once(make_settings, fake_ingest):
    settings = make_settings(api_key="secret")
    ingest = fake_ingest()
    result = _run(settings, ingest)
    want = sorted(expected_samples(settings))
    got = sorted(ingest.samples())
    assert got == [tuple(s) for s in want]
    s = result.summary
    assert s["generated"] == s["sent"] == s["accepted"] == len(want) and s["lost"] == 0
    assert s["silent_servers"] > 0 and len(want) < settings.servers * 5 * settings.ticks
    assert all(r.headers["authorization"] == "Bearer secret" for r in ingest.requests)
    assert max(len(d["snapshots"]) for d in ingest.accepted) == settings.servers_per_request


def test_503_with_retry_after_is_retried_and_nothing_is_lost(make_settings, fake_ingest):
    settings = make_settings(duration_s=2)
    ingest = fake_ingest([503, 503, 429], headers={"Retry-After": "0"})
    result = _run(settings, ingest)
    assert result.summary["retries"] == 3 and result.summary["lost"] == 0
    assert result.summary["accepted"] == len(expected_samples(settings))


def test_refused_connections_are_retried(make_settings, fake_ingest):
    ingest = fake_ingest([httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
    result = _run(make_settings(duration_s=1), ingest)
    assert result.summary["retries"] == 2 and result.summary["ambiguous_retries"] == 1
    assert result.summary["lost"] == 0


def test_a_refused_batch_is_counted_with_its_reason(make_settings, fake_ingest):
    settings = make_settings(duration_s=1, servers=8, servers_per_request=8, silent_fraction=0.0)
    result = _run(settings, fake_ingest([422]))
    s = result.summary
    assert s["rejected"] == 40 and s["accepted"] == 0 and s["lost"] == 40
    assert s["errors"] == {"422:scripted": 1} and s["retries"] == 0


def test_giving_up_after_the_deadline(make_settings, fake_ingest):
    settings = make_settings(
        duration_s=1, servers=8, servers_per_request=8, silent_fraction=0.0, retry_deadline_s=0.01
    )
    result = _run(settings, fake_ingest([503] * 1000, headers={"Retry-After": "1"}))
    assert result.summary["failed"] == 40 and result.summary["lost"] == 40
    assert list(result.summary["errors"]) == ["gave up: 503:scripted"]


def test_truth_for_the_same_run(make_settings, fake_ingest):
    settings = make_settings(duration_s=20, start=1_763_800_005.0)
    query = parse("FROM api-* SELECT rpc.count WINDOW 10s COMPUTE count, sum")
    ingest = fake_ingest()
    result = _run(settings, ingest, [query])
    windows = {w["window_start"]: w for w in result.truths[0].results()}
    sent: dict[float, list[float]] = {}
    for server, metric, ts, value in ingest.samples():
        if metric == "rpc.count" and server.startswith("api-"):
            sent.setdefault(ts - ts % 10, []).append(value)
    assert set(windows) == set(sent) == {1_763_800_000.0, 1_763_800_010.0, 1_763_800_020.0}
    for start, values in sent.items():
        assert windows[start]["values"] == {"count": len(values), "sum": sum(values)}


def test_stop_ends_generation_early(make_settings, fake_ingest):
    stop = threading.Event()
    stop.set()
    result = run_load(make_settings(), stop=stop, progress=False, dry_run=True)
    assert result.summary["ticks"] == 0 and result.summary["stopped_early"]


def test_retry_after_parsing():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("-1") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") is None


@pytest.mark.parametrize("gzip_level", [0, 1])
def test_replay_sends_the_cycle_with_fresh_timestamps_and_its_truth_holds(
    make_settings, fake_ingest, gzip_level
):
    start = 1_763_800_005.0
    settings = make_settings(duration_s=23, start=start, replay_seconds=4, gzip_level=gzip_level)
    query = parse("FROM api-* SELECT rpc.count WINDOW 10s COMPUTE count, sum, max")
    ingest = fake_ingest()
    result = _run(settings, ingest, [query])
    assert result.lost == 0
    by_second: dict[float, dict[tuple[str, str], float]] = {}
    for server, metric, ts, value in ingest.samples():
        by_second.setdefault(ts, {})[(server, metric)] = value
    assert sorted(by_second) == [start + k for k in range(23)]  # every second, fresh stamps
    # Second k carries the values of second k mod 4, which the fleet generated at start + k.
    plain = make_settings(duration_s=4, start=start)
    generated = {}
    for s in expected_samples(plain):
        generated.setdefault(s.ts, {})[(s.server, s.metric)] = s.value
    for k in range(23):
        assert by_second[start + k] == generated[start + k % 4]
    # The truth is that of the values actually sent.
    sent: dict[float, list[float]] = {}
    for server, metric, ts, value in ingest.samples():
        if metric == "rpc.count" and server.startswith("api-"):
            sent.setdefault(ts - ts % 10, []).append(value)
    windows = {w["window_start"]: w["values"] for w in result.truths[0].results()}
    assert windows == {
        ws: {"count": len(v), "sum": sum(v), "max": max(v)} for ws, v in sent.items()
    }
    encodings = {r.headers.get("content-encoding") for r in ingest.requests}
    assert encodings == ({"gzip"} if gzip_level else {None})
