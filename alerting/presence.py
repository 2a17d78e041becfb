"""Alerts on presence rather than on a query's values, evaluated on the wall clock each cycle:

- the ``server_silent`` rule kind: each server matching the rule's glob that sent anything in
  the last hour (``RECENT_S``) and nothing for ``silent_after_s`` fires on its own (instance =
  the server). A server silent for more than the hour is taken as gone and its alert resolves.
- the meta-alert ``apm-meta-freshness``: an aggregator whose status is older than the
  freshness bound (it stopped publishing or fell behind), and this evaluator when its oldest
  unevaluated complete window is further behind than the bound. It is always on.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from alerting.machine import AlertState
from alerting.rules import Rule, Thresholds

__all__ = ["META_RULE_ID", "RECENT_S", "meta_ages", "meta_rule", "presence_state", "silent_ages"]

RECENT_S = 3600.0
META_RULE_ID = "apm-meta-freshness"


def meta_rule(bound_s: float) -> Rule:
    return Rule(
        id=META_RULE_ID,
        name="apm freshness",
        query_id="",
        function="age_s",
        comparison=">",
        thresholds=Thresholds(critical=bound_s),
        labels={"apm_meta": "true"},
        annotation="{server} is {value}s behind (bound {threshold}s)",
    )


def presence_state(
    prior: AlertState, tick: float, age: float, bound: float, what: str
) -> AlertState:
    """Firing while ``age`` passes ``bound``; the alert keeps its identity (``fired_at``)
    while it stays firing."""
    if age > bound:
        fired = prior.fired_at if prior.state == "firing" and prior.fired_at is not None else tick
        return AlertState(
            "firing",
            f"{what} for {age:.0f}s, more than {bound:.0f}s",
            age,
            tick,
            tick,
            "critical",
            since=fired,
            fired_at=fired,
        )
    return AlertState("normal", f"{what} for {age:.0f}s, within {bound:.0f}s", age, tick, tick)


def silent_ages(rule: Rule, servers: Mapping[str, float], now: float) -> dict[str, float]:
    """server -> seconds since its last sample, for the servers of the rule seen recently."""
    return {
        name: max(0.0, now - seen)
        for name, seen in servers.items()
        if now - seen <= RECENT_S and fnmatch.fnmatchcase(name, rule.servers)
    }


def meta_ages(status: Mapping[str, Mapping[str, Any]], now: float) -> dict[str, float]:
    """aggregator component -> age of its newest status."""
    return {
        name: max(0.0, now - float(payload.get("updated_at") or 0.0))
        for name, payload in status.items()
        if name.startswith("aggregator")
    }
