"""``apm stack ...`` subcommands."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "stack",
        help="run the local Kafka + Cassandra engines",
        description="Fetch, start, stop and inspect the local engines. "
        "Ports and heaps come from APM_STACK_* env vars.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser(
        "fetch",
        help="resolve the engines' jars and build the aggregator's JVM operator, through Maven "
        "(idempotent)",
    )
    verbs.add_parser(
        "jars",
        help="print the jars `apm aggregator run` needs, comma-separated, for "
        "APM_AGGREGATOR_JARS (fetches them when missing)",
    )
    verbs.add_parser("up", help="start Kafka and Cassandra and wait until healthy (idempotent)")
    verbs.add_parser("down", help="stop the engines")
    verbs.add_parser("status", help="pid, ports and health of each engine")
    parser.set_defaults(func=_run)


def _print_status(rows) -> bool:
    for row in rows:
        health = "healthy" if row.healthy else ("unhealthy" if row.pid else "stopped")
        ports = ",".join(str(p) for p in row.ports)
        print(f"{row.name:<10} pid={row.pid or '-':<8} ports={ports:<16} {health:<9} log={row.log}")
    return all(row.healthy for row in rows)


def _run(args: argparse.Namespace) -> int:
    from launch.stack import control
    from launch.stack.config import StackSettings
    from launch.stack.jars import FetchError, aggregator_jar, fetch, spark_jars
    from launch.supervisor import StartError

    settings = StackSettings()
    try:
        if args.verb == "fetch":
            fetch(settings)
            print(f"jars: aggregator operator {aggregator_jar(settings)}", file=sys.stderr)
            return 0
        if args.verb == "jars":
            print(",".join(spark_jars(settings)))
            return 0
        if args.verb == "up":
            return 0 if _print_status(control.up(settings)) else 1
        if args.verb == "down":
            control.down(settings)
            return 0
        return 0 if _print_status(control.status(settings)) else 3
    except (StartError, FetchError) as exc:
        print(f"apm stack {args.verb}: {exc}", file=sys.stderr)
        return 1
