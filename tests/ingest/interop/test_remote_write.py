"""POST /api/v1/write (Prometheus remote_write 1.0) over a fake publisher: the mapping and
every answer the protocol specifies (204; 400/413/415 to drop; 429/503 to retry)."""

from __future__ import annotations

import math
import struct
import time

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apm.wire import decode
from ingest.interop.prompb import WriteRequest
from ingest.interop.remote_write import STALE_NAN

pytestmark = pytest.mark.unit

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN))[0]
HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}


def write_request(series: list[tuple[dict[str, str], list[tuple[float, int]]]]) -> bytes:
    request = WriteRequest()
    for labels, samples in series:
        ts = request.timeseries.add()
        for name, value in sorted(labels.items()):
            ts.labels.add(name=name, value=value)
        for value, ms in samples:
            ts.samples.add(value=value, timestamp=ms)
    return request.SerializeToString()


def post(client, proto: bytes | None = None, *, raw: bytes | None = None, **headers: str):
    body = raw if raw is not None else bytes(cramjam.snappy.compress_raw(proto or b""))
    return client.post("/api/v1/write", content=body, headers={**HEADERS, **headers})


def published(fake_publisher) -> dict[str, list[tuple[str, float, float]]]:
    out: dict[str, list[tuple[str, float, float]]] = {}
    for records in fake_publisher.published:
        for topic, values in records.items():
            for value in values:
                out.setdefault(topic, []).extend(decode(value))
    return out


def points(client, outcome: str, reason: str, protocol: str = "remote_write") -> float:
    """apm_ingest_interop_points_total of one outcome and reason, from /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "apm_ingest_interop_points_total" and sample.labels == {
                "protocol": protocol,
                "outcome": outcome,
                "reason": reason,
            }:
                return sample.value
    return 0.0


def now_ms() -> int:
    return int(time.time() * 1000)


def test_a_series_becomes_samples_of_its_name_and_labels_on_its_instance(
    make_client, fake_publisher
):
    client = make_client()
    t = now_ms()
    labels = {
        "__name__": "http_requests_total",
        "instance": "10.0.0.7:9100",
        "job": "api",
        "method": "GET",
        "code": "200",
    }
    answer = post(client, write_request([(labels, [(3.0, t), (5.5, t + 1000)])]))
    assert answer.status_code == 204, answer.text
    from apm.model import topic_for

    topic = topic_for("http_requests_total.code_200.method_GET")  # job is ignored
    assert published(fake_publisher) == {
        topic: [("10.0.0.7_9100", t / 1000, 3.0), ("10.0.0.7_9100", (t + 1000) / 1000, 5.5)]
    }


def test_histogram_buckets_keep_their_le_label(make_client, fake_publisher):
    client = make_client()
    t = now_ms()
    series = [
        ({"__name__": "rpc_seconds_bucket", "instance": "h", "le": le}, [(n, t)])
        for le, n in (("0.1", 1.0), ("1", 4.0), ("+Inf", 5.0))
    ]
    assert post(client, write_request(series)).status_code == 204
    from apm.model import metric_for_topic

    names = {metric_for_topic(t) for t in published(fake_publisher)}
    assert names == {
        "rpc_seconds_bucket.le_0_1",
        "rpc_seconds_bucket.le_1",
        "rpc_seconds_bucket.le__Inf",  # "+" is "_", as in DogStatsD tags
    }


def test_without_an_instance_label_the_server_is_the_default(make_client, fake_publisher):
    client = make_client()
    assert post(client, write_request([({"__name__": "up"}, [(1.0, now_ms())])])).status_code == 204
    [[(server, _ts, _v)]] = published(fake_publisher).values()
    assert server == "prometheus"


def test_nan_and_stale_markers_are_dropped_and_counted(make_client, fake_publisher):
    client = make_client()
    t = now_ms()
    series = [
        ({"__name__": "up", "instance": "a"}, [(1.0, t), (STALE, t + 1000), (math.nan, t + 2000)])
    ]
    answer = post(client, write_request(series))
    assert answer.status_code == 204, answer.text
    [rows] = published(fake_publisher).values()
    assert rows == [("a", t / 1000, 1.0)]
    assert points(client, "dropped", "stale") == 1
    assert points(client, "dropped", "nan") == 1


def test_only_stale_markers_answer_204_and_publish_nothing(make_client, fake_publisher):
    client = make_client()
    series = [({"__name__": "up", "instance": "a"}, [(STALE, now_ms())])]
    assert post(client, write_request(series)).status_code == 204
    assert fake_publisher.published == []


def test_unbounded_labels_are_left_out_of_names_and_counted(make_client, fake_publisher):
    client = make_client()
    labels = {"__name__": "req", "instance": "a", "request_id": "8c1f0a7e9d2b4c", "path": "/x"}
    assert post(client, write_request([(labels, [(1.0, now_ms())])])).status_code == 204
    from apm.model import metric_for_topic

    assert [metric_for_topic(t) for t in published(fake_publisher)] == ["req.path__x"]
    assert (
        'apm_ingest_interop_labels_dropped_total{protocol="remote_write"} 1.0'
        in client.get("/metrics").text
    )


def test_truncated_protobuf_is_400(make_client, fake_publisher):
    client = make_client()
    proto = write_request([({"__name__": "up", "instance": "a"}, [(1.0, now_ms())])])
    answer = post(client, proto[:-5])
    assert answer.status_code == 400
    assert "protobuf" in answer.text
    assert fake_publisher.published == []


@pytest.mark.parametrize(
    "raw",
    [b"\x0bnot snappy at all", b"", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"],
)
def test_bytes_that_are_not_snappy_are_400(make_client, raw):
    answer = post(make_client(), raw=raw)
    assert answer.status_code == 400 or (raw == b"" and answer.status_code == 204)


def test_gzip_sent_as_snappy_is_400_and_gzip_declared_is_415(make_client):
    import gzip

    client = make_client()
    proto = write_request([({"__name__": "up"}, [(1.0, now_ms())])])
    assert post(client, raw=gzip.compress(proto)).status_code == 400
    answer = post(client, raw=gzip.compress(proto), **{"Content-Encoding": "gzip"})
    assert answer.status_code == 415 and "snappy" in answer.text


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/x-protobuf;proto=io.prometheus.write.v2.Request", ""],
)
def test_other_media_types_are_415(make_client, content_type):
    answer = post(make_client(), write_request([]), **{"Content-Type": content_type})
    assert answer.status_code == 415


def test_remote_write_1_0_named_in_the_content_type_is_accepted(make_client):
    ct = "application/x-protobuf;proto=prometheus.WriteRequest"
    proto = write_request([({"__name__": "up"}, [(1.0, now_ms())])])
    assert post(make_client(), proto, **{"Content-Type": ct}).status_code == 204


def test_a_huge_label_set_is_400_and_publishes_nothing(make_client, fake_publisher):
    labels = {"__name__": "up", **{f"l{i}": "x" for i in range(100)}}
    answer = post(make_client(), write_request([(labels, [(1.0, now_ms())])]))
    assert answer.status_code == 400 and "remote_write_max_labels" in answer.text
    assert fake_publisher.published == []


def test_too_many_series_is_413(make_client):
    from ingest.interop.settings import InteropSettings

    client = make_client()
    client.app.state.interop.settings = InteropSettings(remote_write_max_series=2)
    series = [({"__name__": f"m{i}"}, [(1.0, now_ms())]) for i in range(3)]
    answer = post(client, write_request(series))
    assert answer.status_code == 413 and "remote_write_max_series" in answer.text


def test_a_decompressed_size_over_the_limit_is_413_before_inflating(make_client):
    # A snappy block header claiming 1 GiB: refused from the header alone.
    header = bytes([0x80, 0x80, 0x80, 0x80, 0x04])
    answer = post(make_client(), raw=header + b"\x00" * 16)
    assert answer.status_code == 413


def test_a_body_over_max_body_bytes_is_413(make_client):
    client = make_client(max_body_bytes=100)
    series = [({"__name__": f"metric_{i}"}, [(1.0, now_ms())]) for i in range(50)]
    assert post(client, write_request(series)).status_code == 413


def test_kafka_down_is_503_with_retry_after(make_client, fake_publisher):
    fake_publisher.unavailable = True
    answer = post(make_client(), write_request([({"__name__": "up"}, [(1.0, now_ms())])]))
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "5"


def test_a_missing_key_is_401(make_client):
    client = make_client()
    answer = client.post(
        "/api/v1/write",
        content=b"",
        headers={**HEADERS, "Authorization": ""},
    )
    assert answer.status_code == 401


def test_old_samples_are_refused_with_400_after_the_good_ones_are_published(
    make_client, fake_publisher
):
    client = make_client()
    t = now_ms()
    old = t - 2 * 86_400_000
    series = [({"__name__": "up", "instance": "a"}, [(1.0, old), (2.0, t)])]
    answer = post(client, write_request(series))
    assert answer.status_code == 400, answer.text
    assert "1 samples accepted, 1 refused" in answer.text and "ts_old" in answer.text
    [rows] = published(fake_publisher).values()
    assert rows == [("a", t / 1000, 2.0)]


def test_series_that_map_to_one_name_keep_the_first_and_answer_400(make_client, fake_publisher):
    client = make_client()
    t = now_ms()
    series = [
        ({"__name__": "up", "instance": "a", "job": "one"}, [(1.0, t)]),
        ({"__name__": "up", "instance": "a", "job": "two"}, [(0.0, t)]),
    ]
    answer = post(client, write_request(series))
    assert answer.status_code == 400 and "duplicate" in answer.text
    [rows] = published(fake_publisher).values()
    assert rows == [("a", t / 1000, 1.0)]


def test_a_series_without_a_valid_name_costs_only_itself(make_client, fake_publisher):
    client = make_client()
    t = now_ms()
    series = [
        ({"__name__": "_bad", "instance": "a"}, [(1.0, t)]),
        ({"instance": "a"}, [(1.0, t)]),
        ({"__name__": "good", "instance": "a"}, [(2.0, t)]),
    ]
    answer = post(client, write_request(series))
    assert answer.status_code == 400 and "metric_name: 2" in answer.text
    assert list(published(fake_publisher).values()) == [[("a", t / 1000, 2.0)]]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    raw=st.binary(max_size=400),
    compress=st.booleans(),
)
def test_arbitrary_bytes_get_a_protocol_answer(make_client_once, raw, compress):
    client = make_client_once
    body = bytes(cramjam.snappy.compress_raw(raw)) if compress else raw
    answer = client.post("/api/v1/write", content=body, headers=HEADERS)
    assert answer.status_code in (204, 400, 413), (answer.status_code, answer.text)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    series=st.lists(
        st.tuples(
            st.dictionaries(st.text(max_size=12), st.text(max_size=80), max_size=70),
            st.lists(
                st.tuples(
                    st.one_of(st.floats(), st.just(STALE)),
                    st.integers(min_value=-(2**63), max_value=2**63 - 1),
                ),
                max_size=4,
            ),
        ),
        max_size=6,
    )
)
def test_arbitrary_series_get_a_protocol_answer(make_client_once, series):
    answer = post(make_client_once, write_request(series))
    assert answer.status_code in (204, 400), (answer.status_code, answer.text)


@pytest.fixture
def make_client_once(make_client):
    return make_client()


class _CappedPublisher:
    """Refuses as the topic creator's cap on new names does (ingest/topics.py)."""

    def __init__(self, status: int) -> None:
        self.status = status

    def publish(self, records):
        from ingest.errors import ApiError

        headers = {"Retry-After": "7"} if self.status == 429 else {}
        raise ApiError(
            self.status, "too_many_new_names", "cap", reason="new_names_rate", headers=headers
        )

    def ready(self) -> bool:
        return True

    def queue_depth(self) -> int:
        return 0

    def lingering(self) -> int:
        return 0

    def close(self, timeout_s: float) -> None:
        pass


@pytest.mark.parametrize(("status", "answer"), [(429, 429), (422, 400)])
def test_the_cap_on_new_names_is_429_to_retry_or_400_to_drop(make_client, status, answer):
    client = make_client(publisher=_CappedPublisher(status))
    got = post(client, write_request([({"__name__": "up"}, [(1.0, now_ms())])]))
    assert got.status_code == answer
    assert (got.headers.get("Retry-After") == "7") == (status == 429)


def test_the_good_samples_are_kept_whatever_the_number_of_bad_ones(make_client, fake_publisher):
    """Issue 28, finding 8: before, past the validator's 1,000 bad snapshots the whole batch
    was refused, good samples included."""
    client = make_client()
    t = now_ms()
    old = t - 2 * 86_400_000
    series = [({"__name__": "up", "instance": "a"}, [(1.0, old - i) for i in range(1001)])]
    series.append(({"__name__": "up", "instance": "b"}, [(2.0, t)]))
    answer = post(client, write_request(series))
    assert answer.status_code == 400, answer.text
    assert "1 samples accepted, 1001 refused (ts_old: 1001)" in answer.text
    assert list(published(fake_publisher).values()) == [[("b", t / 1000, 2.0)]]
