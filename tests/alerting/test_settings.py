"""``APM_ALERTING_*`` receiver URLs: only http(s), never the platform's own ports."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from alerting.settings import AlertingSettings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("field", ["webhook_url", "alertmanager_url"])
@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "http:// or https://"),
        ("ftp://127.0.0.1/x", "http:// or https://"),
        ("http://127.0.0.1:8050/api/alerts", "this platform itself"),
        ("http://localhost:8080/v1/metrics", "this platform itself"),
    ],
)
def test_a_bad_receiver_url_refuses_to_start(monkeypatch, field, url, why):
    monkeypatch.setenv(f"APM_ALERTING_{field.upper()}", url)
    with pytest.raises(ValidationError, match=why):
        AlertingSettings()


def test_http_receivers_and_none_are_accepted(monkeypatch):
    monkeypatch.setenv("APM_ALERTING_WEBHOOK_URL", "https://hooks.example/abc")
    monkeypatch.setenv("APM_ALERTING_ALERTMANAGER_URL", "http://127.0.0.1:9093")
    s = AlertingSettings()
    assert s.webhook_url == "https://hooks.example/abc"
    assert AlertingSettings(webhook_url="", alertmanager_url="").webhook_url == ""
