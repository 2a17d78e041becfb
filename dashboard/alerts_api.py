"""The alerting REST API under ``/api/alerts`` (described by ``/api/alerts/openapi.json``): rules
with their alert's state, a rule's history, a preview of a rule (:mod:`dashboard.alerts_preview`),
silences,
and a test notification per receiver. It goes through :class:`alerting.rulebook.Rulebook`, as
``apm alert`` does, so both refuse the same input with the same message. Errors have the one
shape of :mod:`apm.errors`; a refused rule is a 422 whose ``at`` names the field."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, jsonify, request

from alerting.rulebook import Rulebook
from alerting.rules import RuleError
from alerting.silences import SilenceError
from apm.audit import NO_AUDIT, Recorder
from dashboard.alerts_openapi import OPENAPI
from dashboard.alerts_preview import preview
from dashboard.api import StorageUnavailable, error, guarded
from dashboard.telemetry import DashboardTelemetry

__all__ = ["build_alerts_api", "rulebook_for"]

log = logging.getLogger(__name__)

MAX_BODY = 65_536


def rulebook_for(repo: object, audit: Recorder = NO_AUDIT) -> Callable[[], Rulebook]:
    """A factory of the one Rulebook over ``repo``'s Cassandra session, built on first use;
    its changes are recorded by ``audit``."""
    made: list[Rulebook] = []

    def book() -> Rulebook:
        if not made:
            from storage.alerts import AlertStore

            session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
            if session is None or not isinstance(keyspace, str):
                raise _Refused(503, "unavailable", "alerting needs the Cassandra store", None)
            tables = AlertStore(session, keyspace)
            made.append(Rulebook(repo, tables, audit))  # type: ignore[arg-type]
        return made[0]

    return book


def build_alerts_api(
    book: Callable[[], Rulebook],
    telemetry: DashboardTelemetry,
    clock: Callable[[], float] = time.time,
) -> Blueprint:
    """``book`` builds the rulebook on first use (the alert tables are created then)."""
    api = Blueprint("alerts_api", __name__, url_prefix="/api/alerts")

    @api.before_request
    def _limit_body() -> None:
        # Refused (413) on its Content-Length before any of it is read, chunked ones past it.
        request.max_content_length = MAX_BODY

    def body() -> Any:
        raw = request.get_data(cache=True)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise _Refused(400, "bad_request", "the body must be JSON", "body") from None

    @api.errorhandler(_Refused)
    def _refused(exc: _Refused) -> tuple[Response, int]:
        return error(exc.status, exc.code, exc.detail, exc.at)

    @api.errorhandler(RuleError)
    @api.errorhandler(SilenceError)
    def _invalid(exc: RuleError | SilenceError) -> tuple[Response, int]:
        return error(422, "validation", exc.detail, exc.at or None)

    @api.errorhandler(StorageUnavailable)
    def _unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
        return error(503, "storage_unavailable", str(exc))

    @api.errorhandler(Exception)
    def _bug(exc: Exception) -> tuple[Response, int]:
        from werkzeug.exceptions import HTTPException

        if isinstance(exc, HTTPException):  # 404, 405, 413: in the one shape too
            return error(exc.code or 500, "http", exc.description or exc.name)
        # A bug, never an answer to bad input (those are 4xx above): logged whole, answered
        # in the one shape rather than as an HTML page.
        log.exception("alerts API: unexpected failure")
        return error(500, "internal", "unexpected failure, logged by the dashboard")

    @api.get("/openapi.json")
    def openapi() -> Response:
        return jsonify(OPENAPI)

    @api.get("")
    def alerts() -> Response:
        return jsonify({"rules": guarded(telemetry, "alert_rules", lambda: book().rules())})

    @api.post("/rules")
    def create() -> tuple[Response, int]:
        raw = body()
        rule = guarded(telemetry, "alert_create", lambda: book().create(raw, clock()))
        return jsonify(rule.to_dict()), 201

    @api.post("/rules/preview")
    def preview_rule() -> Response:
        raw = body()
        return jsonify(guarded(telemetry, "alert_preview", lambda: preview(book(), raw, clock())))

    @api.put("/rules/<rule_id>")
    def update(rule_id: str) -> tuple[Response, int]:
        raw = body()
        rule = guarded(telemetry, "alert_update", lambda: book().update(rule_id[:64], raw, clock()))
        if rule is None:
            return error(404, "not_found", f"no rule {rule_id[:64]!r}", "rule_id")
        return jsonify(rule.to_dict()), 200

    @api.delete("/rules/<rule_id>")
    def delete(rule_id: str) -> tuple[Response, int]:
        if not guarded(telemetry, "alert_delete", lambda: book().delete(rule_id[:64])):
            return error(404, "not_found", f"no rule {rule_id[:64]!r}", "rule_id")
        return jsonify({"deleted": rule_id}), 200

    @api.get("/rules/<rule_id>/history")
    def history(rule_id: str) -> tuple[Response, int] | Response:
        try:
            since = min(float(request.args.get("since", 3600)), 31 * 86_400)
        except ValueError:
            return error(400, "bad_request", "since must be seconds", "since")
        now = clock()
        rows = guarded(
            telemetry,
            "alert_history",
            lambda: list(book().tables.history(rule_id[:64], now - since, now)),  # type: ignore[attr-defined]
        )
        changes = request.args.get("changes") in ("1", "true")
        return jsonify(
            [
                {"window_start": r.window_start, "changed": r.changed, **r.body}
                for r in rows
                if r.changed or not changes
            ]
        )

    @api.get("/silences")
    def silences() -> Response:
        return jsonify(guarded(telemetry, "alert_silences", lambda: book().silences()))

    @api.post("/silences")
    def silence() -> tuple[Response, int]:
        raw = body()
        s = guarded(telemetry, "alert_silence", lambda: book().silence(raw, clock()))
        return jsonify(s.to_dict()), 201

    @api.delete("/silences/<silence_id>")
    def unsilence(silence_id: str) -> tuple[Response, int]:
        if not guarded(telemetry, "alert_unsilence", lambda: book().unsilence(silence_id[:64])):
            return error(404, "not_found", f"no silence {silence_id[:64]!r}", "silence_id")
        return jsonify({"deleted": silence_id}), 200

    @api.post("/test-notify")
    def test_notify() -> tuple[Response, int]:
        from pydantic import ValidationError

        from alerting.senders import SendRefused
        from alerting.service import senders_for, test_notice
        from alerting.settings import AlertingSettings
        from apm.retry import RetryableError

        wanted = request.args.get("receiver")
        try:
            settings = AlertingSettings()
        except ValidationError as exc:  # a receiver URL refused (file://, the platform itself)
            (err, *_) = exc.errors()
            name = "APM_ALERTING_" + ".".join(map(str, err["loc"])).upper()
            return error(503, "misconfigured", f"{name}: {err['msg']}", "receiver")
        senders = [s for s in senders_for(settings) if wanted in (None, s.name)]
        if not senders:
            return error(
                404, "not_found", "no such receiver configured (APM_ALERTING_*)", "receiver"
            )
        out: dict[str, str] = {}
        for sender in senders:
            try:
                sender.send([test_notice(clock())], clock())
                out[sender.name] = "delivered"
            # Only a class of outcome: the receiver's URL (secrets in its path) and its reply
            # stay out of the answer; the evaluator's log has scheme://host:port.
            except SendRefused:
                out[sender.name] = "refused"
            except RetryableError:
                out[sender.name] = "unreachable"
            except Exception:
                out[sender.name] = "failed"
        failed = any(v != "delivered" for v in out.values())
        return jsonify(out), 502 if failed else 200

    return api


class _Refused(Exception):
    def __init__(self, status: int, code: str, detail: str, at: str | None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.at = status, code, detail, at
