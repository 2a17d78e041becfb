"""POST /otlp/v1/metrics (OTLP/HTTP metrics) over a fake publisher: the mapping of each point
kind and every answer of the OTLP spec (200, partial success, 400, 413, 415, 503)."""

from __future__ import annotations

import gzip
import math
import time
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from apm.model import metric_for_topic
from apm.wire import decode
from ingest.interop.prompb import Status

pytestmark = pytest.mark.unit

PROTO = {"Content-Type": "application/x-protobuf"}
DELTA, CUMULATIVE = 1, 2
NS = 1_000_000_000


def request(
    metrics: list[dict[str, Any]], resource: dict[str, str] | None = None
) -> ExportMetricsServiceRequest:
    """An export of ``metrics`` (OTLP JSON shape, snake_case) under one resource."""
    attrs = [{"key": k, "value": {"string_value": v}} for k, v in (resource or {}).items()]
    doc = {
        "resource_metrics": [
            {"resource": {"attributes": attrs}, "scope_metrics": [{"metrics": metrics}]}
        ]
    }
    return json_format.ParseDict(_json_safe(doc), ExportMetricsServiceRequest())


def _json_safe(doc: Any) -> Any:
    """ParseDict takes non-finite doubles only as the strings proto3 JSON uses."""
    if isinstance(doc, dict):
        return {k: _json_safe(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_json_safe(v) for v in doc]
    if isinstance(doc, float) and not math.isfinite(doc):
        return "NaN" if math.isnan(doc) else ("Infinity" if doc > 0 else "-Infinity")
    return doc


def attrs(**kv: Any) -> list[dict[str, Any]]:
    out = []
    for k, v in kv.items():
        key = "int_value" if isinstance(v, int) else "string_value"
        out.append({"key": k, "value": {key: v}})
    return out


def gauge(name: str, *points: tuple[float, int], **kv: Any) -> dict[str, Any]:
    return {
        "name": name,
        "gauge": {
            "data_points": [
                {"as_double": v, "time_unix_nano": t, "attributes": attrs(**kv)} for v, t in points
            ]
        },
    }


def counter(
    name: str, *points: tuple[float, int, int], temporality: int = CUMULATIVE, monotonic=True
) -> dict[str, Any]:
    return {
        "name": name,
        "sum": {
            "aggregation_temporality": temporality,
            "is_monotonic": monotonic,
            "data_points": [
                {"as_double": v, "start_time_unix_nano": s, "time_unix_nano": t}
                for v, s, t in points
            ],
        },
    }


def histogram(
    name: str, *points: tuple[int, float, float, int, int], temporality: int = CUMULATIVE
) -> dict[str, Any]:
    return {
        "name": name,
        "histogram": {
            "aggregation_temporality": temporality,
            "data_points": [
                {"count": c, "sum": s, "max": m, "start_time_unix_nano": st_, "time_unix_nano": t}
                for c, s, m, st_, t in points
            ],
        },
    }


def post(client, req: ExportMetricsServiceRequest | None = None, *, raw=None, **headers):
    body = raw if raw is not None else req.SerializeToString()
    return client.post("/otlp/v1/metrics", content=body, headers={**PROTO, **headers})


def answer(resp) -> ExportMetricsServiceResponse:
    assert resp.status_code == 200, resp.content
    return ExportMetricsServiceResponse.FromString(resp.content)


def published(fake_publisher) -> dict[str, list[tuple[str, float, float]]]:
    out: dict[str, list[tuple[str, float, float]]] = {}
    for records in fake_publisher.published:
        for topic, values in records.items():
            out.setdefault(str(metric_for_topic(topic)), []).extend(
                decode(value) for value in values
            )
    return {k: [row for rows in v for row in rows] for k, v in out.items()}


def now_ns() -> int:
    return (int(time.time()) - 10) * NS


def test_a_gauge_point_is_a_sample_on_the_host_with_its_attributes_in_the_name(
    make_client, fake_publisher
):
    t = now_ns()
    req = request([gauge("queue.depth", (7.0, t), queue="orders", shard=3)], {"host.name": "web-1"})
    resp = answer(post(make_client(), req))
    assert not resp.HasField("partial_success")
    assert published(fake_publisher) == {
        "queue.depth.queue_orders.shard_3": [("web-1", t / NS, 7.0)]
    }


@pytest.mark.parametrize(
    ("resource", "server"),
    [
        ({"host.name": "h1"}, "h1"),
        ({"host.name": "h1", "service.instance.id": "i1"}, "h1"),
        ({"service.instance.id": "pod:7"}, "pod_7"),
        ({"service.name": "unknown_service:python"}, "otlp"),
    ],
)
def test_the_server_is_host_name_else_service_instance_id_else_the_default(
    make_client, fake_publisher, resource, server
):
    assert post(make_client(), request([gauge("g", (1.0, now_ns()))], resource)).status_code == 200
    assert [row[0] for row in published(fake_publisher)["g"]] == [server]


def test_instrument_names_keep_dots_and_map_other_characters(make_client, fake_publisher):
    post(make_client(), request([gauge("http.server/active requests", (1.0, now_ns()))]))
    assert list(published(fake_publisher)) == ["http.server_active_requests"]


def test_a_cumulative_counter_becomes_a_rate_from_its_second_point(make_client, fake_publisher):
    client = make_client()
    t0, start = now_ns(), now_ns() - 5 * NS
    answer(post(client, request([counter("requests", (100.0, start, t0))])))
    assert fake_publisher.published == []  # the first point gives no rate
    answer(post(client, request([counter("requests", (130.0, start, t0 + 2 * NS))])))
    answer(post(client, request([counter("requests", (130.0, start, t0 + 2 * NS))])))  # a retry
    answer(post(client, request([counter("requests", (131.0, start, t0 + 3 * NS))])))
    assert published(fake_publisher)["requests"] == [
        ("otlp", (t0 + 2 * NS) / NS, 15.0),
        ("otlp", (t0 + 2 * NS) / NS, 15.0),  # the same sample again: a duplicate downstream
        ("otlp", (t0 + 3 * NS) / NS, 1.0),
    ]


def test_a_counter_reset_gives_no_rate_and_the_next_point_does(make_client, fake_publisher):
    client = make_client()
    t0, start = now_ns(), now_ns() - 5 * NS
    for value, t in ((50.0, t0), (60.0, t0 + NS), (2.0, t0 + 2 * NS), (6.0, t0 + 4 * NS)):
        answer(post(client, request([counter("c", (value, start, t))])))
    assert [v for *_, v in published(fake_publisher)["c"]] == [10.0, 2.0]


def test_a_delta_sum_is_its_value_over_its_interval(make_client, fake_publisher):
    t = now_ns()
    req = request([counter("bytes", (40.0, t - 4 * NS, t), temporality=DELTA)])
    answer(post(make_client(), req))
    assert published(fake_publisher) == {"bytes": [("otlp", t / NS, 10.0)]}


def test_an_up_down_counter_is_a_level(make_client, fake_publisher):
    t = now_ns()
    req = request([counter("inflight", (-3.0, t - NS, t), monotonic=False)])
    answer(post(make_client(), req))
    assert published(fake_publisher) == {"inflight": [("otlp", t / NS, -3.0)]}


def test_a_delta_histogram_is_max_count_and_sum_per_second(make_client, fake_publisher):
    t = now_ns()
    req = request([histogram("rpc.duration", (8, 2.0, 0.9, t - 2 * NS, t), temporality=DELTA)])
    answer(post(make_client(), req))
    assert published(fake_publisher) == {
        "rpc.duration.count": [("otlp", t / NS, 4.0)],
        "rpc.duration.sum": [("otlp", t / NS, 1.0)],
        "rpc.duration.max": [("otlp", t / NS, 0.9)],
    }


def test_a_cumulative_histogram_gives_rates_from_its_second_point(make_client, fake_publisher):
    client = make_client()
    t0, start = now_ns(), now_ns() - 9 * NS
    answer(post(client, request([histogram("h", (10, 5.0, 1.0, start, t0))])))
    answer(post(client, request([histogram("h", (30, 9.0, 2.0, start, t0 + 4 * NS))])))
    got = published(fake_publisher)
    assert got["h.count"] == [("otlp", (t0 + 4 * NS) / NS, 5.0)]
    assert got["h.sum"] == [("otlp", (t0 + 4 * NS) / NS, 1.0)]
    assert [v for *_, v in got["h.max"]] == [1.0, 2.0]


def test_points_that_share_a_name_are_summed_as_rates(make_client, fake_publisher):
    t = now_ns()
    metric = counter("c", (10.0, t - NS, t), (4.0, t - NS, t), temporality=DELTA)
    metric["sum"]["data_points"][0]["attributes"] = attrs(request_id="a1b2c3d4e5f6a7b8")
    metric["sum"]["data_points"][1]["attributes"] = attrs(request_id="ffeeddccbbaa0099")
    answer(post(make_client(), request([metric])))
    assert published(fake_publisher) == {"c": [("otlp", t / NS, 14.0)]}


def test_nan_is_a_partial_success_naming_the_point(make_client, fake_publisher):
    t = now_ns()
    req = request([gauge("g", (math.nan, t)), gauge("ok", (1.0, t))])
    resp = answer(post(make_client(), req))
    assert resp.partial_success.rejected_data_points == 1
    assert "not finite" in resp.partial_success.error_message
    assert list(published(fake_publisher)) == ["ok"]


def test_no_recorded_value_is_dropped_not_refused(make_client, fake_publisher):
    req = request([gauge("g", (1.0, now_ns()))])
    req.resource_metrics[0].scope_metrics[0].metrics[0].gauge.data_points[0].flags = 1
    resp = answer(post(make_client(), req))
    assert not resp.HasField("partial_success") and fake_publisher.published == []


def test_a_request_whose_every_point_is_refused_is_400_with_a_status(make_client, fake_publisher):
    resp = post(make_client(), request([gauge("g", (math.inf, now_ns()))]))
    assert resp.status_code == 400
    status = Status.FromString(resp.content)
    assert status.code == 3 and "not finite" in status.message
    assert fake_publisher.published == []


def test_a_point_with_a_huge_attribute_set_is_refused_alone(make_client, fake_publisher):
    t = now_ns()
    big = gauge("big", (1.0, t), **{f"k{i}": "v" for i in range(100)})
    resp = answer(post(make_client(), request([big, gauge("ok", (1.0, t))])))
    assert resp.partial_success.rejected_data_points == 1
    assert "otlp_max_attributes" in resp.partial_success.error_message


def test_too_many_points_is_413(make_client):
    from ingest.interop.settings import InteropSettings

    client = make_client()
    client.app.state.interop.settings = InteropSettings(otlp_max_points=2)
    t = now_ns()
    resp = post(client, request([gauge("g", (1.0, t), (2.0, t + 1), (3.0, t + 2))]))
    assert resp.status_code == 413 and "otlp_max_points" in Status.FromString(resp.content).message


def test_json_in_json_out_and_gzip(make_client, fake_publisher):
    t = now_ns()
    doc = {
        "resourceMetrics": [
            {
                "resource": {"attributes": [{"key": "host.name", "value": {"stringValue": "j"}}]},
                "scopeMetrics": [
                    {
                        "metrics": [
                            {
                                "name": "g",
                                "gauge": {"dataPoints": [{"asInt": "5", "timeUnixNano": str(t)}]},
                            },
                            {
                                "name": "bad",
                                "gauge": {
                                    "dataPoints": [{"asDouble": "NaN", "timeUnixNano": str(t)}]
                                },
                            },
                        ]
                    }
                ],
            }
        ]
    }
    import json

    resp = post(
        make_client(),
        raw=gzip.compress(json.dumps(doc).encode()),
        **{"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    assert resp.json()["partialSuccess"]["rejectedDataPoints"] == "1"
    assert published(fake_publisher) == {"g": [("j", t / NS, 5.0)]}


def test_truncated_protobuf_is_400(make_client):
    body = request([gauge("g", (1.0, now_ns()))]).SerializeToString()
    resp = post(make_client(), raw=body[:-3])
    assert resp.status_code == 400 and Status.FromString(resp.content).code == 3


def test_wrong_compression_is_400_and_an_unknown_encoding_415(make_client):
    body = request([gauge("g", (1.0, now_ns()))]).SerializeToString()
    assert post(make_client(), raw=body, **{"Content-Encoding": "gzip"}).status_code == 400
    assert post(make_client(), raw=body, **{"Content-Encoding": "snappy"}).status_code == 415
    assert post(make_client(), raw=body, **{"Content-Type": "text/plain"}).status_code == 415


def test_kafka_down_is_503_with_retry_after_and_a_status(make_client, fake_publisher):
    fake_publisher.unavailable = True
    resp = post(make_client(), request([gauge("g", (1.0, now_ns()))]))
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "5"
    assert Status.FromString(resp.content).code == 14


def test_a_missing_key_is_401(make_client):
    resp = make_client().post(
        "/otlp/v1/metrics", content=b"", headers={**PROTO, "Authorization": ""}
    )
    assert resp.status_code == 401


@pytest.fixture
def client_once(make_client):
    return make_client()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(raw=st.binary(max_size=400), json_=st.booleans(), gz=st.booleans())
def test_arbitrary_bytes_get_an_otlp_answer(client_once, raw, json_, gz):
    headers = {"Content-Type": "application/json" if json_ else "application/x-protobuf"}
    if gz:
        headers["Content-Encoding"] = "gzip"
        raw = gzip.compress(raw) if raw[:1] != b"x" else raw
    resp = post(client_once, raw=raw, **headers)
    assert resp.status_code in (200, 400, 413), (resp.status_code, resp.content)


_values = st.one_of(st.floats(), st.integers(min_value=0, max_value=10**6).map(float))
_attr = st.dictionaries(st.text(max_size=10), st.text(max_size=70), max_size=70)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    values=st.lists(
        st.tuples(_values, st.integers(min_value=0, max_value=2**63), _attr), max_size=5
    ),
    kind=st.sampled_from(["gauge", "cum", "delta", "hist"]),
)
def test_arbitrary_points_get_an_otlp_answer(client_once, values, kind):
    metrics = []
    for i, (v, t, kv) in enumerate(values):
        if kind == "gauge":
            m = gauge(f"g{i}", (v, t))
        elif kind == "hist":
            m = histogram(
                f"h{i}", (min(int(abs(v)), 2**63) if math.isfinite(v) else 1, v, v, t // 2, t)
            )
        else:
            m = counter(f"c{i}", (v, t // 2, t), temporality=CUMULATIVE if kind == "cum" else DELTA)
        kind_key = next(k for k in ("gauge", "sum", "histogram") if k in m)
        m[kind_key]["data_points"][0]["attributes"] = attrs(**kv)
        metrics.append(m)
    resp = post(client_once, request(metrics))
    assert resp.status_code in (200, 400), (resp.status_code, resp.content)


@pytest.mark.parametrize(("status", "code"), [(429, 429), (422, 400)])
def test_the_cap_on_new_names_is_429_to_retry_or_400_to_drop(make_client, status, code):
    from tests.ingest.interop.test_remote_write import _CappedPublisher

    resp = post(
        make_client(publisher=_CappedPublisher(status)), request([gauge("g", (1.0, now_ns()))])
    )
    assert resp.status_code == code
    assert (resp.headers.get("Retry-After") == "7") == (status == 429)
