"""Reading the audit log, newest first, as ``GET /api/audit`` and ``apm audit`` both do: the
filters and the cursor parsed here (a bad one is a :class:`BadParam` naming the parameter), a page
walked back over the day partitions of :mod:`storage.audit`.

A page holds at most ``limit`` rows that pass the filters. The walk is bounded whatever the
filters: at most :data:`MAX_DAYS_PER_PAGE` day partitions and :data:`MAX_ROWS_PER_PAGE` rows
read per page; when it stops at a bound before the page is full, the page is returned as it
is with a cursor to go on from there (a short page with a cursor is not the end; no cursor
is). The cursor is where the walk stopped: a day and the time UUID of the last row read.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from apm.audit import KINDS
from storage.audit import AuditRow, day_of

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_DAYS_PER_PAGE",
    "MAX_LIMIT",
    "MAX_ROWS_PER_PAGE",
    "AuditFilter",
    "BadParam",
    "Cursor",
    "format_cursor",
    "parse_cursor",
    "parse_filter",
    "parse_limit",
    "read_page",
    "row_json",
]

DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
MAX_DAYS_PER_PAGE = 62
MAX_ROWS_PER_PAGE = 20_000
_BATCH = 500  # rows read from Cassandra at a time
_MAX_TEXT = 200  # a user, an object id: longer cannot match a stored one (the writer cuts)
_CURSOR = re.compile(r"(\d{4}-\d{2}-\d{2})(?:~([0-9a-f]{32}))?")


class BadParam(ValueError):
    """A filter, limit or cursor refused; ``param`` names it."""

    def __init__(self, param: str, detail: str) -> None:
        super().__init__(f"{param}: {detail}")
        self.param = param


@dataclass(frozen=True)
class AuditFilter:
    kind: str | None = None
    object_id: str | None = None
    user: str | None = None

    def keeps(self, row: AuditRow) -> bool:
        return (
            (self.kind is None or row.kind == self.kind)
            and (self.object_id is None or row.object_id == self.object_id)
            and (self.user is None or row.actor == self.user)
        )


@dataclass(frozen=True)
class Cursor:
    day: date
    below: uuid.UUID | None  # None: from the newest row of ``day``


def _text(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > _MAX_TEXT or not value.isprintable():
        raise BadParam(name, f"at most {_MAX_TEXT} printable characters")
    return value


def parse_filter(
    kind: str | None = None, object_id: str | None = None, user: str | None = None
) -> AuditFilter:
    """The filters as given (None or empty: any); BadParam naming the bad one."""
    if kind not in (None, "") and kind not in KINDS:
        raise BadParam("kind", f"one of {', '.join(KINDS)}, not {str(kind)[:40]!r}")
    return AuditFilter(kind or None, _text("id", object_id), _text("user", user))


def parse_limit(text: str | None) -> int:
    if text is None or text == "":
        return DEFAULT_LIMIT
    if not text.isascii() or not text.isdigit() or not 1 <= int(text[:6]) <= MAX_LIMIT:
        raise BadParam("limit", f"a whole number from 1 to {MAX_LIMIT}, not {text[:40]!r}")
    return int(text)


def format_cursor(cursor: Cursor) -> str:
    tail = "" if cursor.below is None else f"~{cursor.below.hex}"
    return f"{cursor.day.isoformat()}{tail}"


def parse_cursor(text: str | None) -> Cursor | None:
    """A cursor as :func:`format_cursor` writes it (None or empty: from now)."""
    if text is None or text == "":
        return None
    found = _CURSOR.fullmatch(text) if len(text) <= 60 else None
    bad = BadParam("cursor", "not one this API gave (start again without one)")
    if found is None:
        raise bad
    try:
        day = date.fromisoformat(found.group(1))
    except ValueError:
        raise bad from None
    below = uuid.UUID(found.group(2)) if found.group(2) else None
    if below is not None and below.version != 1:
        raise bad
    return Cursor(day, below)


def read_page(
    store: Any,
    keep: AuditFilter,
    cursor: Cursor | None,
    limit: int,
    now: float,
    retention_days: int,
) -> tuple[list[AuditRow], Cursor | None]:
    """Up to ``limit`` rows of ``store`` that ``keep`` keeps, newest first, from ``cursor``
    (None: now); and the cursor of the next page, None when the log has no older row."""
    oldest = day_of(now) - timedelta(days=retention_days)
    day, below = (cursor.day, cursor.below) if cursor else (day_of(now), None)
    if day > day_of(now):  # a cursor from the future: nothing is newer than now
        day, below = day_of(now), None
    found: list[AuditRow] = []
    days = rows_read = 0
    while day >= oldest:
        if days >= MAX_DAYS_PER_PAGE or rows_read >= MAX_ROWS_PER_PAGE:
            return found, Cursor(day, below)
        batch = store.day(day, below, _BATCH)
        rows_read += len(batch)
        for i, row in enumerate(batch):
            if keep.keeps(row):
                found.append(row)
                if len(found) == limit:
                    more = i + 1 < len(batch) or len(batch) == _BATCH
                    return found, Cursor(day, row.at) if more or day > oldest else None
        if len(batch) == _BATCH:  # more in this day
            below = batch[-1].at
            continue
        day, below, days = day - timedelta(days=1), None, days + 1
    return found, None


def _state(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def row_json(row: AuditRow) -> dict[str, Any]:
    """One row as ``GET /api/audit`` and ``apm audit`` show it."""
    from dashboard.cli_runner import iso

    return {
        "at": iso(row.ts),
        "ts": row.ts,
        "user": row.actor,
        "via": row.via,
        "address": row.address,
        "kind": row.kind,
        "id": row.object_id,
        "action": row.action,
        "before": _state(row.before),
        "after": _state(row.after),
    }
