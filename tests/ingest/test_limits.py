"""What one request may cost (issue 14, item 5): bytes on the wire and inflated, JSON values
counted before parsing, parsing off the event loop, and an upload deadline."""

from __future__ import annotations

import asyncio
import gzip
import threading

import httpx
import orjson
import pytest

from ingest.app import create_app
from ingest.errors import ApiError
from ingest.settings import IngestSettings
from tests.ingest.fakes import FakePublisher

pytestmark = pytest.mark.unit

GZIP = {"Content-Type": "application/json", "Content-Encoding": "gzip"}


def _object_bomb(inflated: int) -> bytes:
    """``{"snapshots":[{},{},...]}``, gzipped: tiny on the wire, millions of objects."""
    return gzip.compress(b'{"snapshots":[' + b"{}," * (inflated // 3) + b"{}]}", 9)


def test_a_small_gzip_body_of_millions_of_objects_is_refused_before_parsing(
    make_client, fake_publisher, monkeypatch
):
    """15 MiB of ``{},`` (15 KiB gzipped, under every byte limit) is 5M objects: the default
    limits refuse it by count, and it is never parsed (before: parsed into 5M dicts, ~0.5 GB
    and seconds on the event loop, then a 422)."""
    import ingest.body

    def no_parse(raw: bytes) -> object:
        raise AssertionError("parsed a body over the value limit")

    monkeypatch.setattr(ingest.body, "parse_json", no_parse)
    bomb = _object_bomb(15 * 1024 * 1024)
    assert len(bomb) < 64 * 1024
    answer = make_client().post("/v1/metrics", content=bomb, headers=GZIP)
    assert answer.status_code == 413, answer.text[:300]
    body = answer.json()
    assert (body["error"], body["at"]) == ("too_large", "body")
    assert "JSON values" in body["detail"]
    assert fake_publisher.published == []


def test_the_value_limit_is_a_setting_and_counted(make_client, fake_publisher):
    client = make_client(max_json_values=1000)
    raw = b'{"snapshots":[' + b",".join([b"{}"] * 2000) + b"]}"
    answer = client.post("/v1/metrics", content=raw, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413, answer.text
    assert "more than 1000 JSON values" in answer.json()["detail"]
    text = client.get("/metrics").text
    assert 'apm_ingest_requests_total{outcome="rejected",reason="too_many_values"} 1.0' in text


def test_the_default_limits_take_any_valid_batch_of_max_samples(make_batch):
    """At most 5 values per sample (one-sample snapshots are the worst case), so the default
    value limit never refuses a batch the sample limit allows; 16 MiB inflated holds it."""
    from ingest.body import count_values

    settings = IngestSettings()
    raw = orjson.dumps(make_batch(servers=settings.max_samples, metrics=1))
    assert count_values(raw, settings.max_json_values) <= 5 * settings.max_samples + 2
    assert len(raw) <= settings.max_decompressed_bytes <= 16 * 1024 * 1024


def test_count_values_is_an_upper_bound():
    from ingest.body import count_values

    for doc in ([], {}, [1, [2, {"a": [3, 4]}]], {"a": "x,y{["}, [[[[]]]], "s", 1.5):
        raw = orjson.dumps(doc)
        assert count_values(raw, 10**6) >= _values(orjson.loads(raw))
    with pytest.raises(ApiError) as refused:
        count_values(b"[" + b"0," * 10 + b"0]", 10)
    assert refused.value.status == 413


def _values(doc: object) -> int:
    if isinstance(doc, list):
        return 1 + sum(map(_values, doc))
    if isinstance(doc, dict):
        return 1 + sum(map(_values, doc.values()))
    return 1


def _app(tmp_path, **overrides):
    from ingest.auth import add_key

    key = add_key(tmp_path / "keys")
    app = create_app(
        IngestSettings(keys_file=tmp_path / "keys", **overrides), publisher=FakePublisher()
    )
    transport = httpx.ASGITransport(app=app)
    client = httpx.AsyncClient(
        transport=transport,
        base_url="http://ingest",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    return app, client


def test_parsing_runs_off_the_event_loop(tmp_path, monkeypatch, make_batch):
    """While one body is being parsed (held here), the service still answers /healthz and
    /metrics (before: the parse ran on the event loop and froze the whole process)."""
    import ingest.body
    import ingest.routes.samples

    release, parsing, parsed = threading.Event(), threading.Event(), threading.Event()
    real = ingest.body.parse_json

    def slow_parse(raw: bytes) -> object:
        parsing.set()
        release.wait(3)  # on the event loop (before), this freezes everything for 3 s
        parsed.set()
        return real(raw)

    monkeypatch.setattr(ingest.body, "parse_json", slow_parse)
    monkeypatch.setattr(ingest.routes.samples, "parse_json", slow_parse, raising=False)
    _, client = _app(tmp_path)

    async def scenario() -> None:
        post = asyncio.ensure_future(client.post("/v1/metrics", content=orjson.dumps(make_batch())))
        for _ in range(500):
            if parsing.is_set():
                break
            await asyncio.sleep(0.01)
        assert parsing.is_set()
        try:
            for path in ("/healthz", "/metrics"):
                answer = await asyncio.wait_for(client.get(path), 2)
                assert answer.status_code == 200
                assert not parsed.is_set(), "answered only after the parse"
        finally:
            release.set()
        assert (await post).status_code == 202

    asyncio.run(scenario())


def test_a_stalled_upload_gets_408_at_the_answer_deadline(tmp_path):
    _, client = _app(tmp_path, answer_timeout_s=0.2)

    async def scenario() -> None:
        never = asyncio.Event()

        async def body():
            yield b'{"snapshots": ['
            await never.wait()

        # The body never ends: without the deadline there is no answer at all, so a generous
        # bound (for a loaded machine) is enough to see that the deadline gave this one.
        answer = await asyncio.wait_for(client.post("/v1/metrics", content=body()), 10)
        assert answer.status_code == 408, answer.text
        assert answer.json()["error"] == "request_timeout"
        assert set(answer.json()) == {"error", "detail", "at"}

    asyncio.run(scenario())


def test_a_batch_of_too_many_bad_snapshots_is_refused_whole_and_early(make_client):
    """Bad snapshots are the slow path of the per-snapshot verdict; half a million ``{}``
    (under the value limit) would cost seconds and 200 MB of verdicts, so past
    max_rejected_snapshots the batch is a 422 naming the first."""
    client = make_client(max_rejected_snapshots=50)
    raw = b'{"snapshots":[' + b",".join([b"{}"] * 5000) + b"]}"
    answer = client.post("/v1/metrics", content=raw, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["at"] == "snapshots[0].server"
    assert "more than 50 bad snapshots" in body["detail"]
    text = client.get("/metrics").text
    counted = '{outcome="rejected",reason="too_many_bad_snapshots"} 1.0'
    assert "apm_ingest_requests_total" + counted in text
