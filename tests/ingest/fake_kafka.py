"""A stand-in for kafka-python's producer, injected into KafkaPublisher (with
tests.support.kafka.FakeAdmin) to unit-test the coalescing: it keeps every record and lets the
test acknowledge or fail them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import KafkaError

__all__ = ["FakeFuture", "FakeProducer", "SentRecord"]


class FakeFuture:
    """kafka-python's FutureRecordMetadata, resolved by the test."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[object], None]] = []

    def resolve(self, error: BaseException | None = None) -> None:
        self._error = error
        self._done.set()
        for callback in self._callbacks:
            callback(error)

    def add_both(self, fn: Callable[..., None], *args: object) -> None:
        self._callbacks.append(lambda result: fn(*args, result))

    def get(self, timeout: float | None = None) -> object:
        if not self._done.wait(timeout):
            raise KafkaError("fake: not acknowledged in time")
        if self._error is not None:
            raise self._error
        return "metadata"


@dataclass
class SentRecord:
    topic: str
    value: bytes
    partition: int | None
    future: FakeFuture


@dataclass
class FakeProducer:
    """Keeps records; ``auto_ack`` acknowledges each one as it is sent."""

    auto_ack: bool = False
    sent: list[SentRecord] = field(default_factory=list)
    flushed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def partitions_for(self, _topic: str) -> set[int]:
        return {0, 1, 2, 3}

    def send(
        self, topic: str, value: bytes, headers: Any = None, partition: int | None = None
    ) -> FakeFuture:
        future = FakeFuture()
        with self.lock:
            self.sent.append(SentRecord(topic, value, partition, future))
        if self.auto_ack:
            future.resolve()
        return future

    def resolve_all(self, error: BaseException | None = None) -> None:
        with self.lock:
            pending = list(self.sent)
        for record in pending:
            record.future.resolve(error)

    def flush(self, timeout: float | None = None) -> None:
        self.flushed = True

    def close(self, timeout: float | None = None) -> None:
        pass
