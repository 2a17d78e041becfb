"""Alerting's tables: rules, silences, each alert's durable state, the per-window history and
the notification outbox. Their own migration (created on first use, idempotent), so that the
results schema and the processes that only read results are untouched by them.

Every write is keyed so that a replay rewrites the same row: history by (rule, day, window,
instance), the state by (rule, instance), outbox entries by a deterministic id. Bodies are
JSON text written and read by ``alerting`` (this module does not interpret them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from storage.driver import execute_many, profile_for
from storage.schema import BUCKET_SECONDS
from storage.settings import keyspace_error

__all__ = ["ALERT_TABLES", "AlertStore", "HistoryRow", "OutboxRow", "migrate_alerts"]

ALERT_TABLES = ("alert_rules", "alert_silences", "alert_current", "alert_history", "alert_outbox")


def _ddl(ks: str, ttl_s: int) -> dict[str, str]:
    return {
        "alert_rules": f"CREATE TABLE IF NOT EXISTS {ks}.alert_rules "
        "(id text PRIMARY KEY, body text, updated_at timestamp)",
        "alert_silences": f"CREATE TABLE IF NOT EXISTS {ks}.alert_silences "
        "(id text PRIMARY KEY, body text, suppressed text, updated_at timestamp)",
        # One row per alert instance: the checkpoint the evaluator refolds from, the states of
        # the windows still open to late data, and what was last notified.
        "alert_current": f"CREATE TABLE IF NOT EXISTS {ks}.alert_current "
        "(rule_id text, instance text, body text, PRIMARY KEY ((rule_id), instance))",
        # A day bucket bounds a partition (8,640 rows a day for 10 s windows), as for results.
        "alert_history": f"""CREATE TABLE IF NOT EXISTS {ks}.alert_history (
            rule_id text, bucket int, window_start timestamp, instance text,
            state text, changed boolean, body text,
            PRIMARY KEY ((rule_id, bucket), window_start, instance))
            WITH CLUSTERING ORDER BY (window_start DESC, instance ASC)
            AND default_time_to_live = {ttl_s}""",
        "alert_outbox": f"CREATE TABLE IF NOT EXISTS {ks}.alert_outbox "
        "(receiver text, id text, body text, PRIMARY KEY ((receiver), id))",
    }


def migrate_alerts(session: Any, keyspace: str, retention_days: int = 30) -> None:
    """Creates the alerting tables that are missing (the keyspace must exist)."""
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    for ddl in _ddl(keyspace, retention_days * 86_400).values():
        session.execute(ddl)


@dataclass(frozen=True)
class HistoryRow:
    rule_id: str
    window_start: float
    instance: str
    state: str
    changed: bool  # the state differs from the previous window's
    body: dict[str, Any]


@dataclass(frozen=True)
class OutboxRow:
    receiver: str
    id: str
    body: dict[str, Any]


def _ms(ts: float) -> int:
    return round(ts * 1000)


def _epoch(value: Any) -> float:
    # The driver gives naive UTC datetimes for timestamps.
    import calendar

    return calendar.timegm(value.utctimetuple()) + value.microsecond / 1e6


class AlertStore:
    """The alerting tables of ``keyspace`` on ``session`` (created if missing)."""

    def __init__(self, session: Any, keyspace: str, *, concurrency: int = 64) -> None:
        migrate_alerts(session, keyspace)
        self.session, self.ks, self.concurrency = session, keyspace, concurrency
        self.profile = profile_for(session)
        ks, prep = keyspace, session.prepare
        self._put_rule = prep(
            f"INSERT INTO {ks}.alert_rules (id, body, updated_at) VALUES (?, ?, ?)"
        )
        self._del_rule = prep(f"DELETE FROM {ks}.alert_rules WHERE id = ?")
        self._rules = prep(f"SELECT id, body FROM {ks}.alert_rules")
        self._put_silence = prep(
            f"INSERT INTO {ks}.alert_silences (id, body, updated_at) VALUES (?, ?, ?)"
        )
        self._suppress = prep(f"UPDATE {ks}.alert_silences SET suppressed = ? WHERE id = ?")
        self._del_silence = prep(f"DELETE FROM {ks}.alert_silences WHERE id = ?")
        self._silences = prep(f"SELECT id, body, suppressed FROM {ks}.alert_silences")
        self._put_current = prep(
            f"INSERT INTO {ks}.alert_current (rule_id, instance, body) VALUES (?, ?, ?)"
        )
        self._current = prep(f"SELECT rule_id, instance, body FROM {ks}.alert_current")
        self._del_current = prep(f"DELETE FROM {ks}.alert_current WHERE rule_id = ?")
        self._put_history = prep(
            f"INSERT INTO {ks}.alert_history (rule_id, bucket, window_start, instance, state, "
            "changed, body) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        self._history = prep(
            f"SELECT window_start, instance, state, changed, body FROM {ks}.alert_history "
            "WHERE rule_id = ? AND bucket = ? AND window_start >= ? AND window_start < ?"
        )
        self._put_outbox = prep(
            f"INSERT INTO {ks}.alert_outbox (receiver, id, body) VALUES (?, ?, ?)"
        )
        self._outbox = prep(f"SELECT id, body FROM {ks}.alert_outbox WHERE receiver = ? LIMIT ?")
        self._del_outbox = prep(f"DELETE FROM {ks}.alert_outbox WHERE receiver = ? AND id = ?")
        for stmt in (self._put_rule, self._put_silence, self._put_current, self._put_history):
            stmt.is_idempotent = True
        for stmt in (self._put_outbox, self._del_outbox, self._suppress):
            stmt.is_idempotent = True

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    def _many(self, stmt: Any, params: list[tuple[Any, ...]]) -> None:
        if params:
            groups = [[p] for p in params]
            execute_many(
                self.session, stmt, groups, concurrency=self.concurrency, profile=self.profile
            )

    # -- rules and silences: JSON documents by id -------------------------------------------
    def _put_document(self, stmt: Any, doc_id: str, body: dict[str, Any], now: float) -> None:
        self._run(stmt, (doc_id, json.dumps(body), _ms(now)))

    def _documents(self, stmt: Any) -> Iterator[tuple[str, dict[str, Any], tuple[Any, ...]]]:
        """(id, body, the row's further columns) of each document (a half-written row, with
        no body yet, is passed over)."""
        for row in self._run(stmt, ()):
            if row[1] is not None:
                yield row[0], json.loads(row[1]), tuple(row[2:])

    def put_rule(self, rule_id: str, body: dict[str, Any], now: float) -> None:
        self._put_document(self._put_rule, rule_id, body, now)

    def update_rule(self, rule_id: str, body: dict[str, Any], now: float) -> bool:
        """Replaces the body of a stored rule; False (nothing written) if there is none. A
        lightweight transaction (IF EXISTS), so an edit of a rule deleted since it was read
        does not bring it back. Prepared on first use: edits are rare."""
        stmt = getattr(self, "_update_rule", None)
        if stmt is None:
            stmt = self._update_rule = self.session.prepare(
                f"UPDATE {self.ks}.alert_rules SET body = ?, updated_at = ? WHERE id = ? IF EXISTS"
            )
        return bool(self._run(stmt, (json.dumps(body), _ms(now), rule_id)).was_applied)

    def delete_rule(self, rule_id: str) -> None:
        # Its alert rows stay until the evaluator has enqueued their resolutions (it then
        # calls delete_current), even if it was down when the rule was deleted.
        self._run(self._del_rule, (rule_id,))

    def delete_current(self, rule_id: str) -> None:
        self._run(self._del_current, (rule_id,))

    def rules(self) -> dict[str, dict[str, Any]]:
        return {doc_id: body for doc_id, body, _ in self._documents(self._rules)}

    def put_silence(self, silence_id: str, body: dict[str, Any], now: float) -> None:
        self._put_document(self._put_silence, silence_id, body, now)

    def delete_silence(self, silence_id: str) -> None:
        self._run(self._del_silence, (silence_id,))

    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]:
        """id -> (body, what it suppressed)."""
        return {
            doc_id: (body, json.loads(suppressed or "[]"))
            for doc_id, body, (suppressed,) in self._documents(self._silences)
        }

    def set_suppressed(self, silence_id: str, suppressed: list[Any]) -> None:
        self._run(self._suppress, (json.dumps(suppressed), silence_id))

    # -- state and history ----------------------------------------------------------------
    def current(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r[0], r[1]): json.loads(r[2]) for r in self._run(self._current, ())}

    def put_current(self, rows: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self._many(self._put_current, [(r, i, json.dumps(b)) for r, i, b in rows])

    def put_history(self, rows: Iterable[HistoryRow]) -> None:
        """Rows of one partition (rule, day) go as one unlogged batch (storage.driver)."""
        groups: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for h in rows:
            bucket = int(h.window_start // BUCKET_SECONDS)
            groups.setdefault((h.rule_id, bucket), []).append(
                (
                    h.rule_id,
                    bucket,
                    _ms(h.window_start),
                    h.instance,
                    h.state,
                    h.changed,
                    json.dumps(h.body),
                )
            )
        if groups:
            execute_many(
                self.session,
                self._put_history,
                list(groups.values()),
                concurrency=self.concurrency,
                profile=self.profile,
            )

    def history(self, rule_id: str, start: float, end: float) -> Iterator[HistoryRow]:
        """The rows of ``[start, end)``, oldest first."""
        for bucket in range(int(start // BUCKET_SECONDS), int(end // BUCKET_SECONDS) + 1):
            rows = list(self._run(self._history, (rule_id, bucket, _ms(start), _ms(end))))
            for ws, instance, state, changed, body in reversed(rows):
                yield HistoryRow(rule_id, _epoch(ws), instance, state, changed, json.loads(body))

    # -- outbox ---------------------------------------------------------------------------
    def enqueue(self, rows: Iterable[OutboxRow]) -> None:
        self._many(self._put_outbox, [(r.receiver, r.id, json.dumps(r.body)) for r in rows])

    def pending(self, receiver: str, limit: int = 500) -> list[OutboxRow]:
        return [
            OutboxRow(receiver, row[0], json.loads(row[1]))
            for row in self._run(self._outbox, (receiver, limit))
        ]

    def delivered(self, receiver: str, ids: Iterable[str]) -> None:
        self._many(self._del_outbox, [(receiver, i) for i in ids])
