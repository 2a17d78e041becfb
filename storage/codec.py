"""Conversions between the API's types (float epoch seconds, WindowResult, StoredQuery) and
Cassandra's (millisecond timestamps, naive-UTC datetimes), with the checks on what we accept."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from apm.model import metric_name_error, server_name_error
from apm.query import StoredQuery, WindowResult, parse
from apm.query_select import group_label_error

__all__ = [
    "dumps_payload",
    "epoch",
    "finite",
    "from_ms",
    "latest_results",
    "metric_row_error",
    "result_columns",
    "result_error",
    "series_error",
    "server_row_error",
    "stored_query",
    "to_ms",
    "to_us",
    "window_result",
]

_EPOCH = datetime(1970, 1, 1)


def to_ms(ts: float) -> int:
    """Float epoch seconds -> the integer milliseconds a CQL timestamp holds."""
    return round(ts * 1000)


def to_us(ts: float) -> int:
    """Float epoch seconds -> microseconds, the unit of Cassandra write timestamps."""
    return round(ts * 1_000_000)


def epoch(dt: datetime | None) -> float | None:
    """A datetime from the driver (naive UTC) or an aware one -> float epoch seconds."""
    if dt is None:
        return None
    if dt.tzinfo is not None:
        return dt.timestamp()
    return (dt - _EPOCH).total_seconds()


def from_ms(ms: int) -> datetime:
    """Milliseconds since the epoch -> an aware UTC datetime, as read back from a timestamp."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _aware(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.replace(tzinfo=UTC)


def finite(value: object) -> bool:
    """A finite real number (numpy scalars included), not a bool."""
    if type(value) is float or type(value) is int:  # the common case, without the ABC checks
        return math.isfinite(value)
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return type(value) is int or (
        isinstance(value, numbers.Integral) and not isinstance(value, bool)
    )


def series_error(name: object) -> str | None:
    """Why ``name`` names no series of many: a server's name, or a ``BY <tag>`` query's group
    label (``apm.query_select.group_label``, stored where a server's series is)."""
    if isinstance(name, str) and "=" in name:
        return group_label_error(name)
    return server_name_error(name)


def result_error(row: object) -> str | None:
    """Why ``row`` cannot be stored as a window result, or None."""
    if not isinstance(row, WindowResult):
        # A plain tuple may leave out ``server`` (the fields before it came first).
        if not (isinstance(row, tuple) and len(row) in (6, len(WindowResult._fields))):
            return f"expected a WindowResult, got {type(row).__name__}"
        row = WindowResult(*row)
    if row.server != "" and (err := series_error(row.server)) is not None:
        return f"server: {err}"  # "" is the query's one series over its whole selection
    if not isinstance(row.query_id, str) or not row.query_id:
        return f"query_id must be a non-empty string, got {row.query_id!r}"
    if not finite(row.window_start) or row.window_start < 0:
        return f"window_start must be finite epoch seconds >= 0, got {row.window_start!r}"
    if not _whole(row.window_seconds) or row.window_seconds < 1:
        return f"window_seconds must be a whole number >= 1, got {row.window_seconds!r}"
    if not _whole(row.samples) or row.samples < 0:
        return f"samples must be a whole number >= 0, got {row.samples!r}"
    if not finite(row.updated_at) or row.updated_at <= 0:
        return f"updated_at must be finite epoch seconds > 0, got {row.updated_at!r}"
    if not isinstance(row.values, Mapping):
        return f"values must be a mapping of function key to number, got {row.values!r}"
    for key, value in row.values.items():
        if not isinstance(key, str) or not key:
            return f"values keys must be function keys such as 'p99', got {key!r}"
        if not finite(value):
            return f"values[{key!r}] must be a finite number, got {value!r}"
    return None


def latest_results(rows: Iterable[object]) -> dict[tuple[str, str, int], WindowResult]:
    """(query_id, server, window_start ms) -> the newest version of that window in ``rows``,
    all checked first: the first bad row raises ValueError naming its index."""
    latest: dict[tuple[str, str, int], WindowResult] = {}
    for i, row in enumerate(rows):
        if (err := result_error(row)) is not None:
            raise ValueError(f"result row {i}: {err}")
        result = WindowResult(*row)  # type: ignore[misc]
        key = (result.query_id, result.server, to_ms(result.window_start))
        if key not in latest or result.updated_at >= latest[key].updated_at:
            latest[key] = result
    return latest


def result_columns(r: WindowResult) -> tuple[int, dict[str, float], int, int, int]:
    """(window_seconds, vals, samples, updated_at ms, write timestamp us) of a checked row."""
    vals = {k: float(v) for k, v in r.values.items()}
    return int(r.window_seconds), vals, int(r.samples), to_ms(r.updated_at), to_us(r.updated_at)


def _sighting_error(
    kind: str, name: object, name_error: str | None, last_seen: object
) -> str | None:
    if name_error is not None:
        return f"{kind} {name!r}: {name_error}"
    if not finite(last_seen) or last_seen <= 0:  # type: ignore[operator]
        return f"{kind} {name!r}: last_seen must be finite epoch seconds > 0, got {last_seen!r}"
    return None


def server_row_error(server: object, last_seen: object) -> str | None:
    return _sighting_error("server", server, server_name_error(server), last_seen)


def metric_row_error(metric: object, last_seen: object) -> str | None:
    return _sighting_error("metric", metric, metric_name_error(metric), last_seen)


def window_result(query_id: str, row: Sequence[Any], server: str = "") -> WindowResult:
    """(window_start, window_seconds, vals, samples, updated_at) -> WindowResult."""
    start, seconds, vals, samples, updated = row
    return WindowResult(
        query_id,
        epoch(start) or 0.0,
        int(seconds),
        {k: float(v) for k, v in (vals or {}).items()},
        int(samples or 0),
        epoch(updated) or 0.0,
        server,
    )


def stored_query(row: Sequence[Any]) -> StoredQuery:
    """(id, text, paused, created_at, updated_at, active_since) -> StoredQuery; the text is
    the source of truth (the parsed columns are for people reading the table), so it is parsed
    again."""
    qid, text, paused, created, updated, since = row
    return StoredQuery(
        id=qid,
        query=parse(text),
        paused=bool(paused),
        created_at=_aware(created),
        updated_at=_aware(updated),
        active_since=_aware(since),
    )


def dumps_payload(component: object, payload: object) -> str:
    if not isinstance(component, str) or not component.strip():
        raise ValueError(f"component must be a non-empty string, got {component!r}")
    if not isinstance(payload, Mapping):
        raise ValueError(
            f"status payload of {component!r} must be a mapping, got {type(payload).__name__}"
        )
    try:
        return json.dumps(dict(payload), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"status payload of {component!r} is not plain JSON: {exc}") from None
