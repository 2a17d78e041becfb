"""The generator through the real ingest and straight into the real Kafka: every generated
sample lands in its metric's topic, decoded with apm.wire, equal to what was generated."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest

from apm.kafka import end_offsets
from apm.model import topic_for
from apm.tags import TAGS_TOPIC, decode_tags_record
from loadgen.fleet import Fleet, metric_catalog
from loadgen.runner import expected_samples, run_load
from tests.support.kafka import read_keyed, read_samples

pytestmark = pytest.mark.integration


def _prefix() -> str:
    return f"lg{uuid.uuid4().hex[:8]}."


def _want(settings) -> list[tuple[str, str, float, float]]:
    return sorted(
        (topic_for(s.metric), s.server, s.ts, s.value) for s in expected_samples(settings)
    )


def test_backfill_through_the_real_ingest_lands_whole_in_kafka(
    make_settings, real_ingest, own_topics, kafka_bootstrap
):
    url, key = real_ingest
    settings = make_settings(
        servers=60,
        metrics=6,
        duration_s=15,
        api_key=key,
        target=url,
        start=float(int(time.time()) - 120),
        metric_prefix=_prefix(),
        servers_per_request=25,
        silent_fraction=0.1,
    )
    own_topics.extend(topic_for(m) for m, _ in metric_catalog(6, settings.metric_prefix))
    since = end_offsets(kafka_bootstrap, [TAGS_TOPIC])
    result = run_load(settings, progress=False)
    s = result.summary
    assert s["lost"] == 0 and s["errors"] == {} and s["ambiguous_retries"] == 0, s
    want = _want(settings)
    assert s["accepted"] == len(want)
    got = sorted(read_samples(kafka_bootstrap, own_topics))
    assert got == want
    # Each sending server's seeded tags (loadgen.tags) reached the tags topic once: this
    # ingest is new, and they never change. The topic is shared: the fleet's servers only.
    senders = {server for _topic, server, _ts, _value in got}
    assert len(senders) > settings.servers // 2
    fleet = Fleet(settings.servers, settings.metrics, settings.seed)
    expected = dict(zip(fleet.names, fleet.tags, strict=True))
    sent: dict[str, list[dict[str, str]]] = {}
    for _key, value in read_keyed(kafka_bootstrap, TAGS_TOPIC, since):
        server, tags, _ts = decode_tags_record(value)
        if server in expected:
            sent.setdefault(server, []).append(tags)
    assert sent == {server: [expected[server]] for server in senders}


def test_direct_kafka_writes_the_same_records(make_settings, own_topics, kafka_bootstrap):
    settings = make_settings(
        servers=50,
        metrics=5,
        duration_s=10,
        direct_kafka=True,
        kafka_bootstrap=kafka_bootstrap,
        metric_prefix=_prefix(),
        topic_partitions=2,
        record_max_bytes=1024,
    )
    own_topics.extend(topic_for(m) for m, _ in metric_catalog(5, settings.metric_prefix))
    result = run_load(settings, progress=False)
    s = result.summary
    assert s["lost"] == 0 and s["errors"] == {}, s
    # Small records: one tick of one metric spans several of them.
    assert s["requests"] > settings.ticks * settings.metrics
    assert sorted(read_samples(kafka_bootstrap, own_topics)) == _want(settings)


def test_cli_in_real_time_reports_progress_and_a_summary(
    real_ingest, own_topics, kafka_bootstrap, tmp_path
):
    url, key = real_ingest
    prefix = _prefix()
    truth = tmp_path / "truth.json"
    own_topics.extend(topic_for(f"{prefix}{m}") for m in ("cpu.util", "mem.used_pct", "rpc.count"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "apm.cli",
            "loadgen",
            "--servers",
            "30",
            "--metrics",
            "3",
            "--duration",
            "3s",
            "--target",
            url,
            "--metric-prefix",
            prefix,
            "--expect",
            str(truth),
            "--query",
            f"FROM * SELECT {prefix}rpc.count WINDOW 1s COMPUTE count, sum",
        ],
        env={
            "APM_LOADGEN_API_KEY": key,
            "APM_LOADGEN_PROGRESS_INTERVAL_S": "0.5",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["pacing"] == "realtime" and summary["ticks"] == 3 and summary["lost"] == 0
    assert "[loadgen" in done.stderr and "samples/s=" in done.stderr and "p99=" in done.stderr
    rows = read_samples(kafka_bootstrap, own_topics)
    assert len(rows) == summary["accepted"] == summary["generated"]
    assert {ts for _, _, ts, _ in rows} == {summary["first_ts"] + k for k in range(3)}
    # The truth counts exactly the rpc.count samples that reached Kafka, second by second.
    windows = json.loads(truth.read_text())["windows"]
    counted = {w["window_start"]: w["values"] for w in windows}
    for start, values in counted.items():
        got = [v for t, _, ts, v in rows if t.endswith(".rpc.count") and ts == start]
        assert values == {"count": len(got), "sum": sum(got)}


def test_background_fleet_stops_on_sigterm_without_losing_what_it_sent(
    real_ingest, own_topics, kafka_bootstrap, tmp_path
):
    from launch import processes

    url, key = real_ingest
    prefix = _prefix()
    own_topics.extend(topic_for(f"{prefix}{m}") for m in ("cpu.util", "mem.used_pct"))
    proc = processes.loadgen(
        url, key, servers=50, metrics=2, duration="1h", metric_prefix=prefix
    ).start(tmp_path / "lg", env={"APM_LOADGEN_PROGRESS_INTERVAL_S": "0.5"})
    try:
        deadline = time.monotonic() + 60
        while "accepted=" not in proc.tail(50) or " accepted=0 " in proc.tail(1):
            assert proc.pid() is not None, proc.tail(20)
            assert time.monotonic() < deadline, proc.tail(20)
            time.sleep(0.5)
    finally:
        assert proc.stop(30)
    log = proc.log.read_text()
    summary = json.loads(log[log.index("\n{") + 1 :])
    assert summary["stopped_early"] and summary["pacing"] == "realtime"
    assert 0 < summary["accepted"] == summary["generated"] and summary["lost"] == 0
    assert len(read_samples(kafka_bootstrap, own_topics)) == summary["accepted"]
