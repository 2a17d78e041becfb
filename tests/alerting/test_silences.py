"""Silences: matching by rule, labels and server glob; start-end; the weekly window."""

from __future__ import annotations

import calendar

import pytest

from alerting.silences import SilenceError, silence_from_dict

pytestmark = pytest.mark.unit

# 2026-11-22 was a Sunday.
SUNDAY_3AM = calendar.timegm((2026, 11, 22, 3, 0, 0))


def test_matching():
    s = silence_from_dict(
        {"starts_at": 0, "ends_at": 10, "labels": {"team": "web"}, "server_glob": "web-*"},
        silence_id="s1",
    )
    assert s.matches("r1", {"team": "web"}, "web-3")
    assert not s.matches("r1", {"team": "db"}, "web-3")
    assert not s.matches("r1", {"team": "web"}, "db-1")
    assert not s.matches("r1", {"team": "web"}, None)
    assert silence_from_dict(
        {"starts_at": 0, "ends_at": 10, "rule_id": "r1"}, silence_id="s"
    ).matches("r1", {}, None)
    assert (s.active(0), s.active(9.9), s.active(10)) == (True, True, False)


def test_weekly_window_sunday_2_to_4_utc():
    sunday_2am = 6 * 86_400 + 2 * 3600
    s = silence_from_dict(
        {
            "starts_at": SUNDAY_3AM - 86_400 * 30,
            "ends_at": SUNDAY_3AM + 86_400 * 300,
            "rule_id": "r1",
            "weekly": {"start_s": sunday_2am, "duration_s": 7200},
        },
        silence_id="s1",
    )
    assert s.active(SUNDAY_3AM) and s.active(SUNDAY_3AM + 7 * 86_400)
    assert not s.active(SUNDAY_3AM + 3600) and not s.active(SUNDAY_3AM - 86_400)


@pytest.mark.parametrize(
    ("raw", "at"),
    [
        ({"starts_at": 0, "ends_at": 10}, ""),
        ({"starts_at": 10, "ends_at": 0, "rule_id": "r"}, "ends_at"),
        ({"starts_at": float("nan"), "ends_at": 0, "rule_id": "r"}, "starts_at"),
        (
            {"starts_at": 0, "ends_at": 10, "rule_id": "r", "weekly": {"start_s": -1}},
            "weekly.start_s",
        ),
    ],
)
def test_refused(raw, at):
    with pytest.raises(SilenceError) as info:
        silence_from_dict(raw, silence_id="s")
    assert info.value.at == at
