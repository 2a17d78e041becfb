"""Rule validation: every bad field is refused with the field named; a good rule round-trips."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alerting.fields import field_error
from alerting.receiver_url import webhook_url_error
from alerting.rules import RuleError, rule_from_dict
from alerting.template import TemplateError, check_template, render

pytestmark = pytest.mark.unit

GOOD: dict[str, Any] = {
    "name": "cpu high",
    "query_id": "q1",
    "function": "avg",
    "comparison": ">",
    "thresholds": {"warning": 80, "critical": 90, "critical_recovery": 85},
    "for_s": 30,
    "keep_firing_for_s": 60,
    "labels": {"team": "web"},
    "annotation": "{rule}: {value} on {query}",
}


def refused(at: str, **over: Any) -> str:
    with pytest.raises(RuleError) as info:
        rule_from_dict({**GOOD, **over}, rule_id="r1", functions=("avg", "max"))
    assert info.value.at == at
    return info.value.detail


def test_a_good_rule():
    rule = rule_from_dict(GOOD, rule_id="r1", functions=("avg",))
    assert rule.thresholds.critical_recovery == 85 and rule.for_s == 30
    assert rule_from_dict({**rule.to_dict(), "id": None}, rule_id="r1") == rule


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "80", True])
def test_thresholds_must_be_finite_numbers(bad):
    assert "number" in refused("thresholds.critical", thresholds={"critical": bad})


def test_threshold_shapes():
    refused("thresholds", thresholds={})
    refused("thresholds.critical_recovery", thresholds={"warning": 80, "critical_recovery": 70})
    detail = refused(
        "thresholds.warning_recovery", thresholds={"warning": 80, "warning_recovery": 90}
    )
    assert "firing side" in detail
    refused("thresholds.warning", thresholds={"warning": 95, "critical": 90})
    refused("thresholds.bogus", thresholds={"bogus": 1, "warning": 2})


@pytest.mark.parametrize("bad", [10 * 365 * 86_400, -1, 1.5, math.inf, "30s"])
def test_absurd_durations(bad):
    assert "seconds" in refused("for_s", for_s=bad)


def test_other_fields():
    refused("comparison", comparison="!=")
    refused("function", function="p99")  # the query does not compute it
    refused("nodata_policy", nodata_policy="panic")
    refused("nodata_windows", nodata_windows=0)
    refused("labels.bad-name", labels={"bad-name": "x"})
    refused("name", name="")


@pytest.mark.parametrize(
    "template",
    [
        "{__import__('os').system('id')}",
        "{value.__class__}",
        "{open('/etc/passwd').read()}",
        "{value:{value}}",
        "{query[0]}",
        "{" * 5,
        "x" * 5000,
    ],
)
def test_annotation_templates_that_try_more_than_substitution(template):
    assert refused("annotation", annotation=template)


def test_render_substitutes_once_and_bounded():
    # A value that itself looks like a placeholder is not expanded again.
    out = render("{rule} {value}", {"rule": "{value}", "value": "9" * 10_000})
    assert out.startswith("{value} 999") and len(out) < 2000
    with pytest.raises(TemplateError):
        check_template(42)


@given(st.text(max_size=300))
def test_any_template_text_is_refused_or_rendered_bounded(text):
    try:
        check_template(text)
    except TemplateError:
        return
    assert len(render(text, {"value": "v" * 1000})) <= 1024 + 16 * 256


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:9093/hook", True),
        ("https://hooks.example/x", True),
        ("file:///etc/passwd", False),
        ("gopher://127.0.0.1:70/", False),
        ("ftp://example/", False),
        ("http://127.0.0.1:8050/api/alerts", False),  # the dashboard itself
        ("http://localhost:8050/", False),
        ("http://[::1]:8050/", False),
        ("http://127.0.0.1:99999/", False),
    ],
)
def test_webhook_urls(url, ok):
    assert (webhook_url_error(url, frozenset({8050})) is None) == ok


def test_a_rule_routes_to_the_receivers_it_names_or_to_all():
    everyone = rule_from_dict(GOOD, rule_id="r1")
    assert everyone.receivers == () and everyone.routes_to("email")
    paged = rule_from_dict({**GOOD, "receivers": ["webhook"]}, rule_id="r1")
    assert paged.routes_to("webhook") and not paged.routes_to("alertmanager")
    assert rule_from_dict({**paged.to_dict(), "id": None}, rule_id="r1") == paged


@pytest.mark.parametrize(
    ("receivers", "says"),
    [(["pager"], "no receiver 'pager'"), (["email", "email"], "twice"), ("email", "a list")],
)
def test_an_unknown_receiver_is_refused_with_the_known_ones(receivers, says):
    detail = refused("receivers", receivers=receivers)
    assert says in detail and "alertmanager, webhook, email" in detail


def test_one_field_is_checked_alone_for_the_rule_builder():
    assert field_error("for_s", {"for_s": 30}) is None
    assert field_error("for_s", {"for_s": -1}).at == "for_s"  # type: ignore[union-attr]
    # The thresholds are checked against the comparison the rule has chosen.
    below = {"comparison": "<", "thresholds": {"critical": 10, "critical_recovery": 5}}
    err = field_error("thresholds", below)
    assert err is not None and err.at == "thresholds.critical_recovery"
    assert field_error("thresholds", {**below, "comparison": ">"}) is None
    assert field_error("name", {}).detail == "is required"  # type: ignore[union-attr]
    assert field_error("nope", GOOD).at == "nope"  # type: ignore[union-attr]
