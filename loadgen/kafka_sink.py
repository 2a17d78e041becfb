"""``--direct-kafka``: writes pre-encoded records straight to the metric topics, bypassing the
ingest, to load the aggregator alone. Same topics (``apm.model.topic_for``) and record
encoding (``apm.wire``) as the ingest publishes, so the aggregator cannot tell the difference.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import numpy as np

from apm.kafka import TopicSpec, ensure_topics, new_admin, new_producer
from apm.model import topic_for
from apm.wire import ENCODING_HEADER, encode_chunks
from loadgen.fleet import Fleet, Tick
from loadgen.inflight import BoundedExecutor
from loadgen.settings import LoadgenSettings
from loadgen.stats import Stats

__all__ = ["KafkaSink"]

log = logging.getLogger("loadgen.kafka")

CLIENT_ID = "apm-loadgen"


class KafkaSink:
    def __init__(
        self,
        settings: LoadgenSettings,
        fleet: Fleet,
        stats: Stats,
        *,
        producer: Any = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.settings, self.fleet, self.stats = settings, fleet, stats
        self.stop = stop or threading.Event()
        self.topics = [topic_for(m) for m in fleet.metric_names]
        self._names = np.asarray(fleet.names, dtype=object)
        if producer is None:
            # The ingest's topic shape (apm.kafka.TopicSpec), whichever of the two creates a
            # metric topic first.
            admin = new_admin(settings.kafka_bootstrap, CLIENT_ID, tls=settings.kafka_tls)
            try:
                ensure_topics(
                    admin,
                    self.topics,
                    TopicSpec(
                        partitions=settings.topic_partitions, replication=settings.topic_replication
                    ),
                )
            finally:
                admin.close()
            producer = new_producer(
                settings.kafka_bootstrap,
                CLIENT_ID,
                tls=settings.kafka_tls,
                acks="all",
                linger_ms=20,
                batch_size=1024 * 1024,
                max_request_size=4 * settings.record_max_bytes,
                retries=10,
            )
        self.producer = producer
        # One encoding thread keeps the records of a topic in time order; two ticks in flight
        # let one encode while the last one sends.
        self._work = BoundedExecutor(1, 2, "loadgen-kafka")

    async def submit(self, tick: Tick) -> None:
        await self._work.submit(self._send_tick, tick)

    def _send_tick(self, tick: Tick) -> None:
        alive = np.flatnonzero(tick.alive)
        names = self._names[alive].tolist()
        ts = tick.ts
        for col, topic in enumerate(self.topics):
            rows = zip(names, [ts] * len(names), tick.values[alive, col].tolist(), strict=True)
            for chunk in encode_chunks(rows, self.settings.record_max_bytes):
                samples = chunk.count(b"\n") + 1
                self.stats.add(sent=samples, requests=1)
                self._produce(topic, chunk, samples)

    def _produce(self, topic: str, chunk: bytes, samples: int) -> None:
        started = time.monotonic()
        try:
            future = self.producer.send(topic, value=chunk, headers=[ENCODING_HEADER])
        except Exception as exc:  # buffer full past max_block_ms, closed producer...
            self.stats.error(f"send: {type(exc).__name__}", samples)
            return

        def ok(_meta: object) -> None:
            self.stats.latency(time.monotonic() - started)
            self.stats.add(accepted=samples)

        def failed(exc: BaseException) -> None:
            self.stats.error(f"kafka: {type(exc).__name__}", samples)

        future.add_callback(ok)
        future.add_errback(failed)

    async def drain(self) -> None:
        await self._work.drain()
        await asyncio.get_running_loop().run_in_executor(None, self.producer.flush)

    def close(self) -> None:
        self._work.shutdown()
        self.producer.close()
