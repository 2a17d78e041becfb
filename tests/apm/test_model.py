"""apm.model: the naming rules, values, snapshots and partitions per topic."""

from __future__ import annotations

import math

import pytest

from apm.model import (
    BYTES_PER_SAMPLE,
    PARTITION_BYTES_PER_S,
    TOPIC_PARTITIONS,
    Snapshot,
    metric_for_topic,
    metric_name_error,
    partitions_for,
    server_name_error,
    topic_for,
    value_error,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["cpu.util", "rpc.latency.max", "a", "disk_used-pct"])
def test_valid_metric_names(name):
    assert metric_name_error(name) is None
    assert metric_for_topic(topic_for(name)) == name


@pytest.mark.parametrize("name", ["", "9cpu", "cpu util", "cpu\tx", "é", "x" * 201, None, 3])
def test_invalid_metric_names(name):
    assert metric_name_error(name)


@pytest.mark.parametrize("name", ["web-042", "10.0.0.1", "Host_A"])
def test_server_names(name):
    assert server_name_error(name) is None
    assert server_name_error(name + "\n")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (1, True),
        (0.5, True),
        (-3e300, True),
        (math.nan, False),
        (math.inf, False),
        (True, False),
        ("1", False),
        (None, False),
    ],
)
def test_values(value, ok):
    assert (value_error(value) is None) is ok


def test_snapshot_samples():
    snap = Snapshot("web-1", 10.0, {"a": 1.0, "b": 2.0})
    assert [(s.metric, s.value) for s in snap.samples()] == [("a", 1.0), ("b", 2.0)]


def test_partitions_for_sizes_a_topic_by_its_bytes_per_second():
    assert partitions_for(1) == 1  # 34 B/s: never fewer than one partition
    assert TOPIC_PARTITIONS == partitions_for(10_000) == 1  # 340 KB/s
    assert partitions_for(100_000) == 4  # 3.4 MB/s
    # Exactly one partition's worth stays at 1; one more server needs a second.
    at = PARTITION_BYTES_PER_S // BYTES_PER_SAMPLE
    assert partitions_for(10, bytes_per_sample=100, partition_bytes_per_s=1000) == 1
    assert partitions_for(11, bytes_per_sample=100, partition_bytes_per_s=1000) == 2
    assert partitions_for(at, bytes_per_sample=BYTES_PER_SAMPLE) == 1
    assert partitions_for(at + 1, bytes_per_sample=BYTES_PER_SAMPLE) == 2
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ValueError, match="servers must be"):
            partitions_for(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be > 0"):
        partitions_for(10, bytes_per_sample=0)
    with pytest.raises(ValueError, match="must be > 0"):
        partitions_for(10, partition_bytes_per_s=math.nan)


# --- topics (issue 14, item 3) ------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from apm.model import KAFKA_TOPIC_RE, MAX_NAME_LEN, MAX_TOPIC_LEN  # noqa: E402

_FIRST = "abcXYZ"
_REST = "ab09Z._-"  # every kind of character a name may hold, separators over-weighted
names = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_FIRST),
    st.text(_REST + "_" * 4, max_size=MAX_NAME_LEN - 1),
)


def _kafka_key(topic: str) -> str:
    """What Kafka compares for a collision (kafka.common.internals.Topic.hasCollision)."""
    return topic.replace(".", "_")


def test_the_dot_and_underscore_twins_get_topics_kafka_keeps_apart():
    a, b = topic_for("cpu.util"), topic_for("cpu_util")
    assert a == "apm.metric.cpu.util"  # a name without '_' keeps its topic
    assert _kafka_key(a) != _kafka_key(b)
    assert metric_for_topic(b) == "cpu_util"
    assert metric_for_topic("apm.metric.cpu_util") is None  # the old topic of cpu_util


@given(names)
@settings(max_examples=500)
def test_every_valid_name_has_a_legal_topic_that_maps_back(name):
    assert metric_name_error(name) is None
    topic = topic_for(name)
    assert KAFKA_TOPIC_RE.fullmatch(topic) and len(topic) <= MAX_TOPIC_LEN
    assert "_" not in topic
    assert metric_for_topic(topic) == name


@given(names, names)
@settings(max_examples=500)
def test_two_distinct_names_never_collide_in_kafka(a, b):
    if a != b:
        assert _kafka_key(topic_for(a)) != _kafka_key(topic_for(b))


@pytest.mark.parametrize("name", ["a" + "_" * 199, "a" + "._" * 99 + "x", "x" * MAX_NAME_LEN])
def test_the_longest_names_still_fit(name):
    assert metric_name_error(name) is None
    assert len(topic_for(name)) <= MAX_TOPIC_LEN
    assert metric_for_topic(topic_for(name)) == name


@pytest.mark.parametrize(
    "topic", ["apm.metric.-", "apm.metric.-a", "apm.metric.-a.b00", "apm.metric.-a.b!!!", "other.x"]
)
def test_topics_no_name_maps_to_have_no_metric(topic):
    assert metric_for_topic(topic) is None
