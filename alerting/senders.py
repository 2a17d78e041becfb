"""Receivers: each takes one group of notices (those of one evaluation, from the outbox) and
delivers it, raising :class:`apm.retry.RetryableError` for what is worth retrying (a refused
connection, a timeout, 429 or 5xx) and :class:`SendRefused` for what is not (another 4xx).

- :class:`AlertmanagerSender`: ``POST /api/v2/alerts`` of an Alertmanager, which then routes,
  groups and dedups by the labels; a firing alert carries an ``endsAt`` a few re-notify periods
  ahead (as Prometheus does), a resolved one the time it resolved.
- :class:`WebhookSender`: one JSON POST per group, signed ``X-APM-Signature: sha256=<hex>``,
  the HMAC-SHA256 of the raw body with the shared secret.
- :class:`EmailSender`: one mail per group over SMTP, with a socket timeout.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import smtplib
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any, Protocol
from urllib.parse import urlsplit

from apm.retry import RetryableError

__all__ = [
    "SIGNATURE_HEADER",
    "AlertmanagerSender",
    "EmailSender",
    "SendRefused",
    "Sender",
    "WebhookSender",
    "describe",
    "redact",
    "sign",
]

SIGNATURE_HEADER = "X-APM-Signature"


class SendRefused(Exception):
    """The receiver refused the group for good (a 4xx other than 408/429)."""


class Sender(Protocol):
    name: str

    def send(self, notices: Sequence[dict[str, Any]], now: float) -> None: ...


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def redact(url: str) -> str:
    """``scheme://host:port`` of ``url``: hook URLs carry secrets in their path and query, so
    only this much goes into logs, errors and answers."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "<invalid URL>"
    return f"{parts.scheme}://{parts.hostname}:{port}"


def describe(exc: BaseException) -> str:
    """What may be logged of a delivery failure: the senders' own (redacted) messages, of
    anything else only its class (its text may quote the URL)."""
    if isinstance(exc, SendRefused | RetryableError):
        return str(exc)
    return type(exc).__name__


def _reason(exc: BaseException) -> str:
    # The cause without the URL: an errno's text ("Connection refused") or the class name.
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return type(reason).__name__


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """urllib would follow a 301/302/303 as a GET to any Location (a request forgery, and the
    200 there would count as delivered): not following it turns it into an HTTPError."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener() -> urllib.request.OpenerDirector:
    # Only http(s), no file://, ftp:// or data: handlers; redirects refused.
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        _RefuseRedirects(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


_OPENER = _opener()


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> None:
    request = urllib.request.Request(url, body, {"Content-Type": "application/json", **headers})
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            answer.read(65_536)
    except urllib.error.HTTPError as exc:
        if exc.code in (408, 429) or exc.code >= 500:
            after = exc.headers.get("Retry-After")
            hint = float(after) if after and after.isdigit() else None
            raise RetryableError(f"{redact(url)} answered {exc.code}", hint) from None
        # Any other 4xx, and every 3xx (a redirect is not followed, so nothing was delivered).
        # The reply's bytes are left out: they may echo the URL or the body.
        raise SendRefused(f"{redact(url)} answered {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out
        raise RetryableError(f"{redact(url)}: {_reason(exc)}") from None


class AlertmanagerSender:
    name = "alertmanager"

    def __init__(self, base_url: str, *, timeout_s: float, hold_s: float) -> None:
        self.url = base_url.rstrip("/") + "/api/v2/alerts"
        self.timeout_s, self.hold_s = timeout_s, hold_s

    def payload(self, notices: Sequence[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        out = []
        for n in notices:
            ends = n["endsAt"] if n["status"] == "resolved" else now + self.hold_s
            alert = {
                "labels": n["labels"],
                "annotations": n["annotations"],
                "endsAt": _iso(float(ends)),
            }
            if n.get("startsAt") is not None:
                alert["startsAt"] = _iso(float(n["startsAt"]))
            out.append(alert)
        return out

    def send(self, notices: Sequence[dict[str, Any]], now: float) -> None:
        body = json.dumps(self.payload(notices, now)).encode()
        _post(self.url, body, {}, self.timeout_s)


class WebhookSender:
    name = "webhook"

    def __init__(self, url: str, secret: str, *, timeout_s: float) -> None:
        self.url, self.secret, self.timeout_s = url, secret, timeout_s

    def send(self, notices: Sequence[dict[str, Any]], now: float) -> None:
        body = json.dumps({"sent_at": now, "alerts": list(notices)}, sort_keys=True).encode()
        headers = {SIGNATURE_HEADER: sign(self.secret, body)} if self.secret else {}
        _post(self.url, body, headers, self.timeout_s)


class EmailSender:
    name = "email"

    def __init__(
        self, host: str, port: int, sender: str, to: Sequence[str], *, timeout_s: float
    ) -> None:
        self.host, self.port, self.sender, self.to = host, port, sender, list(to)
        self.timeout_s = timeout_s

    def message(self, notices: Sequence[dict[str, Any]]) -> EmailMessage:
        msg = EmailMessage()
        firing = sum(n["status"] == "firing" for n in notices)
        msg["Subject"] = f"[apm] {firing} firing, {len(notices) - firing} resolved"
        msg["From"], msg["To"] = self.sender, ", ".join(self.to)
        lines = [
            f"{n['status'].upper()} {n['labels'].get('alertname')} "
            f"({n['labels'].get('severity')}): {n['annotations'].get('summary', '')}"
            for n in notices
        ]
        msg.set_content("\n".join(lines) + "\n")
        return msg

    def send(self, notices: Sequence[dict[str, Any]], now: float) -> None:
        try:
            with smtplib.SMTP(self.host, self.port, timeout=self.timeout_s) as smtp:
                smtp.send_message(self.message(notices))
        except smtplib.SMTPResponseException as exc:
            if 400 <= exc.smtp_code < 500:
                raise RetryableError(f"SMTP {exc.smtp_code}") from None
            raise SendRefused(f"SMTP {exc.smtp_code}") from None
        except (smtplib.SMTPException, OSError) as exc:
            raise RetryableError(f"SMTP {self.host}:{self.port}: {_reason(exc)}") from None
