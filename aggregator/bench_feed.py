"""The aggregator benchmark's feeder: pre-encoded ``apm.wire`` records for a synthetic fleet,
produced at a fixed rate by a child process, so that encoding costs nothing in the job's
process."""

from __future__ import annotations

import time

from apm.model import topic_for

__all__ = ["LINES_PER_RECORD", "METRICS", "SERVERS", "produce", "templates", "wait_for_topics"]

SERVERS = 10_000
METRICS = 10
LINES_PER_RECORD = 5_000
_PH = b"@@@@@@@@@@"  # 10-digit epoch seconds go here


def templates(metric_index: int, per_second: int) -> list[bytes]:
    """Records for one metric-second: ``per_second`` lines over the fleet, (server, ts) unique."""
    import random

    rng = random.Random(metric_index)
    rounds = -(-per_second // SERVERS)
    lines = []
    for i in range(per_second):
        frac = f"{(i // SERVERS) / rounds:.4f}"[1:]  # ".0000", ".5000" ...
        lines.append(b"srv-%d\t%s%s\t%r" % (i % SERVERS, _PH, frac.encode(),
                                            round(rng.gauss(50, 15), 3)))
    return [b"\n".join(lines[i:i + LINES_PER_RECORD])
            for i in range(0, len(lines), LINES_PER_RECORD)]


def produce(bootstrap: str, metrics: list[str], rate: int, seconds: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=10,
                             batch_size=1 << 20, max_request_size=4 << 20)
    per_metric = [templates(i, rate // len(metrics)) for i in range(len(metrics))]
    second = int(time.time()) + 1
    end = second + seconds
    while second < end:
        time.sleep(max(0.0, second - time.time()))
        stamp = str(second).encode()
        for metric, records in zip(metrics, per_metric, strict=True):
            for record in records:
                producer.send(topic_for(metric), value=record.replace(_PH, stamp),
                              headers=[("enc", b"tsv1")])
        producer.flush()
        second += 1
    producer.close()


def wait_for_topics(bootstrap: str, topics: list[str], timeout_s: float = 60) -> None:
    """Waits until the broker serves metadata for every topic (else Spark's first plan sees
    UNKNOWN_TOPIC_OR_PARTITION and the feeder's first sends stall)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if all(consumer.partitions_for_topic(t) for t in topics):
                return
            time.sleep(0.5)
            consumer.topics()  # refreshes the metadata
        raise RuntimeError(f"topics not ready in {timeout_s:.0f}s: {topics}")
    finally:
        consumer.close()


