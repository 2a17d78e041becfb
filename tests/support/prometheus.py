"""A real Prometheus server (Debian's ``prometheus`` package, ``make debs``) as a peer of the
platform: its configuration, its process, and a reader of the raw samples it holds.

The interop test (``tests/e2e/test_prometheus_peer.py``) starts one that scrapes an exporter
every second and remote_writes what it scrapes to the ingest's ``/api/v1/write``::

    from tests.support import prometheus
    from launch.probe import free_port

    token = home / "ingest.key"  # the ingest's API key, sent as a bearer token
    cfg = prometheus.config(
        [prometheus.ScrapeTarget("ingest", f"127.0.0.1:{ingest_port}", {"instance": "web-1"})],
        prometheus.RemoteWrite(f"{ingest}/api/v1/write", token, keep=("apm_ingest_.*",)),
    )
    server = prometheus.Prometheus(free_port(), prometheus.write_config(home, cfg))
    proc = server.start(home)  # waits for /-/ready
    samples = prometheus.raw_samples(server.url, 'up{job="ingest"}', start_s, end_s)
    proc.stop(server.stop_timeout_s)

The configuration is written as JSON, which is YAML too (Prometheus reads it as such; the unit
tests check it with Debian's ``promtool check config``), so no YAML library is needed. The
API key goes in a file (``credentials_file``), never on a command line or in the config.
"""

from __future__ import annotations

import json
import math
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launch.probe import http_ok
from launch.supervisor import ManagedProcess, StartError

__all__ = [
    "Prometheus",
    "RemoteWrite",
    "ScrapeTarget",
    "by_window",
    "config",
    "find_binary",
    "query_range",
    "raw_samples",
    "write_config",
]


@dataclass(frozen=True)
class ScrapeTarget:
    """One scrape job of one target. ``labels`` are added to every series scraped from it; an
    ``instance`` among them replaces Prometheus' default (the target's address), which is how
    the series get the server name the ingest maps ``instance`` to."""

    job: str
    address: str  # host:port
    labels: Mapping[str, str] = field(default_factory=dict)
    metrics_path: str = "/metrics"


@dataclass(frozen=True)
class RemoteWrite:
    """Where and how Prometheus sends what it scrapes. ``keep``: regular expressions over the
    metric name (``__name__``), and ``keep_labels``: a regular expression per label; only the
    series matching all of them are sent (all series when both are empty), so a test creates
    one topic per series it reads rather than one per series the exporter has.

    The queue is tuned to send within ``batch_send_deadline_s`` of a scrape and to retry
    quickly (Prometheus retries 5xx, and 429 with ``retry_on_http_429``; it drops on other
    4xx). Metadata is not sent: the ingest keeps none."""

    url: str
    credentials_file: Path | None = None  # the bearer token (an ingest API key)
    keep: Sequence[str] = ()
    keep_labels: Mapping[str, str] = field(default_factory=dict)
    batch_send_deadline_s: float = 1.0
    max_samples_per_send: int = 500
    capacity: int = 2500
    min_backoff_s: float = 0.1
    max_backoff_s: float = 1.0
    ca_file: Path | None = None  # an https url's private CA (tls_config.ca_file)

    def as_config(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "url": self.url,
            "remote_timeout": "10s",  # above the ingest's answer deadline (4 s)
            "queue_config": {
                "capacity": self.capacity,
                "max_shards": 2,
                "min_shards": 1,
                "max_samples_per_send": self.max_samples_per_send,
                "batch_send_deadline": _duration(self.batch_send_deadline_s),
                "min_backoff": _duration(self.min_backoff_s),
                "max_backoff": _duration(self.max_backoff_s),
                "retry_on_http_429": True,
            },
            "metadata_config": {"send": False},
        }
        if self.ca_file is not None:
            entry["tls_config"] = {"ca_file": str(self.ca_file)}
        if self.credentials_file is not None:
            entry["authorization"] = {
                "type": "Bearer",
                "credentials_file": str(self.credentials_file),
            }
        rules = [{"__name__": "|".join(f"(?:{p})" for p in self.keep)}] if self.keep else []
        rules += [{label: regex} for label, regex in sorted(self.keep_labels.items())]
        if rules:  # keep rules apply one after the other: a series must pass them all
            entry["write_relabel_configs"] = [
                {"source_labels": [label], "regex": regex, "action": "keep"}
                for rule in rules
                for label, regex in rule.items()
            ]
        return entry


def _duration(seconds: float) -> str:
    """A Prometheus duration in whole milliseconds ("1500ms"); it takes no fractions."""
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"a duration must be a positive number of seconds, got {seconds}")
    return f"{max(1, round(seconds * 1000))}ms"


def config(
    targets: Iterable[ScrapeTarget],
    remote_write: RemoteWrite | None = None,
    interval_s: float = 1.0,
) -> dict[str, Any]:
    """prometheus.yml as a dict: every target scraped each ``interval_s`` (the timeout is the
    interval: Prometheus refuses a longer one), no rules, no alerting."""
    interval = _duration(interval_s)
    jobs = [
        {
            "job_name": t.job,
            "metrics_path": t.metrics_path,
            "static_configs": [{"targets": [t.address], "labels": dict(t.labels)}],
        }
        for t in targets
    ]
    if len({job["job_name"] for job in jobs}) != len(jobs):
        raise ValueError("scrape job names must be unique")
    doc: dict[str, Any] = {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "scrape_configs": jobs,
    }
    if remote_write is not None:
        doc["remote_write"] = [remote_write.as_config()]
    return doc


def write_config(home: Path, doc: Mapping[str, Any]) -> Path:
    """Writes ``home/prometheus.yml`` (JSON is YAML) and returns its path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "prometheus.yml"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def find_binary() -> str:
    """The ``prometheus`` executable, or a StartError saying how to install it."""
    found = shutil.which("prometheus") or shutil.which("prometheus", path="/usr/bin")
    if found is None:
        raise StartError("prometheus is not installed: `make debs` installs Debian's package")
    return found


@dataclass(frozen=True)
class Prometheus:
    """One Prometheus server on ``host:port`` with its own data directory under the home it is
    started in. SIGTERM stops it; it then spends at most ``flush_deadline_s`` sending what its
    remote_write queue still holds, so ``stop_timeout_s`` bounds the whole stop."""

    port: int
    config_file: Path
    host: str = "127.0.0.1"
    binary: str | None = None
    flush_deadline_s: float = 5.0
    retention: str = "2h"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def marker(self) -> str:
        return f"--web.listen-address={self.host}:{self.port}"

    @property
    def stop_timeout_s(self) -> float:
        return self.flush_deadline_s + 10.0

    def command(self, home: Path) -> list[str]:
        return [
            self.binary or find_binary(),
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--storage.tsdb.retention.time={self.retention}",
            self.marker,
            f"--storage.remote.flush-deadline={_duration(self.flush_deadline_s)}",
            "--log.level=info",
        ]

    def ready(self, timeout_s: float = 2.0) -> bool:
        return http_ok(f"{self.url}/-/ready", timeout_s)

    def start(self, home: Path, wait_s: float = 60.0) -> ManagedProcess:
        """Starts it (pid file and log ``prometheus-<port>.*`` in ``home``) and waits until
        /-/ready answers 200, stopping it again if it does not."""
        proc = ManagedProcess(f"prometheus-{self.port}", Path(home), marker=self.marker)
        proc.start(self.command(Path(home)))
        try:
            proc.wait_healthy(self.ready, wait_s)
        except BaseException:
            proc.stop(self.stop_timeout_s)
            raise
        return proc


def raw_samples(
    base_url: str,
    selector: str,
    start_s: float,
    end_s: float,
    *,
    timeout_s: float = 10.0,
    get: Callable[[str, float], bytes] | None = None,
) -> list[tuple[int, float]]:
    """The raw samples (timestamp in ms, value) Prometheus holds for the one series
    ``selector`` names with ``start_s <= t < end_s``, read through its HTTP API as a range
    vector (``selector[...]`` at ``end_s``), so no function or step touches them. More than
    one series, or an error answer, raises ValueError naming it."""
    start_ms, end_ms = round(start_s * 1000), round(end_s * 1000)
    if end_ms <= start_ms:
        raise ValueError(f"empty range [{start_s}, {end_s})")
    query = f"{selector}[{end_ms - start_ms + 1000}ms]"  # a second wider; filtered below
    params = urllib.parse.urlencode({"query": query, "time": f"{end_ms / 1000:.3f}"})
    url = f"{base_url}/api/v1/query?{params}"
    data = _answer(query, (get or _get)(url, timeout_s))
    values = _one_series(selector, data)
    samples = [(round(float(t) * 1000), float(v)) for t, v in values]
    return [(t, v) for t, v in samples if start_ms <= t < end_ms]


def query_range(
    base_url: str,
    query: str,
    start_s: float,
    end_s: float,
    step_s: float,
    *,
    timeout_s: float = 10.0,
    get: Callable[[str, float], bytes] | None = None,
) -> list[tuple[int, float]]:
    """``/api/v1/query_range`` of a PromQL expression with one series in its result: its
    (timestamp in ms, value) points, evaluated at ``start_s``, ``start_s + step_s`` ... up to
    ``end_s``. Prometheus' own functions (``min_over_time`` ...) at the ends of windows."""
    params = urllib.parse.urlencode(
        {"query": query, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": f"{step_s:g}"}
    )
    data = _answer(query, (get or _get)(f"{base_url}/api/v1/query_range?{params}", timeout_s))
    return [(round(float(t) * 1000), float(v)) for t, v in _one_series(query, data)]


def _answer(query: str, body: bytes) -> dict[str, Any]:
    answer = json.loads(body)
    if answer.get("status") != "success":
        raise ValueError(f"{query}: {answer.get('errorType')}: {answer.get('error')}")
    data: dict[str, Any] = answer["data"]
    if data["resultType"] != "matrix":
        raise ValueError(f"{query}: expected a matrix, got {data['resultType']}")
    return data


def _one_series(query: str, data: Mapping[str, Any]) -> list[list[Any]]:
    if len(data["result"]) > 1:
        found = [series["metric"] for series in data["result"]]
        raise ValueError(f"{query} names {len(found)} series, not one: {found}")
    return list(data["result"][0]["values"]) if data["result"] else []


def _get(url: str, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as reply:
            return bytes(reply.read())
    except urllib.error.HTTPError as exc:  # 400/422/503 carry the API's error document
        body = exc.read()
        if not body.startswith(b"{"):
            raise
        return bytes(body)


def by_window(samples: Iterable[tuple[int, float]], width_s: int) -> dict[int, list[float]]:
    """Samples (ms, value) grouped into the platform's windows: ``[k * width_s, (k + 1) *
    width_s)`` in epoch seconds, keyed by their start (``aggregator.plan``'s ``floor(ts /
    width) * width``), computed in whole milliseconds so no rounding moves a sample."""
    if width_s <= 0:
        raise ValueError(f"window width must be positive, got {width_s}")
    windows: dict[int, list[float]] = {}
    for ms, value in sorted(samples):
        windows.setdefault(ms // (width_s * 1000) * width_s, []).append(value)
    return windows
