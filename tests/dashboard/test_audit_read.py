"""Reading the audit log (dashboard/audit_read.py) over the in-memory stand-in of its table:
the filters, the limit and the cursor refuse bad text with a BadParam naming it (hypothesis:
any text either parses or is refused, a cursor round-trips), and paging returns every row
that passes the filters exactly once, newest first, whatever the page size, with each page's
reads bounded."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.audit import KINDS
from dashboard.audit_read import (
    MAX_DAYS_PER_PAGE,
    MAX_LIMIT,
    AuditFilter,
    BadParam,
    Cursor,
    format_cursor,
    parse_cursor,
    parse_filter,
    parse_limit,
    read_page,
)
from storage.audit import AuditRow, day_of, new_at
from tests.support.audit import MemoryAudit

pytestmark = pytest.mark.unit

NOW = 1_764_400_000.0  # 2025-11-29


def _row(ts: float, kind: str = "query", object_id: str = "q1", actor: str = "alice") -> AuditRow:
    return AuditRow(
        new_at(ts), actor, "session", "127.0.0.1", kind, object_id, "update", None, "{}"
    )


@given(st.text(max_size=80))
def test_any_cursor_text_parses_or_is_refused_by_name(text: str) -> None:
    try:
        cursor = parse_cursor(text)
    except BadParam as exc:
        assert exc.param == "cursor"
        return
    assert cursor is None if text == "" else format_cursor(cursor) == text  # type: ignore[arg-type]


@given(st.dates(), st.one_of(st.none(), st.floats(0, 4e9)))
def test_a_cursor_round_trips(day: date, ts: float | None) -> None:
    cursor = Cursor(day, None if ts is None else new_at(ts))
    assert parse_cursor(format_cursor(cursor)) == cursor


def test_a_cursor_names_a_real_day_and_a_time_uuid() -> None:
    for bad in ("2025-02-30", "2025-11-29~" + uuid.uuid4().hex, "x", "2025-11-29~", " 2025-11-29"):
        with pytest.raises(BadParam, match="cursor"):
            parse_cursor(bad)


@given(st.one_of(st.none(), st.text(max_size=12)))
def test_any_limit_text_parses_or_is_refused_by_name(text: str | None) -> None:
    try:
        limit = parse_limit(text)
    except BadParam as exc:
        assert exc.param == "limit" and "1 to 1000" in str(exc)
        return
    assert 1 <= limit <= MAX_LIMIT
    assert limit == (100 if not text else int(text))


@given(st.text(max_size=30), st.text(max_size=300), st.text(max_size=300))
@settings(max_examples=200)
def test_any_filter_text_parses_or_is_refused_by_name(kind: str, oid: str, user: str) -> None:
    try:
        keep = parse_filter(kind, oid, user)
    except BadParam as exc:
        assert exc.param in ("kind", "id", "user")
        return
    assert keep.kind in (None, *KINDS) and keep.kind == (kind or None)
    assert keep.object_id == (oid or None) and keep.user == (user or None)
    assert len(oid) <= 200 and len(user) <= 200


def _walk(store: MemoryAudit, keep: AuditFilter, limit: int, now: float) -> list[list[AuditRow]]:
    pages, cursor = [], None
    for _ in range(10_000):
        rows, cursor = read_page(store, keep, cursor, limit, now, store.retention_days)
        assert len(rows) <= limit
        pages.append(rows)
        if cursor is None:
            return pages
    raise AssertionError("the cursor never ended")


@given(
    st.lists(
        st.tuples(st.integers(0, 20 * 86_400), st.sampled_from(["query", "user"])), max_size=60
    ),
    st.integers(1, 7),
    st.sampled_from([None, "query", "user"]),
)
@settings(max_examples=60, deadline=None)
def test_paging_returns_every_kept_row_once_newest_first(
    ages: list[tuple[int, str]], limit: int, kind: str | None
) -> None:
    store = MemoryAudit(retention_days=30)
    rows = [_row(NOW - age, k, f"id-{i}") for i, (age, k) in enumerate(ages)]
    for row in rows:
        store.add(row)
    keep = AuditFilter(kind=kind)
    seen = [r for page in _walk(store, keep, limit, NOW) for r in page]
    wanted = sorted((r for r in rows if keep.keeps(r)), key=lambda r: (r.at.time, r.at.bytes))
    assert seen == wanted[::-1]


def test_filters_by_object_and_by_user() -> None:
    store = MemoryAudit()
    for i in range(6):
        store.add(_row(NOW - i, "query", f"q{i % 2}", "alice" if i < 3 else "bob"))
    (rows, _), (mine, _) = (
        read_page(store, AuditFilter(object_id="q1"), None, 10, NOW, 30),
        read_page(store, AuditFilter(user="bob", kind="query"), None, 10, NOW, 30),
    )
    assert [r.object_id for r in rows] == ["q1"] * 3
    assert [r.actor for r in mine] == ["bob"] * 3


def test_a_page_reads_a_bounded_number_of_days_and_says_where_to_go_on() -> None:
    store = MemoryAudit(retention_days=400)
    old = _row(NOW - 300 * 86_400)
    store.add(old)
    rows, cursor = read_page(store, AuditFilter(), None, 10, NOW, 400)
    assert rows == [] and cursor == Cursor(day_of(NOW) - timedelta(days=MAX_DAYS_PER_PAGE), None)
    assert store.reads == MAX_DAYS_PER_PAGE
    assert [r for page in _walk(store, AuditFilter(), 10, NOW) for r in page] == [old]


def test_past_the_retention_there_is_nothing_and_a_future_cursor_starts_now() -> None:
    store = MemoryAudit(retention_days=5)
    store.add(_row(NOW - 10 * 86_400))
    recent = _row(NOW - 60)
    store.add(recent)
    assert read_page(store, AuditFilter(), None, 10, NOW, 5) == ([recent], None)
    future = Cursor(date(9999, 12, 31), new_at(NOW))
    assert read_page(store, AuditFilter(), future, 10, NOW, 5) == ([recent], None)
