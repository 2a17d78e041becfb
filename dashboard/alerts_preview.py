"""The preview of a rule before it is stored (``POST /api/alerts/rules/preview`` and the rule
builder's Preview): a threshold rule's states over the last hour of its query's stored windows,
or the servers a server-silent rule watches now. Both validate through the rulebook first, so a
refused rule is the API's 422."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alerting.machine import AlertState, Observation, fold
from alerting.presence import presence_state, silent_ages
from alerting.rulebook import Rulebook
from alerting.rules import Rule, RuleError

__all__ = ["PREVIEW_SECONDS", "preview", "preview_silent"]

PREVIEW_SECONDS = 3600


def preview(book: Rulebook, raw: Any, now: float) -> dict[str, Any]:
    """The rule's states over the last hour of its query's stored windows, as the evaluator
    would fold them from a normal start; for a server-silent rule, each matching server seen
    in the last hour with the state it would have now (:func:`preview_silent`)."""
    rule = book.validate(raw)
    if rule.kind == "server_silent":
        return preview_silent(rule, book.queries.list_servers(), now)  # type: ignore[attr-defined]
    stored = book.queries.get_query(rule.query_id)
    if stored is None:  # deleted between the check and here
        raise RuleError("query_id", f"no stored query {rule.query_id!r} (deleted?)")
    ws = stored.query.window_seconds
    rows = {
        r.window_start: r
        for r in book.queries.read_results(rule.query_id, now - PREVIEW_SECONDS, now)  # type: ignore[attr-defined]
    }
    first = (now - PREVIEW_SECONDS) // ws * ws
    obs = []
    t = first
    while t + ws <= now:
        r = rows.get(t)
        value = r.values.get(rule.function) if r is not None and r.samples else None
        obs.append(Observation(t, ws, value))
        t += ws
    states = fold(rule, AlertState(), obs)
    return {
        "thresholds": rule.to_dict()["thresholds"],
        "points": [
            {"window_start": o.window_start, "value": o.value, "state": s.state, "reason": s.reason}
            for o, s in zip(obs, states, strict=True)
        ],
    }


def preview_silent(rule: Rule, servers: Mapping[str, float], now: float) -> dict[str, Any]:
    """The servers a server-silent rule watches now, from the stored last-seen times the
    evaluator reads: each one matching the glob and seen in the last hour, with its silence and
    the state the evaluator would give it (``firing`` past ``silent_after_s``)."""
    out = []
    for server, age in sorted(silent_ages(rule, servers, now).items()):
        st = presence_state(AlertState(), now, age, float(rule.silent_after_s), "no sample")
        out.append(
            {
                "server": server,
                "last_seen": servers[server],
                "silent_s": age,
                "state": st.state,
                "reason": st.reason,
            }
        )
    return {"kind": "server_silent", "silent_after_s": rule.silent_after_s, "servers": out}
