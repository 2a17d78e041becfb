"""The builder's composition and error placement, and time parsing for the API and charts."""

from __future__ import annotations

import pytest

from apm.query import QueryError
from dashboard.settings import DashboardSettings
from dashboard.validation import check_builder, compose, field_for, parse_time, pointer, validate

pytestmark = pytest.mark.unit


def _field_of(
    servers: str, metric: str | None, window: str, functions: list[str], percentiles: str
) -> str:
    composed = compose(servers.split(","), metric, window, functions, percentiles)
    found = check_builder(composed)
    assert found is not None
    field, exc = found
    assert field == field_for(composed, exc) or composed.spans[field][0] == composed.spans[field][1]
    return field


def test_a_complete_builder_composes_valid_text() -> None:
    composed = compose(["web-*", " db-1"], "cpu", "10s", ["avg", "max"], "99, 99.9")
    q = validate(composed.text)
    assert q.servers == ("web-*", "db-1") and q.metric == "cpu"
    assert [f.key for f in q.functions] == ["avg", "max", "p99", "p99.9"]
    start, end = composed.spans["metric"]
    assert composed.text[start:end] == "cpu"


@pytest.mark.parametrize(
    ("servers", "metric", "window", "functions", "percentiles", "field"),
    [
        ("", "cpu", "10s", ["avg"], "", "servers"),
        ("web/1", "cpu", "10s", ["avg"], "", "servers"),
        ("*", None, "10s", ["avg"], "", "metric"),
        ("*", "9cpu", "10s", ["avg"], "", "metric"),
        ("*", "cpu", "", ["avg"], "", "window"),
        ("*", "cpu", "10 parsecs", ["avg"], "", "window"),
        ("*", "cpu", "2d", ["avg"], "", "window"),
        ("*", "cpu", "10s", [], "", "functions"),
        ("*", "cpu", "10s", ["avg"], "100", "functions"),
        ("*", "cpu", "10s", [], "abc", "functions"),
    ],
)
def test_errors_land_beside_the_field_at_fault(
    servers: str,
    metric: str | None,
    window: str,
    functions: list[str],
    percentiles: str,
    field: str,
) -> None:
    assert _field_of(servers, metric, window, functions, percentiles) == field


def test_the_split_composes_by_server_and_a_ranking_and_its_errors_land_on_it() -> None:
    base = (["web-*"], "cpu", "10s", ["avg", "max"], "99")
    split = validate(compose(*base, "server").text)
    assert split.by_server and split.top is None
    top = compose(*base, "top", 10, "avg")
    assert top.text.endswith("COMPUTE avg, max, percentile(99) BY server TOP 10 BY avg")
    q = validate(top.text)
    assert q.by_server and q.top is not None and (q.top.n, q.top.function.key) == (10, "avg")
    assert validate(compose(*base, "bottom", "3", "p99").text).top.bottom  # type: ignore[union-attr]
    for n, by in [(0, "avg"), (10**9, "avg"), ("", "avg"), (10, "min"), (10, "")]:
        found = check_builder(compose(*base, "top", n, by))
        assert found is not None and found[0] == "split", (n, by, found)
    # No split: an error at the end of the text is the functions' (as before there was one).
    found = check_builder(compose(["*"], "cpu", "10s", [], "abc"))
    assert found is not None and found[0] == "functions"
    assert compose(*base, "").spans["split"] == (len(compose(*base).text),) * 2


def test_an_empty_field_gets_the_parsers_message_for_what_is_missing() -> None:
    found = check_builder(compose(["*"], None, "10s", ["avg"], ""))
    assert found is not None and found[0] == "metric"
    assert found[1].detail == "expected a metric name, got the end of the query"
    assert check_builder(compose(["*"], "cpu", "10s", ["avg"], "")) is None


def test_validate_refuses_non_text() -> None:
    with pytest.raises(QueryError):
        validate(None)


def test_validate_takes_host_tags() -> None:
    text = "FROM web-*, role:web SELECT cpu WINDOW 10s COMPUTE avg BY dc"
    assert validate(text).group_by == ("dc",)
    assert check_builder(compose(["web-*", "role:web"], "cpu", "10s", ["avg"], "")) is None


def test_pointer_marks_the_position() -> None:
    assert pointer("FROM x", 5) == "FROM x\n     ^"
    assert pointer("ab", 99).endswith("  ^")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1700000000", 1_700_000_000.0),
        ("1700000000.5", 1_700_000_000.5),
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14 22:13:20", 1_700_000_000.0),
        ("2023-11-14T23:13:20+01:00", 1_700_000_000.0),
        ("", 42.0),
        (None, 42.0),
    ],
)
def test_parse_time(raw: str | None, expected: float) -> None:
    assert parse_time(raw, 42.0) == expected


@pytest.mark.parametrize("raw", ["yesterday", "inf", "nan", "2023-13-01"])
def test_parse_time_rejects(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_time(raw, 0.0)


def test_refresh_never_goes_below_the_floor() -> None:
    s = DashboardSettings(refresh_seconds=5, refresh_floor_seconds=2)
    assert s.clamp_refresh(None) == 5
    assert s.clamp_refresh(0.1) == 2
    assert s.clamp_refresh(-3) == 2
    assert s.clamp_refresh(float("nan")) == 5
    assert s.clamp_refresh(30) == 30
    assert DashboardSettings(refresh_seconds=1, refresh_floor_seconds=2).clamp_refresh(None) == 2
