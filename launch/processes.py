"""One table of the platform's own processes: each is a :class:`ProcessSpec` (a name, its
arguments to ``python -m apm.cli``, the marker that proves a pid is ours, the URL that answers
200 once it is ready). ``apm run`` and ``apm run --down``, the benchmarks and the tests all
build their processes from the functions below, so a command line lives in one place::

    from launch import processes
    from launch.probe import free_port

    port = free_port()
    proc = processes.ingest(port, keys_file, kafka_bootstrap).start(tmp_path / "ingest")
    ...  # POST to processes.ingest_url(port) + "/v1/metrics"
    proc.stop()                         # SIGTERM: drains, flushes, exits

Secrets (API keys, the dashboard token) go through the environment, never the command line.
What a process needs from this machine is prepared when it starts (``ProcessSpec.prepare``: the
aggregator's jars, Alertmanager's config), so building the table has no side effects.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from launch.probe import http_ok
from launch.supervisor import ManagedProcess

__all__ = [
    "ProcessSpec",
    "agent",
    "aggregator",
    "aggregator_jars",
    "alerting",
    "alerting_receivers",
    "alertmanager",
    "dashboard",
    "dashboard_token",
    "ingest",
    "ingest_key",
    "ingest_url",
    "loadgen",
]


@dataclass(frozen=True)
class ProcessSpec:
    name: str  # pid file and log name under the process's home
    argv: tuple[str, ...]  # after `python -m apm.cli`
    marker: str  # a string of the command line that identifies this process
    health: str | None = None  # answers 200 once the process is ready
    env: Mapping[str, str] = field(default_factory=dict)
    # A program of its own (Debian's Alertmanager) instead of `python -m apm.cli`.
    program: str | None = None
    # Called by start() before the process runs: writes what it reads and returns environment
    # known only then (the jar cache may need a fetch first).
    prepare: Callable[[], Mapping[str, str]] | None = field(default=None, compare=False)

    @property
    def command(self) -> list[str]:
        if self.program:
            return [self.program, *self.argv]
        return [sys.executable, "-m", "apm.cli", *self.argv]

    def process(self, home: Path) -> ManagedProcess:
        return ManagedProcess(self.name, Path(home), marker=self.marker)

    def ready(self, timeout_s: float = 2.0) -> bool:
        return self.health is not None and http_ok(self.health, timeout_s)

    def start(
        self,
        home: Path,
        *,
        env: Mapping[str, str] | None = None,
        wait_s: float | None = 60.0,
        progress: Callable[[str], None] | None = None,
    ) -> ManagedProcess:
        """Starts the process (pid file and log in ``home``); with ``wait_s`` and a health
        URL, waits until it is ready, stopping it again if it is not."""
        proc = self.process(home)
        prepared = self.prepare() if self.prepare else {}
        proc.start(self.command, env={**self.env, **prepared, **(env or {})})
        if wait_s and self.health:
            try:
                proc.wait_healthy(self.ready, wait_s, progress)
            except BaseException:
                proc.stop(10)
                raise
        return proc


def ingest_url(port: int, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}"


def ingest(
    port: int, keys_file: Path, kafka_bootstrap: str, host: str = "127.0.0.1"
) -> ProcessSpec:
    """``apm ingest serve``; ready when /readyz answers 200 (Kafka reachable)."""
    return ProcessSpec(
        f"ingest-{port}",
        (
            "ingest",
            "serve",
            "--host",
            host,
            "--port",
            str(port),
            "--keys-file",
            str(keys_file),
            "--kafka-bootstrap",
            kafka_bootstrap,
        ),
        marker=f"ingest serve --host {host} --port {port} ",
        health=f"{ingest_url(port, host)}/readyz",
    )


def aggregator(
    checkpoint_dir: Path,
    *,
    name: str = "aggregator",
    metrics: Sequence[str] = (),
    shard: str | None = None,
    metrics_port: int = 9102,
    keyspace: str | None = None,
    extra_args: Sequence[str] = (),
) -> ProcessSpec:
    """``apm aggregator run``; ready once it serves /metrics, which it does before Spark
    starts streaming."""
    marker = f"apm-aggregator-{name}"
    argv = [
        "aggregator",
        "run",
        "--instance",
        marker,
        "--checkpoint-dir",
        str(checkpoint_dir),
        "--metrics-port",
        str(metrics_port),
        *extra_args,
    ]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    if shard:
        argv += ["--shard", shard]
    if keyspace:
        argv += ["--keyspace", keyspace]
    return ProcessSpec(
        name,
        tuple(argv),
        marker=marker,
        health=f"http://127.0.0.1:{metrics_port}/metrics",
        prepare=aggregator_jars,
    )


def aggregator_jars() -> dict[str, str]:
    """The Kafka connector and the aggregator's JVM operator from the local jar cache (fetched
    when missing), handed to ``apm aggregator run`` as ``APM_AGGREGATOR_JARS``."""
    from launch.stack.jars import spark_jars

    return {"APM_AGGREGATOR_JARS": ",".join(spark_jars())}


def dashboard(
    port: int = 8050, host: str = "127.0.0.1", env: Mapping[str, str] | None = None
) -> ProcessSpec:
    """``apm dashboard serve``; ready when /healthz answers 200."""
    return ProcessSpec(
        "dashboard",
        ("dashboard", "serve", "--host", host, "--port", str(port)),
        marker=f"dashboard serve --host {host} --port {port}",
        health=f"http://{host}:{port}/healthz",
        env=dict(env or {}),
    )


def dashboard_token(home: Path) -> str:
    """The sign-in token of a dashboard started without configured credentials: created once
    in ``home/dashboard.token`` (mode 600); sign in with any user name and it as password."""
    token_file = Path(home) / "dashboard.token"
    if not token_file.exists():
        token_file.parent.mkdir(parents=True, exist_ok=True)
        token_file.touch(mode=0o600)
        token_file.write_text(secrets.token_urlsafe(24) + "\n")
    return token_file.read_text().strip()


def ingest_key(home: Path, label: str) -> tuple[Path, str]:
    """The keys file of an ingest started here and its one key, created once: the key in
    ``home/ingest.key`` (mode 600), for the agents and the load generator; both are made again
    when either is missing, so the file never holds a key the keys file does not."""
    from ingest.auth import add_key

    keys, key_file = Path(home) / "ingest.keys", Path(home) / "ingest.key"
    if not key_file.exists() or not keys.exists():
        keys.unlink(missing_ok=True)
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key = add_key(keys, label=label)
        key_file.touch(mode=0o600)
        key_file.write_text(key + "\n")
    return keys, key_file.read_text().strip()


def agent(
    ingest_push_url: str,
    api_key: str,
    spool_dir: Path,
    *,
    name: str = "agent",
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
) -> ProcessSpec:
    """``apm agent run`` pushing to ``ingest_push_url`` (the /v1/metrics URL)."""
    return ProcessSpec(
        name,
        ("agent", "run", *extra_args),
        marker="apm.cli agent run",
        env={
            "APM_AGENT_INGEST_URL": ingest_push_url,
            "APM_AGENT_API_KEY": api_key,
            "APM_AGENT_SPOOL_DIR": str(spool_dir),
            **(env or {}),
        },
    )


def loadgen(
    target: str,
    api_key: str,
    *,
    name: str = "loadgen",
    servers: int = 200,
    metrics: int = 20,
    duration: str = "7d",
    seed: int = 42,
    metric_prefix: str = "",
    extra_args: Sequence[str] = (),
) -> ProcessSpec:
    """A real-time synthetic fleet sending to the ingest at ``target``. It has no health URL:
    it retries until the ingest answers, and progress lines go to its log every 10 s."""
    argv = [
        "loadgen",
        "--target",
        target,
        "--servers",
        str(servers),
        "--metrics",
        str(metrics),
        "--duration",
        duration,
        "--seed",
        str(seed),
    ]
    if metric_prefix:
        argv += ["--metric-prefix", metric_prefix]
    return ProcessSpec(
        name,
        (*argv, *extra_args),
        marker=f"loadgen --target {target} ",
        env={"APM_LOADGEN_API_KEY": api_key, "APM_LOADGEN_PROGRESS_INTERVAL_S": "10"},
    )


def alerting_receivers(alertmanager_url: str = "") -> dict[str, str]:
    """The ``APM_ALERTING_*`` receivers of `make run`, for the evaluator and for every process
    that sends a test notification (the dashboard's test-notify): one set, so both agree."""
    return {"APM_ALERTING_ALERTMANAGER_URL": alertmanager_url} if alertmanager_url else {}


def alerting(
    metrics_port: int = 9107,
    *,
    alertmanager_url: str = "",
    env: Mapping[str, str] | None = None,
) -> ProcessSpec:
    """``apm alert run``, the alert evaluator; ready once it serves /metrics."""
    extra = alerting_receivers(alertmanager_url)
    return ProcessSpec(
        "alerting",
        ("alert", "run"),
        marker="apm.cli alert run",
        health=f"http://127.0.0.1:{metrics_port}/metrics",
        env={"APM_ALERTING_METRICS_PORT": str(metrics_port), **extra, **(env or {})},
    )


def alertmanager(workdir: Path, port: int = 9095) -> ProcessSpec:
    """Debian's Alertmanager (launch/alertmanager.py), its config written into ``workdir`` at
    start; only built when the binary is installed (``make debs``)."""
    from launch import alertmanager as am

    def write_config() -> dict[str, str]:
        am.write_config(workdir)
        return {}

    return ProcessSpec(
        "alertmanager",
        tuple(am.arguments(workdir, port)),
        marker=f"--config.file={workdir}/",  # its config lives under workdir
        health=f"http://127.0.0.1:{port}/-/ready",
        program=am.BINARY or "prometheus-alertmanager",
        prepare=write_config,
    )
