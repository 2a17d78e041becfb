"""``apm dashboard serve`` and ``apm dashboard hash-password``. Standard library only at the top
level: Dash, Flask and the Cassandra driver load inside the handlers."""

from __future__ import annotations

import argparse
import getpass
import sys

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("dashboard", help="the web dashboard (queries, charts, health)")
    cmds = parser.add_subparsers(dest="dashboard_command", required=True, metavar="ACTION")
    serve = cmds.add_parser("serve", help="run the dashboard in the foreground")
    serve.add_argument("--host", help="listen address (APM_DASHBOARD_HOST)")
    serve.add_argument("--port", type=int, help="listen port (APM_DASHBOARD_PORT)")
    serve.set_defaults(func=_serve)
    hashing = cmds.add_parser("hash-password", help="print a hash for APM_DASHBOARD_PASSWORD_HASH")
    hashing.add_argument("--stdin", action="store_true", help="read the password from stdin")
    hashing.set_defaults(func=_hash)


def _serve(args: argparse.Namespace) -> int:
    from dashboard.serve import run

    return run(host=args.host, port=args.port)


def _hash(args: argparse.Namespace) -> int:
    from werkzeug.security import generate_password_hash

    password = sys.stdin.readline().rstrip("\n") if args.stdin else getpass.getpass("Password: ")
    if not password:
        print("apm dashboard: the password is empty", file=sys.stderr)
        return 2
    print(generate_password_hash(password))
    return 0
