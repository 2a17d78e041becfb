"""A real ingest process with a long linger on the real Kafka: two concurrent requests'
samples of a metric land in one record; a SIGTERM while a request lingers still publishes and
acknowledges it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from apm.model import metric_for_topic, topic_for
from apm.wire import decode
from tests.support.kafka import read_records, read_samples

pytestmark = pytest.mark.integration

# Long enough to line requests up on a busy box; the waits for acks and the answer deadline
# (3 s and 4 s by default) are raised above the linger, or every request would get 503.
LINGER = {
    "APM_INGEST_LINGER_MS": "3000",
    "APM_INGEST_PUBLISH_TIMEOUT_S": "10",
    "APM_INGEST_ANSWER_TIMEOUT_S": "12",
}


def _lingering(client: httpx.Client) -> int:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("apm_ingest_linger_requests "):
            return int(float(line.split()[1]))
    raise AssertionError("no apm_ingest_linger_requests in /metrics")


def _wait_until(condition: Callable[[], bool], limit_s: float = 60.0) -> None:
    give_up = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < give_up, "the condition never came true"
        time.sleep(0.05)


def _post_in_thread(client: httpx.Client, batch: dict, answers: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.append(client.post("/v1/metrics", json=batch)))
    thread.start()
    return thread


def _rows(batch: dict, metric: str) -> list[tuple[str, float, float]]:
    return [(s["server"], s["ts"], s["metrics"][metric]) for s in batch["snapshots"]]


def test_concurrent_requests_share_one_record_per_metric(
    kafka_bootstrap, start_ingest_process, make_batch, unique_name, own_topics
):
    ingest = start_ingest_process(kafka_bootstrap, env=LINGER)
    prefix = unique_name("lgr").replace("-", "_")
    a = make_batch(servers=4, metrics=3, prefix=prefix, server_prefix="a")
    b = make_batch(servers=5, metrics=3, prefix=prefix, server_prefix="b")
    topics = [topic_for(m) for m in a["snapshots"][0]["metrics"]]
    own_topics.extend(topics)
    answers: list[httpx.Response] = []
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=60) as client:
        # Topics first, so that creating them does not hold the second request back.
        assert (
            client.post(
                "/v1/metrics",
                json=make_batch(servers=1, metrics=3, prefix=prefix, server_prefix="warm"),
            ).status_code
            == 202
        )
        first = _post_in_thread(client, a, answers)
        _wait_until(lambda: _lingering(client) == 1)
        second = _post_in_thread(client, b, answers)
        first.join(60)
        second.join(60)
    assert sorted(r.status_code for r in answers) == [202, 202], [r.text for r in answers]

    shared = [(t, v) for t, v in read_records(kafka_bootstrap, topics) if not v.startswith(b"warm")]
    assert sorted(t for t, _ in shared) == sorted(topics)  # one record per metric for both
    for topic, value in shared:
        metric = metric_for_topic(topic)
        assert metric is not None
        assert sorted(decode(value)) == sorted(_rows(a, metric) + _rows(b, metric))


def test_sigterm_while_a_request_lingers_publishes_and_acknowledges_it(
    kafka_bootstrap, start_ingest_process, make_batch, unique_name, own_topics
):
    ingest = start_ingest_process(kafka_bootstrap, env=LINGER)
    prefix = unique_name("lgt").replace("-", "_")
    batch = make_batch(servers=6, metrics=2, prefix=prefix)
    topics = [topic_for(m) for m in batch["snapshots"][0]["metrics"]]
    own_topics.extend(topics)
    answers: list[httpx.Response] = []
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=60) as client:
        assert (
            client.post(
                "/v1/metrics",
                json=make_batch(servers=1, metrics=2, prefix=prefix, server_prefix="warm"),
            ).status_code
            == 202
        )
        request = _post_in_thread(client, batch, answers)
        _wait_until(lambda: _lingering(client) == 1)
        assert ingest.proc.stop(30)  # SIGTERM, and the process exits
        assert ingest.proc.last_stop == "exited", ingest.proc.tail(40)  # drained, not killed
        request.join(60)
    assert [r.status_code for r in answers] == [202], [r.text for r in answers]
    got = {(s, ts, v) for t, s, ts, v in read_samples(kafka_bootstrap, topics)}
    assert {row for m in batch["snapshots"][0]["metrics"] for row in _rows(batch, m)} <= got
