"""Silences: a silenced alert is still evaluated and its states recorded, but not sent; what a
silence suppressed is listed with it. A silence matches by rule id, by label values, and by a
server glob (for the per-server "server silent" alerts), all given ones must match; it is active
from ``starts_at`` to ``ends_at`` and, when ``weekly`` is set, only inside that weekly window
(UTC): a maintenance window every Sunday 02:00-04:00, say."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Silence", "SilenceError", "WeeklyWindow", "silence_from_dict"]

_WEEK_S = 7 * 86_400
MAX_SILENCE_S = 366 * 86_400


class SilenceError(ValueError):
    def __init__(self, at: str, detail: str) -> None:
        super().__init__(f"{at}: {detail}")
        self.at, self.detail = at, detail


@dataclass(frozen=True)
class WeeklyWindow:
    """From ``start_s`` to ``start_s + duration_s`` seconds after Monday 00:00 UTC, every week."""

    start_s: int
    duration_s: int

    def contains(self, ts: float) -> bool:
        # The epoch (1970-01-01) was a Thursday: Monday 00:00 is 3 days before it.
        offset = (ts + 3 * 86_400) % _WEEK_S
        return (offset - self.start_s) % _WEEK_S < self.duration_s


@dataclass(frozen=True)
class Silence:
    id: str
    starts_at: float
    ends_at: float
    comment: str = ""
    rule_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    server_glob: str | None = None
    weekly: WeeklyWindow | None = None

    def active(self, now: float) -> bool:
        if not self.starts_at <= now < self.ends_at:
            return False
        return self.weekly is None or self.weekly.contains(now)

    def matches(self, rule_id: str, labels: Mapping[str, str], server: str | None) -> bool:
        if self.rule_id is not None and self.rule_id != rule_id:
            return False
        if any(labels.get(k) != v for k, v in self.labels.items()):
            return False
        if self.server_glob is not None:
            return server is not None and fnmatch.fnmatchcase(server, self.server_glob)
        return True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _time(raw: Any, at: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise SilenceError(at, "must be epoch seconds")
    return float(raw)


def silence_from_dict(raw: Any, *, silence_id: str) -> Silence:
    if not isinstance(raw, dict):
        raise SilenceError("", "a silence is a JSON object")
    starts, ends = _time(raw.get("starts_at"), "starts_at"), _time(raw.get("ends_at"), "ends_at")
    if not 0 < ends - starts <= MAX_SILENCE_S:
        raise SilenceError("ends_at", "must be after starts_at, and at most a year later")
    rule_id, glob, labels = raw.get("rule_id"), raw.get("server_glob"), raw.get("labels") or {}
    if rule_id is None and glob is None and not labels:
        raise SilenceError("", "name a rule_id, labels or a server_glob: nothing silences all")
    if glob is not None and (not isinstance(glob, str) or not 0 < len(glob) <= 200):
        raise SilenceError("server_glob", "a glob of 1-200 characters")
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(k) <= 100 and len(v) <= 1024
        for k, v in labels.items()
    ):
        raise SilenceError("labels", "an object of string label values")
    weekly = None
    if (w := raw.get("weekly")) is not None:
        if not isinstance(w, dict):
            raise SilenceError("weekly", "an object with start_s and duration_s")
        start, duration = w.get("start_s"), w.get("duration_s")
        if not isinstance(start, int) or not 0 <= start < _WEEK_S:
            raise SilenceError("weekly.start_s", f"seconds after Monday 00:00 UTC, 0-{_WEEK_S - 1}")
        if not isinstance(duration, int) or not 0 < duration < _WEEK_S:
            raise SilenceError("weekly.duration_s", "seconds, more than 0 and less than a week")
        weekly = WeeklyWindow(start, duration)
    comment = raw.get("comment", "")
    if not isinstance(comment, str) or len(comment) > 1024:
        raise SilenceError("comment", "a string of at most 1024 characters")
    return Silence(
        id=silence_id,
        starts_at=starts,
        ends_at=ends,
        comment=comment,
        rule_id=rule_id if isinstance(rule_id, str) else None,
        labels=dict(labels),
        server_glob=glob,
        weekly=weekly,
    )
