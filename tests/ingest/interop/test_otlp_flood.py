"""One metric's flood of new series (issue 28, findings 3 and 4): cumulative counters whose
attribute (a request id, left out of the name by the guard) takes a new long value at every
point. Before, each point was a new entry in the namer's cache and in the rate state, both
bounded in entries only: 20 such requests of ~180 KB gzip left the ingest hundreds of MiB
larger, and the LRU forgot a steady counter's previous point, so its next point gave no rate.

The RSS bound is the issue's (growth under 32 MiB), asserted on the process's peak RSS
(VmHWM, reset first) over the flood after its first request: that one request's own working
set (inflating and parsing ~8 MB, ~28 MiB measured, freed when it is answered) is what any
request of that size costs, not what the flood accumulates. Measured here: ~16 MiB over the
19 requests, none after the second; before the fix the flood grew it by several hundred MiB
(the issue measured 574 MiB).

The requests get a wide ``answer_timeout_s``: it is also each request's decode deadline, and
decoding one ~8 MB body takes ~0.35 s alone but can pass the default 4 s on a loaded machine,
where its 503 ("decoding the request took longer than its deadline") fails this test though
nothing it checks is wrong. What it proves (the memory bound, the steady counter's every
rate, the series_budget drops) does not depend on time; the deadline is tested in
test_wirecount.py and test_parsedcount.py."""

from __future__ import annotations

from typing import Any

import pytest

from bench.ingest_decode import flood_body
from tests.ingest.interop.test_otlp import NS, answer, now_ns, post, published
from tests.ingest.interop.test_wirecount import answered

pytestmark = pytest.mark.unit


_NO_DEADLINE_S = 600.0  # a timeout only: no request of this test may meet it


def _flood(i: int, t0: int) -> bytes:
    return flood_body(i, t0, host="web-1", prefix="")


def test_a_flood_of_one_metric_holds_memory_and_keeps_the_others_rates(
    make_client: Any, fake_publisher: Any
) -> None:
    client = make_client(answer_timeout_s=_NO_DEADLINE_S)
    t0 = now_ns() - 60 * NS
    bodies = [_flood(i, t0) for i in range(20)]
    assert 120_000 < len(bodies[0]) < 260_000, len(bodies[0])

    def send(some: list[bytes]) -> None:
        for body in some:
            answer(post(client, raw=body, **{"Content-Encoding": "gzip"}))

    send(bodies[:1])
    _, _seconds, grown = answered(lambda: send(bodies[1:]))
    steady = published(fake_publisher)["steady"]
    assert [v for _s, _ts, v in steady] == [5.0] * 19  # every point after the first
    assert grown < 32, grown
    metrics = client.get("/metrics").text
    assert (
        'apm_ingest_interop_points_total{outcome="dropped",protocol="otlp",reason="series_budget"}'
        in metrics
    )
    assert 'apm_ingest_cache_bytes{cache="otlp_rates"}' in metrics
