"""The silence form: what it sends is a silence the rulebook accepts (by rule, labels, server
glob, weekly window), a form it cannot read says which field, and the listing explains each
silence's state (and that there are none)."""

from __future__ import annotations

from typing import Any

import pytest

from alerting.rulebook import Rulebook
from alerting.silences import SilenceError
from dashboard.pages.alert_silences import listing, raw_silence
from tests.support.alert_tables import MemoryAlertTables, MemoryQueries

pytestmark = pytest.mark.unit

NOW = 1_700_000_000.0  # a Tuesday, 22:13:20 UTC


def form(**over: Any) -> dict[str, Any] | str:
    fields: dict[str, Any] = {
        "rule": None,
        "labels": "",
        "servers": "",
        "start": "",
        "hours": "2",
        "day": None,
        "at": "",
        "length": "",
        "comment": "",
    }
    fields.update(over)
    return raw_silence(*fields.values(), now=NOW)


def test_by_rule_labels_and_glob_from_now_for_hours() -> None:
    raw = form(rule="r1", labels="team=web, env = prod", servers="web-*")
    assert raw == {
        "starts_at": NOW,
        "ends_at": NOW + 7200,
        "comment": "",
        "rule_id": "r1",
        "labels": {"team": "web", "env": "prod"},
        "server_glob": "web-*",
    }
    book = Rulebook(MemoryQueries(), MemoryAlertTables())
    made = book.silence(raw, NOW)
    assert made.active(NOW + 1) and not made.active(NOW + 7200)
    assert made.matches("r1", {"team": "web", "env": "prod"}, "web-3")


def test_weekly_window_is_monday_based_utc() -> None:
    raw = form(
        servers="db-*", start="2023-11-14T00:00Z", hours="720", day="Sun", at="02:30", length="2"
    )
    assert isinstance(raw, dict)
    assert raw["weekly"] == {"start_s": 6 * 86_400 + 2 * 3600 + 1800, "duration_s": 7200}
    made = Rulebook(MemoryQueries(), MemoryAlertTables()).silence(raw, NOW)
    sunday = 1_700_361_000.0  # Sunday 2023-11-19 02:30 UTC
    assert made.active(sunday + 60) and not made.active(sunday - 60)


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"labels": "team"}, "labels"),
        ({"start": "yesterday-ish"}, "starts"),
        ({"hours": "two"}, "for"),
        ({"servers": "x", "day": "Mon", "at": "2am", "length": "1"}, "weekly"),
    ],
)
def test_an_unreadable_form_names_the_field(over: dict[str, Any], field: str) -> None:
    got = form(**over)
    assert isinstance(got, str) and got.startswith(f"{field}:")


def test_the_rules_module_refuses_what_the_form_cannot_know() -> None:
    book = Rulebook(MemoryQueries(), MemoryAlertTables())
    with pytest.raises(SilenceError, match="nothing silences all"):
        book.silence(form(), NOW)
    with pytest.raises(SilenceError) as refused:
        book.silence(form(servers="x", hours="-1"), NOW)
    assert refused.value.at == "ends_at"


def test_listing_explains_each_state_and_the_empty_one() -> None:
    assert "No silences" in str(listing([], NOW))
    base = {"id": "s", "comment": "", "suppressed": [1, 2], "rule_id": "r1"}
    active = {**base, "starts_at": NOW - 10, "ends_at": NOW + 10}
    future = {**base, "starts_at": NOW + 10, "ends_at": NOW + 20}
    ended = {**base, "starts_at": NOW - 20, "ends_at": NOW - 10}
    weekly = {**active, "weekly": {"start_s": 86_400 + 3600, "duration_s": 5400}}
    text = [str(listing([s], NOW)) for s in (active, future, ended, weekly)]
    assert "active until" in text[0] and "suppressed 2 alerts" in text[0]
    assert "starts 2023" in text[1]
    assert "ended" in text[2]
    assert "only Tue 01:00 UTC for 1.5 h each week" in text[3]
    assert "si-expire" in text[0]
