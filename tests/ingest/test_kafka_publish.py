"""A real ingest process on the real Kafka: a 202 batch is wholly in Kafka, in its metrics'
topics; a rejected batch (no good snapshot) published nothing."""

from __future__ import annotations

import time

import httpx
import pytest

from apm.model import metric_for_topic, topic_for
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration


def test_accepted_batch_is_wholly_in_kafka_and_rejected_one_is_not(
    kafka_bootstrap, start_ingest_process, make_batch, unique_name, own_topics
):
    ingest = start_ingest_process(kafka_bootstrap)
    prefix = unique_name("ingt").replace("-", "_")
    batch = make_batch(servers=30, metrics=5, prefix=prefix)
    topics = [topic_for(m) for m in batch["snapshots"][0]["metrics"]]
    own_topics.extend(topics)

    bad = make_batch(servers=30, metrics=5, prefix=prefix)
    for snapshot in bad["snapshots"]:  # the last sample of every snapshot is bad
        snapshot["metrics"][f"{prefix}.m4"] = "NaN"
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=30) as client:
        rejected = client.post("/v1/metrics", json=bad)
        assert rejected.status_code == 422  # no good snapshot: the batch is refused whole
        assert rejected.json()["at"] == f'snapshots[0].metrics["{prefix}.m4"]'
        assert read_samples(kafka_bootstrap, topics) == []

        accepted = client.post("/v1/metrics", json=batch)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json() == {"accepted": 150, "snapshots": 30}

    got = sorted(read_samples(kafka_bootstrap, topics))
    want = sorted(
        (topic_for(m), s["server"], s["ts"], v)
        for s in batch["snapshots"]
        for m, v in s["metrics"].items()
    )
    assert got == want


def test_names_that_differ_only_by_dot_and_underscore_both_publish_and_read_back_apart(
    kafka_bootstrap, start_ingest_process, unique_name, own_topics
):
    """Issue 14, item 3, on the real broker: cpu.util's topic exists first, then cpu_util is
    posted; before, Kafka refused cpu_util's topic and that host got 503 for ever."""
    ingest = start_ingest_process(kafka_bootstrap)
    base = unique_name("twin")  # '-' only: the names differ by '.' and '_' alone
    dotted, underscored = f"{base}.cpu.util", f"{base}.cpu_util"
    topics = [topic_for(dotted), topic_for(underscored)]
    own_topics.extend(topics)
    now = time.time()
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=30) as client:
        for n, name in enumerate((dotted, underscored)):
            batch = {"snapshots": [{"server": "web-1", "ts": now, "metrics": {name: float(n)}}]}
            answer = client.post("/v1/metrics", json=batch)
            assert answer.status_code == 202, answer.text
        both = {
            "snapshots": [
                {"server": "web-2", "ts": now, "metrics": {dotted: 2.0, underscored: 3.0}}
            ]
        }
        assert client.post("/v1/metrics", json=both).status_code == 202

    got = sorted(
        (metric_for_topic(t), who, v) for t, who, _ts, v in read_samples(kafka_bootstrap, topics)
    )
    assert got == sorted(
        [
            (dotted, "web-1", 0.0),
            (underscored, "web-1", 1.0),
            (dotted, "web-2", 2.0),
            (underscored, "web-2", 3.0),
        ]
    )
