"""remote_write through a real ingest process on the real Kafka: a 204 is wholly in Kafka,
stale markers are not, and a request the protocol says to drop (400) publishes nothing."""

from __future__ import annotations

import struct
import time

import cramjam
import httpx
import pytest

from apm.model import topic_for
from ingest.interop.prompb import WriteRequest
from ingest.interop.remote_write import STALE_NAN
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}


def test_remote_write_samples_are_in_kafka_and_bad_requests_publish_nothing(
    kafka_bootstrap, start_ingest_process, unique_name, own_topics
):
    ingest = start_ingest_process(kafka_bootstrap)
    name = unique_name("rw").replace("-", "_")
    metric = f"{name}.code_200"
    own_topics.append(topic_for(metric))
    now = int(time.time() * 1000)
    stale = struct.unpack("<d", struct.pack("<Q", STALE_NAN))[0]
    request = WriteRequest()
    for server in ("node-1:9100", "node-2:9100"):
        series = request.timeseries.add()
        for label, value in (("__name__", name), ("code", "200"), ("instance", server)):
            series.labels.add(name=label, value=value)
        for i, value in enumerate((1.0, 2.5, stale)):
            series.samples.add(value=value, timestamp=now + 1000 * i)
    body = bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
    headers = {**ingest.headers, **HEADERS}
    with httpx.Client(base_url=ingest.url, timeout=30) as client:
        truncated = client.post("/api/v1/write", content=body[: len(body) // 2], headers=headers)
        assert truncated.status_code == 400, truncated.text
        assert read_samples(kafka_bootstrap, [topic_for(metric)]) == []
        answer = client.post("/api/v1/write", content=body, headers=headers)
        assert answer.status_code == 204, answer.text
    got = sorted(read_samples(kafka_bootstrap, [topic_for(metric)]))
    assert got == sorted(
        (topic_for(metric), server, (now + 1000 * i) / 1000, value)
        for server in ("node-1_9100", "node-2_9100")
        for i, value in enumerate((1.0, 2.5))
    )


def test_a_series_job_label_reaches_the_tags_topic_as_its_servers_tag(
    kafka_bootstrap, start_ingest_process, unique_name, own_topics
):
    from apm.tags import read_server_tags

    ingest = start_ingest_process(kafka_bootstrap)
    name = unique_name("rwtag").replace("-", "_")
    own_topics.append(topic_for(name))
    instance = f"{name}:9100"
    request = WriteRequest()
    series = request.timeseries.add()
    for label, value in (("__name__", name), ("instance", instance), ("job", "node")):
        series.labels.add(name=label, value=value)
    series.samples.add(value=1.0, timestamp=int(time.time() * 1000))
    body = bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
    with httpx.Client(base_url=ingest.url, timeout=30) as client:
        answer = client.post("/api/v1/write", content=body, headers={**ingest.headers, **HEADERS})
        assert answer.status_code == 204, answer.text
    server = instance.replace(":", "_")
    tags = read_server_tags(kafka_bootstrap, {server})
    assert tags[server][0] == {"job": "node"}
