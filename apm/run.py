"""``apm run``: the whole platform on this machine, started in dependency order and stopped
together on Ctrl-C or ``apm run --down``. Each component adds itself to PLATFORM as it lands."""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="start the engines and the platform (foreground)")
    parser.add_argument("--down", action="store_true", help="stop what a previous run started")
    parser.add_argument("--detach", action="store_true", help="start everything and return")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from apm.stack import control
    from apm.stack.config import StackSettings
    from apm.stack.jars import FetchError
    from apm.stack.supervisor import StartError

    settings = StackSettings()
    if args.down:
        control.down(settings)
        return 0
    try:
        rows = control.up(settings)
    except (StartError, FetchError) as exc:
        print(f"apm run: {exc}", file=sys.stderr)
        return 1
    print("The platform's engines are up:")
    for row in rows:
        print(f"  {row.name:<10} pid {row.pid}  ports {', '.join(map(str, row.ports))}  "
              f"log {row.log}")
    if args.detach:
        return 0
    print("Ctrl-C stops everything.", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        control.down(settings)
    return 0
