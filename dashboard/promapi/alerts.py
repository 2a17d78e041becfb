"""Prometheus' ``ALERTS`` series over the alert evaluator's durable state: one series of value 1
for each alert pending or firing now, labelled as Prometheus labels its own
(``alertname``, ``alertstate`` = ``pending`` or ``firing``, ``severity``) plus ``rule_id`` and,
for a ``server_silent`` rule, ``server``. ``recovering``, ``nodata`` and ``error`` alerts are
active (their receivers were told), so they are ``firing`` here as well; ``normal`` alerts have
no series, as in Prometheus. Only instant queries answer it: the state is the evaluator's
newest, and its history is at ``/api/alerts/rules/<id>/history`` (docs/alerting.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from alerting.machine import ACTIVE
from dashboard.promapi.selector import ALERTS

__all__ = ["alert_labels", "alertstate"]


def alertstate(state: str | None) -> str | None:
    """Prometheus' ``alertstate`` for one of the evaluator's states (None: no series)."""
    if state == "pending":
        return "pending"
    return "firing" if state in ACTIVE else None


def alert_labels(rules: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, str]]:
    """The label sets of the ``ALERTS`` series now, from :meth:`Rulebook.rules`' listing."""
    for rule in rules:
        alerts = [("", rule.get("alert")), *sorted((rule.get("instances") or {}).items())]
        for server, latest in alerts:
            shown = alertstate((latest or {}).get("state"))
            if shown is None:
                continue
            labels = {
                "__name__": ALERTS,
                "alertname": str(rule.get("name") or rule.get("id")),
                "alertstate": shown,
                "rule_id": str(rule.get("id")),
            }
            if severity := (latest or {}).get("severity"):
                labels["severity"] = str(severity)
            if server:
                labels["server"] = server
            yield labels
