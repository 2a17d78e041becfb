"""Host tags on the real Kafka (issue 37): a server's tags reach the compacted
apm.server-tags once per change, a restarted ingest sends them once again, and a bad tag
gets the 422 naming the field."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from apm.cli import main
from apm.kafka import end_offsets
from apm.tags import TAGS_TOPIC, decode_tags_record, read_server_tags
from tests.support.kafka import read_keyed

pytestmark = pytest.mark.integration


def _configs(bootstrap: str, topic: str) -> dict[str, str]:
    from kafka.admin import ConfigResource, ConfigResourceType

    from apm.kafka import new_admin

    admin = new_admin(bootstrap)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    return {name: entry["value"] for name, entry in got["topic"][topic].items()}


def _post(client: httpx.Client, server: str, tags: object) -> httpx.Response:
    snap = {"server": server, "ts": time.time(), "metrics": {"tagtest.m": 1.0}, "tags": tags}
    return client.post("/v1/metrics", json={"snapshots": [snap]})


def test_tags_reach_the_compacted_topic_once_per_change_and_a_bad_tag_is_a_422(
    kafka_bootstrap, start_ingest_process, unique_name
):
    server = unique_name("tagged")
    since = end_offsets(kafka_bootstrap, [TAGS_TOPIC])  # the topic is shared: only ours
    web, moved = {"role": "web", "dc": "eu-1"}, {"role": "web", "dc": "us-2"}
    ingest = start_ingest_process(kafka_bootstrap)
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=30) as client:
        for tags in (web, web, web, moved, moved):
            answer = _post(client, server, tags)
            assert answer.status_code == 202, answer.text
        bad = _post(client, server, {"role": "web", "Bad-Key": "x"})
        assert bad.status_code == 422, bad.text
        assert bad.json()["error"] == "validation"
        assert bad.json()["at"] == 'snapshots[0].tags["Bad-Key"]'
    ingest.proc.stop(30)
    again = start_ingest_process(kafka_bootstrap)  # forgets what it published: sends once
    with httpx.Client(base_url=again.url, headers=again.headers, timeout=30) as client:
        for _ in range(2):
            assert _post(client, server, moved).status_code == 202

    ours = [
        (key, decode_tags_record(value))
        for key, value in read_keyed(kafka_bootstrap, TAGS_TOPIC, since)
        if key == server.encode()
    ]
    assert [(s, tags) for _, (s, tags, _ts) in ours] == [
        (server, web),
        (server, moved),
        (server, moved),
    ]
    assert _configs(kafka_bootstrap, TAGS_TOPIC)["cleanup.policy"] == "compact"


def test_the_last_tags_of_a_server_are_read_back(
    kafka_bootstrap, start_ingest_process, unique_name, capsys
):
    tagged, moved, untagged = unique_name("rb"), unique_name("rb"), unique_name("rb")
    ingest = start_ingest_process(kafka_bootstrap)
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=30) as client:
        assert _post(client, tagged, {"role": "db"}).status_code == 202
        assert _post(client, moved, {"dc": "eu-1"}).status_code == 202
        assert _post(client, moved, {"dc": "eu-2", "env": "prod"}).status_code == 202
    got = read_server_tags(kafka_bootstrap, {tagged, moved, untagged})
    assert {s: tags for s, (tags, _ts) in got.items()} == {
        tagged: {"role": "db"},
        moved: {"dc": "eu-2", "env": "prod"},
    }
    assert main(["ingest", "tags", moved, "--kafka-bootstrap", kafka_bootstrap]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["tags"] == {"dc": "eu-2", "env": "prod"}
    assert main(["ingest", "tags", untagged, "--kafka-bootstrap", kafka_bootstrap]) == 1
    assert f"no tags for server {untagged!r}" in capsys.readouterr().err
