"""Host tags in POST /v1/metrics (issue 37): a bad tag refuses its snapshot only, and a
server's tags go to the tags topic once per change (ingest.tags), over a fake publisher."""

from __future__ import annotations

import json
import threading
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.tags import MAX_TAGS, decode_tags_record, tags_error
from ingest.tags import ServerTags
from ingest.validate import Validator

pytestmark = pytest.mark.unit


def post(client, body: object):
    return client.post(
        "/v1/metrics", content=orjson.dumps(body), headers={"Content-Type": "application/json"}
    )


def _snap(server: str, tags: object = None, ts: float | None = None) -> dict:
    snap: dict = {"server": server, "ts": time.time() if ts is None else ts, "metrics": {"m": 1.0}}
    if tags is not None:
        snap["tags"] = tags
    return snap


def _published(fake_publisher) -> list[tuple[str, dict[str, str]]]:
    return [decode_tags_record(v)[:2] for _, v in fake_publisher.tags]


@pytest.mark.parametrize(
    "tags,at",
    [
        ({"Role": "web"}, '.tags["Role"]'),
        ({"server": "x"}, '.tags["server"]'),
        ({"role": "w" * 129}, '.tags["role"]'),
        ({"role": "web\n"}, '.tags["role"]'),
        ({"role": 3}, '.tags["role"]'),
        ({"k" * 65: "v"}, '.tags["' + "k" * 65 + '"]'),
        ({f"k{i}": "v" for i in range(MAX_TAGS + 1)}, ".tags"),
        (["role", "web"], ".tags"),
    ],
)
def test_a_bad_tag_refuses_its_snapshot_only(make_client, fake_publisher, tags, at):
    batch = {"snapshots": [_snap("web-1", {"role": "web"}), _snap("web-2", tags)]}
    answer = post(make_client(), batch)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["accepted"] == 1 and body["rejected_snapshots"] == 1
    [rejected] = body["rejected"]
    assert rejected["index"] == 1 and rejected["at"] == "snapshots[1]" + at
    assert rejected["error"] == "validation" and rejected["detail"]
    assert _published(fake_publisher) == [("web-1", {"role": "web"})]


def test_a_batch_of_bad_tags_only_is_a_422_naming_the_field(make_client, fake_publisher):
    answer = post(make_client(), {"snapshots": [_snap("web-1", {"dc": "eu\x00"})]})
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "validation" and body["at"] == 'snapshots[0].tags["dc"]'
    assert "non-printable" in body["detail"]
    assert fake_publisher.published == [] and fake_publisher.tags == []


def test_tags_are_published_once_per_change(make_client, fake_publisher):
    client = make_client()
    web = {"role": "web", "dc": "eu-1"}
    for _ in range(3):
        assert post(client, {"snapshots": [_snap("web-1", web), _snap("db-1")]}).status_code == 202
    assert _published(fake_publisher) == [("web-1", web)]  # db-1 said nothing about tags
    moved = {"role": "web", "dc": "us-2"}
    post(client, {"snapshots": [_snap("web-1", moved)]})
    post(client, {"snapshots": [_snap("web-1", moved)]})
    post(client, {"snapshots": [_snap("web-1", {})]})  # {}: the server has no tags now
    assert _published(fake_publisher) == [("web-1", web), ("web-1", moved), ("web-1", {})]
    metrics = client.get("/metrics").text
    assert 'apm_ingest_tag_records_total{outcome="published"} 3.0' in metrics
    assert "apm_ingest_tag_servers 1.0" in metrics
    # Samples are untouched by tags: the metric records carry no tags.
    assert all(b"role" not in v for r in fake_publisher.published for vs in r.values() for v in vs)


def test_the_latest_snapshot_of_a_batch_says_the_tags():
    validator = Validator(1000, 300, 3600)
    now = time.time()
    batch = validator.validate(
        {
            "snapshots": [
                _snap("a", {"v": "2"}, now),
                _snap("a", {"v": "1"}, now - 1),  # older, sent later: not the latest
                _snap("b", {"v": "x"}, now),
            ]
        }
    )
    assert batch.tags == {"a": (now, {"v": "2"}), "b": (now, {"v": "x"})}


def test_a_failed_publish_is_tried_again_and_the_memory_is_bounded():
    counts: list[tuple[str, int]] = []
    one = len("a") + 64 + len("r") + len("w") + 100  # what one server's entry costs
    tags = ServerTags(max_bytes=2 * one, counted=lambda outcome, n: counts.append((outcome, n)))
    sent: list[tuple[bytes, bytes]] = []

    def down(_records):
        raise OSError("down")

    assert tags.publish({"a": (1.0, {"r": "w"})}, down) == 0 and counts == [("failed", 1)]
    assert tags.publish({"a": (1.0, {"r": "w"})}, sent.extend) == 1
    assert tags.publish({"a": (2.0, {"r": "w"})}, sent.extend) == 0  # unchanged
    tags.publish({"b": (2.0, {"r": "w"}), "c": (2.0, {"r": "w"})}, sent.extend)
    assert len(tags) == 2 and tags.bytes == 2 * one  # "a", least recently seen: forgotten
    assert tags.publish({"a": (3.0, {"r": "w"})}, sent.extend) == 1  # so published again
    assert [json.loads(v)["server"] for _, v in sent] == ["a", "b", "c", "a"]
    assert [k for k, _ in sent] == [b"a", b"b", b"c", b"a"]
    assert counts[1:] == [("published", 1), ("published", 2), ("published", 1)]


def test_concurrent_requests_of_one_server_send_a_change_once():
    tags = ServerTags(max_bytes=10_000)
    sent: list[tuple[bytes, bytes]] = []
    start = threading.Barrier(8)

    def slow(records):
        time.sleep(0.05)  # the other requests arrive while this one is sending
        sent.extend(records)

    def request():
        start.wait()
        tags.publish({"a": (1.0, {"r": "w"})}, slow)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [k for k, _ in sent] == [b"a"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.dictionaries(st.text(max_size=70), st.text(max_size=140), max_size=MAX_TAGS + 2),
        _JSON,
    )
)
def test_the_validator_takes_exactly_the_tags_the_rule_takes(tags):
    validator = Validator(1000, 300, 3600)
    given_tags = {**_snap("b"), "tags": tags}  # None too: _snap would leave it out
    doc = {"snapshots": [_snap("a", {"ok": "1"}), given_tags]}
    batch = validator.validate(doc)  # never raises: snapshot "a" is good
    if tags_error(tags) is None:
        assert batch.rejected == [] and batch.tags["b"][1] == tags
    else:
        [rejected] = batch.rejected
        assert rejected.index == 1 and rejected.reason == "tag"
        assert rejected.at.startswith("snapshots[1].tags") and "b" not in batch.tags
