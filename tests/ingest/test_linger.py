"""Coalescing over the linger (ingest.linger through KafkaPublisher, with a fake producer):
concurrent requests share records; a request returns only when every record holding its
samples is acknowledged; a failed shared record fails every request in it; a lingering window
is sent at shutdown; lingering bytes count against the buffer."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka.errors import KafkaError

from apm.model import topic_for
from apm.wire import decode, encode_chunks
from ingest.linger import Coalescer
from ingest.publisher import KafkaPublisher, PublishUnavailable, to_records
from ingest.settings import IngestSettings
from ingest.validate import Validator
from tests.ingest.fake_kafka import FakeFuture, FakeProducer
from tests.support.kafka import FakeAdmin

pytestmark = pytest.mark.unit

LONG = 60_000.0  # ms: a linger that only a full window or a shutdown cuts short


def _records(batch: dict[str, Any], max_bytes: int = 512 * 1024) -> dict[str, list[bytes]]:
    """What the route hands the publisher for a batch."""
    by_metric = Validator(10_000, 300, 86_400).validate(batch).by_metric
    return to_records(by_metric, max_bytes)


def _size(*records: dict[str, list[bytes]]) -> int:
    return sum(len(v) for r in records for values in r.values() for v in values)


def _wait_until(condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    give_up = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < give_up, "the condition never came true"
        time.sleep(0.01)


class Call(threading.Thread):
    """Runs ``fn`` in a thread and keeps its outcome (None or the exception)."""

    def __init__(self, fn: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.error: BaseException | None = None
        self.result: object = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # the test inspects it
            self.error = exc


def _publisher(producer: FakeProducer, **overrides: Any) -> KafkaPublisher:
    settings = IngestSettings(**{"linger_ms": LONG, "publish_timeout_s": 30, **overrides})
    return KafkaPublisher(settings, producer=producer, admin=FakeAdmin())


def test_two_concurrent_requests_share_one_record_per_metric_and_wait_for_its_ack(make_batch):
    a = _records(make_batch(servers=3, metrics=4, server_prefix="a"))
    b = _records(make_batch(servers=2, metrics=4, server_prefix="b"))
    producer = FakeProducer()
    publisher = _publisher(producer, linger_max_bytes=_size(a, b))  # b fills the window

    first = Call(lambda: publisher.publish(a))
    first.start()
    _wait_until(lambda: publisher.lingering() == 1)
    assert producer.sent == []  # the leader lingers
    second = Call(lambda: publisher.publish(b))
    second.start()
    _wait_until(lambda: len(producer.sent) == 4)

    assert sorted(r.topic for r in producer.sent) == sorted(a)  # one record per metric
    for record in producer.sent:
        assert decode(record.value) == decode(a[record.topic][0]) + decode(b[record.topic][0])
    assert len({r.partition for r in producer.sent}) == 1  # one partition index per window
    first.join(0.2)
    assert first.is_alive() and second.is_alive()  # nothing answered before the acks

    producer.resolve_all()
    first.join(30)
    second.join(30)
    assert (first.error, second.error) == (None, None)
    assert publisher.queue_depth() == 0


def test_a_failed_shared_record_answers_503_to_every_request_in_it(make_client, make_batch):
    batch_a = make_batch(servers=3, metrics=2, server_prefix="a", prefix="fail")
    batch_b = make_batch(servers=3, metrics=2, server_prefix="b", prefix="fail")
    producer = FakeProducer()
    publisher = _publisher(producer, linger_max_bytes=_size(_records(batch_a), _records(batch_b)))
    client = make_client(publisher=publisher, retry_after_s=7)

    first = Call(lambda: client.post("/v1/metrics", json=batch_a))
    first.start()
    _wait_until(lambda: publisher.lingering() == 1)
    second = Call(lambda: client.post("/v1/metrics", json=batch_b))
    second.start()
    _wait_until(lambda: len(producer.sent) == 2)

    failed, ok = producer.sent  # one metric's shared record fails, the other's is acked
    ok.future.resolve()
    failed.future.resolve(KafkaError("fake: NotEnoughReplicas"))
    for call in (first, second):
        call.join(30)
        assert call.error is None
        answer: Any = call.result
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "7"
        assert answer.json()["error"] == "unavailable"


def test_shutdown_sends_the_lingering_window_and_its_request_is_acknowledged(make_batch):
    a = _records(make_batch(servers=2, metrics=3))
    producer = FakeProducer(auto_ack=True)
    publisher = _publisher(producer)
    call = Call(lambda: publisher.publish(a))
    call.start()
    _wait_until(lambda: publisher.lingering() == 1)

    publisher.close(5)  # what the lifespan does on SIGTERM
    call.join(30)
    assert call.error is None
    assert producer.flushed
    assert {r.topic: [r.value] for r in producer.sent} == a
    with pytest.raises(PublishUnavailable, match="shutting down"):
        publisher.publish(a)


def test_lingering_bytes_count_against_the_buffer(make_batch):
    a = _records(make_batch(servers=5, metrics=3, server_prefix="a"))
    b = _records(make_batch(servers=5, metrics=3, server_prefix="b"))
    producer = FakeProducer(auto_ack=True)
    publisher = _publisher(producer, buffer_bytes=_size(a) + _size(b) // 2)
    call = Call(lambda: publisher.publish(a))
    call.start()
    _wait_until(lambda: publisher.lingering() == 1)

    with pytest.raises(PublishUnavailable, match="buffer is full"):
        publisher.publish(b)
    publisher.close(5)
    call.join(30)
    assert call.error is None
    assert {r.topic: [r.value] for r in producer.sent} == a  # b published nothing


def test_without_linger_each_request_makes_its_own_records(make_batch):
    a = _records(make_batch(servers=4, metrics=2, server_prefix="a"))
    b = _records(make_batch(servers=4, metrics=2, server_prefix="b"))
    producer = FakeProducer(auto_ack=True)
    publisher = _publisher(producer, linger_ms=0)
    publisher.publish(a)
    publisher.publish(b)
    assert [(r.topic, r.value) for r in producer.sent] == [
        (t, v) for records in (a, b) for t, values in records.items() for v in values
    ]


@pytest.mark.parametrize("seed", range(5))
def test_shared_records_stay_under_the_size_limit_and_decode_to_every_sample(seed):
    rng = random.Random(seed)
    max_bytes = rng.randint(60, 400)
    sent: list[tuple[str, bytes, FakeFuture]] = []

    def send(topic: str, value: bytes, _turn: int) -> FakeFuture:
        future = FakeFuture()
        future.resolve()
        sent.append((topic, value, future))
        return future

    coalescer = Coalescer(
        send, linger_s=LONG / 1000, max_record_bytes=max_bytes, max_window_bytes=1 << 40
    )
    rows: dict[str, list[tuple[str, float, float]]] = {}
    calls = []
    for request in range(rng.randint(2, 6)):
        records: dict[str, list[bytes]] = {}
        for metric in rng.sample(["m.a", "m.b", "m.c"], rng.randint(1, 3)):
            mine = [
                (f"s{request}-{i}", 1.7e9 + i, rng.uniform(-1e6, 1e6))
                for i in range(rng.randint(1, 12))
            ]
            rows.setdefault(topic_for(metric), []).extend(mine)
            records[topic_for(metric)] = list(encode_chunks(mine, max_bytes))
        call = Call(lambda r=records: coalescer.publish(r, 30))  # type: ignore[misc]
        call.start()
        calls.append(call)
        _wait_until(lambda n=request + 1: coalescer.lingering() == n)  # type: ignore[misc]
    coalescer.flush()
    for call in calls:
        call.join(30)
        assert call.error is None

    assert all(len(value) <= max_bytes for _, value, _ in sent)
    for topic, want in rows.items():
        got = [row for t, value, _ in sent if t == topic for row in decode(value)]
        assert got == want
