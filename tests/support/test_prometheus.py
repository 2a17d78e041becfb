"""The Prometheus peer's launcher: the configuration it generates (checked by Debian's own
``promtool``), its command line, the reader of raw samples and the grouping into windows.
The last test starts the real server (marker ``integration``) and reads its own samples back,
so the fake API answers of the unit tests are the real server's shape."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from launch.probe import free_port
from launch.supervisor import StartError
from tests.support import prometheus
from tests.support.debs import require

unit = pytest.mark.unit  # every test but the last, which starts the real server


def _doc(tmp_path: Path, **remote: object) -> dict:
    token = tmp_path / "ingest.key"
    token.write_text("kid.secret-never-in-the-config\n")
    return prometheus.config(
        [prometheus.ScrapeTarget("ingest", "127.0.0.1:18001", {"instance": "peer-1"})],
        prometheus.RemoteWrite(
            "http://127.0.0.1:18001/api/v1/write",
            token,
            keep=("apm_ingest_.*", "up"),
            keep_labels={"reason": "value", "outcome": "rejected"},
            **remote,
        ),
    )


@unit
def test_scrapes_each_second_and_sends_only_the_kept_series_with_the_key_from_a_file(tmp_path):
    doc = _doc(tmp_path)
    assert doc["global"]["scrape_interval"] == doc["global"]["scrape_timeout"] == "1000ms"
    (job,) = doc["scrape_configs"]
    assert job["job_name"] == "ingest" and job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [
        {"targets": ["127.0.0.1:18001"], "labels": {"instance": "peer-1"}}
    ]
    (write,) = doc["remote_write"]
    assert write["url"] == "http://127.0.0.1:18001/api/v1/write"
    assert write["authorization"] == {
        "type": "Bearer",
        "credentials_file": str(tmp_path / "ingest.key"),
    }
    assert write["write_relabel_configs"] == [
        {"source_labels": ["__name__"], "regex": "(?:apm_ingest_.*)|(?:up)", "action": "keep"},
        {"source_labels": ["outcome"], "regex": "rejected", "action": "keep"},
        {"source_labels": ["reason"], "regex": "value", "action": "keep"},
    ]
    queue = write["queue_config"]
    assert queue["batch_send_deadline"] == "1000ms" and queue["retry_on_http_429"] is True
    assert write["metadata_config"] == {"send": False}
    text = prometheus.write_config(tmp_path, doc).read_text()
    assert "secret-never-in-the-config" not in text
    assert json.loads(text) == doc


@unit
def test_without_remote_write_or_keep_nothing_is_filtered_or_sent():
    doc = prometheus.config([prometheus.ScrapeTarget("a", "127.0.0.1:1")], interval_s=2.5)
    assert "remote_write" not in doc and doc["global"]["scrape_interval"] == "2500ms"
    write = prometheus.RemoteWrite("http://x/api/v1/write").as_config()
    assert "write_relabel_configs" not in write and "authorization" not in write


@unit
@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_a_duration_that_prometheus_would_refuse_is_an_error_here(bad):
    with pytest.raises(ValueError, match="positive"):
        prometheus.config([prometheus.ScrapeTarget("a", "127.0.0.1:1")], interval_s=bad)


@unit
def test_two_jobs_of_one_name_are_refused():
    target = prometheus.ScrapeTarget("same", "127.0.0.1:1")
    with pytest.raises(ValueError, match="unique"):
        prometheus.config([target, target])


@unit
def test_promtool_accepts_the_generated_config(tmp_path):
    promtool = require("promtool", "prometheus")
    path = prometheus.write_config(tmp_path, _doc(tmp_path, batch_send_deadline_s=0.5))
    run = subprocess.run(
        [promtool, "check", "config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr


@unit
def test_the_command_line_keeps_data_under_home_and_bounds_the_shutdown_flush(tmp_path):
    server = prometheus.Prometheus(9999, tmp_path / "p.yml", binary="/usr/bin/prometheus")
    cmd = server.command(tmp_path)
    assert cmd[0] == "/usr/bin/prometheus"
    assert f"--storage.tsdb.path={tmp_path / 'data'}" in cmd
    assert f"--config.file={tmp_path / 'p.yml'}" in cmd
    assert server.marker in cmd and server.marker == "--web.listen-address=127.0.0.1:9999"
    assert "--storage.remote.flush-deadline=5000ms" in cmd
    assert server.stop_timeout_s > server.flush_deadline_s
    assert server.url == "http://127.0.0.1:9999"


def _matrix(*series: list[list[object]]) -> bytes:
    result = [{"metric": {"__name__": f"m{i}"}, "values": v} for i, v in enumerate(series)]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


@unit
def test_raw_samples_reads_a_range_vector_at_the_end_and_keeps_start_le_t_lt_end():
    asked: list[str] = []

    def get(url: str, timeout_s: float) -> bytes:
        asked.append(url)
        return _matrix([[99.999, "0"], [100, "1"], [104.5, "2.5"], [110, "3"], [110.001, "4"]])

    got = prometheus.raw_samples("http://p", 'm{instance="a"}', 100, 110.001, get=get)
    assert got == [(100_000, 1.0), (104_500, 2.5), (110_000, 3.0)]
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(asked[0]).query)
    assert params == {"query": ['m{instance="a"}[11001ms]'], "time": ["110.001"]}


@unit
def test_raw_samples_of_no_series_is_empty_and_of_two_series_or_an_error_raises():
    def answer(body: bytes):
        return lambda url, timeout_s: body

    assert prometheus.raw_samples("http://p", "m", 0, 1, get=answer(_matrix())) == []
    with pytest.raises(ValueError, match="2 series, not one"):
        prometheus.raw_samples("http://p", "m", 0, 1, get=answer(_matrix([], [])))
    error = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"})
    with pytest.raises(ValueError, match="bad_data: parse error"):
        prometheus.raw_samples("http://p", "m{", 0, 1, get=answer(error.encode()))
    with pytest.raises(ValueError, match="empty range"):
        prometheus.raw_samples("http://p", "m", 5, 5, get=answer(_matrix()))


@unit
def test_query_range_asks_for_the_steps_and_returns_the_one_series_points():
    asked: list[str] = []

    def get(url: str, timeout_s: float) -> bytes:
        asked.append(url)
        return _matrix([[109.999, "4"], [119.999, "NaN"]])

    got = prometheus.query_range(
        "http://p", "min_over_time(m[9999ms])", 109.999, 119.999, 10, get=get
    )
    assert got[0] == (109_999, 4.0) and got[1][0] == 119_999 and math.isnan(got[1][1])
    assert urllib.parse.urlsplit(asked[0]).path == "/api/v1/query_range"
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(asked[0]).query)
    assert params == {
        "query": ["min_over_time(m[9999ms])"],
        "start": ["109.999"],
        "end": ["119.999"],
        "step": ["10"],
    }
    with pytest.raises(ValueError, match="not one"):
        prometheus.query_range("http://p", "m", 0, 1, 1, get=lambda u, t: _matrix([], []))


@unit
def test_by_window_uses_whole_milliseconds_and_puts_a_boundary_sample_in_the_next_window():
    samples = [(20_000, 3.0), (19_999, 2.0), (10_000, 1.0), (29_999, 4.0), (30_000, 5.0)]
    assert prometheus.by_window(samples, 10) == {10: [1.0, 2.0], 20: [3.0, 4.0], 30: [5.0]}
    # 0.1 s steps: float seconds would put 1763800009.9999999 on either side; ms do not.
    steps = [(1_763_800_000_000 + 100 * i, float(i)) for i in range(200)]
    assert {k: len(v) for k, v in prometheus.by_window(steps, 10).items()} == {
        1_763_800_000: 100,
        1_763_800_010: 100,
    }
    with pytest.raises(ValueError, match="positive"):
        prometheus.by_window(samples, 0)


@pytest.mark.integration
def test_the_real_server_starts_scrapes_each_second_answers_raw_samples_and_stops(tmp_path):
    try:
        prometheus.find_binary()
    except StartError as exc:  # a machine without `make debs`: a failure, named
        pytest.fail(str(exc))
    port = free_port()
    # Its remote_write goes to a port nobody listens on: at the stop, samples wait in the
    # queue, and the flush deadline is what bounds the stop.
    nobody = f"http://127.0.0.1:{free_port()}/api/v1/write"
    doc = prometheus.config(
        [prometheus.ScrapeTarget("self", f"127.0.0.1:{port}", {"instance": "me"})],
        prometheus.RemoteWrite(nobody, max_backoff_s=5),
    )
    server = prometheus.Prometheus(port, prometheus.write_config(tmp_path, doc))
    proc = server.start(tmp_path)
    try:
        # Targets reach the scrape manager some 5 s after start (discovery's update period).
        deadline = time.monotonic() + 30
        while True:
            end = math.floor(time.time() * 1000) / 1000  # whole ms, as the API reads it
            got = prometheus.raw_samples(server.url, 'up{job="self",instance="me"}', end - 5, end)
            if len(got) >= 4 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert 4 <= len(got) <= 5 and {value for _, value in got} == {1.0}
        steps = [b - a for (a, _), (b, _) in itertools.pairwise(got)]
        assert all(900 <= step <= 1100 for step in steps), steps  # every second
        # Its own count over the same milliseconds (2.x range vectors hold both ends).
        counted = prometheus.query_range(
            server.url, 'count_over_time(up{job="self"}[4999ms])', end - 0.001, end - 0.001, 1
        )
        assert counted == [(round(end * 1000) - 1, float(len(got)))]
        assert (tmp_path / "data").is_dir()
        with pytest.raises(ValueError, match="not one"):
            prometheus.raw_samples(server.url, '{job="self"}', end - 5, end)
    finally:
        began = time.monotonic()
        proc.stop(server.stop_timeout_s)
    took = time.monotonic() - began
    print(f"\nprometheus stopped in {took:.2f}s with remote_write unreachable")  # pytest -s
    assert proc.last_stop == "exited" and took < server.stop_timeout_s


@unit
def test_an_https_remote_write_trusts_a_private_ca_by_file(tmp_path):
    ca = tmp_path / "ca.pem"
    write = prometheus.RemoteWrite("https://localhost:8443/api/v1/write", ca_file=ca).as_config()
    assert write["tls_config"] == {"ca_file": str(ca)}
    assert "tls_config" not in prometheus.RemoteWrite("http://x/api/v1/write").as_config()
