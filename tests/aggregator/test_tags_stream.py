"""Host tags on the real chain (issue 37): tagged servers' samples through Kafka, the streaming
job on Spark following a compacted tags topic, and the groups of a ``BY dc`` query written by
the executors to Cassandra, equal to numpy per group; a server whose ``dc`` changes mid-stream
is grouped by its old tags up to the window before the change took effect, including for a
late sample of such a window, and by its new tags from that window on (the per-window rule,
docs/aggregator.md "Host tags")."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from aggregator.server_writes import ServerWrites
from aggregator.tag_map import effective_from
from apm.query import parse
from apm.query_select import group_label
from storage.settings import StorageSettings
from tests.aggregator.conftest import assert_matches, expected
from tests.aggregator.test_by_server import _complete

pytestmark = pytest.mark.integration

FNS = "min, max, avg, count, sum, p99"


def test_a_by_tag_query_matches_numpy_per_group_and_a_tag_change_respects_the_window_rule(
    fake_store,
    job_factory,
    metric_topics,
    produce,
    unique_name,
    own_topics,
    kafka_bootstrap,
    server_keyspace,
    server_repo,
):
    from apm.kafka import TopicSpec, ensure_topics, new_producer
    from apm.tags import encode_tags_record

    metric = metric_topics()
    topic = unique_name("tags")
    own_topics.append(topic)
    ensure_topics(kafka_bootstrap, [topic], TopicSpec(partitions=1, compact=True))
    producer = new_producer(kafka_bootstrap, acks="all")

    def publish(server: str, tags: dict[str, str]) -> int:
        key, value = encode_tags_record(server, tags, time.time())
        return int(producer.send(topic, key=key, value=value).get(timeout=30).timestamp)

    tags = {
        "web-1": {"role": "web", "dc": "a"},
        "web-2": {"role": "web", "dc": "b"},
        "web-3": {"role": "web"},  # no dc: the group dc=""
        "web-4": {"role": "web", "dc": "a"},  # moves to b below
        "db-1": {"role": "db", "dc": "a"},  # not selected
    }
    for server, t in tags.items():
        publish(server, t)
    by_dc = fake_store.add(f"FROM role:web SELECT {metric} WINDOW 5s COMPUTE {FNS} BY dc")
    in_a = fake_store.add(f"FROM role:web WHERE dc:a SELECT {metric} WINDOW 5s COMPUTE {FNS}")
    writes = ServerWrites(StorageSettings(), server_keyspace, retry_s=10)
    job = job_factory(
        metrics=metric,
        tags_topic=topic,
        server_writes=writes,
        future_tolerance_seconds=120,
        allowed_lateness_seconds=300,
    )
    rng = np.random.default_rng(37)

    def samples(start: int, seconds: int) -> list[tuple[str, float, float]]:
        return [
            (s, start + i + rng.random() * 0.9, float(rng.normal(50, 15)))
            for i in range(seconds)
            for s in tags
        ]

    w0 = int(time.time() // 5) * 5 - 10  # two windows before now: the first tags apply
    first = samples(w0, 10)
    produce(metric, first)
    job.windows.processAllAvailable()
    received = publish("web-4", {"role": "web", "dc": "b"})
    change = effective_from(received, 5)  # web-4 is in dc b from this window on
    second = samples(change, 10)
    late = [("web-4", w0 + 5.95, 999.0)]  # a window before the change: still dc a
    _complete(job, produce, metric, change + 13, second + late + first[::3])  # with resends
    producer.close()

    def dc(server: str, ts: float) -> str:
        if server == "web-4":
            return "a" if ts < change else "b"
        return tags[server].get("dc", "")

    rows = first + second + late
    plain = parse(f"FROM * SELECT {metric} WINDOW 5s COMPUTE {FNS}")
    lo, hi = w0 - 60.0, change + 60.0
    groups = {"a", "b", ""}
    labels = [group_label(("dc",), (g,)) for g in sorted(groups)]
    assert server_repo.list_result_servers(by_dc.id, lo, hi) == labels
    for g in groups:
        mine = [r for r in rows if r[0] != "db-1" and dc(r[0], r[1]) == g]
        label = group_label(("dc",), (g,))
        got = {r.window_start: r for r in server_repo.read_server_results(by_dc.id, label, lo, hi)}
        assert_matches(got, expected(mine, plain))
    assert got and all(r.server == label for r in got.values())
    # web-4's late 999.0 counts in dc a's window before the change, nowhere else
    a = {r.window_start: r for r in server_repo.read_server_results(by_dc.id, "dc=a", lo, hi)}
    assert a[float(w0 + 5)].values["max"] == 999.0
    # The one series of a WHERE query on the same tags, written by the driver.
    in_a_rows = [r for r in rows if r[0] != "db-1" and dc(r[0], r[1]) == "a"]
    assert_matches(fake_store.of(in_a.id), expected(in_a_rows, plain))
    status = job.publish_status()
    assert status["tags"] == {"servers": 5, "dropped": 0}
    assert json.dumps(status)  # the status stays JSON
