"""A stand-in for kafka-python's producer, injected into KafkaPublisher (with
tests.support.kafka.FakeAdmin) to unit-test the coalescing: it keeps every record and lets the
test acknowledge or fail them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.errors import KafkaTimeoutError

__all__ = ["FakeFuture", "FakeProducer", "SentRecord"]


class FakeFuture:
    """kafka-python's FutureRecordMetadata, resolved by the test. As the real one (3.0.12,
    checked in tests/ingest/test_linger_kafka.py): ``is_done``/``exception``/``value`` are
    plain attributes, ``get`` on a pending record raises KafkaTimeoutError once its timeout
    (0 included) runs out, and the callbacks of ``add_both`` get the metadata or the error.
    ``lenient=True`` plays the versions whose ``get(timeout=0)`` returns None for a pending
    record instead of raising, which the ingest must not take for an acknowledgement."""

    def __init__(self, lenient: bool = False) -> None:
        self._event = threading.Event()
        self.lenient = lenient
        self.is_done = False
        self.exception: BaseException | None = None
        self.value: object = None
        self._callbacks: list[Callable[[object], None]] = []

    def resolve(self, error: BaseException | None = None) -> None:
        self.exception = error
        self.value = None if error is not None else "metadata"
        self.is_done = True
        self._event.set()
        for callback in self._callbacks:
            callback(error if error is not None else self.value)

    def succeeded(self) -> bool:
        return self.is_done and self.exception is None

    def failed(self) -> bool:
        return self.is_done and self.exception is not None

    def add_both(self, fn: Callable[..., None], *args: object) -> None:
        self._callbacks.append(lambda result: fn(*args, result))

    def get(self, timeout: float | None = None) -> object:
        if self.lenient and timeout == 0 and not self.is_done:
            return None
        if not self._event.wait(timeout):
            raise KafkaTimeoutError(f"Timeout after waiting for {timeout} secs.")
        if self.exception is not None:
            raise self.exception
        return self.value


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
    lenient: bool = False  # FakeFuture(lenient=True) for every record
    sent: list[SentRecord] = field(default_factory=list)
    flushed: bool = False
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def partitions_for(self, _topic: str) -> set[int]:
        return {0, 1, 2, 3}

    def send(
        self, topic: str, value: bytes, headers: Any = None, partition: int | None = None
    ) -> FakeFuture:
        future = FakeFuture(self.lenient)
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
        """As the real one: waits for every record sent so far, and raises KafkaTimeoutError
        if one is still pending when ``timeout`` runs out."""
        self.flushed = True
        with self.lock:
            pending = [r.future for r in self.sent if not r.future.is_done]
        give_up = None if timeout is None else time.monotonic() + timeout
        for future in pending:
            left = None if give_up is None else max(0.0, give_up - time.monotonic())
            if not future._event.wait(left):
                raise KafkaTimeoutError(f"Timeout after waiting for {timeout} secs.")

    def close(self, timeout: float | None = None) -> None:
        self.closed = True
