"""What each answer of the ingest does to the spool (issue 14, items 4 and 11): a configuration
error (401, 403, 404, a redirect ...) keeps everything and backs off loudly; only a refusal of
the content (422, 413 on one snapshot) sets snapshots aside; a 413 splits the batch; a 202 that
lists rejected snapshots sets those aside and never resends the rest."""

from __future__ import annotations

import gzip
import itertools
import json
import logging
from pathlib import Path

import pytest

from agent.exposition import render
from agent.http import HttpResponse

pytestmark = pytest.mark.unit

_CONFIG_ERRORS = [400, 401, 403, 404, 405, 407, 410, 415, 301, 302, 307, 308]


def _sent(body: bytes) -> list[dict]:
    return json.loads(gzip.decompress(body))["snapshots"]


def _rejected(tmp_path: Path) -> list[dict]:
    path = tmp_path / "rejected.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("status", _CONFIG_ERRORS)
def test_a_configuration_error_keeps_the_whole_spool_and_backs_off_loudly(
    make_pusher, make_http, tmp_path, caplog, status
) -> None:
    headers = {"location": "https://elsewhere/v1/metrics"} if status < 400 else {}
    http = make_http(
        *[HttpResponse(status, headers, b'{"error":"unauthorized"}')] * 12,
        HttpResponse(202, {}, b"{}"),
    )
    pusher = make_pusher(http, snapshots=20, max_snapshots=5)
    with caplog.at_level(logging.ERROR, logger="agent.push"):
        delays = [pusher.push_once() for _ in range(12)]
    assert pusher.spool.depth == 20  # nothing drained, nothing set aside
    assert _rejected(tmp_path) == [] and pusher.stats.rejected == 0
    # Backs off from 1 s, doubling, up to the cap: no hot loop against a wrong URL.
    assert delays[0] == pytest.approx(1.0)
    assert all(a <= b for a, b in itertools.pairwise(delays))
    assert max(delays) == pytest.approx(30.0)
    # Loudly: the log, the counters pushed as agent.push.*, and /metrics.
    assert pusher.stats.blocked == 12 and pusher.stats.blocked_status == status
    assert any("configuration" in r.getMessage() for r in caplog.records)
    if status < 400:
        assert "redirected to https://elsewhere/v1/metrics" in caplog.text
    text = render(pusher.stats, pusher.spool)
    assert f"apm_agent_push_blocked_status {float(status)!r}" in text
    assert "apm_agent_push_blocked_total 12.0" in text
    # Fixed (the key rotated back, the URL corrected): everything goes, in order.
    while pusher.push_once() is not None:
        pass
    sent = [s["ts"] for _u, body, _h in http.requests[12:] for s in _sent(body)]
    assert sent == [1000.0 + i for i in range(20)]
    assert pusher.stats.blocked_status == 0 and pusher.stats.pushed == 20


def test_a_422_sets_the_batch_aside_with_the_ingest_s_reason(
    make_pusher, make_http, tmp_path
) -> None:
    refusal = {"error": "validation", "detail": "ts too far ahead", "at": "snapshots[0].ts"}
    http = make_http(HttpResponse(422, {}, json.dumps(refusal).encode()), HttpResponse(202))
    pusher = make_pusher(http, snapshots=2, max_snapshots=1)
    assert pusher.push_once() == 0.0
    assert pusher.stats.rejected == 1 and pusher.stats.retries == 0
    [line] = _rejected(tmp_path)
    assert line["status"] == 422 and line["reason"] == refusal
    assert line["snapshot"]["ts"] == 1000.0
    pusher.push_once()  # the next snapshot goes through
    assert pusher.spool.depth == 0 and pusher.stats.pushed == 1


class _SizeLimitedIngest:
    """Answers 413 to any batch of more than ``limit`` snapshots, and to the one snapshot
    stamped ``huge`` even alone; 202 otherwise."""

    def __init__(self, limit: int, huge: float) -> None:
        self.limit, self.huge = limit, huge
        self.accepted: list[float] = []
        self.requests = 0

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> HttpResponse:
        self.requests += 1
        snapshots = _sent(body)
        if len(snapshots) > self.limit or any(s["ts"] == self.huge for s in snapshots):
            return HttpResponse(413, {}, b'{"error":"too_large"}')
        self.accepted += [s["ts"] for s in snapshots]
        return HttpResponse(202, {}, b"{}")


def test_a_413_splits_the_batch_and_sets_aside_only_a_snapshot_too_large_alone(
    make_pusher, tmp_path
) -> None:
    ingest = _SizeLimitedIngest(limit=3, huge=1005.0)
    pusher = make_pusher(ingest, snapshots=12, max_snapshots=8)
    for _ in range(40):
        if pusher.push_once() is None:
            break
    assert ingest.accepted == [1000.0 + i for i in range(12) if i != 5]
    assert [line["snapshot"]["ts"] for line in _rejected(tmp_path)] == [1005.0]
    assert pusher.stats.rejected == 1 and pusher.stats.splits >= 2
    assert pusher.spool.depth == 0


@pytest.mark.parametrize(
    "verdicts",
    [
        [1, 3],
        [{"index": 1, "error": "validation", "at": "snapshots[1].ts"}, {"index": 3}],
    ],
)
def test_a_partial_success_sets_aside_the_rejected_and_never_resends_the_rest(
    make_pusher, make_http, tmp_path, verdicts
) -> None:
    body = json.dumps({"accepted": 3, "snapshots": 5, "rejected": verdicts}).encode()
    http = make_http(HttpResponse(202, {}, body))
    pusher = make_pusher(http, snapshots=5)
    assert pusher.push_once() == 0.0
    assert pusher.push_once() is None  # nothing left to resend
    assert len(http.requests) == 1
    lines = _rejected(tmp_path)
    assert [line["snapshot"]["ts"] for line in lines] == [1001.0, 1003.0]
    if isinstance(verdicts[0], dict):
        assert lines[0]["reason"] == {"error": "validation", "at": "snapshots[1].ts"}
    assert pusher.stats.pushed == 3 and pusher.stats.rejected == 2


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{}",
        b'{"accepted": 5, "snapshots": 5}',
        b"not json",
        b"[1, 2]",
        b'{"rejected": "all"}',
        b'{"rejected": [99, -1, true, "2", null, {"index": 7}, {"index": 1.5}]}',
        b"[" * 100_000,
    ],
)
def test_any_other_2xx_body_means_everything_was_delivered(
    make_pusher, make_http, tmp_path, body
) -> None:
    pusher = make_pusher(make_http(HttpResponse(202, {}, body)), snapshots=5)
    pusher.push_once()
    assert pusher.spool.depth == 0 and pusher.stats.pushed == 5
    assert _rejected(tmp_path) == []
