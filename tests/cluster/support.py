"""What the fault tests share: a load from ``apm loadgen`` through the cluster's load balancer
with ``--expect`` truth, the check of the stored windows against it, and the figures each
fault records (load held, time to recover, samples lost, windows wrong)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from launch import processes

__all__ = [
    "FIGURES_FILE",
    "Figures",
    "Load",
    "Watch",
    "converge",
    "health_page",
    "kill9",
    "push_snapshot",
    "record",
    "start_node",
    "stored_vs_truth",
    "wait_for",
]

FIGURES_FILE = "faults.json"  # under var/cluster: the figures of the last run, per fault
# Samples/s offered through the load balancer: 10 metrics a server, one snapshot a second.
# `make bench-faults` sets APM_FAULTS_RATE to the highest rate the cluster keeps up with.
RATE = int(os.environ.get("APM_FAULTS_RATE", "30000"))
METRICS = 10
SERVERS = max(1, RATE // METRICS)
LOAD_S = 50  # seconds of real-time load per fault
# Freshness: seconds from the newest sample sent back to the end of the probe query's newest
# stored window, as the dashboard's API answers it (Watch). Back under its bound: at or below.
FRESH_BOUND_S = 30.0


@dataclass
class Figures:
    fault: str
    offered_per_s: float = 0.0
    accepted_per_s: float = 0.0
    retries: int = 0
    samples_sent: int = 0  # that the ingest answered 202 for
    samples_lost: int = 0  # accepted but missing from the stored windows
    samples_extra: int = 0  # counted twice
    windows: int = 0
    windows_wrong: int = 0
    recover_s: float = 0.0  # what it measures: see `recovery`
    recovery: str = ""
    converge_s: float = 0.0  # from the load's end until every window equals the truth
    reads: int = 0  # dashboard API reads of the probe query, one a second through the load
    reads_failed: int = 0
    fresh_after_s: float | None = None  # from the fault's end until freshness is back under
    # FRESH_BOUND_S (None: not within 30 s of the load's end)
    notes: dict[str, Any] = field(default_factory=dict)


def record(var: Path, figures: Figures) -> None:
    """Adds (or replaces) this fault's figures in var/cluster/faults.json and prints them."""
    path = var / FIGURES_FILE
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {}
    doc[figures.fault] = {**asdict(figures), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ")}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"\nFAULT {figures.fault}: {json.dumps(asdict(figures))}", file=sys.stderr)


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Polls until true; the seconds it took. Fails naming ``what`` after the timeout."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s:.0f}s")
        time.sleep(0.5)
    return time.monotonic() - began


class Watch:
    """Reads the probe query's recent windows through the dashboard's API once a second in a
    thread: each read's success and the freshness it shows, so that a fault reports the
    dashboard reads that failed and how long after its end the data was fresh again.

    Freshness = the newest sample's time minus the end of the newest stored window: ``now``
    while the load runs, the load's end after it (so a fault that outlasts the load is still
    measured: the stored windows catching up with the last data sent)."""

    def __init__(self, dashboard_url: str, token: str, query_id: str) -> None:
        from tests.support.http import http_json

        self._get, self._url, self._token = (
            http_json,
            f"{dashboard_url}/api/queries/{query_id}/results",
            token,
        )
        self.samples: list[tuple[float, bool, float | None]] = []  # (monotonic, ok, freshness)
        self.over_at: float | None = None
        self.load_end: float | None = None  # wall clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def fault_over(self) -> None:
        self.over_at = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            now, at = time.time(), time.monotonic()
            newest = now if self.load_end is None else min(now, self.load_end)
            try:
                page = self._get(
                    f"{self._url}?from={now - 180:.0f}&to={now + 60:.0f}", self._token, timeout=10
                )
                ends = [w["window_start"] + w["window_seconds"] for w in page.get("windows") or []]
                self.samples.append((at, True, newest - max(ends) if ends else None))
            except (OSError, ValueError):
                self.samples.append((at, False, None))

    def _fresh_after(self) -> float | None:
        over = self.over_at if self.over_at is not None else (self.samples or [(0.0,)])[0][0]
        fresh = [
            at
            for at, _, f in list(self.samples)
            if at >= over and f is not None and f <= FRESH_BOUND_S
        ]
        return round(max(0.0, fresh[0] - over), 1) if fresh else None

    def close(self, figures: Figures, wait_s: float = 30) -> None:
        """Once the load has ended: waits (up to ``wait_s``) for freshness to be back if the
        fault ended late, then stops and fills the figures."""
        deadline = time.monotonic() + wait_s
        while self._fresh_after() is None and time.monotonic() < deadline:
            time.sleep(1)
        self._stop.set()
        self._thread.join(15)
        figures.reads = len(self.samples)
        figures.reads_failed = sum(1 for _, ok, _ in self.samples if not ok)
        figures.fresh_after_s = self._fresh_after()


class Load:
    """``apm loadgen`` in real time against the load balancer, with the truth of one query."""

    def __init__(
        self,
        target: str,
        key: str,
        query: str,
        prefix: str,
        out: Path,
        seed: int,
        seconds: int = LOAD_S,
        watch: Watch | None = None,
        tls_ca: Path | None = None,  # the CA an https:// target's certificate is checked with
    ):
        self.seconds, self.watch = seconds, watch
        self.truth_file = out / "truth.json"
        self.log = out / "loadgen.log"
        out.mkdir(parents=True, exist_ok=True)
        spec = processes.loadgen(
            target,
            key,
            servers=SERVERS,
            metrics=METRICS,
            duration=f"{seconds}s",
            seed=seed,
            metric_prefix=prefix,
            # Through a whole fault and restart: a request keeps retrying 503s and refusals.
            extra_args=(
                "--retry-deadline",
                "180",
                "--query",
                query,
                "--expect",
                str(self.truth_file),
                "--quiet",
                *(("--tls-ca", str(tls_ca)) if tls_ca is not None else ()),
            ),
        )
        self.started = time.monotonic()
        if watch is not None:  # the newest sample's time is never past the load's end
            watch.load_end = time.time() + seconds
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                spec.command,
                stdout=subprocess.PIPE,
                stderr=err,
                env={"APM_LOADGEN_API_KEY": key, **_inherited()},
            )

    def at(self, seconds: float) -> None:
        """Sleeps until ``seconds`` after the load started."""
        time.sleep(max(0.0, self.started + seconds - time.monotonic()))

    def fault_over(self) -> None:
        """The fault has ended (the node is back): freshness is measured from here."""
        if self.watch is not None:
            self.watch.fault_over()

    def finish(self, figures: Figures) -> dict[str, Any]:
        out, _ = self.proc.communicate(timeout=self.seconds + 240)
        if self.watch is not None:
            self.watch.close(figures)
        assert self.proc.returncode == 0, f"loadgen failed: {self.log.read_text()[-2000:]}"
        summary: dict[str, Any] = json.loads(out)
        figures.offered_per_s = float(SERVERS * METRICS)
        figures.accepted_per_s = float(summary["accepted_per_s"])
        figures.retries = int(summary["retries"])
        assert summary["lost"] == 0 and not summary["errors"], summary
        truth: dict[str, Any] = json.loads(self.truth_file.read_text())
        return truth


def _inherited() -> dict[str, str]:
    import os

    return dict(os.environ)


def converge(
    read: Callable[[float, float], list[Any]],
    truth: dict[str, Any],
    figures: Figures,
    var: Path,
    timeout_s: float = 240,
) -> None:
    """Waits until every stored window equals the truth; records the figures either way."""
    began = time.monotonic()
    problems: list[str] = ["not compared yet"]
    try:
        while problems and time.monotonic() - began < timeout_s:
            try:
                problems = stored_vs_truth(read, truth, figures)
            except Exception as exc:  # a read while a node is away: try again
                problems = [f"read failed: {exc}"]
            if problems:
                time.sleep(2)
        figures.converge_s = round(time.monotonic() - began, 1)
    finally:
        record(var, figures)
    assert not problems, "\n".join(problems[:20])
    assert figures.samples_lost == 0 and figures.samples_extra == 0 and figures.windows_wrong == 0


def stored_vs_truth(
    read: Callable[[float, float], list[Any]], truth: dict[str, Any], figures: Figures
) -> list[str]:
    """Compares the stored windows with the truth, filling the figures; the differences."""
    from loadgen.check import compare

    first = min(w["window_start"] for w in truth["windows"])
    last = max(w["window_start"] for w in truth["windows"]) + truth["window_seconds"]
    rows = read(first, last)
    got = {float(r.window_start): r for r in rows}
    figures.windows = len(truth["windows"])
    figures.samples_sent = sum(w["samples"] for w in truth["windows"])
    lost = extra = 0
    for w in truth["windows"]:
        have = got.get(float(w["window_start"]))
        n = 0 if have is None else have.samples
        lost += max(0, w["samples"] - n)
        extra += max(0, n - w["samples"])
    figures.samples_lost, figures.samples_extra = lost, extra
    problems = compare(truth, rows, percentile_tolerance=1e-9)
    figures.windows_wrong = len({p.split(":")[0] for p in problems})
    return problems


def push_snapshot(
    url: str, key: str, metric: str, verify: Any = True, server: str = "probe-0"
) -> Any:
    """One snapshot of one metric POSTed to the ingest endpoint ``url`` (through the load
    balancer) as the agents send it; ``verify``: httpx's (an SSLContext trusting the tier's
    CA). The httpx.Response."""
    import gzip

    import httpx
    import orjson

    body = {"snapshots": [{"server": server, "ts": time.time(), "metrics": {metric: 1.0}}]}
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        "Authorization": f"Bearer {key}",
    }
    return httpx.post(
        url, content=gzip.compress(orjson.dumps(body)), headers=headers, timeout=30, verify=verify
    )


def _platform_node(layout: Any, node: str) -> bool:
    from launch.cluster import platform

    return node in platform.nodes(layout)


def kill9(layout: Any, node: str) -> None:
    """``kill -9`` of one node: an engine through launch.cluster.control, a platform process
    through launch.cluster.platform."""
    if _platform_node(layout, node):
        from launch.cluster import platform

        assert platform.kill9(layout, node) is not None, f"{node} was not running"
    else:
        from launch.cluster import control

        control.kill9(node, layout)


def start_node(layout: Any, node: str) -> float:
    """Starts the node again and waits until it is healthy; the seconds that took."""
    began = time.monotonic()
    if _platform_node(layout, node):
        from launch.cluster import platform

        platform.start_node(layout, node, wait_s=300)
    else:
        from launch.cluster import control

        control.start_node(node, layout)
    return round(time.monotonic() - began, 1)


def health_page(dashboard_url: str, token: str) -> str:
    """The health page's rendered body, as the browser gets it: sign in with the token, then
    ask Dash for the page's one callback (h-body)."""
    import httpx

    with httpx.Client(base_url=dashboard_url, timeout=30, follow_redirects=False) as client:
        form = client.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert csrf, form[:500]
        client.post("/login", data={"user": "test", "password": token, "csrf_token": csrf[1]})
        reply = client.post(
            "/_dash-update-component",
            headers={"X-CSRFToken": client.cookies.get("_csrf_token") or ""},
            json={
                "output": "h-body.children",
                "outputs": {"id": "h-body", "property": "children"},
                "inputs": [
                    {"id": "h-tick", "property": "n_intervals", "value": 1},
                    {"id": "h-silent", "property": "value", "value": 60},
                ],
                "changedPropIds": ["h-tick.n_intervals"],
                "state": [],
            },
        )
        reply.raise_for_status()
        return reply.text
