"""``apm cluster up|down|status``: the multi-node layout on this machine (docs/deploy.md)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "cluster",
        help="run the multi-node cluster on this machine (3 Kafka, 3 Cassandra, Spark)",
        description="Start, stop and inspect the multi-node cluster: 3 Kafka KRaft nodes, a "
        "3-node Cassandra ring on 127.0.0.21-23, a Spark standalone master and 2 workers, "
        "then the platform on them. State under var/cluster/; addresses, ports and heaps "
        "from APM_CLUSTER_* env vars; jars from the stack's cache (APM_STACK_JAR_CACHE).",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser(
        "up", help="start every node and wait until healthy (idempotent; progress on stderr)"
    )
    verbs.add_parser("down", help="stop the platform, then the engines (bounded)")
    verbs.add_parser(
        "status",
        help="pid, health and resident memory of each node, and their sum against the budget",
    )
    parser.set_defaults(func=_run)


def _print_status(rows, budget_gib: float) -> bool:
    from launch.cluster.control import GIB, rss_total

    for row in rows:
        health = "healthy" if row.healthy else ("unhealthy" if row.pid else "stopped")
        rss = f"{row.rss_bytes / 2**20:.0f}MiB"
        print(f"{row.name:<16} pid={row.pid or '-':<8} {health:<9} rss={rss:<8} log={row.log}")
    total = rss_total(rows) / GIB
    fits = total <= budget_gib
    print(f"{'total':<16} rss={total:.2f}GiB of {budget_gib:g}GiB {'ok' if fits else 'OVER'}")
    return fits and all(row.healthy for row in rows)


def _run(args: argparse.Namespace) -> int:
    from launch.cluster import control
    from launch.cluster.layout import ClusterLayout
    from launch.supervisor import StartError

    layout = ClusterLayout()
    try:
        if args.verb == "up":
            return 0 if _print_status(control.up(layout), layout.rss_budget_gib) else 1
        if args.verb == "down":
            control.down(layout)
            return 0
        return 0 if _print_status(control.status(layout), layout.rss_budget_gib) else 3
    except (StartError, RuntimeError, OSError) as exc:
        print(f"apm cluster {args.verb}: {exc}", file=sys.stderr)
        return 1
