"""The time span of /series and the label endpoints (dashboard.promapi.params.parse_span)."""

from __future__ import annotations

import pytest

from dashboard.promapi.params import ParamError, parse_span

pytestmark = pytest.mark.unit


def test_a_span_only_when_start_or_end_is_given() -> None:
    assert parse_span(None, "", 1000.0) is None
    assert parse_span("10", "20.5", 1000.0) == (10_000, 20_500)
    assert parse_span("10", None, 1000.0) == (10_000, 1_000_000)  # to now
    assert parse_span(None, "1970-01-01T00:00:20Z", 1000.0) == (0, 20_000)
    with pytest.raises(ParamError, match="end timestamp must not be before start"):
        parse_span("20", "10", 1000.0)
    with pytest.raises(ParamError, match='invalid parameter "start"'):
        parse_span("yesterday", "10", 1000.0)
