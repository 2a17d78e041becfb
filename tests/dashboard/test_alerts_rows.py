"""dashboard/pages/alerts.py: what a rule's row shows (unit; the page itself is driven in
Chromium by test_alerts_page.py)."""

from __future__ import annotations

import pytest

from dashboard.pages.alerts import _shown, _window

pytestmark = pytest.mark.unit


def test_the_window_is_shown_as_utc_times_not_epoch_seconds():
    assert _window({"window_start": 1795756630.0, "window_end": 1795756640.0}) == (
        "2026-11-27 05:17:10-05:17:20 UTC"
    )
    assert _window({"state": "normal"}) == ""


def test_a_rule_without_its_own_alert_shows_its_most_urgent_instance():
    meta = {
        "id": "meta",
        "alert": None,
        "instances": {
            "aggregator-a": {"state": "normal", "reason": "fresh"},
            "aggregator-b": {"state": "firing", "reason": "freshness 40 s > 10 s"},
        },
    }
    shown = _shown(meta)
    assert shown["state"] == "firing"
    assert shown["reason"] == "freshness 40 s > 10 s (1 of 2: aggregator-b)"
    one = {"alert": None, "instances": {"web-1": {"state": "pending", "reason": "silent 40 s"}}}
    assert _shown(one)["reason"] == "silent 40 s (web-1)"
    assert _shown({"alert": None, "instances": {}}) == {
        "state": "normal",
        "reason": "not evaluated yet",
    }
    own = {"alert": {"state": "pending", "reason": "r"}, "instances": {"x": {"state": "firing"}}}
    assert _shown(own)["state"] == "pending"
