"""Recording the audit log (storage/audit_log.py) over the in-memory stand-in of its table:
a state past the bound is kept as its head, still JSON; a row the table refuses is handed to
``failed`` by kind and never raised to the writer; and the queries' wrapper records a change
only once the repository returned, with nothing for a change that did not happen (a resume
of an active query, a delete of nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import StoredQuery, parse
from storage.audit_log import (
    MAX_STATE_CHARS,
    Actor,
    AuditedQueries,
    AuditLog,
    bounded_json,
    command_actor,
)
from tests.support.audit import MemoryAudit

pytestmark = pytest.mark.unit

WHO = Actor("alice", "session", "10.0.0.1")


@given(st.text(max_size=3 * MAX_STATE_CHARS), st.integers(0, 5000))
@settings(max_examples=50, deadline=None)
def test_any_state_is_json_within_the_bound(text: str, repeat: int) -> None:
    value = {"name": text, "panels": [text[:50]] * repeat}
    kept = bounded_json(value) or ""
    assert len(kept) <= MAX_STATE_CHARS
    doc = json.loads(kept)
    assert doc == value or (doc["truncated"] is True and doc["chars"] > MAX_STATE_CHARS)


def test_a_state_past_the_bound_is_kept_as_its_head() -> None:
    assert bounded_json(None) is None
    assert json.loads(bounded_json({"a": [1, 2]}) or "") == {"a": [1, 2]}
    big = {"panels": ["x" * 100] * 1000}
    kept = bounded_json(big) or ""
    assert MAX_STATE_CHARS - 1000 < len(kept) <= MAX_STATE_CHARS
    doc = json.loads(kept)
    assert doc["truncated"] is True and doc["chars"] > MAX_STATE_CHARS
    assert doc["head"].startswith('{"panels": ["xxx')


def test_a_row_the_table_refuses_is_counted_not_raised(caplog: Any) -> None:
    class Broken:
        def add(self, row: Any) -> None:
            raise RuntimeError("a bug in the table")

    failed: list[str] = []
    AuditLog(lambda: Broken(), lambda: WHO, failed=failed.append).record(
        "query", "q1", "create", None, {"text": "x"}
    )
    assert failed == ["query"]
    assert "audit: could not record create query q1" in caplog.text


def test_a_row_names_who_from_where_and_what() -> None:
    store = MemoryAudit()
    AuditLog(lambda: store, lambda: WHO, lambda: 1_700_000_000.0).record(
        "alert_rule", "r1", "update", {"for_s": 30}, {"for_s": 60}
    )
    ((row,),) = store.rows.values()
    assert (row.actor, row.via, row.address, row.kind, row.object_id, row.action) == (
        "alice", "session", "10.0.0.1", "alert_rule", "r1", "update",
    )  # fmt: skip
    assert json.loads(row.before or "") == {"for_s": 30} and row.ts == pytest.approx(1.7e9)
    me = command_actor("apm user")
    assert me.via == "apm user" and me.address.startswith("local (") and me.name


class _Queries:
    """A repository's query writes, as the real one answers them."""

    def __init__(self) -> None:
        self.queries: dict[str, StoredQuery] = {}
        self.session = "the session"

    def save_query(self, text: str) -> StoredQuery:
        made = StoredQuery(id=f"q{len(self.queries)}", query=parse(text))
        self.queries[made.id] = made
        return made

    def get_query(self, query_id: str) -> StoredQuery | None:
        return self.queries.get(query_id)

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        if query_id not in self.queries:
            raise KeyError(query_id)
        from dataclasses import replace

        self.queries[query_id] = replace(self.queries[query_id], paused=paused)
        return self.queries[query_id]

    def delete_query(self, query_id: str) -> bool:
        return self.queries.pop(query_id, None) is not None


def test_the_queries_wrapper_records_only_what_happened() -> None:
    store = MemoryAudit()
    trail = AuditLog(lambda: store, lambda: WHO)
    repo = AuditedQueries(_Queries(), trail)
    assert repo.session == "the session"  # the rest of the repository passes through
    qid = repo.save_query("FROM * SELECT cpu WINDOW 10s COMPUTE avg").id
    repo.set_paused(qid, False)  # already active: nothing changed, nothing recorded
    repo.set_paused(qid, True)
    with pytest.raises(KeyError):
        repo.set_paused("nope", True)
    assert repo.delete_query(qid) and not repo.delete_query(qid)
    rows = sorted((r for day in store.rows.values() for r in day), key=lambda r: r.at.time)
    assert [r.action for r in rows] == ["create", "pause", "delete"]
    assert json.loads(rows[1].before or "")["paused"] is False
    assert json.loads(rows[1].after or "")["paused"] is True and rows[2].after is None
