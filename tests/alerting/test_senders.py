"""Receivers against real peers: Debian's Alertmanager, aiosmtpd's SMTP server, an HTTP
webhook; the outbox surviving a receiver that is down, answers 500, or hangs."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

import pytest

from alerting.dispatch import Dispatcher
from alerting.senders import (
    SIGNATURE_HEADER,
    AlertmanagerSender,
    EmailSender,
    SendRefused,
    WebhookSender,
)
from alerting.telemetry import AlertingTelemetry
from apm.retry import RetryableError
from launch.probe import free_port
from storage.alerts import OutboxRow
from tests.support import alertmanager as am_support
from tests.support.alertmanager import MISSING, alertmanager, require_alertmanager
from tests.support.smtp import hanging_server, smtp_server
from tests.support.webhook import webhook_receiver

pytestmark = pytest.mark.integration


class ListOutbox:
    """An outbox in memory with the store's two methods (the store itself is tested on
    Cassandra in test_evaluator.py and test_kill9.py)."""

    def __init__(self, *rows: OutboxRow) -> None:
        self.rows = {r.id: r for r in rows}

    def pending(self, receiver: str, limit: int = 500) -> list[OutboxRow]:
        return list(self.rows.values())[:limit]

    def delivered(self, receiver: str, ids) -> None:
        for i in ids:
            self.rows.pop(i)


def notice(status: str, name: str, now: float) -> dict:
    return {
        "status": status,
        "labels": {"alertname": name, "apm_rule_id": "r1", "severity": "warning"},
        "annotations": {"summary": f"{name} is 91"},
        "startsAt": now - 30,
        "endsAt": now if status == "resolved" else None,
        "key": "k1",
    }


def test_a_missing_alertmanager_fails_the_test_not_skips(monkeypatch):
    monkeypatch.setattr(am_support, "ALERTMANAGER", None)
    with pytest.raises(pytest.fail.Exception, match=r"not installed \(make debs\)"):
        require_alertmanager()
    assert MISSING == "prometheus-alertmanager not installed (make debs)"


def test_alertmanager_gets_the_alert_then_its_resolution(tmp_path):
    require_alertmanager()
    with webhook_receiver() as hook, alertmanager(tmp_path, webhook_url=hook.url) as am:
        sender = AlertmanagerSender(am.url, timeout_s=5, hold_s=600)
        now = time.time()
        sender.send([notice("firing", "cpu-high", now)], now)
        (alert,) = am.alerts()
        assert alert["labels"] == {
            "alertname": "cpu-high",
            "apm_rule_id": "r1",
            "severity": "warning",
        }
        assert alert["status"]["state"] == "active"
        # Alertmanager routes it on to its own receiver (here a webhook), grouped by alertname.
        deadline = time.monotonic() + 20
        while not hook.posts and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hook.posts, "alertmanager did not route the alert"
        sender.send([notice("resolved", "cpu-high", time.time())], time.time())
        assert am.alerts() == []  # resolved: no longer active


def test_alertmanager_down_loses_nothing(tmp_path):
    """The outbox keeps the firing and the resolved notice while the Alertmanager is down and
    delivers them once it is up; the failures are counted. (The issue's 60 s outage, under the
    real evaluator process, is tests/alerting/test_dispatch.py.)"""
    require_alertmanager()

    now = time.time()
    outbox = ListOutbox(
        OutboxRow("alertmanager", "a:firing", notice("firing", "a", now)),
        OutboxRow("alertmanager", "b:resolved", notice("resolved", "b", now)),
    )
    port, telemetry = free_port(), AlertingTelemetry()
    sender = AlertmanagerSender(f"http://127.0.0.1:{port}", timeout_s=2, hold_s=600)
    dispatcher = Dispatcher(outbox, [sender], telemetry, retry_deadline_s=1.0)
    assert dispatcher.pass_once(sender) == 0  # down: retried with backoff, then kept
    assert len(outbox.rows) == 2
    assert telemetry.failures.labels("alertmanager")._value.get() >= 2
    with alertmanager(tmp_path, port=port) as am:
        assert dispatcher.pass_once(sender) == 2
        assert outbox.rows == {}
        assert [a["labels"]["alertname"] for a in am.alerts()] == ["a"]  # b was resolved
    assert telemetry.sent.labels("alertmanager")._value.get() == 2


def test_webhook_500_is_retried_with_backoff_and_signed():
    with webhook_receiver() as hook:
        hook.status = 500
        outbox = ListOutbox(OutboxRow("webhook", "x:firing", notice("firing", "x", time.time())))
        telemetry = AlertingTelemetry()
        sender = WebhookSender(hook.url, "s3cret", timeout_s=5)
        dispatcher = Dispatcher(outbox, [sender], telemetry, retry_deadline_s=20)
        threading.Timer(1.5, lambda: setattr(hook, "status", 200)).start()
        assert dispatcher.pass_once(sender) == 1
        assert telemetry.failures.labels("webhook")._value.get() >= 1
        ((headers, body),) = hook.posts
        expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert {k.lower(): v for k, v in headers.items()}[SIGNATURE_HEADER.lower()] == expected
    with webhook_receiver() as hook2:
        hook2.status = 404
        with pytest.raises(SendRefused):
            WebhookSender(hook2.url, "", timeout_s=5).send([notice("firing", "y", 0)], 0)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_not_followed(status):
    """urllib would follow it (a 303 as a GET to any Location) and count the 200 there as
    delivered: a 3xx is a refusal and the Location is never asked."""
    with webhook_receiver() as target, webhook_receiver() as hook:
        hook.status, hook.location = status, target.url
        with pytest.raises(SendRefused, match=str(status)):
            WebhookSender(hook.url, "", timeout_s=5).send([notice("firing", "r", 0)], 0)
        assert (target.posts, target.gets) == ([], 0)


def test_email_over_a_real_smtp_server():
    with smtp_server() as (port, received):
        sender = EmailSender("127.0.0.1", port, "apm@localhost", ["ops@localhost"], timeout_s=5)
        sender.send([notice("firing", "disk-full", time.time())], time.time())
        (msg,) = received
        assert msg["Subject"] == "[apm] 1 firing, 0 resolved"
        assert "FIRING disk-full (warning): disk-full is 91" in msg.get_payload()


def test_a_hanging_smtp_server_times_out_and_blocks_only_its_thread():
    with hanging_server() as port:
        sender = EmailSender("127.0.0.1", port, "apm@localhost", ["ops@localhost"], timeout_s=0.5)
        with pytest.raises(RetryableError):
            sender.send([notice("firing", "z", 0)], 0)


def test_errors_and_logs_name_only_scheme_host_and_port(caplog):
    """A hook URL's path is its secret: neither a refusal, a refused connection nor the
    dispatcher's log line repeat it (or the reply's bytes)."""
    with webhook_receiver() as hook:
        hook.status = 404
        url = hook.url + "/T0KEN-s3cret?key=abc"
        with pytest.raises(SendRefused) as refused:
            WebhookSender(url, "", timeout_s=5).send([notice("firing", "y", 0)], 0)
        origin = hook.url.removesuffix("/hook")
        assert str(refused.value) == f"{origin} answered 404"
    down = f"http://127.0.0.1:{free_port()}/T0KEN-s3cret"
    with pytest.raises(RetryableError) as unreachable:
        WebhookSender(down, "", timeout_s=2).send([notice("firing", "y", 0)], 0)
    assert "T0KEN" not in str(unreachable.value) and "refused" in str(unreachable.value)
    outbox = ListOutbox(OutboxRow("webhook", "x:firing", notice("firing", "x", 0)))
    sender = WebhookSender(down, "", timeout_s=2)
    Dispatcher(outbox, [sender], AlertingTelemetry(), retry_deadline_s=0.5).pass_once(sender)
    assert "not delivered yet" in caplog.text and "T0KEN" not in caplog.text
