"""The HTTP contract of POST /v1/metrics, one test per answer, over a fake publisher."""

from __future__ import annotations

import gzip
import re
import time

import orjson
import pytest
from fastapi.testclient import TestClient

from apm.wire import decode
from tests.ingest.fakes import FakePublisher

pytestmark = pytest.mark.unit


def post(client, body: object = None, *, raw: bytes | None = None, **headers: str):
    data = raw if raw is not None else orjson.dumps(body)
    hdrs = {"Content-Type": "application/json", **headers}
    return client.post("/v1/metrics", content=data, headers=hdrs)


def test_202_publishes_every_sample_once(make_client, make_batch, fake_publisher):
    client = make_client()
    batch = make_batch(servers=3, metrics=4)
    answer = post(client, batch)
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"accepted": 12, "snapshots": 3}
    [records] = fake_publisher.published
    got = {(topic, row) for topic, values in records.items() for v in values for row in decode(v)}
    want = {
        (f"apm.metric.{m}", (s["server"], s["ts"], v))
        for s in batch["snapshots"]
        for m, v in s["metrics"].items()
    }
    assert got == want


def test_gzip_body_is_accepted(make_client, make_batch, fake_publisher):
    answer = post(
        make_client(), raw=gzip.compress(orjson.dumps(make_batch())), **{"Content-Encoding": "gzip"}
    )
    assert answer.status_code == 202, answer.text
    assert len(fake_publisher.published) == 1


@pytest.mark.parametrize(
    "raw,encoding,error",
    [
        (b'{"snapshots": [', None, "malformed_json"),
        (b"\xff\xfe not json", None, "malformed_json"),
        (b"not gzip at all", "gzip", "malformed_gzip"),
        (gzip.compress(b'{"snapshots": []}')[:-6], "gzip", "malformed_gzip"),
    ],
)
def test_400_malformed(make_client, fake_publisher, raw, encoding, error):
    headers = {"Content-Encoding": encoding} if encoding else {}
    answer = post(make_client(), raw=raw, **headers)
    assert answer.status_code == 400
    assert answer.json()["error"] == error
    assert answer.json()["at"] == "body"
    assert fake_publisher.published == []


@pytest.mark.parametrize("auth", [None, "Bearer nope.nope", "Basic abc", "Bearer "])
def test_401_missing_or_wrong_key(make_client, make_batch, fake_publisher, auth):
    client = make_client()
    client.headers.pop("Authorization")
    headers = {"Authorization": auth} if auth else {}
    answer = post(client, make_batch(), **headers)
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"
    assert answer.json()["at"] == "header:Authorization"
    assert fake_publisher.published == []


def test_413_over_the_wire_limit(make_client, make_batch, fake_publisher):
    body = orjson.dumps(make_batch(servers=20, metrics=20))
    answer = post(make_client(max_body_bytes=len(body) - 1), raw=body)
    assert answer.status_code == 413
    assert answer.json()["error"] == "too_large"
    assert fake_publisher.published == []


def test_413_gzip_bomb(make_client, fake_publisher):
    bomb = gzip.compress(b'{"snapshots": [' + b" " * (2 * 1024 * 1024) + b"]}")
    answer = post(
        make_client(max_decompressed_bytes=1024 * 1024), raw=bomb, **{"Content-Encoding": "gzip"}
    )
    assert len(bomb) < 1024 * 1024
    assert answer.status_code == 413
    assert answer.json()["at"] == "body"
    assert fake_publisher.published == []


@pytest.mark.parametrize(
    "headers,at",
    [
        ({"Content-Type": "text/plain"}, "header:Content-Type"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, "header:Content-Type"),
        ({"Content-Encoding": "br"}, "header:Content-Encoding"),
        ({"Content-Encoding": "deflate"}, "header:Content-Encoding"),
    ],
)
def test_415_media_type_or_encoding(make_client, make_batch, fake_publisher, headers, at):
    answer = post(make_client(), make_batch(), **headers)
    assert answer.status_code == 415
    assert answer.json()["error"] == "unsupported_media_type"
    assert answer.json()["at"] == at
    assert fake_publisher.published == []


NOW = time.time()

# One bad snapshot: the changes that spoil it, and the field ``at`` names after snapshots[i].
BAD_SNAPSHOT = [
    ({"server": "web 01"}, ".server"),
    ({"server": 42}, ".server"),
    ({"metrics": {"9cpu": 1.0}}, '.metrics["9cpu"]'),
    ({"metrics": {"cpu\tutil": 1.0}}, '.metrics["cpu\\tutil"]'),
    ({"metrics": {"ok": 1.0, "cpu": "high"}}, '.metrics["cpu"]'),
    ({"metrics": {"cpu": True}}, '.metrics["cpu"]'),
    ({"metrics": {"cpu": None}}, '.metrics["cpu"]'),
    ({"ts": NOW + 3600}, ".ts"),
    ({"ts": NOW - 2 * 86400}, ".ts"),
    ({"ts": "yesterday"}, ".ts"),
    ({"extra": 1}, ".extra"),
]


@pytest.mark.parametrize("changes,field", BAD_SNAPSHOT)
def test_422_when_every_snapshot_is_bad_names_the_first(
    make_client, make_batch, fake_publisher, changes, field
):
    batch = make_batch(servers=3)
    for snap in batch["snapshots"]:
        snap.update(changes)
    answer = post(make_client(), batch)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "validation"
    assert body["at"] == "snapshots[0]" + field
    assert body["detail"]
    assert fake_publisher.published == []


@pytest.mark.parametrize("changes,field", BAD_SNAPSHOT)
def test_a_bad_snapshot_is_left_out_and_listed_by_index(
    make_client, make_batch, fake_publisher, changes, field
):
    """Per-snapshot verdict (issue 14, item 11): the good snapshots are published, the bad
    one is reported by index, and none of its samples is sent."""
    batch = make_batch(servers=3, metrics=2)
    batch["snapshots"][1].update(changes)
    answer = post(make_client(), batch)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["accepted"] == 4 and body["snapshots"] == 2
    assert body["rejected_snapshots"] == 1
    [rejected] = body["rejected"]
    assert rejected["index"] == 1 and rejected["at"] == "snapshots[1]" + field
    assert rejected["error"] == "validation" and rejected["detail"]
    [records] = fake_publisher.published
    servers = {row[0] for values in records.values() for v in values for row in decode(v)}
    assert servers == {"web-000", "web-002"}
    assert sum(len(decode(v)) for values in records.values() for v in values) == 4


def test_one_skewed_clock_costs_only_its_snapshots(make_client, make_batch, fake_publisher):
    """300 snapshots, one 10 min ahead: 202 for 299, the one listed (was a 422 for all)."""
    batch = make_batch(servers=300, metrics=1)
    # Now, not NOW (import time): the whole suite runs for minutes before this test.
    batch["snapshots"][137]["ts"] = time.time() + 600
    answer = post(make_client(), batch)
    assert answer.status_code == 202, answer.text
    assert answer.json()["snapshots"] == 299
    assert [r["index"] for r in answer.json()["rejected"]] == [137]
    assert "ahead" in answer.json()["rejected"][0]["detail"]


def test_rejections_are_listed_up_to_a_limit_and_counted(make_client, make_batch):
    client = make_client(max_listed_rejections=2)
    batch = make_batch(servers=5, metrics=2)
    for i in (0, 2, 3):
        batch["snapshots"][i]["ts"] = time.time() + 3600
    answer = post(client, batch)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert (body["rejected_snapshots"], body["rejected_samples"]) == (3, 6)
    assert [r["index"] for r in body["rejected"]] == [0, 2]
    text = client.get("/metrics").text
    assert 'apm_ingest_snapshots_total{outcome="rejected",reason="ts_ahead"} 3.0' in text
    assert 'apm_ingest_samples_total{outcome="rejected",reason="ts_ahead"} 6.0' in text
    assert 'apm_ingest_requests_total{outcome="accepted",reason="partial"} 1.0' in text


@pytest.mark.parametrize(
    "doc,at",
    [
        ({"snapshots": []}, "snapshots"),
        ({"snapshots": [{"server": "a", "ts": NOW, "metrics": {}}]}, "snapshots"),
        ({"snapshot": []}, "snapshot"),
        ([1, 2], ""),
        ({"snapshots": [{"server": "a", "metrics": {"x": 1}}]}, "snapshots[0].ts"),
    ],
)
def test_422_names_the_bad_field_of_the_batch(make_client, fake_publisher, doc, at):
    answer = post(make_client(), doc)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "validation"
    assert body["at"] == at
    assert body["detail"]
    assert fake_publisher.published == []


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_422_non_finite_value(make_client, fake_publisher, token):
    raw = b'{"snapshots": [{"server": "a", "ts": %d, "metrics": {"ok": 1, "bad": %s}}]}' % (
        int(time.time()),
        token,
    )
    answer = post(make_client(), raw=raw)
    assert answer.status_code == 422, answer.text
    assert answer.json()["at"] == 'snapshots[0].metrics["bad"]'
    assert fake_publisher.published == []


def test_422_over_the_sample_limit(make_client, make_batch, fake_publisher):
    answer = post(make_client(max_samples=11), make_batch(servers=3, metrics=4))
    assert answer.status_code == 422
    assert "more than 11 samples" in answer.json()["detail"]
    assert answer.json()["at"] == "snapshots[2].metrics"
    assert fake_publisher.published == []


def test_503_with_retry_after_when_kafka_is_unavailable(make_client, make_batch, fake_publisher):
    fake_publisher.unavailable = True
    answer = post(make_client(retry_after_s=7), make_batch())
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "7"
    assert answer.json()["error"] == "unavailable"


def test_health_ready_and_metrics(make_client, make_batch, fake_publisher):
    client = make_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    post(client, make_batch(servers=2, metrics=5))
    post(client, {"snapshots": []})
    fake_publisher.unavailable = True
    assert client.get("/readyz").status_code == 503
    text = client.get("/metrics").text
    assert 'apm_ingest_samples_total{outcome="accepted",reason="ok"} 10.0' in text
    assert 'apm_ingest_requests_total{outcome="rejected",reason="empty"} 1.0' in text
    assert "apm_ingest_publish_seconds_count 1.0" in text
    assert "apm_ingest_producer_queue_depth" in text


def test_shutdown_closes_the_publisher(make_client, fake_publisher):
    client = make_client()
    client.__exit__(None, None, None)
    assert fake_publisher.closed


class _BrokenPublisher(FakePublisher):
    def publish(self, records):
        raise RuntimeError("a bug, not an outage")


def test_every_error_has_the_one_shape(make_client, make_batch, key_file):
    """Each status the ingest answers with, framework ones included: exactly error, detail,
    at (apm.errors), the shape the dashboard's API shares."""
    client = make_client()
    down = make_client(publisher=FakePublisher(unavailable=True))
    broken = TestClient(
        make_client(publisher=_BrokenPublisher()).app,
        raise_server_exceptions=False,
        headers={"Authorization": f"Bearer {key_file[1]}"},
    )
    answers = {
        "400": post(client, raw=b"{"),
        "401": post(client, make_batch(), Authorization="Bearer nope.nope"),
        "404": client.get("/v2/nothing"),
        "405": client.get("/v1/metrics"),
        "413": post(make_client(max_body_bytes=10), make_batch()),
        "413 values": post(make_client(max_json_values=3), make_batch()),
        "415": post(client, make_batch(), **{"Content-Type": "text/plain"}),
        "422": post(client, {"snapshots": []}),
        # A lone surrogate (read by the fallback parser) in a field name that the error
        # names: orjson cannot write it, which made this a 500.
        "422 surrogate": post(client, raw=b'{"snapshots": [], "\\udc00": 1}'),
        "422 surrogate name": post(
            client,
            raw=b'{"snapshots": [{"server": "a", "ts": %d, "metrics": {"\\ud800": 1}}]}'
            % time.time(),
        ),
        "503": post(down, make_batch()),
        "503 readyz": down.get("/readyz"),
        "500": post(broken, make_batch()),
    }
    for name, answer in answers.items():
        assert str(answer.status_code) == name.split()[0], (name, answer.text)
        body = answer.json()
        assert set(body) == {"error", "detail", "at"}, (name, body)
        assert body["error"] and body["detail"], (name, body)
        assert re.fullmatch(r"[a-z_]+", body["error"]), (name, body)
    assert answers["405"].json()["error"] == "method_not_allowed"
    assert answers["500"].json() == {
        "error": "internal_error",
        "detail": "internal error",
        "at": None,
    }
