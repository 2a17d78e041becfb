"""Creating, editing, listing and deleting rules and silences: the one place the API, the CLI
and the dashboard go through, so all refuse the same input with the same errors and store
nothing on a refusal. Each change, once stored, is recorded by the rulebook's ``audit``
(:class:`apm.audit.Recorder`: the audit log, as the dashboard or ``apm alert``)."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from alerting.presence import META_RULE_ID
from alerting.rules import Rule, RuleError, rule_from_dict
from alerting.silences import Silence, silence_from_dict
from apm.audit import NO_AUDIT, Recorder
from apm.query import StoredQuery

__all__ = ["FIXED", "Rulebook"]

# What a rule watches: its alert's state and windows are of these, so an edit keeps them
# (docs/alerting.md, "Editing a rule"); to watch something else, delete it and create another.
FIXED = ("kind", "query_id", "function")


class Queries(Protocol):
    def get_query(self, query_id: str) -> StoredQuery | None: ...


class Tables(Protocol):
    def put_rule(self, rule_id: str, body: dict[str, Any], now: float) -> None: ...
    def update_rule(self, rule_id: str, body: dict[str, Any], now: float) -> bool: ...
    def delete_rule(self, rule_id: str) -> None: ...
    def rules(self) -> dict[str, dict[str, Any]]: ...
    def put_silence(self, silence_id: str, body: dict[str, Any], now: float) -> None: ...
    def delete_silence(self, silence_id: str) -> None: ...
    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]: ...
    def current(self) -> dict[tuple[str, str], dict[str, Any]]: ...


class Rulebook:
    def __init__(self, queries: Queries, tables: Tables, audit: Recorder = NO_AUDIT) -> None:
        self.queries, self.tables, self.audit = queries, tables, audit

    def validate(self, raw: Any, rule_id: str = "new") -> Rule:
        """The rule ``raw`` describes, checked against its stored query (which must exist and
        compute the function), or :class:`RuleError`."""
        rule = rule_from_dict(raw, rule_id=rule_id)
        if rule.kind == "server_silent":
            return rule
        stored = self.queries.get_query(rule.query_id)
        if stored is None:
            raise RuleError("query_id", f"no stored query {rule.query_id!r} (deleted?)")
        return rule_from_dict(
            raw, rule_id=rule_id, functions=tuple(f.key for f in stored.query.functions)
        )

    def create(self, raw: Any, now: float, rule_id: str | None = None) -> Rule:
        rule = self.validate(raw, rule_id or uuid.uuid4().hex[:16])
        body = {**rule.to_dict(), "created_at": now}
        self.tables.put_rule(rule.id, body, now)
        self.audit.record("alert_rule", rule.id, "create", None, body)
        return rule

    def update(self, rule_id: str, raw: Any, now: float) -> Rule | None:
        """Replaces rule ``rule_id`` by ``raw``, validated as :meth:`create` does; None if no
        such rule. What the rule watches (:data:`FIXED`) cannot change: a RuleError names it.
        The alert's state is the evaluator's and is kept: it goes on under the new rule."""
        old = self.tables.rules().get(rule_id)
        if old is None:
            return None
        rule = self.validate(raw, rule_id)
        new = rule.to_dict()
        for name in FIXED:
            if new[name] != old.get(name, "threshold" if name == "kind" else None):
                raise RuleError(
                    name,
                    f"an edit cannot change what a rule watches ({old.get(name)!r} to "
                    f"{new[name]!r}): delete the rule and create a new one",
                )
        body = {**new, "created_at": old.get("created_at", now), "updated_at": now}
        if not self.tables.update_rule(rule_id, body, now):
            return None
        self.audit.record("alert_rule", rule_id, "update", old, body)
        return rule

    def delete(self, rule_id: str) -> bool:
        old = self.tables.rules().get(rule_id)
        if old is None:
            return False
        self.tables.delete_rule(rule_id)
        self.audit.record("alert_rule", rule_id, "delete", old, None)
        return True

    def rules(self) -> list[dict[str, Any]]:
        """Each rule with its alert's newest state (per server for ``server_silent`` rules and
        rules on a ``BY server`` query, in ``instances``; a server taken as gone is there,
        ``normal``, with the reason), then the built-in freshness meta-alert's instances."""
        current = self.tables.current()
        instances: dict[str, dict[str, Any]] = {}
        for (rule_id, instance), row in current.items():
            if instance:
                instances.setdefault(rule_id, {})[instance] = row.get("latest")
        out = []
        for rule_id, body in sorted(self.tables.rules().items()):
            row = current.get((rule_id, ""), {})
            row = {} if row.get("gone") else row  # its query became BY server: see instances
            out.append(
                {
                    **body,
                    "id": rule_id,
                    "alert": row.get("latest"),
                    "notified": row.get("notified"),
                    "instances": instances.get(rule_id, {}),
                }
            )
        if META_RULE_ID in instances:
            meta = {"id": META_RULE_ID, "name": "apm freshness (built in)", "kind": "meta"}
            out.append({**meta, "alert": None, "instances": instances[META_RULE_ID]})
        return out

    def silence(self, raw: Any, now: float) -> Silence:
        s = silence_from_dict(raw, silence_id=uuid.uuid4().hex[:16])
        body = {**s.to_dict(), "created_at": now}
        self.tables.put_silence(s.id, body, now)
        self.audit.record("silence", s.id, "create", None, body)
        return s

    def unsilence(self, silence_id: str) -> bool:
        old = self.tables.silences().get(silence_id)
        if old is None:
            return False
        self.tables.delete_silence(silence_id)
        self.audit.record("silence", silence_id, "delete", old[0], None)
        return True

    def silences(self) -> list[dict[str, Any]]:
        return [
            {**body, "id": sid, "suppressed": suppressed}
            for sid, (body, suppressed) in sorted(self.tables.silences().items())
        ]
