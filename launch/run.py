"""``apm run`` (``make run``): the engines, then the whole platform on this machine.

Order: Kafka + Cassandra -> schema -> ingest -> aggregator -> dashboard -> this host's agent ->
a synthetic fleet of about 200 servers -> example queries -> an example dashboard over them.
Every process has a pid file and a log under ``var/run/``; Ctrl-C, ``apm run --down`` or
``make down`` stop them all.

While attached, ``apm run`` supervises its components: one found dead is started again after
a backoff (:mod:`launch.restarts`), each exit and restart logged. Stopping is bounded: SIGTERM
to every component, one shared grace of STOP_GRACE_S, then SIGKILL to what still runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from launch.restarts import Component, Restarter

if TYPE_CHECKING:
    from launch.processes import ProcessSpec
    from launch.stack.config import StackSettings
    from launch.supervisor import ManagedProcess

__all__ = ["EXAMPLE_QUERIES", "register"]

INGEST_PORT = 8080
DASHBOARD_PORT = 8050
AGGREGATOR_METRICS_PORT = 9102
ALERTING_METRICS_PORT = 9107
# Not Alertmanager's usual 9093: the Kafka controller listens there (launch/stack/config.py).
ALERTMANAGER_PORT = 9095
FLEET_SERVERS = 200
FLEET_METRICS = 10
# Longer than the ingest's own drain budget (APM_INGEST_SHUTDOWN_TIMEOUT_S, 30 s by default).
STOP_GRACE_S = 40.0
DOWN_MARKER = "down"  # written by `apm run --down` first: the attached run must not restart


def _example_queries(host: str) -> list[str]:
    return [
        "FROM * SELECT cpu.util WINDOW 10s COMPUTE min, max, avg, p99",
        "FROM web-* SELECT rpc.latency.max WINDOW 10s COMPUTE max, p50, p95, p99",
        "FROM api-*, db-* SELECT rpc.count WINDOW 1m COMPUTE sum, avg, count",
        f"FROM {host} SELECT cpu.util WINDOW 5s COMPUTE min, max, avg",
        f"FROM {host} SELECT mem.util WINDOW 10s COMPUTE min, max, avg",
        # The fleet's CPU per server, and its 10 busiest servers each window (issue 26).
        "FROM * SELECT cpu.util WINDOW 10s COMPUTE avg BY server",
        "FROM * SELECT cpu.util WINDOW 10s COMPUTE avg, max, p99 BY server TOP 10 BY avg",
    ]


EXAMPLE_QUERIES = _example_queries("<this host>")


def _platform(home: Path, bootstrap: str = "", key: str = "") -> dict[str, ProcessSpec]:
    """The platform's processes, in the order `--down` stops them. Their markers do not depend
    on the bootstrap or the key, so `--down` and the attach loop build this table without."""
    from launch import processes
    from launch.alertmanager import BINARY

    ingest_url = processes.ingest_url(INGEST_PORT)
    am_url = f"http://127.0.0.1:{ALERTMANAGER_PORT}" if BINARY else ""
    specs = [
        processes.alerting(ALERTING_METRICS_PORT, alertmanager_url=am_url),
        processes.loadgen(
            ingest_url, key, servers=FLEET_SERVERS, metrics=FLEET_METRICS, extra_args=("--quiet",)
        ),
        processes.agent(f"{ingest_url}/v1/metrics", key, home / "agent" / "spool"),
        processes.dashboard(
            DASHBOARD_PORT,
            env={
                "APM_DASHBOARD_INGEST_METRICS_URLS": f"{ingest_url}/metrics",
                # Its test-notify (POST /api/alerts/test-notify) reaches the evaluator's receivers.
                **processes.alerting_receivers(am_url),
            },
        ),
        processes.aggregator(
            home / "aggregator" / "checkpoint", metrics_port=AGGREGATOR_METRICS_PORT
        ),
        processes.ingest(INGEST_PORT, home / "ingest.keys", bootstrap),
    ]
    if BINARY:  # Debian's prometheus-alertmanager (make debs), when installed
        specs.insert(1, processes.alertmanager(home / "alertmanager", ALERTMANAGER_PORT))
    return {spec.name: spec for spec in specs}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "run", help="start the engines and the whole platform", description=__doc__
    )
    parser.add_argument("--down", action="store_true", help="stop the platform and the engines")
    parser.add_argument(
        "--detach",
        action="store_true",
        help="start everything and return instead of waiting for Ctrl-C",
    )
    parser.add_argument("--no-fleet", action="store_true", help="skip the synthetic fleet")
    parser.set_defaults(func=_run)


def _say(message: str) -> None:
    print(f"run: {message}", file=sys.stderr, flush=True)


def _alertmanager_line() -> str:
    from launch.alertmanager import BINARY

    if BINARY:
        return f"notifications to Alertmanager http://127.0.0.1:{ALERTMANAGER_PORT}"
    return "no Alertmanager (install Debian's prometheus-alertmanager: make debs)"


def _home(root: Path) -> Path:
    return root / "run"


def _stop_platform(home: Path, grace_s: float = STOP_GRACE_S) -> None:
    from launch.supervisor import stop_all

    # First, so that an attached `apm run` takes the exits for a stop, not for crashes.
    home.mkdir(parents=True, exist_ok=True)
    (home / DOWN_MARKER).touch()
    procs = [spec.process(home / name) for name, spec in _platform(home).items()]
    for name, outcome in stop_all(procs, grace_s).items():
        killed = f" (killed: still running {grace_s:.0f}s after SIGTERM)"
        _say(f"stopped {name}{killed if outcome == 'killed' else ''}")


def _components(home: Path, bootstrap: str, fleet: bool) -> list[Component]:
    """What the attached run supervises: every component `_start_platform` starts, each
    restarted from the same table entry (no health wait: a slow start must not hold up the
    others)."""
    key_file = home / "ingest.key"
    key = key_file.read_text().strip() if key_file.exists() else ""
    out = []
    for name, spec in _platform(home, bootstrap, key).items():
        if name == "loadgen" and not fleet:
            continue
        env = _dashboard_credentials(home / name) if name == "dashboard" else None
        proc = spec.process(home / name)

        def start(spec: ProcessSpec = spec, env: dict[str, str] | None = env) -> None:
            spec.start(home / spec.name, env=env, wait_s=None)

        def alive(proc: ManagedProcess = proc) -> bool:
            return proc.pid() is not None

        out.append(Component(name, alive, start, log_hint=str(proc.log)))
    return out


def _dashboard_credentials(home: Path) -> dict[str, str]:
    """Without an operator's credentials, the dashboard signs in with a generated token."""
    from launch.processes import dashboard_token

    if os.environ.get("APM_DASHBOARD_TOKEN") or os.environ.get("APM_DASHBOARD_PASSWORD_HASH"):
        return {}
    return {"APM_DASHBOARD_TOKEN": dashboard_token(home)}


def _start_platform(home: Path, bootstrap: str, fleet: bool) -> str:
    from launch import processes
    from storage.repository import Repository

    with Repository.connect() as repo:  # creates the schema when missing
        _say("schema ready")
        _, key = processes.ingest_key(home, "make-run")  # the keys file _platform names
        table = _platform(home, bootstrap, key)
        ingest = table[f"ingest-{INGEST_PORT}"]
        if not ingest.ready():
            _say(f"starting ingest on {processes.ingest_url(INGEST_PORT)}")
            ingest.start(home / ingest.name)
        aggregator = table["aggregator"]
        if not aggregator.ready():
            # One job, every metric in scope: it reads exactly the topics of the stored
            # queries, whatever metric they name (docs/aggregator.md, "Which topics a job
            # reads"), so a query on any of this host's or an application's metrics is
            # evaluated without a second job.
            _say("starting aggregator (Spark, local mode; it reads the metrics the queries use)")
            aggregator.start(home / "aggregator", wait_s=120, progress=_say)
        dashboard = table["dashboard"]
        if dashboard.process(home / "dashboard").pid() is None:
            _say(f"starting dashboard on http://127.0.0.1:{DASHBOARD_PORT}")
            dashboard.start(home / "dashboard", env=_dashboard_credentials(home / "dashboard"))
        if "alertmanager" in table and not table["alertmanager"].ready():
            _say(f"starting Alertmanager on http://127.0.0.1:{ALERTMANAGER_PORT}")
            table["alertmanager"].start(home / "alertmanager")
        if table["alerting"].process(home / "alerting").pid() is None:
            _say(f"starting the alert evaluator (/metrics on :{ALERTING_METRICS_PORT})")
            table["alerting"].start(home / "alerting")
        agent = table["agent"]
        if agent.process(home / "agent").pid() is None:
            _say("starting this host's agent")
            agent.start(home / "agent")
        loadgen = table["loadgen"]
        if fleet and loadgen.process(home / "loadgen").pid() is None:
            _say(
                f"starting a synthetic fleet of {FLEET_SERVERS} servers x {FLEET_METRICS} "
                "metrics, one snapshot a second"
            )
            loadgen.start(home / "loadgen")
        from agent.settings import default_server
        from dashboard.board_examples import seed_example

        if not repo.list_queries():
            for text in _example_queries(default_server()):
                stored = repo.save_query(text)
                _say(f"example query {stored.id}: {text}")
        if board_id := seed_example(repo, _example_queries(default_server())):
            _say(f"example dashboard: http://127.0.0.1:{DASHBOARD_PORT}/dashboard?id={board_id}")
    return (
        (home / "dashboard" / "dashboard.token").read_text().strip()
        if (home / "dashboard" / "dashboard.token").exists()
        else ""
    )


def _run(args: argparse.Namespace) -> int:
    from launch.stack import control
    from launch.stack.config import StackSettings
    from launch.stack.jars import FetchError
    from launch.supervisor import StartError

    settings = StackSettings()
    home = _home(settings.var)
    if args.down:
        _stop_platform(home)
        control.down(settings)
        return 0
    # Every service finds the engines where `apm stack` put them (APM_STACK_* ports included);
    # the children inherit this environment, and an operator's own APM_* values win.
    for name, value in {
        "APM_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "APM_STORAGE_HOSTS": settings.host,
        "APM_STORAGE_PORT": str(settings.cassandra_port),
    }.items():
        os.environ.setdefault(name, value)
    (home / DOWN_MARKER).unlink(missing_ok=True)
    try:
        control.up(settings)
        token = _start_platform(home, settings.kafka_bootstrap, fleet=not args.no_fleet)
    except (StartError, FetchError, OSError) as exc:
        print(f"apm run: {exc}", file=sys.stderr)
        _stop_platform(home)
        return 1
    print(
        f"""
The platform is up.
  dashboard   http://127.0.0.1:{DASHBOARD_PORT}   sign in as any user with the token in
              {home / "dashboard" / "dashboard.token"}{f" ({token})" if token else ""}
  ingest      http://127.0.0.1:{INGEST_PORT}/v1/metrics   key in {home / "ingest.key"}
  alerts      rules on the dashboard's Alerts page; {_alertmanager_line()}
  metrics     ingest :{INGEST_PORT}/metrics, aggregator :{AGGREGATOR_METRICS_PORT}/metrics,
              dashboard :{DASHBOARD_PORT}/metrics, alert evaluator :{ALERTING_METRICS_PORT}/metrics
  logs        {home}/*/*.log, {settings.var}/kafka, {settings.var}/cassandra
Stop with Ctrl-C{"" if not args.detach else " (not attached: use make down)"} or `make down`.
""",
        flush=True,
    )
    if args.detach:
        return 0
    components = _components(home, settings.kafka_bootstrap, fleet=not args.no_fleet)
    return _attach(home, settings, Restarter(components, _say))


def _attach(
    home: Path,
    settings: StackSettings,
    restarter: Restarter | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Supervises in the foreground (restarting dead components) until Ctrl-C or SIGTERM
    (then stops everything) or until the platform was stopped from elsewhere (`make down`)."""
    from launch.stack import control

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while not (home / DOWN_MARKER).exists():
            if restarter is not None:
                restarter.tick()
            sleep(1)
        _say("the platform was stopped from elsewhere (make down)")
        return 0
    except KeyboardInterrupt:
        _say("stopping")
        _stop_platform(home)
        control.down(settings)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
