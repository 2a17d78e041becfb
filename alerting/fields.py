"""The fields of an alert rule, one validator each: the rule builder calls :func:`field_error`
as the user types a field, and :func:`alerting.rules.rule_from_dict` runs the same validators
over a whole rule, so a field is refused for the same reason in both places.

A refusal is a :class:`RuleError` naming the field (``at``) and what was wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from alerting.template import TemplateError, check_template

__all__ = [
    "COMPARISONS",
    "KINDS",
    "MAX_DURATION_S",
    "NODATA_POLICIES",
    "RECEIVERS",
    "RuleError",
    "Thresholds",
    "breaches",
    "check",
    "field_error",
]

COMPARISONS = (">", ">=", "<", "<=")
KINDS = ("threshold", "server_silent")
NODATA_POLICIES = ("alert", "keep", "ok")
# The receiver kinds a rule may route to (alerting.senders): a rule names some, or all get it.
RECEIVERS = ("alertmanager", "webhook", "email")
# A `for` or `keep_firing_for` longer than a week is a typo, not a plan; the state machine
# counts it in event time, so an absurd value would keep an alert pending for ever.
MAX_DURATION_S = 7 * 86_400
MAX_LABELS = 32
MAX_LABEL_VALUE = 1024
MAX_NODATA_WINDOWS = 10_000
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_RULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.:\-]{0,199}")


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


def _number(raw: Any, at: str) -> float | None:
    if raw is None:
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


def _choice(raw: Any, at: str, allowed: tuple[str, ...]) -> str:
    if raw not in allowed:
        raise RuleError(at, f"must be one of {', '.join(allowed)}")
    return str(raw)


def _name(raw: Any, at: str) -> str:
    if not isinstance(raw, str) or not _RULE_NAME.fullmatch(raw):
        raise RuleError(at, "1-200 letters, digits, spaces or _.:- , starting alphanumeric")
    return raw


def _query_id(raw: Any, at: str) -> str:
    if not isinstance(raw, str) or not 0 < len(raw) <= 64:
        raise RuleError(at, "must name a stored query")
    return raw


def _function(raw: Any, at: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise RuleError(at, "must name one of the query's functions")
    return raw


def _nodata_windows(raw: Any, at: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_NODATA_WINDOWS:
        raise RuleError(at, f"must be a whole number from 1 to {MAX_NODATA_WINDOWS}")
    return raw


def _annotation(raw: Any, at: str) -> str:
    try:
        check_template(raw)
    except TemplateError as exc:
        raise RuleError(at, str(exc)) from None
    return str(raw)


def _labels(raw: Any, at: str) -> dict[str, str]:
    if not isinstance(raw, dict) or len(raw) > MAX_LABELS:
        raise RuleError(at, f"must be an object of at most {MAX_LABELS} labels")
    for key, value in raw.items():
        if not isinstance(key, str) or not _LABEL.fullmatch(key):
            raise RuleError(f"{at}.{key}", "a label name is [A-Za-z_][A-Za-z0-9_]*")
        if not isinstance(value, str) or len(value) > MAX_LABEL_VALUE:
            raise RuleError(f"{at}.{key}", f"must be a string of at most {MAX_LABEL_VALUE}")
    return dict(raw)


def _receivers(raw: Any, at: str, known: tuple[str, ...] = RECEIVERS) -> tuple[str, ...]:
    """The receivers a rule routes to; empty means every configured receiver."""
    if not isinstance(raw, list | tuple) or len(raw) > len(RECEIVERS):
        raise RuleError(at, f"must be a list of receivers among {', '.join(known)} (empty: all)")
    for name in raw:
        if name not in known:
            raise RuleError(at, f"no receiver {name!r}: the receivers are {', '.join(known)}")
    if len(set(raw)) != len(raw):
        raise RuleError(at, f"names a receiver twice (the receivers are {', '.join(known)})")
    return tuple(raw)


def _servers(raw: Any, at: str) -> str:
    if not isinstance(raw, str) or not 0 < len(raw) <= 200:
        raise RuleError(at, "a server glob of 1-200 characters (web-*)")
    return raw


def _silent_after(raw: Any, at: str) -> int:
    silent = _duration(raw, at)
    if silent < 1:
        raise RuleError(at, "must be at least 1 second")
    return silent


def _thresholds(raw: Any, at: str, comparison: str = ">") -> Thresholds:
    if not isinstance(raw, dict):
        raise RuleError(at, "must be an object with warning and/or critical")
    unknown = set(raw) - {"warning", "critical", "warning_recovery", "critical_recovery"}
    if unknown:
        raise RuleError(f"{at}.{sorted(unknown)[0]}", "is not a threshold name")
    t = Thresholds(**{k: _number(v, f"{at}.{k}") for k, v in raw.items()})
    if t.warning is None and t.critical is None:
        raise RuleError(at, "needs a warning or a critical threshold")
    for level in ("warning", "critical"):
        line, back = getattr(t, level), getattr(t, f"{level}_recovery")
        if back is None:
            continue
        if line is None:
            raise RuleError(f"{at}.{level}_recovery", f"needs a {level} threshold")
        # The recovery line lies on the safe side of the threshold, or it would never clear.
        if breaches(comparison, back, line) and back != line:
            raise RuleError(
                f"{at}.{level}_recovery",
                f"{back} is on the firing side of {level} {line} for {comparison!r}",
            )
    if (
        t.warning is not None
        and t.critical is not None
        and breaches(comparison, t.warning, t.critical)
    ):
        raise RuleError(f"{at}.warning", "a warning must be reached before the critical")
    return t


# field -> (validator, default when the rule leaves it out; None: required)
_FIELDS: dict[str, tuple[Callable[..., Any], Any]] = {
    "name": (_name, None),
    "kind": (lambda raw, at: _choice(raw, at, KINDS), "threshold"),
    "query_id": (_query_id, None),
    "function": (_function, None),
    "comparison": (lambda raw, at: _choice(raw, at, COMPARISONS), ">"),
    "thresholds": (_thresholds, None),
    "for_s": (_duration, 0),
    "keep_firing_for_s": (_duration, 0),
    "nodata_windows": (_nodata_windows, 3),
    "nodata_policy": (lambda raw, at: _choice(raw, at, NODATA_POLICIES), "keep"),
    "labels": (_labels, {}),
    "annotation": (_annotation, "{rule} is {value} ({severity}) on {query}"),
    "receivers": (_receivers, ()),
    "servers": (_servers, "*"),
    "silent_after_s": (_silent_after, 60),
}


def check(name: str, raw: Mapping[str, Any], default: Any = None) -> Any:
    """The validated value of field ``name`` of the rule ``raw`` (its default when left out,
    ``default`` overriding the field's own), or :class:`RuleError`. The thresholds are checked
    against the rule's comparison."""
    if name not in _FIELDS:
        raise RuleError(name, "is not a field of a rule")
    validate, fallback = _FIELDS[name]
    value = raw.get(name, fallback if default is None else default)
    if name == "thresholds":
        return _thresholds(value, name, raw.get("comparison", ">"))
    if value is None:
        raise RuleError(name, "is required")
    return validate(value, name)


def field_error(name: str, raw: Mapping[str, Any]) -> RuleError | None:
    """Why field ``name`` of the rule being built is refused, or None: one field at a time, for
    inline validation (the checks that need the stored query run when the rule is created)."""
    try:
        check(name, raw)
    except RuleError as exc:
        return exc
    return None
