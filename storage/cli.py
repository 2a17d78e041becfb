"""``apm storage migrate`` and ``apm query add|list|pause|resume|delete|results``
(``results --server NAME`` for one server's series of a ``BY server`` query).

Standard library only at top level: apm.cli imports this module for every command."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from datetime import UTC, datetime
from typing import Any

__all__ = ["parse_time", "register"]

# Exit codes: 0 ok, 1 not found or Cassandra unreachable, 2 bad input.
EXIT_NOT_FOUND, EXIT_BAD_INPUT = 1, 2


def parse_time(text: str, now: float | None = None) -> float:
    """``now``, epoch seconds (``1763800000``, ``1763800000.5``) or ISO-8601
    (``2025-11-22T10:00:00Z``; without an offset the time is UTC) -> float epoch seconds.
    Raises ValueError."""
    raw = text.strip()
    if raw.lower() == "now":
        return time.time() if now is None else now
    try:
        value = float(raw)
    except ValueError:
        pass
    else:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"time {text!r} must be epoch seconds >= 0 or ISO-8601")
        return value
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"time {text!r} is neither epoch seconds nor ISO-8601 (such as 2025-11-22T10:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _time_arg(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: argparse._SubParsersAction) -> None:
    storage = sub.add_parser(
        "storage",
        help="Cassandra schema of the platform",
        description="Schema management. Connection from APM_STORAGE_* "
        "(hosts, port, keyspace, retention_days, replication).",
    )
    verbs = storage.add_subparsers(dest="verb", required=True)
    migrate = verbs.add_parser(
        "migrate",
        help="create the keyspace and tables (idempotent) "
        "and align the results TTL with the retention",
    )
    migrate.add_argument("--keyspace", help="default: APM_STORAGE_KEYSPACE or apm")
    migrate.add_argument(
        "--retention-days", type=int, help="default: APM_STORAGE_RETENTION_DAYS or 30"
    )
    storage.set_defaults(func=_run_storage)

    query = sub.add_parser(
        "query",
        help="stored window queries and their results",
        description="Queries: FROM <servers> SELECT <metric> WINDOW "
        '<duration> COMPUTE <functions>, e.g. "FROM web-* SELECT cpu '
        'WINDOW 1m COMPUTE avg, p99".',
    )
    verbs = query.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add", help="store a query and print its id")
    add.add_argument("text", help="the query text (quote it)")
    listing = verbs.add_parser("list", help="every stored query, with its state and why")
    listing.add_argument("--active", action="store_true", help="leave paused queries out")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    for verb, what in (
        ("pause", "stop evaluating"),
        ("resume", "evaluate again"),
        ("delete", "delete (its results expire with the retention)"),
    ):
        verbs.add_parser(verb, help=f"{what} a query").add_argument("id")
    results = verbs.add_parser("results", help="a query's windows in [--from, --to)")
    results.add_argument("id")
    results.add_argument(
        "--from",
        dest="start",
        type=_time_arg,
        metavar="T",
        help="now, epoch seconds or ISO-8601 (default: an hour before --to)",
    )
    results.add_argument(
        "--to",
        dest="end",
        type=_time_arg,
        metavar="T",
        help="now, epoch seconds or ISO-8601, exclusive (default: now)",
    )
    results.add_argument("--server", help="a BY server query's series of this server")
    results.add_argument(
        "--resolution",
        help="10s, 1m, 1h: the query's own windows or one of its rollup tiers "
        "(docs/storage.md, 'Rollup tiers'); default: its windows",
    )
    results.add_argument(
        "--series", metavar="KEY=VALUE", help="a BY <tag> query's series of this group (dc=eu-1)"
    )
    results.add_argument("--json", action="store_true", help="one JSON object per line")
    query.set_defaults(func=_run_query)


def _fail(message: str, code: int) -> int:
    print(f"apm: {message}", file=sys.stderr)
    return code


def _connect() -> Any:
    from storage.repository import Repository

    return Repository.connect()


def _guarded(action: Any) -> int:
    """Runs ``action`` turning the expected failures into a message and an exit code."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable
    from pydantic import ValidationError

    from apm.query import QueryError

    try:
        return int(action())
    except QueryError as exc:
        return _fail(f"bad query: {exc}", EXIT_BAD_INPUT)
    except ValidationError as exc:
        return _fail(f"bad APM_STORAGE_* setting: {exc}", EXIT_BAD_INPUT)
    except KeyError as exc:
        return _fail(f"no query with id {exc} (see `apm query list`)", EXIT_NOT_FOUND)
    except (NoHostAvailable, DriverException, LookupError) as exc:
        return _fail(f"storage unavailable: {exc}", EXIT_NOT_FOUND)


def _run_storage(args: argparse.Namespace) -> int:
    def action() -> int:
        from storage.repository import open_cluster
        from storage.schema import migrate
        from storage.settings import StorageSettings

        overrides = {
            k: v
            for k, v in (("keyspace", args.keyspace), ("retention_days", args.retention_days))
            if v is not None
        }
        settings = StorageSettings(**overrides)
        cluster = open_cluster(settings)
        try:
            changes = migrate(
                cluster.connect(),
                settings.keyspace,
                settings.retention_days,
                settings.replication,
                settings.tier_ttl_s,
            )
        finally:
            cluster.shutdown()
        for change in changes:
            print(f"created/changed: {change}")
        print(
            f"keyspace {settings.keyspace} is up to date (retention {settings.retention_days} days)"
        )
        return 0

    return _guarded(action)


def _row(stored: Any, state: Any = None) -> dict[str, Any]:
    """One query as JSON; ``state`` is its apm.query_state.QueryState."""
    return {
        "id": stored.id,
        "paused": stored.paused,
        "text": stored.text,
        "created_at": stored.created_at.isoformat() if stored.created_at else None,
        "updated_at": stored.updated_at.isoformat() if stored.updated_at else None,
        "state": None if state is None else state.state,
        "reason": None if state is None else state.reason,
    }


def _run_query(args: argparse.Namespace) -> int:
    def action() -> int:
        if args.verb == "add":
            from apm.query import accept

            accept(args.text)  # bad text fails fast, before (and without) a connection
        with _connect() as repo:
            from storage.audit_log import AuditedQueries, command_log

            # Each change is recorded in the audit log, as made by this OS user.
            audited = AuditedQueries(repo, command_log(repo, "apm query"))
            return _QUERY_VERBS[args.verb](audited, args)

    return _guarded(action)


def _add(repo: Any, args: argparse.Namespace) -> int:
    print(repo.save_query(args.text).id)
    return 0


def _list(repo: Any, args: argparse.Namespace) -> int:
    """Each query with its state and why (apm.query_state, as the dashboard shows them)."""
    from apm.query_state import STATES, query_states

    queries = repo.list_queries(include_paused=not args.active)
    if not queries:
        return 0
    got = query_states(
        queries,
        now=time.time(),
        status=repo.get_status(),
        metrics_seen=repo.list_metrics(),
        last_result_at=repo.last_result_at,
    )
    width = max(map(len, STATES))
    for stored in queries:
        state = got[stored.id][0]
        if args.json:
            print(json.dumps(_row(stored, state)))
        else:
            print(f"{stored.id}  {state.state:<{width}}  {stored.text}\n    {state.reason}")
    return 0


def _set_state(repo: Any, args: argparse.Namespace) -> int:
    try:
        if args.verb == "delete":
            if not repo.delete_query(args.id):
                raise KeyError(args.id)
        else:
            repo.set_paused(args.id, args.verb == "pause")
    except KeyError:
        return _fail(f"no query with id {args.id!r} (see `apm query list`)", EXIT_NOT_FOUND)
    print(f"{args.verb}d {args.id}" if args.verb != "pause" else f"paused {args.id}")
    return 0


def _results(repo: Any, args: argparse.Namespace) -> int:
    from apm.model import server_name_error
    from apm.query_select import group_label_error

    end = args.end if args.end is not None else time.time()
    start = args.start if args.start is not None else end - 3600
    if start >= end:
        return _fail(f"--from ({start}) must be before --to ({end})", EXIT_BAD_INPUT)
    if args.server is not None and (err := server_name_error(args.server)) is not None:
        return _fail(f"--server: {err}", EXIT_BAD_INPUT)
    if args.series is not None:
        if args.server is not None:
            return _fail("give --server or --series, not both", EXIT_BAD_INPUT)
        if (err := group_label_error(args.series)) is not None:
            return _fail(f"--series: {err}", EXIT_BAD_INPUT)
        args.server = args.series  # a group's series is stored where a server's is
    stored = repo.get_query(args.id)
    if args.server is None and stored is not None and stored.query.group_by:
        groups = repo.list_result_servers(args.id, start, end)
        listed = ", ".join(groups[:20]) + (f" ... ({len(groups)} in all)" if groups[20:] else "")
        by = ", ".join(stored.query.group_by)
        return _fail(
            f"query {args.id} has one series per group (BY {by}): give --series KEY=VALUE "
            f"(groups with results on those days: {listed or 'none yet'})",
            EXIT_BAD_INPUT,
        )
    if args.server is None and stored is not None and stored.query.by_server:
        servers = repo.list_result_servers(args.id, start, end)
        listed = ", ".join(servers[:20]) + (f" ... ({len(servers)} in all)" if servers[20:] else "")
        return _fail(
            f"query {args.id} has one series per server (BY server): give --server NAME "
            f"(servers with results on those days: {listed or 'none yet'})",
            EXIT_BAD_INPUT,
        )

    tier, shown = _tier(args, stored)
    if isinstance(shown, int):
        return shown

    def read() -> Any:
        if args.server is None:
            return repo.read_results(args.id, start, end, tier=tier)
        return repo.read_server_results(args.id, args.server, start, end)

    print(f"showing {shown}", file=sys.stderr)

    if stored is None and next(iter(read()), None) is None:
        return _fail(f"no query with id {args.id!r} (see `apm query list`)", EXIT_NOT_FOUND)
    for row in read():
        if args.json:
            keys = ("window_start", "window_seconds", "values", "samples", "updated_at")
            tiered = {"tier": tier} if tier else {}
            print(json.dumps({k: getattr(row, k) for k in keys} | _server_key(row) | tiered))
        else:
            stamp = datetime.fromtimestamp(row.window_start, UTC).isoformat()
            values = " ".join(f"{k}={v:g}" for k, v in row.values.items())
            print(f"{stamp}  n={row.samples}  {values}")
    return 0


def _tier(args: argparse.Namespace, stored: Any) -> tuple[str | None, str | int]:
    """(the tier to read or None for the windows, what is shown) or (None, an exit code)."""
    from apm.query import format_duration
    from apm.tiers import TIERS, parse_resolution, tier_name, tiers_of

    if args.resolution is None:
        return None, "the query's windows (results)"
    try:
        seconds = parse_resolution(args.resolution)
    except ValueError as exc:
        return None, _fail(f"--resolution: {exc}", EXIT_BAD_INPUT)
    if stored is None:
        return None, _fail(f"no query with id {args.id!r} (see `apm query list`)", EXIT_NOT_FOUND)
    own = stored.query.window_seconds
    if seconds == own:
        return None, f"the query's {format_duration(own)} windows (results)"
    kept = tiers_of(own)
    tier = tier_name(seconds)
    if tier is None or tier not in kept or args.server is not None:
        has = ", ".join([format_duration(own), *kept])
        why = (
            "per-server and per-group series have no tiers yet; " if args.server is not None else ""
        )
        return None, _fail(
            f"--resolution {args.resolution}: {why}query {args.id} has {has}", EXIT_BAD_INPUT
        )
    return tier, f"the {tier} rollup tier ({TIERS[tier]} s rows from merged windows)"


def _server_key(row: Any) -> dict[str, str]:
    if not row.server:
        return {}
    return {"series" if "=" in row.server else "server": row.server}


_QUERY_VERBS = {
    "add": _add,
    "list": _list,
    "pause": _set_state,
    "resume": _set_state,
    "delete": _set_state,
    "results": _results,
}
