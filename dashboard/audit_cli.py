"""``apm audit``: the audit log (docs/security.md, Audit), newest first, read from the
Cassandra keyspace of ``APM_STORAGE_*`` with the filters of ``GET /api/audit``. One JSON
object a line (``--json``: one document with the cursor of the next page).

Standard library only at top level: apm.cli imports this module for every command.
Exit codes (:mod:`dashboard.cli_runner`): 0 ok (also when nothing matched), 1 Cassandra
unreachable, 2 bad input."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dashboard.cli_runner import refuse, run_on_storage

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    audit = sub.add_parser(
        "audit",
        help="who changed what: the audit log, newest first",
        description="Every change to queries, dashboards, share links, alert rules, "
        "silences, users and tokens: who, from where, when, and the object before and after. "
        "Connection from APM_STORAGE_*; as GET /api/audit reads it.",
    )
    audit.add_argument(
        "--kind", help="query, dashboard, share_link, alert_rule, silence, user or token"
    )
    audit.add_argument("--id", dest="object_id", help="only this object's changes")
    audit.add_argument("--user", help="only the changes this user (or actor) made")
    audit.add_argument("--limit", default="100", help="at most this many (1 to 1000; 100)")
    audit.add_argument("--cursor", help="go on from here (the next of a --json page)")
    audit.add_argument(
        "--json",
        action="store_true",
        help='one document {"entries": [...], "next": cursor or null}',
    )
    audit.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from dashboard.audit_read import BadParam, parse_cursor, parse_filter, parse_limit

    try:  # bad input fails before (and without) a connection
        keep = parse_filter(args.kind, args.object_id, args.user)
        limit, cursor = parse_limit(args.limit), parse_cursor(args.cursor)
    except BadParam as exc:
        return refuse("apm audit", f"--{exc}")
    return run_on_storage("apm audit", lambda repo: _show(repo, keep, cursor, limit, args.json))


def _show(repo: Any, keep: Any, cursor: Any, limit: int, whole: bool) -> int:
    import time

    from dashboard.audit import audit_store_for
    from dashboard.audit_read import format_cursor, read_page, row_json
    from dashboard.guard import guarded
    from dashboard.telemetry import DashboardTelemetry

    store = audit_store_for(repo)

    def page() -> tuple[list[Any], Any]:
        got = store()
        return read_page(got, keep, cursor, limit, time.time(), got.retention_days)

    rows, after = guarded(DashboardTelemetry(), "audit_read", page)
    entries = [row_json(r) for r in rows]
    if whole:
        following = None if after is None else format_cursor(after)
        print(json.dumps({"entries": entries, "next": following}, indent=2))
    else:
        for entry in entries:
            print(json.dumps(entry, ensure_ascii=False))
    return 0
