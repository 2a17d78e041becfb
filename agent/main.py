"""``apm-agent``: the command the Debian package installs (``python -m agent``). The same agent
as ``apm agent``, without the rest of the platform: ``run`` (the default; what the systemd
unit starts), ``check-config`` (validate the files, print the effective settings with secrets
masked, exit 2 on error; ``--ready``: something to push to, over TLS both sides accept),
``--once [--print]`` and ``--version``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from agent.cli import DEFAULT_CONFIG, config_path, serve
from agent.configfiles import SECRET_KEYS, unreadable_by
from agent.settings import AgentSettings, ConfigError, load_files, load_settings
from agent.version import VERSION

__all__ = ["check_config", "main"]

PROG = "apm-agent"
# check-config --ready: the exit code when the files are valid but say nowhere to push to, or
# the ingest and the agent do not accept each other's certificates.
NOT_READY = 3
# check-config --ready over https://: how long its one request to the ingest may take.
TLS_CHECK_TIMEOUT_S = 10.0
# The unit's User= (agent/install.py): check-config run as root names a file of the unit's
# config that this user cannot read.
SERVICE_USER = "apm-agent"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="The APM host agent: per-second host and StatsD metrics, spooled on disk "
        "and pushed to the ingest. Settings: --config (default /etc/apm/agent.toml) and its "
        "agent.d/*.toml fragments, then APM_AGENT_* env vars.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {VERSION}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    parser.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="TOML config")
    parser.add_argument("--once", action="store_true", help="collect one snapshot and exit")
    parser.add_argument(
        "--print", action="store_true", dest="print_only", help="with --once: print, do not push"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    run = verbs.add_parser("run", help="collect and push until stopped (the default)")
    run.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="TOML config")
    check = verbs.add_parser(
        "check-config", help="validate the config files and print the effective settings"
    )
    check.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="TOML config")
    check.add_argument(
        "--ready",
        action="store_true",
        help=f"also exit {NOT_READY} unless an ingest URL and an API key are configured and, "
        "for https://, the ingest and the agent accept each other's certificates",
    )
    return parser


def _shown(name: str, value: object) -> str:
    """A TOML value, or the mask for a secret."""
    if name in SECRET_KEYS:
        return '"********"' if value else '""'
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | list):
        return json.dumps(value)
    if isinstance(value, dict):  # an inline table: tags = { dc = "eu-1", role = "web" }
        inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(value.items()))
        return "{ " + inner + " }" if inner else "{}"
    return repr(value)


def check_config(config: Path | None, *, ready: bool, out: TextIO | None = None) -> int:
    """Prints the effective settings (TOML, secrets masked, each with where it came from);
    returns 0, 2 on an invalid config, or NOT_READY with ``ready`` and nothing to push to."""
    out = out or sys.stdout
    try:
        files = load_files(config) if config is not None else None
        settings = load_settings(config)
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    # Only the files the unit reads: a file given to --config elsewhere (Ansible's validate:
    # a root-only temporary copy) is checked for its contents alone.
    if files is not None and os.geteuid() == 0 and config == DEFAULT_CONFIG:
        blocked = unreadable_by(SERVICE_USER, files.files)
        if blocked is not None:
            print(
                f"{PROG}: {blocked}: the service's user {SERVICE_USER} cannot read it; "
                f"chown root:{SERVICE_USER} {blocked} && chmod 0640 {blocked}",
                file=sys.stderr,
            )
            return 2
    origin = files.origin if files is not None else {}
    read = ", ".join(str(p) for p in files.files) if files is not None else "none"
    print(f"# {PROG} {VERSION}; files read: {read}", file=out)
    print("[agent]", file=out)
    for name in AgentSettings.model_fields:
        if f"APM_AGENT_{name.upper()}" in os.environ:
            where = f"env APM_AGENT_{name.upper()}"
        elif name in origin:
            where = str(origin[name])
        else:
            where = "default"
        value = getattr(settings, name)
        if value is None:  # TOML has no null: an unset optional file is a comment
            print(f"# {name} is not set  # {where}", file=out)
            continue
        print(f"{name} = {_shown(name, value)}  # {where}", file=out)
    if ready:
        missing = [
            key
            for key in ("ingest_url", "api_key")
            if key not in settings.model_fields_set or not getattr(settings, key)
        ]
        if missing:
            print(f"{PROG}: not ready to push: {' and '.join(missing)} not set", file=sys.stderr)
            return NOT_READY
        if settings.ingest_url.startswith("https://"):
            return _tls_ready(settings)
    return 0


def _tls_ready(settings: AgentSettings) -> int:
    """``--ready`` over https://: one GET to the ingest. Any HTTP answer means TLS works; a
    certificate either side refuses is NOT_READY. An ingest that cannot be reached now is
    only noted: the agent spools until it can, so that is no reason not to start it."""
    import ssl
    from urllib.parse import urlsplit

    from agent.http import StdlibHttpClient
    from agent.tls import ClientTls, TlsRefused, describe_error

    netloc = urlsplit(settings.ingest_url).netloc
    client = StdlibHttpClient(ClientTls(settings.tls_files))
    try:
        client.get(settings.ingest_url, TLS_CHECK_TIMEOUT_S)
    except (ssl.SSLError, TlsRefused) as exc:
        print(f"{PROG}: not ready to push: {describe_error(exc, netloc)}", file=sys.stderr)
        return NOT_READY
    except OSError as exc:
        print(
            f"{PROG}: note: the ingest at {netloc} cannot be reached now ({exc}), so TLS was "
            "not checked; the agent keeps its samples on disk until it can",
            file=sys.stderr,
        )
    finally:
        client.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = config_path(args)
    if args.verb == "check-config":
        return check_config(config, ready=args.ready)
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if args.once:
        from agent.once import once

        return once(settings, print_only=args.print_only)
    return serve(settings, PROG)
