"""Small protobuf bodies parsed first and counted after (ingest/interop/parsedcount.py): the
same refusals as the wire count, at every level, for either path, and the large bodies still
counted before they are parsed."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from ingest.errors import ApiError
from ingest.interop.parsedcount import OTLP_LEVELS, REMOTE_WRITE_LEVELS, parse_bounded
from ingest.interop.prompb import WriteRequest
from ingest.interop.wirecount import OTLP, REMOTE_WRITE, Deadline, count_elements
from tests.ingest.interop.test_wirecount import ld

pytestmark = pytest.mark.unit

GAUGE = 5
KINDS = ("resource_metrics", "scope_metrics", "metrics", "points")


def _otlp(shape: list[list[list[int]]]) -> bytes:
    """resource_metrics -> scope_metrics -> gauges with that many (empty) points each."""
    out = b""
    for scopes in shape:
        rm = b""
        for metrics in scopes:
            sm = b"".join(ld(2, ld(1, b"m") + ld(GAUGE, ld(1) * n)) for n in metrics)
            rm += ld(2, sm)
        out += ld(1, rm)
    return out


def _parse_otlp(raw: bytes) -> Any:
    return ExportMetricsServiceRequest.FromString(raw)


def _verdict(fn: Any) -> str:
    try:
        fn()
    except ApiError as exc:
        return f"{exc.status} {exc.detail.split(' (')[0]}"
    return "ok"


shapes = st.lists(st.lists(st.lists(st.integers(0, 6), max_size=4), max_size=4), max_size=4)


@settings(max_examples=200, deadline=None)
@given(shape=shapes, limit=st.integers(0, 12), kind=st.sampled_from(KINDS))
def test_both_paths_refuse_alike(shape: list[list[list[int]]], limit: int, kind: str) -> None:
    body = _otlp(shape)
    limits = {kind: (limit, "otlp_max_points")}
    total = (10_000, "protobuf_max_elements")

    def first_parsed() -> Any:
        return parse_bounded(body, _parse_otlp, OTLP, OTLP_LEVELS, limits, total, None, 1 << 20)

    def first_counted() -> Any:
        return parse_bounded(body, _parse_otlp, OTLP, OTLP_LEVELS, limits, total, None, 0)

    wire = _verdict(lambda: count_elements(body, OTLP, limits, total))
    assert _verdict(first_parsed) == _verdict(first_counted) == wire


def test_remote_write_samples_are_counted_after_the_parse() -> None:
    series = ld(1, ld(1, b"\x0a\x08__name__\x12\x01a") + ld(2) * 30)
    limits = {"timeseries": (5, "remote_write_max_series"), "samples": (50, "max_samples")}
    total = (10_000, "protobuf_max_elements")
    decode = partial(
        parse_bounded,
        parse=WriteRequest.FromString,
        schema=REMOTE_WRITE,
        levels=REMOTE_WRITE_LEVELS,
        limits=limits,
        max_total=total,
        deadline=None,
        parse_first_max_bytes=1 << 20,
    )
    ok = decode(series * 1)
    assert len(ok.timeseries[0].samples) == 30
    with pytest.raises(ApiError) as refused:
        decode(series * 2)
    assert refused.value.status == 413 and "samples" in refused.value.detail


def test_a_body_over_the_gate_is_counted_before_it_is_parsed() -> None:
    parsed: list[bytes] = []

    def parse(raw: bytes) -> Any:
        parsed.append(raw)
        return _parse_otlp(raw)

    limits = {"resource_metrics": (10, "otlp_max_points")}
    body = ld(1) * 11
    for gate in (len(body) - 1, 1 << 20):
        with pytest.raises(ApiError):
            parse_bounded(body, parse, OTLP, OTLP_LEVELS, limits, (100, "all"), None, gate)
    assert len(parsed) == 1  # only under the gate did the parser see it
    # A body that could hold more elements than the total allows is counted first too.
    with pytest.raises(ApiError) as total:
        parse_bounded(
            ld(1, ld(2) * 5) * 3, parse, OTLP, OTLP_LEVELS, {}, (10, "all"), None, 1 << 20
        )
    assert "elements" in total.value.detail and len(parsed) == 1


def test_the_count_after_the_parse_stops_at_the_deadline() -> None:
    now = [0.0]
    deadline = Deadline(1.0, 1, clock=lambda: now[0])
    now[0] = 2.0
    body = _otlp([[[1] * 40] * 40] * 5)
    with pytest.raises(ApiError) as late:
        parse_bounded(body, _parse_otlp, OTLP, OTLP_LEVELS, {}, (1 << 20, "all"), deadline, 1 << 20)
    assert late.value.status == 503
