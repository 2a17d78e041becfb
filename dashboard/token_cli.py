"""``apm token create|list|revoke``: API tokens of the dashboard's users (docs/security.md, API
tokens), in the Cassandra keyspace of ``APM_STORAGE_*``. ``create`` prints the token once: it
is stored only as a digest.

Standard library only at top level: apm.cli imports this module for every command.
Exit codes: 0 ok, 1 no such user or token or Cassandra unreachable, 2 bad input."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["register"]

EXIT_NOT_FOUND, EXIT_BAD_INPUT = 1, 2


def register(sub: argparse._SubParsersAction) -> None:
    token = sub.add_parser(
        "token",
        help="API tokens of the dashboard's users (Bearer, or a Grafana data source)",
        description="A token acts for its user with a role at most the user's. Connection "
        "from APM_STORAGE_*.",
    )
    verbs = token.add_subparsers(dest="verb", required=True, metavar="ACTION")
    create = verbs.add_parser("create", help="make a token and print it (once)")
    create.add_argument("--user", required=True, help="a user of apm user")
    create.add_argument("--role", help="viewer, editor or admin; default: the user's role")
    create.add_argument(
        "--expires", default="90d", help="30d, 12h, 2w, 90m, or never (default 90d)"
    )
    create.add_argument("--label", default="", help="what it is for, e.g. grafana")
    listing = verbs.add_parser("list", help="every token: user, role, label, expiry, last use")
    listing.add_argument("--user", help="only this user's")
    revoke = verbs.add_parser("revoke", help="stop a token at once (apm token list: its id)")
    revoke.add_argument("id")
    token.set_defaults(func=_run)


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def _act(tokens: Any, args: argparse.Namespace, expires_s: float | None) -> int:
    if args.verb == "create":
        secret, row = tokens.create(args.user, args.role, expires_s, args.label)
        print(secret)
        print(
            f"token {row.id} for {row.user} ({row.role}), expires {_iso(row.expires_at) or 'never'}"
            ": shown only now",
            file=sys.stderr,
        )
    elif args.verb == "list":
        rows = [
            {
                "id": t.id,
                "user": t.user,
                "role": t.role,
                "label": t.label,
                "created_at": _iso(t.created_at),
                "expires_at": _iso(t.expires_at),
                "revoked_at": _iso(t.revoked_at),
                "last_used_at": _iso(t.last_used_at),
            }
            for t in tokens.list()
            if args.user in (None, t.user)
        ]
        print(json.dumps(rows, indent=2))
    else:
        tokens.revoke(args.id)
        print(f"token {args.id} is revoked")
    return 0


def _run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from dashboard.api_tokens import parse_expiry
    from dashboard.guard import StorageUnavailable
    from dashboard.user_cli import connect, directories
    from dashboard.users import UserConflict, UserError

    try:
        # Bad input fails before (and without) a connection.
        expires_s = parse_expiry(args.expires) if args.verb == "create" else None
    except ValueError as exc:
        print(f"apm token: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with connect() as repo:
            return _act(directories(repo)[1], args, expires_s)
    except (UserConflict, StorageUnavailable) as exc:  # before UserError: it is one
        problem, code = str(exc), EXIT_NOT_FOUND
    except UserError as exc:
        problem, code = str(exc), EXIT_BAD_INPUT
    except ValidationError as exc:
        problem, code = f"bad APM_STORAGE_* setting: {exc}", EXIT_BAD_INPUT
    print(f"apm token: {problem}", file=sys.stderr)
    return code
