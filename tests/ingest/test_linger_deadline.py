"""A 202 rests on the broker's acknowledgement, checked explicitly (issue 14, item 6): once the
publish deadline has passed, a pending record is a timeout whatever ``get(timeout=0)`` does,
and the floor version of kafka-python (pyproject.toml) raises there, as the fakes do."""

from __future__ import annotations

import importlib.metadata

import pytest
from kafka.errors import KafkaError, KafkaTimeoutError

from ingest.linger import Coalescer
from tests.ingest.fake_kafka import FakeFuture

pytestmark = pytest.mark.unit


def _coalescer(futures: list[FakeFuture], lenient: bool) -> Coalescer:
    def send(_topic: str, _value: bytes, _turn: int) -> FakeFuture:
        futures.append(FakeFuture(lenient))
        return futures[-1]

    return Coalescer(send, linger_s=0, max_record_bytes=1 << 20, max_window_bytes=1 << 30)


@pytest.mark.parametrize("lenient", [False, True])
def test_a_record_not_acknowledged_by_the_deadline_is_a_timeout(lenient):
    futures: list[FakeFuture] = []
    with pytest.raises((TimeoutError, KafkaError)):
        # timeout 0: the deadline has passed by the time the futures are looked at
        _coalescer(futures, lenient).publish({"apm.metric.a": [b"s\t1\t2"]}, 0)
    assert len(futures) == 1 and not futures[0].is_done


def test_an_acknowledged_record_passes_and_a_failed_one_raises_its_error():
    futures: list[FakeFuture] = []
    coalescer = _coalescer(futures, lenient=True)

    def send(_topic: str, _value: bytes, _turn: int) -> FakeFuture:
        futures.append(FakeFuture(lenient=True))
        futures[-1].resolve()
        return futures[-1]

    coalescer._send = send
    coalescer.publish({"apm.metric.a": [b"s\t1\t2"]}, 0)  # acked at once: no wait needed

    def failing(_topic: str, _value: bytes, _turn: int) -> FakeFuture:
        futures.append(FakeFuture())
        futures[-1].resolve(KafkaError("fake: NotEnoughReplicas"))
        return futures[-1]

    coalescer._send = failing
    with pytest.raises(KafkaError, match="NotEnoughReplicas"):
        coalescer.publish({"apm.metric.a": [b"s\t1\t2"]}, 5)


def test_the_fake_future_is_the_real_one_at_timeout_zero():
    """kafka-python's FutureRecordMetadata, pending: get(timeout=0) raises KafkaTimeoutError,
    is_done is False and exception None; so does FakeFuture (not lenient)."""
    from kafka.producer.future import FutureProduceResult, FutureRecordMetadata
    from kafka.structs import TopicPartition

    produce = FutureProduceResult(TopicPartition("apm.metric.a", 0))
    real = FutureRecordMetadata(produce, 0, 0, None, 0, 1, 0)
    fake = FakeFuture()
    for future in (real, fake):
        assert future.is_done is False and future.exception is None
        with pytest.raises(KafkaTimeoutError):
            future.get(timeout=0)
    produce.failure(KafkaError("boom"))
    fake.resolve(KafkaError("boom"))
    for future in (real, fake):
        assert future.is_done and future.failed()
        with pytest.raises(KafkaError, match="boom"):
            future.get(timeout=0)


def test_the_installed_kafka_python_is_at_least_the_tested_floor():
    version = tuple(int(p) for p in importlib.metadata.version("kafka-python").split(".")[:3])
    assert version >= (3, 0, 12)
