"""What to tell receivers after an evaluation: a pure function of the alert's newest state and
what was last notified (durable, in the alert's state row), so a replay decides the same.

Each notice has a stable dedup key (a hash of its labels: rule, severity, the rule's labels and
the server for per-server alerts) and a deterministic outbox id: the first firing notice and
the resolution of one alert (one ``fired_at``) have one id each, so a replay rewrites the same
outbox row and the resolution is sent once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from alerting.machine import AlertState
from alerting.rules import Rule
from alerting.template import render

__all__ = ["Notice", "decide", "labels_of", "resolution"]


@dataclass(frozen=True)
class Notice:
    id: str  # outbox id: rewriting it on replay is a no-op
    body: dict[str, Any]


def labels_of(rule: Rule, state: AlertState, instance: str) -> dict[str, str]:
    labels: dict[str, str] = {
        **rule.labels,
        "alertname": rule.name,
        "apm_rule_id": rule.id,
        "severity": (state.severity or "warning")
        if state.state in ("firing", "recovering")
        else state.state,
    }
    if instance:
        labels["server"] = instance
    return dict(sorted(labels.items()))


def _key(labels: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:24]


def _body(status: str, labels: dict[str, str], annotations: dict[str, str], **at: Any) -> dict:
    return {"status": status, "labels": labels, "annotations": annotations, **at}


def resolution(notified: dict[str, Any], reason: str, ends_at: float) -> Notice:
    """The resolution of what ``notified`` records as sent (one id per ``fired_at``)."""
    return Notice(
        f"{notified['key']}:{notified['fired_at']}:resolved",
        _body(
            "resolved",
            notified["labels"],
            {"summary": f"resolved: {reason}"},
            startsAt=notified["fired_at"],
            endsAt=ends_at,
            key=notified["key"],
        ),
    )


def decide(
    rule: Rule,
    instance: str,
    state: AlertState,
    notified: dict[str, Any] | None,
    *,
    now: float,
    renotify_s: float,
    silenced: bool,
    query_text: str = "",
) -> tuple[list[Notice], dict[str, Any] | None]:
    """The notices to enqueue and the new ``notified`` record."""
    out: list[Notice] = []
    ends = state.window_end if state.window_end is not None else now
    if not state.active:
        return ([resolution(notified, state.reason, ends)] if notified else []), None
    if silenced:
        return [], notified  # evaluated and recorded, not sent (listed with the silence)
    labels = labels_of(rule, state, instance)
    # The key is a hash of the labels: the one recorded when they are the same (most cycles).
    key = notified["key"] if notified and notified.get("labels") == labels else _key(labels)
    fresh = notified is None or notified["key"] != key or notified["fired_at"] != state.fired_at
    if fresh:
        if notified:  # the old identity (another severity) ends
            out.append(resolution(notified, state.reason, ends))
        count, suffix = 0, "firing"
    elif now - float(notified["sent_at"]) >= renotify_s:  # type: ignore[index]
        count = int(notified["count"]) + 1  # type: ignore[index]
        suffix = f"renotify:{count}"
    else:
        return [], notified
    # Rendered only for a notice: most cycles of an active alert send none.
    summary = render(
        rule.annotation,
        {
            "rule": rule.name,
            "value": "none" if state.value is None else f"{state.value:.6g}",
            "query": query_text,
            "severity": labels["severity"],
            "state": state.state,
            "window": f"{state.window_start}-{state.window_end}",
            "server": instance,
        },
    )
    annotations = {"summary": summary, "reason": state.reason, "state": state.state}
    out.append(
        Notice(
            f"{key}:{state.fired_at}:{suffix}",
            _body(
                "firing",
                labels,
                annotations,
                startsAt=state.fired_at,
                endsAt=None,
                key=key,
                value=state.value,
                window_start=state.window_start,
            ),
        )
    )
    record = {
        "key": key,
        "labels": labels,
        "fired_at": state.fired_at,
        "sent_at": now,
        "count": count,
    }
    return out, record
