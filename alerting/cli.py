"""``apm alert run|rules|add|edit|delete|history|silence|silences|unsilence|test-notify``.

Standard library only at top level: apm.cli imports this module for every command.
Exit codes: 0 ok, 1 not found or a receiver/Cassandra failed, 2 bad input."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

__all__ = ["register"]

EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "alert",
        help="alert rules, silences, history and the evaluator (docs/alerting.md)",
        description="Alerting. Settings from APM_ALERTING_* and APM_STORAGE_*.",
    )
    cmds = parser.add_subparsers(dest="alert_command", required=True, metavar="ACTION")
    cmds.add_parser("run", help="run the evaluator in the foreground").set_defaults(func=_run)
    cmds.add_parser("rules", help="list rules with their alert's state").set_defaults(func=_rules)
    add = cmds.add_parser("add", help="add a rule from JSON (see docs/alerting.md)")
    add.add_argument("rule", help="the rule as JSON, or - to read it from stdin")
    add.set_defaults(func=_add)
    edit = cmds.add_parser(
        "edit", help="replace a rule by JSON (its kind, query_id and function stay)"
    )
    edit.add_argument("rule_id")
    edit.add_argument("rule", help="the whole rule as JSON, or - to read it from stdin")
    edit.set_defaults(func=_edit)
    delete = cmds.add_parser("delete", help="delete a rule")
    delete.add_argument("rule_id")
    delete.set_defaults(func=_delete)
    history = cmds.add_parser("history", help="a rule's state per window")
    history.add_argument("rule_id")
    history.add_argument("--since", type=float, default=3600, help="seconds back (3600)")
    history.add_argument("--changes", action="store_true", help="only the transitions")
    history.set_defaults(func=_history)
    silence = cmds.add_parser("silence", help="add a silence from JSON")
    silence.add_argument("silence", help="the silence as JSON, or - for stdin")
    silence.set_defaults(func=_silence)
    cmds.add_parser("silences", help="list silences and what they suppressed").set_defaults(
        func=_silences
    )
    unsilence = cmds.add_parser("unsilence", help="delete a silence")
    unsilence.add_argument("silence_id")
    unsilence.set_defaults(func=_unsilence)
    test = cmds.add_parser("test-notify", help="send a test notification to each receiver")
    test.add_argument("--receiver", help="only this one: alertmanager, webhook or email")
    test.set_defaults(func=_test_notify)


def _json(text: str) -> Any:
    return json.loads(sys.stdin.read() if text == "-" else text)


def _print(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


def _book() -> Any:
    from alerting.rulebook import Rulebook
    from storage.alerts import AlertStore
    from storage.audit_log import command_log
    from storage.repository import Repository

    repo = Repository.connect()
    # Each change is recorded in the audit log, as made by this OS user with `apm alert`.
    return Rulebook(repo, AlertStore(repo.session, repo.keyspace), command_log(repo, "apm alert"))


def _settings() -> Any:
    """``AlertingSettings`` from the environment, or None after saying which variable is wrong
    (a receiver URL that is not http(s), or points at the platform itself)."""
    from pydantic import ValidationError

    from alerting.settings import AlertingSettings

    try:
        return AlertingSettings()
    except ValidationError as exc:
        for err in exc.errors():
            name = "APM_ALERTING_" + ".".join(map(str, err["loc"])).upper()
            print(f"apm alert: {name}: {err['msg']}", file=sys.stderr)
        return None


def _run(args: argparse.Namespace) -> int:
    from alerting.service import run

    settings = _settings()
    return EXIT_BAD_INPUT if settings is None else run(settings)


def _rules(args: argparse.Namespace) -> int:
    _print(_book().rules())
    return 0


def _refused(exc: Exception) -> int:
    at = getattr(exc, "at", None)
    print(f"apm alert: {at + ': ' if at else ''}{getattr(exc, 'detail', exc)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _add(args: argparse.Namespace) -> int:
    from alerting.rules import RuleError

    try:
        rule = _book().create(_json(args.rule), time.time())
    except (RuleError, json.JSONDecodeError) as exc:
        return _refused(exc)
    _print(rule.to_dict())
    return 0


def _edit(args: argparse.Namespace) -> int:
    from alerting.rules import RuleError

    try:
        rule = _book().update(args.rule_id, _json(args.rule), time.time())
    except (RuleError, json.JSONDecodeError) as exc:
        return _refused(exc)
    if rule is None:
        print(f"apm alert: no rule {args.rule_id!r}", file=sys.stderr)
        return EXIT_FAILED
    _print(rule.to_dict())
    return 0


def _delete(args: argparse.Namespace) -> int:
    if not _book().delete(args.rule_id):
        print(f"apm alert: no rule {args.rule_id!r}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _history(args: argparse.Namespace) -> int:
    book, now = _book(), time.time()
    for row in book.tables.history(args.rule_id, now - args.since, now):
        if row.changed or not args.changes:
            b = row.body
            print(f"{row.window_start:.0f}\t{row.state}\t{b.get('value')}\t{b.get('reason')}")
    return 0


def _silence(args: argparse.Namespace) -> int:
    from alerting.silences import SilenceError

    try:
        silence = _book().silence(_json(args.silence), time.time())
    except (SilenceError, json.JSONDecodeError) as exc:
        return _refused(exc)
    _print(silence.to_dict())
    return 0


def _silences(args: argparse.Namespace) -> int:
    _print(_book().silences())
    return 0


def _unsilence(args: argparse.Namespace) -> int:
    if not _book().unsilence(args.silence_id):
        print(f"apm alert: no silence {args.silence_id!r}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _test_notify(args: argparse.Namespace) -> int:
    from alerting.senders import describe
    from alerting.service import senders_for, test_notice

    settings = _settings()
    if settings is None:
        return EXIT_BAD_INPUT
    senders = [s for s in senders_for(settings) if args.receiver in (None, s.name)]
    if not senders:
        print(
            "apm alert: no receiver configured (APM_ALERTING_*); under `make run`: "
            "APM_ALERTING_ALERTMANAGER_URL=http://127.0.0.1:9095 apm alert test-notify",
            file=sys.stderr,
        )
        return EXIT_FAILED
    failed = 0
    for sender in senders:
        try:
            sender.send([test_notice(time.time())], time.time())
            print(f"{sender.name}: delivered")
        except Exception as exc:
            failed += 1
            print(f"{sender.name}: FAILED: {describe(exc)}", file=sys.stderr)
    return EXIT_FAILED if failed else 0
