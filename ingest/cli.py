"""``apm ingest [serve]`` runs the service; ``apm ingest keygen`` makes an API key;
``apm ingest tags [SERVER ...]`` prints servers' host tags from their compacted topic.
Standard library only at top level: the heavy imports happen inside the handlers."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

    from ingest.settings import IngestSettings

__all__ = ["register", "tls_context_factory"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "ingest",
        help="the ingest HTTP service (default verb: serve)",
        description="Serve POST /v1/metrics, or make an API key. Settings come from "
        "APM_INGEST_* env vars; options given here win.",
    )
    _serve_options(parser)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    _serve_options(verbs.add_parser("serve", help="run the service (the default)"))
    keygen = verbs.add_parser("keygen", help="print a new API key and its key-file line")
    keygen.add_argument("--label", default="", help="a note kept at the end of the line")
    keygen.add_argument(
        "--append",
        type=Path,
        metavar="KEYS_FILE",
        help="also append the line to this key file (created 0600)",
    )
    tags = verbs.add_parser(
        "tags", help="print servers' host tags as the apm.server-tags topic holds them"
    )
    tags.add_argument("servers", nargs="*", metavar="SERVER", help="only these (default: all)")
    tags.add_argument("--kafka-bootstrap", default=argparse.SUPPRESS)
    parser.set_defaults(func=_run)


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=argparse.SUPPRESS)
    parser.add_argument("--keys-file", type=Path, default=argparse.SUPPRESS)
    parser.add_argument("--kafka-bootstrap", default=argparse.SUPPRESS)


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "verb", None) == "keygen":
        return _keygen(args)
    if getattr(args, "verb", None) == "tags":
        return _tags(args)
    return _serve(args)


def _tags(args: argparse.Namespace) -> int:
    """One JSON line per server, sorted: {"server", "tags", "ts"}; 1 if a SERVER asked for
    has no tags there."""
    import json

    from apm.tags import read_server_tags
    from ingest.settings import IngestSettings

    bootstrap = getattr(args, "kafka_bootstrap", None) or IngestSettings().kafka_bootstrap
    wanted = set(args.servers) if args.servers else None
    found = read_server_tags(bootstrap, wanted)
    for server in sorted(found):
        tags, ts = found[server]
        print(json.dumps({"server": server, "tags": tags, "ts": ts}, ensure_ascii=False))
    missing = sorted((wanted or set()) - set(found))
    for server in missing:
        print(f"apm ingest tags: no tags for server {server!r}", file=sys.stderr)
    return 1 if missing else 0


def _keygen(args: argparse.Namespace) -> int:
    from ingest.auth import append_line, hash_line, new_key

    key, _ = new_key()
    line = hash_line(key, args.label)
    if args.append:
        append_line(args.append, line)
        print(f"appended to {args.append}", file=sys.stderr)
    print(f"key:  {key}")
    print(f"line: {line}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from pydantic import ValidationError

    from apm.settings import refusals
    from ingest.app import create_app
    from ingest.auth import KeyFileError
    from ingest.settings import IngestSettings

    overrides = {
        k: getattr(args, k)
        for k in ("host", "port", "keys_file", "kafka_bootstrap")
        if hasattr(args, k)
    }
    try:
        settings = IngestSettings(**overrides)
    except ValidationError as exc:  # a refused setting, e.g. a TLS file: named, exit 2
        print(refusals("apm ingest", "APM_INGEST_", exc), file=sys.stderr)
        return 2
    try:
        app = create_app(settings)
    except KeyFileError as exc:
        print(f"apm ingest: {exc}", file=sys.stderr)
        return 2
    # uvicorn handles SIGTERM: it stops accepting, lets in-flight requests finish (each
    # waits for its Kafka acks, at most publish_timeout_s), then runs the lifespan shutdown
    # that flushes and closes the producer, at most close_timeout_s whether Kafka answers or
    # not (ingest.publisher). Rounded up: a fraction must not become 0.
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_level="info",
        lifespan="on",
        timeout_graceful_shutdown=math.ceil(settings.shutdown_timeout_s),
        ssl_context_factory=tls_context_factory(settings),
    )
    uvicorn.Server(config).run()
    return 0


def tls_context_factory(settings: IngestSettings) -> Callable[..., ssl.SSLContext] | None:
    """uvicorn's hook for its SSLContext: ours, which a watcher thread reloads in place
    (apm.tls), instead of the one uvicorn would build once from file names."""
    from apm.tls import serving_context

    context = serving_context(
        settings.tls_cert, settings.tls_key, settings.tls_client_ca, settings.tls_reload_s
    )
    return None if context is None else lambda _config, _default: context
