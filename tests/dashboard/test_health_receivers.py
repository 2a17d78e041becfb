"""The health page's receivers card reads the evaluator's own /metrics text (its real
telemetry registry here) and explains every state: not configured, evaluator down, no
receivers, failing with a backlog, recovered."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from alerting.telemetry import AlertingTelemetry
from dashboard.pages.health_receivers import parse_receivers, receivers_card

pytestmark = pytest.mark.unit


def exposed() -> str:
    t = AlertingTelemetry()
    t.sent.labels("alertmanager").inc(5)
    t.failures.labels("webhook").inc(3)
    t.refused.labels("email").inc(1)
    t.outbox.labels("webhook").set(7)
    t.outbox.labels("alertmanager").set(0)
    return generate_latest(t.registry).decode()


def test_parse_reads_each_receivers_counts() -> None:
    rows = parse_receivers(exposed())
    assert rows["webhook"] == {"failures": 3.0, "outbox": 7.0}
    assert rows["alertmanager"] == {"sent": 5.0, "outbox": 0.0}
    assert rows["email"] == {"refused": 1.0}


def test_card_shows_failures_backlog_and_why() -> None:
    card = str(receivers_card("http://x/metrics", fetch=lambda url, t: exposed()))
    assert "h-receiver-webhook" in card
    assert "failing: notices wait in the outbox" in card
    assert "refused for good" in card
    assert "evaluator's log" in card  # where the error text is, since it is not exposed


def test_card_explains_each_empty_state() -> None:
    assert "not watched" in str(receivers_card(""))

    def down(url: str, timeout: float) -> str:
        raise ConnectionRefusedError("refused")

    assert "did not answer" in str(receivers_card("http://x/metrics", fetch=down))
    idle = generate_latest(AlertingTelemetry().registry).decode()
    assert "no receiver configured" in str(receivers_card("http://x", fetch=lambda u, t: idle))
