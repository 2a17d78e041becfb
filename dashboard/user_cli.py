"""``apm user add|list|set-role|disable|enable``: the dashboard's users and their roles
(docs/security.md, Users and roles), in the Cassandra keyspace of ``APM_STORAGE_*``.

Standard library only at top level: apm.cli imports this module for every command.
Exit codes (:mod:`dashboard.cli_runner`): 0 ok, 1 no such user, a user that exists or
Cassandra unreachable, 2 bad input."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any

from dashboard.cli_runner import EXIT_BAD_INPUT, iso, refuse, run_on_storage

__all__ = ["directories", "register"]


def register(sub: argparse._SubParsersAction) -> None:
    user = sub.add_parser(
        "user",
        help="the dashboard's users and their roles (viewer, editor, admin)",
        description="Users of the dashboard and the Prometheus read API. Roles: viewer reads "
        "everything; editor also changes queries, dashboards, alert rules, silences and share "
        "links; admin also manages users. Connection from APM_STORAGE_*.",
    )
    verbs = user.add_subparsers(dest="verb", required=True, metavar="ACTION")
    add = verbs.add_parser("add", help="add a user (the password is asked, or read from stdin)")
    add.add_argument("name")
    add.add_argument("--role", required=True, help="viewer, editor or admin")
    add.add_argument(
        "--stdin", action="store_true", help="read the password from the first line of stdin"
    )
    verbs.add_parser("list", help="every user with its role and whether it is disabled")
    set_role = verbs.add_parser("set-role", help="change a user's role (open sessions follow)")
    set_role.add_argument("name")
    set_role.add_argument("role", help="viewer, editor or admin")
    disable = verbs.add_parser("disable", help="refuse a user's logins and end its sessions")
    disable.add_argument("name")
    enable = verbs.add_parser("enable", help="let a disabled user sign in again")
    enable.add_argument("name")
    user.set_defaults(func=_run)


def _password(args: argparse.Namespace) -> str | None:
    if args.stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password for {args.name}: ")
    if getpass.getpass("Again: ") != first:
        print("apm user: the passwords differ", file=sys.stderr)
        return None
    return first


def _act(directory: Any, args: argparse.Namespace, password: str | None) -> int:
    if args.verb == "add":
        directory.add(args.name, args.role, password or "")
        print(f"added {args.name} ({args.role})")
    elif args.verb == "list":
        rows = [
            {
                "name": u.name,
                "role": u.role,
                "disabled": u.disabled,
                "created_at": iso(u.created_at),
                "updated_at": iso(u.updated_at),
            }
            for u in directory.list()
        ]
        print(json.dumps(rows, indent=2))
    elif args.verb == "set-role":
        directory.set_role(args.name, args.role)
        print(f"{args.name} is now {args.role}")
    else:
        directory.set_disabled(args.name, args.verb == "disable")
        print(f"{args.name} is {args.verb}d")
    return 0


def _run(args: argparse.Namespace) -> int:
    from dashboard.roles import parse_role
    from dashboard.users import name_error

    # Bad input fails before (and without) a connection.
    role = getattr(args, "role", None)
    problem = (name_error(args.name) if hasattr(args, "name") else None) or (
        _role_error(parse_role, role) if role is not None else None
    )
    if problem:
        return refuse("apm user", problem)
    password = _password(args) if args.verb == "add" else None
    if args.verb == "add" and password is None:
        return EXIT_BAD_INPUT
    return run_on_storage(
        "apm user", lambda repo: _act(directories(repo, "apm user")[0], args, password)
    )


def _role_error(parse: Any, role: str) -> str | None:
    try:
        parse(role)
    except ValueError as exc:
        return str(exc)
    return None


def directories(repo: Any, command: str) -> tuple[Any, Any]:
    """The users and the API tokens over ``repo``'s keyspace (their tables created if
    missing), as the dashboard builds them (:mod:`dashboard.signin`), their changes recorded
    in the audit log as made by ``command`` run by this OS user on this host."""
    from dashboard.signin import tokens_for, users_for
    from dashboard.telemetry import DashboardTelemetry
    from storage.audit_log import command_log

    telemetry = DashboardTelemetry()
    users = users_for(repo, telemetry)
    people, tokens = users(), tokens_for(repo, telemetry, users)()
    trail = command_log(repo, command)
    for directory in (people, tokens):
        if directory is not None:
            directory.audit = trail
    return people, tokens
