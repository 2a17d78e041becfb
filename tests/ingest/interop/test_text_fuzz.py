"""Text that is not valid UTF-8 (issue 28, finding 10): lone surrogates, escaped and raw, and
invalid byte sequences in metric names, attribute and label keys and values, and unknown
field names, in OTLP JSON, OTLP protobuf and remote_write. Whatever the text, the answer is
the protocol's own (2xx or 4xx), never a 500, and its body is in the request's encoding."""

from __future__ import annotations

import json
import time
from typing import Any

import cramjam
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from ingest.interop.prompb import Status, WriteRequest

pytestmark = pytest.mark.unit

NS = 1_000_000_000
# Text with lone surrogates and the odd control character mixed into ordinary characters.
TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.sampled_from("\x00\x7f\ufffe\uffff"),
    ),
    max_size=12,
)
# Raw bytes that are not UTF-8: stray continuation bytes, overlong forms, encoded surrogates.
BAD_BYTES = st.one_of(
    st.binary(min_size=1, max_size=8),
    st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]),
)
# Placeholders of the protobuf bodies, replaced by the drawn bytes (same length: the
# length-delimited fields stay valid).
SLOTS = (b"NAME_SLOT", b"KEYS_SLOT", b"VALU_SLOT")


def _otlp_doc(
    name: str, key: str, value: str, unknown: str, typed: str, typed_value: str
) -> dict[str, Any]:
    """A gauge point, with the text in every string; ``typed`` is where text goes in a field
    of another type (a number, a time, an enum), which the parser refuses quoting it."""
    t = (int(time.time()) - 5) * NS
    point: dict[str, Any] = {
        "asDouble": typed_value if typed == "asDouble" else 1.0,
        "timeUnixNano": typed_value if typed == "timeUnixNano" else str(t),
        "attributes": [{"key": key, "value": {"stringValue": value}}],
        unknown: 1,
    }
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": [{"key": "host.name", "value": {"stringValue": value}}]},
                "scopeMetrics": [{"metrics": [{"name": name, "gauge": {"dataPoints": [point]}}]}],
                unknown: {"x": 1},
            }
        ]
    }


def _check(resp: Any, media: str) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.content)
    if resp.status_code >= 400 and media == "application/x-protobuf":
        Status.FromString(resp.content)  # a google.rpc.Status, in the request's encoding
    elif resp.status_code >= 400:
        json.loads(resp.content)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=TEXT,
    key=TEXT,
    value=TEXT,
    unknown=TEXT,
    raw=st.booleans(),
    typed=st.sampled_from(["", "asDouble", "timeUnixNano"]),
    typed_value=TEXT,
)
@example(
    name="a", key="k", value="v", unknown="x", raw=False, typed="asDouble", typed_value="\ud800"
)
def test_otlp_json_text(
    client: Any,
    name: str,
    key: str,
    value: str,
    unknown: str,
    raw: bool,
    typed: str,
    typed_value: str,
):
    doc = _otlp_doc(name, key, value, unknown or "x", typed, typed_value)
    if raw:  # the surrogates written as (invalid) UTF-8 bytes
        body = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    else:  # escaped: \ud800
        body = json.dumps(doc).encode()
    resp = client.post(
        "/otlp/v1/metrics", content=body, headers={"Content-Type": "application/json"}
    )
    _check(resp, "application/json")


def _with_slots(body: bytes, parts: tuple[bytes, ...]) -> bytes:
    for slot, part in zip(SLOTS, parts, strict=True):
        body = body.replace(slot, (part * len(slot))[: len(slot)])
    return body


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.tuples(BAD_BYTES, BAD_BYTES, BAD_BYTES))
def test_otlp_protobuf_bytes(client: Any, parts: tuple[bytes, bytes, bytes]):
    request = ExportMetricsServiceRequest()
    rm = request.resource_metrics.add()
    host = rm.resource.attributes.add()
    host.key, host.value.string_value = "host.name", SLOTS[2].decode()
    metric = rm.scope_metrics.add().metrics.add(name=SLOTS[0].decode())
    point = metric.gauge.data_points.add(as_double=1.0, time_unix_nano=(int(time.time()) - 5) * NS)
    attr = point.attributes.add()
    attr.key, attr.value.string_value = SLOTS[1].decode(), SLOTS[2].decode()
    body = _with_slots(request.SerializeToString(), parts)
    resp = client.post(
        "/otlp/v1/metrics", content=body, headers={"Content-Type": "application/x-protobuf"}
    )
    _check(resp, "application/x-protobuf")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.tuples(BAD_BYTES, BAD_BYTES, BAD_BYTES))
def test_remote_write_bytes(client: Any, parts: tuple[bytes, bytes, bytes]):
    request = WriteRequest()
    series = request.timeseries.add()
    series.labels.add(name="__name__", value=SLOTS[0].decode())
    series.labels.add(name=SLOTS[1].decode(), value=SLOTS[2].decode())
    series.labels.add(name="instance", value=SLOTS[2].decode())
    series.samples.add(value=1.0, timestamp=int(time.time() * 1000))
    body = bytes(cramjam.snappy.compress_raw(_with_slots(request.SerializeToString(), parts)))
    resp = client.post(
        "/api/v1/write",
        content=body,
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"},
    )
    assert resp.status_code < 500, (resp.status_code, resp.text)
