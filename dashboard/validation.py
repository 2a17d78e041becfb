"""The one validation path for query text, shared by the REST API, the text box and the builder.

The builder composes text from its fields and remembers where each field landed, so a parser
error (which carries a position) is shown beside the field that caused it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from apm.errors import ErrorBody, error_body
from apm.query import Query, QueryError, accept

__all__ = [
    "BUILDER_FIELDS",
    "LATEST_TIME",
    "SPLITS",
    "Composed",
    "check_builder",
    "compose",
    "error_json",
    "field_for",
    "parse_time",
    "pointer",
    "validate",
]

BUILDER_FIELDS = ("servers", "metric", "window", "functions", "split")
# The fields every query has; "split" (BY server, TOP/BOTTOM) may be empty.
_REQUIRED = BUILDER_FIELDS[:4]
SPLITS = {
    "": "one series over all its servers",
    "server": "one series per server (BY server)",
    "top": "per server, and rank the highest n (TOP n BY f)",
    "bottom": "per server, and rank the lowest n (BOTTOM n BY f)",
}
# Times a range may name: the epoch to the end of year 9999. Past it, the storage's day
# buckets (32-bit) overflow in the driver, which must not pass for a storage outage.
LATEST_TIME = 253_402_300_799.0


def validate(text: object) -> Query:
    """Parses query text to be stored or raises QueryError (a non-string is an error at
    position 0); refuses what the aggregator does not evaluate yet (apm.query.accept)."""
    if not isinstance(text, str):
        raise QueryError("the query must be a string of text", 0, "FROM")
    return accept(text)


def error_json(exc: QueryError) -> ErrorBody:
    """A parse error as the APIs' error shape; ``at`` is the 0-based position in the text."""
    return error_body("invalid_query", exc.detail, exc.position)


def pointer(text: str, position: int) -> str:
    """The text with a caret line under the error position, for inline display."""
    return f"{text}\n{' ' * max(0, min(position, len(text)))}^"


@dataclass(frozen=True)
class Composed:
    text: str
    spans: dict[str, tuple[int, int]]  # field -> [start, end) in text


def compose(
    servers: Sequence[str],
    metric: str | None,
    window: str | None,
    functions: Sequence[str],
    percentiles: str | None,
    split: str | None = "",
    n: object = None,
    by: str | None = None,
) -> Composed:
    """Query text from the builder's fields. ``percentiles`` is a comma-separated list of p
    values, each becoming ``percentile(p)``; empty fields stay empty so the parser names them.
    ``split`` (a key of :data:`SPLITS`) adds `` BY server`` and, for ``top``/``bottom``,
    `` TOP n BY by``: the parser checks ``n`` and that ``by`` is one of the functions."""
    parts = [
        ("FROM ", None),
        (", ".join(s.strip() for s in servers if s.strip()), "servers"),
        (" SELECT ", None),
        ((metric or "").strip(), "metric"),
        (" WINDOW ", None),
        ((window or "").strip(), "window"),
        (" COMPUTE ", None),
    ]
    fns = [f for f in functions if f]
    fns += [f"percentile({p.strip()})" for p in (percentiles or "").split(",") if p.strip()]
    parts.append((", ".join(fns), "functions"))
    if split in ("server", "top", "bottom"):
        clause = " BY server"
        if split != "server":
            count = "" if n is None else str(n).strip()
            clause += f" {split.upper()} {count} BY {(by or '').strip()}"
        parts.append((clause, "split"))
    else:
        parts.append(("", "split"))
    text, spans = "", {}
    for chunk, name in parts:
        if name:
            spans[name] = (len(text), len(text) + len(chunk))
        text += chunk
    return Composed(text, spans)


def check_builder(composed: Composed) -> tuple[str, QueryError] | None:
    """The first error in the builder's text and the field it belongs to, or None. An empty
    field is reported with the parser's own message for the text cut just before it (so an
    empty metric reads "expected a metric name, got the end of the query"), because parsing on
    would take the next keyword for the missing value and blame the wrong field."""
    for name in _REQUIRED:
        start, end = composed.spans[name]
        if start == end:
            try:
                validate(composed.text[:start])
            except QueryError as exc:
                return name, exc
    try:
        validate(composed.text)
    except QueryError as exc:
        return field_for(composed, exc), exc
    return None


def field_for(composed: Composed, exc: QueryError) -> str:
    """The builder field an error points at. An error on a keyword right after an empty field
    (``SELECT`` when no server was given) belongs to that empty field."""
    pos = exc.position
    for name in BUILDER_FIELDS:
        start, end = composed.spans[name]
        empty = start == end and name in _REQUIRED
        if start <= pos < end or (empty and pos in (start, start + 1)):
            return name
    for name in reversed(BUILDER_FIELDS):
        start, end = composed.spans[name]
        # An empty split (no BY clause) is not there to blame for the end of the text.
        if (start < end or name in _REQUIRED) and pos >= start:
            return name
    # An error in "FROM" itself cannot come from the builder; the servers field is closest.
    return "servers"


def parse_time(raw: str | None, default: float) -> float:
    """Epoch seconds or ISO 8601 (``Z`` accepted; naive means UTC), from 1970 to the end of
    9999. Raises ValueError."""
    if raw is None or raw.strip() == "":
        return default
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            dt = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "T", 1))
        except ValueError:
            raise ValueError(
                f"{raw[:40]!r} is neither epoch seconds nor an ISO 8601 time"
            ) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        value = dt.timestamp()
    if not math.isfinite(value):
        raise ValueError(f"{raw[:40]!r} is not a finite time")
    if not 0 <= value <= LATEST_TIME:
        raise ValueError(f"{raw[:40]!r} is outside 1970-01-01 .. 9999-12-31 (UTC)")
    return value
