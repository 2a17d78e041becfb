import gzip
import json

import numpy as np
import pytest
from pydantic import ValidationError

from loadgen.fleet import Tick
from loadgen.payload import build_request, split_tick
from loadgen.settings import LoadgenSettings, metrics_url, parse_duration, parse_start

pytestmark = pytest.mark.unit


def test_requests_follow_the_ingest_contract(make_fleet):
    fleet = make_fleet(servers=25, metrics=4, silent_fraction=0.0)
    tick = fleet.step(1_763_800_000)
    batches = list(split_tick(tick, 10))
    assert [b.samples for b in batches] == [40, 40, 20]
    request = build_request(batches[1], fleet.names, fleet.metric_names, "k3y", gzip_level=1)
    assert request.headers == {
        "Content-Type": "application/json",
        "Authorization": "Bearer k3y",
        "Content-Encoding": "gzip",
    }
    doc = json.loads(gzip.decompress(request.body))
    assert list(doc) == ["snapshots"] and len(doc["snapshots"]) == request.snapshots == 10
    first = doc["snapshots"][0]
    assert first["server"] == fleet.names[10] and first["ts"] == 1_763_800_000.0
    # JSON carries the exact doubles the fleet generated.
    assert list(first["metrics"].values()) == tick.values[10].tolist()
    assert list(first["metrics"]) == fleet.metric_names
    plain = build_request(batches[0], fleet.names, fleet.metric_names, "", gzip_level=0)
    assert "Authorization" not in plain.headers and "Content-Encoding" not in plain.headers
    assert json.loads(plain.body)["snapshots"][0]["server"] == fleet.names[0]


def test_silent_servers_are_not_in_any_request(make_fleet):
    fleet = make_fleet(servers=12, metrics=2)
    tick = fleet.step(5)
    alive = np.ones(12, dtype=bool)
    alive[[0, 5, 11]] = False
    tick = Tick(tick.ts, tick.values, alive)
    sent = np.concatenate([b.servers for b in split_tick(tick, 4)])
    assert sent.tolist() == [1, 2, 3, 4, 6, 7, 8, 9, 10]
    with pytest.raises(ValueError, match="at least 1"):
        list(split_tick(tick, 0))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("30s", 30), ("5m", 300), ("1h", 3600), ("1.5m", 90), ("2d", 172_800)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "-3s", "0", "m"])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_starts():
    now = 1_763_800_123.7
    assert parse_start("1763800000", now) == 1_763_800_000
    assert parse_start("1763800000.9", now) == 1_763_800_000
    assert parse_start("-10m", now) == 1_763_799_523
    assert parse_start("2025-11-22T08:26:40Z", now) == 1_763_800_000
    for bad, match in (("yesterday", "epoch seconds"), ("2025-11-22T08:00:00", "time zone")):
        with pytest.raises(ValueError, match=match):
            parse_start(bad, now)


def test_target_urls():
    assert metrics_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1/metrics"
    assert metrics_url("http://lb:80/") == "http://lb:80/v1/metrics"
    assert metrics_url("https://h/custom/path") == "https://h/custom/path"
    with pytest.raises(ValueError, match="http"):
        metrics_url("127.0.0.1:8000")
    with pytest.raises(ValidationError, match="target"):
        LoadgenSettings(target="ftp://x")


def test_env_then_explicit_arguments(monkeypatch):
    monkeypatch.setenv("APM_LOADGEN_SERVERS", "77")
    monkeypatch.setenv("APM_LOADGEN_API_KEY", "from-env")
    monkeypatch.setenv("APM_KAFKA_BOOTSTRAP", "kafka-1:9092")
    s = LoadgenSettings()
    assert (s.servers, s.api_key, s.kafka_bootstrap) == (77, "from-env", "kafka-1:9092")
    assert LoadgenSettings(servers=5).servers == 5
    with pytest.raises(ValidationError, match="servers"):
        LoadgenSettings(servers=0)
    assert LoadgenSettings(duration_s=2.5).ticks == 3


@pytest.mark.parametrize("gzip_level", [0, 1, 6])
def test_a_stamped_template_is_byte_for_byte_the_built_request(gzip_level):
    from loadgen.fleet import Fleet
    from loadgen.payload import build_request, split_tick, stamp, template

    fleet = Fleet(12, 4, seed=3)
    names, metrics = fleet.names, fleet.metric_names
    for second in (1_763_800_000.0, 1_763_800_001.5):
        for batch in split_tick(fleet.step(second), 5):
            built = build_request(batch, names, metrics, "k.s", gzip_level)
            plain = template(batch, names, metrics, "k.s")
            assert stamp(plain, batch.ts, gzip_level) == built
