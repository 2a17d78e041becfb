"""``apm loadgen``: a synthetic fleet pushed through the ingest contract (or straight to Kafka).

Only the standard library (and apm.model, which uses only it) is imported here; numpy, httpx
and Kafka load inside the handler.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from apm.model import TOPIC_PARTITIONS

__all__ = ["register"]

# CLI flag -> LoadgenSettings field, for the flags that override settings when given.
_FIELDS = {
    "servers": "servers",
    "metrics": "metrics",
    "seed": "seed",
    "target": "target",
    "api_key": "api_key",
    "concurrency": "concurrency",
    "servers_per_request": "servers_per_request",
    "silent_fraction": "silent_fraction",
    "kafka_bootstrap": "kafka_bootstrap",
    "partitions": "topic_partitions",
    "gzip_level": "gzip_level",
    "replay_seconds": "replay_seconds",
    "retry_deadline": "retry_deadline_s",
    "metric_prefix": "metric_prefix",
    "tls_ca": "tls_ca",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "loadgen",
        help="simulate a fleet of servers pushing metrics",
        description="Simulates N servers x M metrics, one snapshot per server per second, "
        "with seed-deterministic value processes, and sends them to the ingest "
        "(POST /v1/metrics, gzip, Bearer key) or, with --direct-kafka, straight to the metric "
        "topics. Progress goes to stderr; a JSON summary to stdout. Every flag defaults to "
        "its APM_LOADGEN_* env var. Exit code 1 when any sample was not accepted.",
    )
    p.add_argument("--servers", type=int, help="fleet size (default 200)")
    p.add_argument("--metrics", type=int, help="metrics per server (default 20)")
    p.add_argument("--duration", help="seconds of fleet time: 90, 30s, 5m, 1h (default 60s)")
    p.add_argument(
        "--target", help="ingest base URL or full endpoint (default http://127.0.0.1:8080)"
    )
    p.add_argument("--api-key", help="Bearer key (or APM_LOADGEN_API_KEY)")
    p.add_argument(
        "--tls-ca",
        type=Path,
        metavar="PEM",
        help="CA bundle an https:// target is verified against instead of the system store",
    )
    p.add_argument("--seed", type=int, help="random seed (default 42)")
    p.add_argument(
        "--start",
        help="backfill from this second as fast as possible: epoch "
        "seconds, ISO 8601 with zone, or -10m; omitted: real time, 1 snapshot/s",
    )
    p.add_argument("--concurrency", type=int, help="requests in flight (default 16)")
    p.add_argument("--servers-per-request", type=int, help="snapshots per request (default 100)")
    p.add_argument(
        "--silent-fraction",
        type=float,
        help="share of servers that go silent now and then (default 0.02)",
    )
    p.add_argument("--metric-prefix", help="prepended to every metric name (own topics)")
    p.add_argument("--gzip-level", type=int, help="0 = plain JSON, 1-9 gzip (default 1)")
    p.add_argument(
        "--replay-seconds",
        type=int,
        help="generate N seconds once and replay them with fresh timestamps, reusing their "
        "encoded requests: a cheap load (memory: N seconds of request bodies; the truth "
        "follows the values sent). Default 0: generate every second",
    )
    p.add_argument(
        "--retry-deadline",
        type=float,
        help="seconds a request keeps retrying 503s and refused connections",
    )
    p.add_argument(
        "--direct-kafka",
        action="store_true",
        help="write encoded records to Kafka instead of the ingest",
    )
    p.add_argument(
        "--kafka-bootstrap",
        help="with --direct-kafka (default APM_LOADGEN_KAFKA_BOOTSTRAP, else APM_KAFKA_BOOTSTRAP)",
    )
    p.add_argument(
        "--partitions",
        type=int,
        help="partitions of topics it creates (default: "
        f"apm.model.TOPIC_PARTITIONS ({TOPIC_PARTITIONS}), sized by volume)",
    )
    p.add_argument("--dry-run", action="store_true", help="generate only, send nothing")
    p.add_argument("--query", help="stored-query text whose truth --expect writes")
    p.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="write the exact per-window aggregates of --query as JSON",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=_run)


def _settings(args: argparse.Namespace) -> Any:
    from loadgen.settings import LoadgenSettings, parse_duration, parse_start

    given = {
        field: getattr(args, flag)
        for flag, field in _FIELDS.items()
        if getattr(args, flag) is not None
    }
    if args.duration is not None:
        given["duration_s"] = parse_duration(args.duration)
    if args.start is not None:
        given["start"] = parse_start(args.start)
    if args.direct_kafka:
        given["direct_kafka"] = True
    return LoadgenSettings(**given)


def _run(args: argparse.Namespace) -> int:
    import logging

    from pydantic import ValidationError

    # httpx logs every request at INFO: thousands of lines a minute that bury the progress line.
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from apm.query import QueryError, parse
    from loadgen.runner import run_load
    from loadgen.truth import write_truth

    if (args.expect is None) != (args.query is None):
        print("apm loadgen: --expect and --query go together", file=sys.stderr)
        return 2
    try:
        settings = _settings(args)
        queries = [parse(args.query)] if args.query else []
    except QueryError as exc:
        print(f"apm loadgen: bad --query: {exc} (expected {exc.expected})", file=sys.stderr)
        return 2
    except (ValueError, ValidationError) as exc:
        print(f"apm loadgen: {exc}", file=sys.stderr)
        return 2

    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        result = run_load(
            settings, queries=queries, stop=stop, dry_run=args.dry_run, progress=not args.quiet
        )
    except ValueError as exc:  # a query this fleet cannot answer
        print(f"apm loadgen: {exc}", file=sys.stderr)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if args.expect is not None:
        doc = write_truth(result.truths[0], args.expect)
        result.summary["expect"] = {"file": str(args.expect), "windows": len(doc["windows"])}
    print(json.dumps(result.summary, indent=1))
    return 0 if result.lost == 0 and not result.summary["errors"] else 1
