"""A real Prometheus (Debian's package) as the peer: it scrapes the platform's own exporter
(an ingest's /metrics) every second and remote_writes what it scrapes to that ingest's
/api/v1/write, on the real Kafka; a stored query over one of its series runs through the real
aggregator into the real Cassandra. The windows stored must equal numpy over exactly the raw
samples that Prometheus itself serves for the same range through its own HTTP API (a range
vector at the end time), window by window: the same samples, the same windows; and they equal
Prometheus' own ``min_over_time`` ... ``quantile_over_time`` over those windows.

The series is ``apm_ingest_samples_total{outcome="rejected",reason="value"}``, a counter the
test drives: a thread posts batches of bad samples (refused 422, so nothing reaches Kafka) of
random sizes at random moments, so its value changes between most scrapes."""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

WINDOW_S = 10
WINDOWS = 4  # compared
FUNCTIONS = ("min", "max", "avg", "count", "sum", "p50", "p90", "p99")
SERIES = 'apm_ingest_samples_total{outcome="rejected",reason="value"}'
LABELS = {"__name__": "apm_ingest_samples_total", "outcome": "rejected", "reason": "value"}
# The ingest's documented mapping (docs/interop.md, remote_write): __name__ plus each label
# but the server label (instance) and job as a sorted `.key_value` part; instance = server.
METRIC = "apm_ingest_samples_total.outcome_rejected.reason_value"


@dataclass
class Peer:
    ingest_url: str
    api_key: str
    prometheus_url: str
    instance: str  # the `instance` label, the server name on the platform
    job: str
    keyspace: str
    home: Path


def _post_bad_batch(peer: Peer, samples: int) -> None:
    """A batch of ``samples`` non-numeric values: the ingest answers 422 and counts them in
    apm_ingest_samples_total{outcome="rejected",reason="value"}."""
    body = {
        "snapshots": [
            {"server": "bad-input", "ts": time.time(), "metrics": {"bad.value": "x"}}
            for _ in range(samples)
        ]
    }
    req = urllib.request.Request(
        f"{peer.ingest_url}/v1/metrics",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {peer.api_key}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(req, timeout=10).close()
    except urllib.error.HTTPError as exc:
        assert exc.code == 422, exc.read()
    else:
        raise AssertionError("a batch of bad values was accepted")


@pytest.fixture(scope="module")
def peer(stack, tmp_path_factory) -> Iterator[Peer]:
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port
    from tests.support import prometheus

    home = tmp_path_factory.mktemp("prompeer")
    run = uuid.uuid4().hex[:8]
    keyspace = f"prompeer_{run}"
    env = {
        "APM_STORAGE_KEYSPACE": keyspace,
        "APM_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
        "APM_AGGREGATOR_TRIGGER_SECONDS": "1",
    }
    os.environ.update(env)  # the launchers' children inherit it
    started = []
    try:
        metrics_port = free_port()
        aggregator_spec = processes.aggregator(
            home / "aggregator" / "checkpoint", metrics_port=metrics_port, keyspace=keyspace
        )
        aggregator = aggregator_spec.start(home / "aggregator", env=env, wait_s=None)
        started.append(aggregator)
        key = add_key(home / "keys")
        key_file = home / "ingest.key"  # Prometheus reads the bearer token from it
        key_file.touch(mode=0o600)
        key_file.write_text(key + "\n")
        ingest_port = free_port()
        started.append(
            processes.ingest(ingest_port, home / "keys", stack.kafka_bootstrap).start(
                home / "ingest"
            )
        )
        ingest_url = processes.ingest_url(ingest_port)
        p = Peer(ingest_url, key, "", f"prompeer-{run}", f"apm-ingest-{run}", keyspace, home)
        _post_bad_batch(p, 1)  # the series exists from the first scrape on
        doc = prometheus.config(
            [prometheus.ScrapeTarget(p.job, f"127.0.0.1:{ingest_port}", {"instance": p.instance})],
            prometheus.RemoteWrite(
                f"{ingest_url}/api/v1/write",
                key_file,
                keep=(LABELS["__name__"],),
                keep_labels={"outcome": LABELS["outcome"], "reason": LABELS["reason"]},
            ),
        )
        server = prometheus.Prometheus(free_port(), prometheus.write_config(home / "prom", doc))
        prom = server.start(home / "prom")
        started.append(prom)
        p.prometheus_url = server.url
        aggregator.wait_healthy(aggregator_spec.ready, 180)
        yield p
    finally:
        for proc in reversed(started):  # Prometheus first: its last sends reach the ingest
            proc.stop(30)
        for name in env:
            os.environ.pop(name, None)
        _clean_up(stack.kafka_bootstrap, keyspace)


def _clean_up(kafka_bootstrap: str, keyspace: str) -> None:
    """The shared engines keep nothing of this run: its keyspace and its series' topic."""
    from apm.kafka import delete_topics
    from apm.model import topic_for
    from storage.repository import Repository
    from storage.settings import StorageSettings

    with contextlib.suppress(Exception):
        delete_topics(kafka_bootstrap, [topic_for(METRIC)])
    with (
        contextlib.suppress(Exception),
        Repository.connect(StorageSettings(keyspace=keyspace)) as repo,
    ):
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def _repository(peer: Peer):
    from storage.repository import Repository
    from storage.settings import StorageSettings

    return Repository.connect(StorageSettings(keyspace=peer.keyspace))


def _wait_until_read(peer: Peer, metric: str, timeout_s: float = 300) -> None:
    """Until the running job subscribes to ``metric`` (it polls the query table each trigger)."""
    deadline = time.monotonic() + timeout_s
    with _repository(peer) as repo:
        while True:
            jobs = {k: v for k, v in repo.get_status().items() if k.startswith("aggregator")}
            if any(metric in (payload.get("reads") or []) for payload in jobs.values()):
                return
            assert time.monotonic() < deadline, f"no job reads {metric}: {jobs}"
            time.sleep(1)


def _drive(peer: Peer, until: float, stop: threading.Event) -> None:
    """Bad batches of 1 to 40 samples at random moments, until ``until`` (epoch seconds)."""
    import numpy as np

    rng = np.random.default_rng(16)
    while time.time() < until and not stop.is_set():
        _post_bad_batch(peer, int(rng.integers(1, 41)))
        stop.wait(float(rng.uniform(0.05, 0.6)))


def _numpy(values: list[float]) -> dict[str, float]:
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    total = math.fsum(values)
    return {
        "min": float(array.min()),
        "max": float(array.max()),
        "avg": total / len(values),
        "count": float(len(values)),
        "sum": total,
        "p50": float(np.percentile(array, 50)),
        "p90": float(np.percentile(array, 90)),
        "p99": float(np.percentile(array, 99)),
    }


# Prometheus' own function for each of the platform's, over one window's range vector.
PROMQL = {
    "min": "min_over_time({})",
    "max": "max_over_time({})",
    "avg": "avg_over_time({})",
    "count": "count_over_time({})",
    "sum": "sum_over_time({})",
    "p50": "quantile_over_time(0.5, {})",
    "p90": "quantile_over_time(0.9, {})",
    "p99": "quantile_over_time(0.99, {})",
}


def _prometheus_windows(url: str, selector: str, start: int, end: int) -> dict[int, dict]:
    """Prometheus' own *_over_time of each window [ws, ws + WINDOW_S), evaluated by its
    query_range at ws + WINDOW_S - 1 ms over ``[WINDOW_S s - 1 ms]``: Prometheus 2.x range
    vectors hold both ends, so that is exactly the window's milliseconds."""
    from tests.support import prometheus

    vector = f"{selector}[{WINDOW_S * 1000 - 1}ms]"
    out: dict[int, dict] = {}
    for key, template in PROMQL.items():
        points = prometheus.query_range(
            url, template.format(vector), start + WINDOW_S - 0.001, end - 0.001, WINDOW_S
        )
        for ms, value in points:
            out.setdefault((ms + 1) // 1000 - WINDOW_S, {})[key] = value
    return out


def test_stored_windows_equal_numpy_over_the_samples_prometheus_serves(peer: Peer):
    from tests.support import prometheus

    metric = METRIC
    selector = f'{SERIES[:-1]},job="{peer.job}",instance="{peer.instance}"}}'
    # The series reached Prometheus (and so the ingest's topic) before the query is stored.
    deadline = time.monotonic() + 60
    while not prometheus.raw_samples(peer.prometheus_url, selector, time.time() - 10, time.time()):
        assert time.monotonic() < deadline, f"Prometheus never scraped {selector}"
        time.sleep(1)
    text = f"FROM {peer.instance} SELECT {metric} WINDOW {WINDOW_S}s COMPUTE {', '.join(FUNCTIONS)}"
    with _repository(peer) as repo:
        query_id = repo.save_query(text).id
    _wait_until_read(peer, metric)

    # Whole windows that begin after the job reads the metric: every sample in them reached
    # the ingest after the query was active, so none was dropped as unwanted.
    start = (math.floor(time.time()) // WINDOW_S + 2) * WINDOW_S
    end = start + WINDOWS * WINDOW_S
    stop = threading.Event()
    driver = threading.Thread(target=_drive, args=(peer, end + 2, stop), daemon=True)
    driver.start()
    try:
        # Past the end: one scrape, one send deadline and a margin later, Prometheus has
        # every sample of the range and has sent it.
        time.sleep(max(0.0, end + 5 - time.time()))
    finally:
        stop.set()
        driver.join(10)

    raw = prometheus.raw_samples(peer.prometheus_url, selector, start, end)
    served = prometheus.by_window(raw, WINDOW_S)
    assert sorted(served) == [start + i * WINDOW_S for i in range(WINDOWS)], raw
    assert all(len(v) >= WINDOW_S - 2 for v in served.values()), served  # scraped each second
    assert len({v for values in served.values() for v in values}) > WINDOWS  # values change
    want = {ws: _numpy(values) for ws, values in served.items()}
    # Prometheus' own functions over the same windows agree with numpy over its raw samples
    # (quantile_over_time interpolates as numpy's "linear" does).
    own = _prometheus_windows(peer.prometheus_url, selector, start, end)
    assert sorted(own) == sorted(want), own
    for ws, values in want.items():
        assert own[ws] == pytest.approx(values, rel=1e-12), (ws, own[ws], served[ws])

    deadline = time.monotonic() + 180
    with _repository(peer) as repo:
        while True:
            got = {r.window_start: r for r in repo.read_results(query_id, start, end - 1)}
            if {ws: r.samples for ws, r in got.items()} == {ws: len(v) for ws, v in served.items()}:
                break
            assert time.monotonic() < deadline, (
                f"stored windows {[(ws, r.samples) for ws, r in sorted(got.items())]} never "
                f"held the samples Prometheus serves {[(ws, len(v)) for ws, v in served.items()]}"
            )
            time.sleep(2)
    complete_after = time.time() - end

    for ws, values in want.items():
        have = got[ws].values
        assert set(have) == set(FUNCTIONS)
        for key in ("min", "max", "count", "sum"):  # counts of whole samples: exact
            assert have[key] == values[key], (ws, key, have, values, served[ws])
        for key in ("avg", "p50", "p90", "p99"):
            assert have[key] == pytest.approx(values[key], rel=1e-12), (ws, key, served[ws])
        assert have == pytest.approx(own[ws], rel=1e-12), (ws, have, own[ws])
    # For the record (pytest -s): what was compared, and how soon the windows were complete.
    print(
        f"\nprometheus peer: {len(want)} windows of {WINDOW_S}s, samples "
        f"{[len(v) for v in served.values()]}, values {raw[0][1]:g}..{raw[-1][1]:g}, all "
        f"{len(FUNCTIONS)} functions equal; stored complete {complete_after:.1f}s after the "
        "range ended"
    )
