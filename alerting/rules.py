"""An alert rule and its validation: every field is checked before anything is stored, and a
refusal names the field (``at``) and what was wrong.

A rule watches one function (``avg``, ``p99`` ...) of one stored query, compares each completed
window's value with a warning and a critical threshold, each with an optional recovery threshold
(hysteresis: an alert that fired at ``> 80`` clears only once the value is no longer ``> 70``).
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from alerting.template import TemplateError, check_template

__all__ = [
    "COMPARISONS",
    "KINDS",
    "MAX_DURATION_S",
    "NODATA_POLICIES",
    "Rule",
    "RuleError",
    "Thresholds",
    "breaches",
    "rule_from_dict",
    "webhook_url_error",
]

COMPARISONS = (">", ">=", "<", "<=")
KINDS = ("threshold", "server_silent")
NODATA_POLICIES = ("alert", "keep", "ok")
# A `for` or `keep_firing_for` longer than a week is a typo, not a plan; the state machine
# counts it in event time, so an absurd value would keep an alert pending for ever.
MAX_DURATION_S = 7 * 86_400
MAX_LABELS = 32
MAX_NODATA_WINDOWS = 10_000
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_RULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.:\-]{0,199}")
MAX_LABEL_VALUE = 1024


class RuleError(ValueError):
    """A rule refused; ``at`` is the field path (``thresholds.critical``)."""

    def __init__(self, at: str, detail: str) -> None:
        super().__init__(f"{at}: {detail}")
        self.at, self.detail = at, detail


@dataclass(frozen=True)
class Thresholds:
    warning: float | None = None
    critical: float | None = None
    warning_recovery: float | None = None
    critical_recovery: float | None = None


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def breaches(comparison: str, value: float, threshold: float | None) -> bool:
    if threshold is None:
        return False
    if comparison == ">":
        return value > threshold
    if comparison == ">=":
        return value >= threshold
    if comparison == "<":
        return value < threshold
    return value <= threshold


def _number(raw: Any, at: str, optional: bool = True) -> float | None:
    if raw is None and optional:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise RuleError(at, f"must be a number, got {type(raw).__name__}")
    if not math.isfinite(raw):
        raise RuleError(at, f"must be a finite number, got {raw}")
    return float(raw)


def _duration(raw: Any, at: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise RuleError(at, "must be a whole number of seconds")
    if raw < 0 or raw > MAX_DURATION_S or raw != int(raw):
        raise RuleError(at, f"must be a whole number of seconds from 0 to {MAX_DURATION_S} (7d)")
    return int(raw)


def _thresholds(raw: Any, comparison: str) -> Thresholds:
    if not isinstance(raw, dict):
        raise RuleError("thresholds", "must be an object with warning and/or critical")
    unknown = set(raw) - {"warning", "critical", "warning_recovery", "critical_recovery"}
    if unknown:
        raise RuleError(f"thresholds.{sorted(unknown)[0]}", "is not a threshold name")
    t = Thresholds(**{k: _number(v, f"thresholds.{k}") for k, v in raw.items()})
    if t.warning is None and t.critical is None:
        raise RuleError("thresholds", "needs a warning or a critical threshold")
    for level in ("warning", "critical"):
        line, back = getattr(t, level), getattr(t, f"{level}_recovery")
        if back is None:
            continue
        if line is None:
            raise RuleError(f"thresholds.{level}_recovery", f"needs a {level} threshold")
        # The recovery line lies on the safe side of the threshold, or it would never clear.
        if breaches(comparison, back, line) and back != line:
            raise RuleError(
                f"thresholds.{level}_recovery",
                f"{back} is on the firing side of {level} {line} for {comparison!r}",
            )
    if (
        t.warning is not None
        and t.critical is not None
        and breaches(comparison, t.warning, t.critical)
    ):
        raise RuleError("thresholds.warning", "a warning must be reached before the critical")
    return t


def _labels(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or len(raw) > MAX_LABELS:
        raise RuleError("labels", f"must be an object of at most {MAX_LABELS} labels")
    for key, value in raw.items():
        if not isinstance(key, str) or not _LABEL.fullmatch(key):
            raise RuleError(f"labels.{key}", "a label name is [A-Za-z_][A-Za-z0-9_]*")
        if not isinstance(value, str) or len(value) > MAX_LABEL_VALUE:
            raise RuleError(f"labels.{key}", f"must be a string of at most {MAX_LABEL_VALUE}")
    return dict(raw)


def webhook_url_error(url: object, own_ports: frozenset[int] = frozenset()) -> str | None:
    """Why ``url`` is no acceptable receiver URL: only http(s), and never this platform itself
    (a loopback address on one of ``own_ports``), which would make the alerts page itself."""
    if not isinstance(url, str) or len(url) > 2048:
        return "must be a URL of at most 2048 characters"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL, got scheme {parts.scheme or 'none'!r}"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has an invalid port"
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback and port in own_ports:
        return f"points at this platform itself (port {port})"
    return None


def _name(raw: Any) -> str:
    if not isinstance(raw, dict):
        raise RuleError("", "a rule is a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not _RULE_NAME.fullmatch(name):
        raise RuleError("name", "1-200 letters, digits, spaces or _.:- , starting alphanumeric")
    if raw.get("kind", "threshold") not in KINDS:
        raise RuleError("kind", f"must be one of {', '.join(KINDS)}")
    return name


def _server_silent(raw: dict[str, Any], rule_id: str, name: str) -> Rule:
    servers = raw.get("servers", "*")
    if not isinstance(servers, str) or not 0 < len(servers) <= 200:
        raise RuleError("servers", "a server glob of 1-200 characters (web-*)")
    silent = _duration(raw.get("silent_after_s", 60), "silent_after_s")
    if silent < 1:
        raise RuleError("silent_after_s", "must be at least 1 second")
    annotation = raw.get("annotation", "server {server} silent for {value}s")
    try:
        check_template(annotation)
    except TemplateError as exc:
        raise RuleError("annotation", str(exc)) from None
    return Rule(
        id=rule_id,
        name=name,
        query_id="",
        function="silent_s",
        comparison=">",
        thresholds=Thresholds(critical=float(silent)),
        labels=_labels(raw.get("labels", {})),
        annotation=annotation,
        kind="server_silent",
        servers=servers,
        silent_after_s=silent,
    )


def rule_from_dict(raw: Any, *, rule_id: str, functions: tuple[str, ...] | None = None) -> Rule:
    """A validated :class:`Rule`, or :class:`RuleError`. ``functions`` are the result keys of the
    named query, when the caller has looked it up (a rule on a function it lacks is refused)."""
    name = _name(raw)
    if raw.get("kind") == "server_silent":
        return _server_silent(raw, rule_id, name)
    query_id = raw.get("query_id")
    if not isinstance(query_id, str) or not 0 < len(query_id) <= 64:
        raise RuleError("query_id", "must name a stored query")
    function = raw.get("function")
    if not isinstance(function, str) or not function:
        raise RuleError("function", "must name one of the query's functions")
    if functions is not None and function not in functions:
        raise RuleError("function", f"the query computes {', '.join(functions)}, not {function}")
    comparison = raw.get("comparison", ">")
    if comparison not in COMPARISONS:
        raise RuleError("comparison", f"must be one of {', '.join(COMPARISONS)}")
    policy = raw.get("nodata_policy", "keep")
    if policy not in NODATA_POLICIES:
        raise RuleError("nodata_policy", f"must be one of {', '.join(NODATA_POLICIES)}")
    windows = raw.get("nodata_windows", 3)
    if (
        isinstance(windows, bool)
        or not isinstance(windows, int)
        or not 1 <= windows <= MAX_NODATA_WINDOWS
    ):
        raise RuleError("nodata_windows", f"must be a whole number from 1 to {MAX_NODATA_WINDOWS}")
    annotation = raw.get("annotation", Rule.annotation)
    try:
        check_template(annotation)
    except TemplateError as exc:
        raise RuleError("annotation", str(exc)) from None
    return Rule(
        id=rule_id,
        name=name,
        query_id=query_id,
        function=function,
        comparison=comparison,
        thresholds=_thresholds(raw.get("thresholds"), comparison),
        for_s=_duration(raw.get("for_s", 0), "for_s"),
        keep_firing_for_s=_duration(raw.get("keep_firing_for_s", 0), "keep_firing_for_s"),
        nodata_windows=windows,
        nodata_policy=policy,
        labels=_labels(raw.get("labels", {})),
        annotation=annotation,
    )
