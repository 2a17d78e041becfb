"""``apm agent``: run the agent, ``--once --print`` to check a host, ``install`` for systemd.
Only the standard library is imported here; the agent itself is imported by the handlers."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.settings import AgentSettings

__all__ = ["DEFAULT_CONFIG", "config_path", "register", "serve"]

DEFAULT_CONFIG = Path("/etc/apm/agent.toml")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "agent",
        help="the host agent: per-second host and StatsD metrics",
        description="Collects host metrics every second and StatsD traffic, spools them on "
        "disk and pushes them to the ingest. Settings: TOML (--config), then APM_AGENT_* env.",
    )
    _common(parser)
    parser.add_argument(
        "--once", action="store_true", help="collect one snapshot (over one second) and exit"
    )
    parser.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="with --once: print the snapshot as JSON instead of pushing it",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    run = verbs.add_parser("run", help="collect and push until stopped (the default)")
    _common(run)
    inst = verbs.add_parser("install", help="write the systemd unit and a TOML config")
    inst.add_argument("--unit-dir", type=Path, default=Path("/etc/systemd/system"))
    inst.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    inst.add_argument("--spool-dir", type=Path, default=Path("/var/lib/apm-agent/spool"))
    inst.add_argument("--ingest-url", default="http://127.0.0.1:8080/v1/metrics")
    inst.add_argument("--api-key", default="")
    inst.add_argument("--force", action="store_true", help="overwrite an existing config")
    inst.add_argument(
        "--enable", action="store_true", help="also run systemctl daemon-reload and enable --now"
    )
    parser.set_defaults(func=_run)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        help=f"TOML config (default: $APM_AGENT_CONFIG, else {DEFAULT_CONFIG} if it exists)",
    )


def config_path(args: argparse.Namespace) -> Path | None:
    given = getattr(args, "config", None) or os.environ.get("APM_AGENT_CONFIG")
    if given:
        return Path(given)
    return DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None


def _run(args: argparse.Namespace) -> int:
    if args.verb == "install":
        return _install(args)
    from agent.settings import ConfigError, load_settings

    try:
        settings = load_settings(config_path(args))
    except ConfigError as exc:
        print(f"apm agent: {exc}", file=sys.stderr)
        return 2
    if args.once:
        from agent.once import once

        return once(settings, print_only=args.print_only)
    return serve(settings)


def serve(settings: AgentSettings, prog: str = "apm agent") -> int:
    import signal

    from agent.runner import Agent

    try:
        agent = Agent(settings)
    except (OSError, ValueError) as exc:
        print(f"{prog}: cannot start: {exc}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: agent.stop_event.set())
    signal.signal(signal.SIGINT, lambda *_: agent.stop_event.set())
    try:
        agent.run()
    except OSError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    return 0


def _install(args: argparse.Namespace) -> int:
    from agent.install import InstallPlan, install

    plan = InstallPlan(
        unit_dir=args.unit_dir,
        config=args.config,
        spool_dir=args.spool_dir,
        ingest_url=args.ingest_url,
        api_key=args.api_key,
        manage_user=os.geteuid() == 0,  # as root: create the service's user, give it the config
    )
    try:
        for line in install(plan, force=args.force, enable=args.enable):
            print(line)
    except (OSError, RuntimeError) as exc:
        print(f"apm agent install: {exc}", file=sys.stderr)
        return 1
    return 0
