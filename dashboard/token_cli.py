"""``apm token create|list|revoke``: API tokens of the dashboard's users (docs/security.md, API
tokens), in the Cassandra keyspace of ``APM_STORAGE_*``. ``create`` prints the token once: it
is stored only as a digest.

Standard library only at top level: apm.cli imports this module for every command.
Exit codes (:mod:`dashboard.cli_runner`): 0 ok, 1 no such user or token or Cassandra
unreachable, 2 bad input."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dashboard.cli_runner import iso, refuse, run_on_storage

__all__ = ["register"]


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


def _act(tokens: Any, args: argparse.Namespace, expires_s: float | None) -> int:
    if args.verb == "create":
        secret, row = tokens.create(args.user, args.role, expires_s, args.label)
        print(secret)
        print(
            f"token {row.id} for {row.user} ({row.role}), expires {iso(row.expires_at) or 'never'}"
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
                "created_at": iso(t.created_at),
                "expires_at": iso(t.expires_at),
                "revoked_at": iso(t.revoked_at),
                "last_used_at": iso(t.last_used_at),
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
    from dashboard.api_tokens import parse_expiry
    from dashboard.user_cli import directories

    try:
        # Bad input fails before (and without) a connection.
        expires_s = parse_expiry(args.expires) if args.verb == "create" else None
    except ValueError as exc:
        return refuse("apm token", str(exc))
    return run_on_storage(
        "apm token", lambda repo: _act(directories(repo, "apm token")[1], args, expires_s)
    )
