"""The one ``apm`` command. Each component registers its own subcommands, imported lazily so
that ``apm agent`` never loads Kafka, Spark or Dash."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

__all__ = ["main"]

# Each module exposes register(subparsers) and imports only the standard library at top level.
COMPONENT_CLIS = (
    "launch.stack.cli",
    "launch.cluster.cli",
    "agent.cli",
    "ingest.cli",
    "aggregator.cli",
    "storage.cli",
    "dashboard.cli",
    "dashboard.user_cli",
    "dashboard.token_cli",
    "dashboard.audit_cli",
    "loadgen.cli",
    "alerting.cli",
    "launch.run",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apm", description="APM metrics platform")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMPONENT_CLIS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # this install leaves the component out
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
