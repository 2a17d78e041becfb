"""The ALERTS series' labels from the rule listing (the rule's own labels included), and
ALERTS selectors."""

from __future__ import annotations

import pytest

from dashboard.promapi.alerts import alert_labels, alertstate
from dashboard.promapi.selector import Selector, SelectorError, parse_expr, parse_selector

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("state", "shown"),
    [
        ("normal", None),
        ("pending", "pending"),
        ("firing", "firing"),
        ("recovering", "firing"),
        ("nodata", "firing"),
        ("error", "firing"),
        (None, None),
    ],
)
def test_alertstate_as_prometheus_names_it(state, shown):
    assert alertstate(state) == shown


def test_alert_labels_per_rule_and_per_silent_server():
    rules = [
        {"id": "r1", "name": "cpu high", "alert": {"state": "firing", "severity": "critical"}},
        {"id": "r2", "name": "calm", "alert": {"state": "normal"}},
        {
            "id": "r3",
            "name": "silent",
            "alert": None,
            "instances": {"web-2": {"state": "nodata"}, "web-1": {"state": "normal"}},
        },
    ]
    assert list(alert_labels(rules)) == [
        {
            "__name__": "ALERTS",
            "alertname": "cpu high",
            "alertstate": "firing",
            "rule_id": "r1",
            "severity": "critical",
        },
        {
            "__name__": "ALERTS",
            "alertname": "silent",
            "alertstate": "firing",
            "rule_id": "r3",
            "server": "web-2",
        },
    ]


def test_alert_labels_carry_the_rules_own_labels_under_ours():
    rule = {
        "id": "r1",
        "name": "cpu high",
        "labels": {"team": "web", "severity": "page", "__reserved": "x", "alertname": "other"},
        "alert": {"state": "firing", "severity": "critical"},
    }
    assert list(alert_labels([rule])) == [
        {
            "__name__": "ALERTS",
            "alertname": "cpu high",
            "alertstate": "firing",
            "rule_id": "r1",
            "severity": "critical",
            "team": "web",
        }
    ]


def test_alerts_selectors_match_alert_and_rule_labels():
    sel = parse_selector('ALERTS{alertstate="firing"}')
    assert sel.may_name("ALERTS") and not sel.may_name("apm_query")
    assert sel.matches({"__name__": "ALERTS", "alertstate": "firing"})
    assert parse_selector('{alertname="x"}').may_name("apm_query")  # unnamed: either metric
    # A named ALERTS selector takes any label: its rules' own labels are its labels too.
    team = parse_expr('ALERTS{team="web"}')
    assert isinstance(team, Selector) and team.matches({"__name__": "ALERTS", "team": "web"})
    with pytest.raises(SelectorError, match="unknown label 'team'"):
        parse_expr('{team="web"}')  # unnamed: the labels of both metrics only
    with pytest.raises(SelectorError, match="unknown label 'alertname'"):
        parse_expr('apm_query{alertname="x"}')
    with pytest.raises(SelectorError, match="the metrics are apm_query and ALERTS"):
        parse_expr("up")
