"""An alert rule, built from its JSON by :func:`rule_from_dict` with every field validated
(:mod:`alerting.fields`) before anything is stored.

A rule watches one function (``avg``, ``p99`` ...) of one stored query, compares each completed
window's value with a warning and a critical threshold, each with an optional recovery threshold
(hysteresis: an alert that fired at ``> 80`` clears only once the value is no longer ``> 70``),
and is sent to the receivers it names (all when it names none).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# RuleError, Thresholds and COMPARISONS are re-exported: callers building rules need them.
from alerting.fields import COMPARISONS, RuleError, Thresholds, check

__all__ = ["COMPARISONS", "Rule", "RuleError", "Thresholds", "rule_from_dict"]


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    query_id: str
    function: str  # a result key of the query: avg, max, p99 ...
    comparison: str
    thresholds: Thresholds
    for_s: int = 0
    keep_firing_for_s: int = 0
    nodata_windows: int = 3  # consecutive windows without samples before the policy applies
    nodata_policy: str = "keep"
    labels: dict[str, str] = field(default_factory=dict)
    annotation: str = "{rule} is {value} ({severity}) on {query}"
    # kind "server_silent": servers matching ``servers`` that sent anything in the last hour and
    # nothing for ``silent_after_s`` alert one by one (no query, no thresholds of their own).
    kind: str = "threshold"
    servers: str = "*"
    silent_after_s: int = 0
    # The receivers (alerting.senders names) that get this rule's notices; empty: all of them.
    receivers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["receivers"] = list(self.receivers)
        return body

    def routes_to(self, receiver: str) -> bool:
        return not self.receivers or receiver in self.receivers


def _server_silent(raw: dict[str, Any], rule_id: str, name: str) -> Rule:
    silent = check("silent_after_s", raw)
    return Rule(
        id=rule_id,
        name=name,
        query_id="",
        function="silent_s",
        comparison=">",
        thresholds=Thresholds(critical=float(silent)),
        labels=check("labels", raw),
        annotation=check("annotation", raw, "server {server} silent for {value}s"),
        kind="server_silent",
        servers=check("servers", raw),
        silent_after_s=silent,
        receivers=check("receivers", raw),
    )


def rule_from_dict(raw: Any, *, rule_id: str, functions: tuple[str, ...] | None = None) -> Rule:
    """A validated :class:`Rule`, or :class:`RuleError`. ``functions`` are the result keys of the
    named query, when the caller has looked it up (a rule on a function it lacks is refused)."""
    if not isinstance(raw, dict):
        raise RuleError("", "a rule is a JSON object")
    name = check("name", raw)
    if check("kind", raw) == "server_silent":
        return _server_silent(raw, rule_id, name)
    query_id = check("query_id", raw)
    function = check("function", raw)
    if functions is not None and function not in functions:
        raise RuleError("function", f"the query computes {', '.join(functions)}, not {function}")
    comparison = check("comparison", raw)
    nodata_policy = check("nodata_policy", raw)
    nodata_windows = check("nodata_windows", raw)
    annotation = check("annotation", raw)
    return Rule(
        id=rule_id,
        name=name,
        query_id=query_id,
        function=function,
        comparison=comparison,
        thresholds=check("thresholds", raw),
        for_s=check("for_s", raw),
        keep_firing_for_s=check("keep_firing_for_s", raw),
        nodata_windows=nodata_windows,
        nodata_policy=nodata_policy,
        labels=check("labels", raw),
        annotation=annotation,
        receivers=check("receivers", raw),
    )
