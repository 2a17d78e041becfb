"""OpenTelemetry's identity of a stream (issue 28, finding 1): resource + scope + metric +
point attributes. Two processes on one host that export the same counter get their own,
correct rates, and publish distinct series (by name for two services, by server for two
instances of one service), so the aggregator's exact (metric, server, ts) dedup never takes
one for the other's duplicate."""

from __future__ import annotations

import threading

import pytest

from ingest.publisher import PublishUnavailable
from tests.ingest.fakes import FakePublisher
from tests.ingest.interop.test_otlp import (
    NS,
    answer,
    counter,
    histogram,
    now_ns,
    post,
    published,
    request,
)

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
    """With otlp_server_with_instance (off by default: the SDKs make the instance id a random
    UUID per process, a new server at every start)."""
    from ingest.interop.settings import InteropSettings

    client = make_client()
    client.app.state.interop.settings = InteropSettings(otlp_server_with_instance=True)
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


class _SlowOnce(FakePublisher):
    """Kafka slow once: the first publish outlasts the answer deadline and then fails, as a
    producer's delivery timeout does (nothing of it reached Kafka); the next ones are quick.
    The slow one waits for ``release`` rather than for a time, so that the order the test
    means (the 503, the retry, then the failure) holds however loaded the machine is."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.release = threading.Event()
        self.failed = threading.Event()

    def publish(self, records):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 1:  # the first point of a series publishes nothing
            self.release.wait(30)
            self.failed.set()
            raise PublishUnavailable("delivery timed out (fake)")
        super().publish(records)


def test_a_retry_after_a_503_gives_every_point_its_rate(make_client):
    """The rate state moves only with a successful publish (issue 28, finding 2): before, the
    503'd request had moved it, and the retry's first point was out of order: no rate."""
    publisher = _SlowOnce()
    client = make_client(publisher=publisher, answer_timeout_s=0.5)
    t0 = now_ns() - 20 * NS
    resource = {"host.name": "h"}
    _export(client, resource, 0.0, t0 - NS, t0)  # first point: no rate, state committed
    batch = request(
        [
            counter(
                "http.server.request.count", (10.0, t0 - NS, t0 + NS), (30.0, t0 - NS, t0 + 2 * NS)
            )
        ],
        resource,
    )
    first = post(client, batch)
    assert first.status_code == 503 and "Retry-After" in first.headers
    answer(post(client, batch))  # the exporter's retry
    _export(client, resource, 60.0, t0 - NS, t0 + 3 * NS)
    publisher.release.set()  # now the slow publish gives up
    assert publisher.failed.wait(30)
    got = {(ts, v) for _s, ts, v in published(publisher)["http.server.request.count"]}
    assert got == {((t0 + NS) / NS, 10.0), ((t0 + 2 * NS) / NS, 20.0), ((t0 + 3 * NS) / NS, 30.0)}


def test_a_nan_counter_point_is_refused_alone(make_client, fake_publisher):
    """Points 0, NaN, 40 (issue 28, finding 7): before, 200, 400, 400 and no rate; the NaN had
    become the series' previous point."""
    client = make_client()
    t0 = now_ns() - 20 * NS
    statuses = [
        post(
            client, request([counter("c", (v, t0 - NS, t0 + i * NS))], {"host.name": "h"})
        ).status_code
        for i, v in enumerate((0.0, float("nan"), 40.0))
    ]
    assert statuses == [200, 400, 200]
    assert [v for _s, _ts, v in published(fake_publisher)["c"]] == [20.0]


def test_a_histogram_without_sum_publishes_no_sum(make_client, fake_publisher):
    """Issue 28, finding 9: before, a made-up .sum of 0."""
    client = make_client()
    t0 = now_ns() - 20 * NS
    for i, count in enumerate((10, 30)):
        doc = request([histogram("h", (count, 0.0, 2.0, t0 - NS, t0 + i * NS))], {"host.name": "h"})
        doc.resource_metrics[0].scope_metrics[0].metrics[0].histogram.data_points[0].ClearField(
            "sum"
        )
        answer(post(client, doc))
    got = published(fake_publisher)
    assert sorted(got) == ["h.count", "h.max"] and [v for *_, v in got["h.count"]] == [20.0]
