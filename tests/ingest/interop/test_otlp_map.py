"""OpenTelemetry's identity of a stream (issue 28, finding 1): resource + scope + metric +
point attributes. Two processes on one host that export the same counter get their own,
correct rates, and publish distinct series (by name for two services, by server for two
instances of one service), so the aggregator's exact (metric, server, ts) dedup never takes
one for the other's duplicate."""

from __future__ import annotations

import pytest

from tests.ingest.interop.test_otlp import NS, answer, counter, now_ns, post, published, request

pytestmark = pytest.mark.unit


def _export(client, resource: dict[str, str], value: float, start: int, t: int) -> None:
    answer(
        post(client, request([counter("http.server.request.count", (value, start, t))], resource))
    )


def test_two_services_on_one_host_keep_their_own_rates(make_client, fake_publisher):
    """Service A at 10/s and B at 100/s, same host and counter, exports interleaved (before:
    one rate series, B's points dropped as out of order, and one shared published name)."""
    client = make_client()
    a = {"host.name": "web-1", "service.name": "checkout"}
    b = {"host.name": "web-1", "service.name": "search"}
    t0 = now_ns() - 20 * NS
    start = t0 - NS
    for i in range(5):
        _export(client, a, 10.0 * i, start, t0 + i * NS)
        _export(client, b, 100.0 * i, start, t0 + i * NS + NS // 2)
    got = published(fake_publisher)
    rows = {name: [(server, v) for server, _ts, v in r] for name, r in got.items()}
    assert rows == {
        "http.server.request.count.service_name_checkout": [("web-1", 10.0)] * 4,
        "http.server.request.count.service_name_search": [("web-1", 100.0)] * 4,
    }


def test_two_instances_of_one_service_on_one_host_are_two_servers(make_client, fake_publisher):
    client = make_client()
    t0 = now_ns() - 20 * NS
    for i in range(3):
        for n, rate in ((1, 5.0), (2, 50.0)):
            resource = {"host.name": "web-1", "service.name": "api", "service.instance.id": f"w{n}"}
            _export(client, resource, rate * i, t0 - NS, t0 + i * NS)  # the same ts, too
    got = published(fake_publisher)["http.server.request.count.service_name_api"]
    assert (
        sorted((server, v) for server, _ts, v in got)
        == [("web-1.w1", 5.0)] * 2 + [("web-1.w2", 50.0)] * 2
    )


def test_one_counter_in_two_scopes_keeps_two_rate_states(make_client, fake_publisher):
    """Two scopes of one resource are two streams: each rates against its own previous point
    (their rates, published under one name at one time, are summed)."""
    client = make_client()
    t0 = now_ns() - 20 * NS
    for i in range(3):
        doc = request([counter("c", (10.0 * i, t0 - NS, t0 + i * NS))], {"host.name": "h"})
        scope = doc.resource_metrics[0].scope_metrics.add()
        scope.CopyFrom(doc.resource_metrics[0].scope_metrics[0])
        doc.resource_metrics[0].scope_metrics[0].scope.name = "lib.a"
        scope.scope.name = "lib.b"
        scope.metrics[0].sum.data_points[0].as_double = 30.0 * i
        answer(post(client, doc))
    assert [v for _s, _ts, v in published(fake_publisher)["c"]] == [40.0, 40.0]
