"""Real StatsD clients (the `statsd` and `datadog` packages) send to the agent's UDP listener;
the per-second aggregates follow the rules. Real sockets and the real clock, so packets are
sent just after a second starts and the test looks at every second that was closed."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import pytest

from agent.statsd import StatsdAggregator, StatsdListener

pytestmark = pytest.mark.integration


@pytest.fixture
def listen() -> Iterator[Callable[..., StatsdListener]]:
    started: list[StatsdListener] = []

    def make(**kwargs) -> StatsdListener:
        listener = StatsdListener(StatsdAggregator(time.time, **kwargs), "127.0.0.1", 0)
        listener.start()
        started.append(listener)
        return listener

    yield make
    for listener in started:
        listener.stop()


def _at_second_start() -> None:
    """Waits until a second has just begun, so a short burst stays inside one second."""
    while time.time() % 1 > 0.2:
        time.sleep(0.05)


def _closed_seconds(listener: StatsdListener, packets: int) -> list[dict[str, float]]:
    deadline = time.monotonic() + 10
    while listener.aggregator.packets < packets and time.monotonic() < deadline:
        time.sleep(0.02)
    assert listener.aggregator.packets == packets, "the listener missed datagrams"
    return [m for _ts, m in listener.aggregator.flush(time.time() + 1)]


def test_statsd_package_counters_gauges_timers_sets(listen, monkeypatch) -> None:
    import statsd

    listener = listen(timer_stats=["count", "avg"])
    monkeypatch.setattr(statsd.client.base.random, "random", lambda: 0.0)  # never sample out
    client = statsd.StatsClient("127.0.0.1", listener.address[1], prefix="shop")
    _at_second_start()
    client.incr("orders")
    client.incr("orders", 4)
    client.incr("orders", 1, rate=0.25)  # stands for 4 orders
    client.gauge("carts", 10)
    client.gauge("carts", 3, delta=True)
    client.timing("checkout", 120)
    client.timing("checkout", 80)
    client.set("visitors", "alice")
    client.set("visitors", "bob")
    client.set("visitors", "alice")
    seconds = _closed_seconds(listener, 10)
    busy = [m for m in seconds if "shop.checkout.max" in m]
    assert len(busy) == 1, seconds
    metrics = busy[0]
    assert metrics["shop.orders"] == 9.0
    assert metrics["shop.carts"] == 13.0
    assert metrics["shop.checkout.max"] == 120.0
    assert metrics["shop.checkout.count"] == 2.0
    assert metrics["shop.checkout.avg"] == 100.0
    assert metrics["shop.visitors"] == 2.0


@pytest.mark.parametrize("tags", ["name", "drop"])
def test_datadog_package_with_tags(listen, tags: str) -> None:
    from datadog.dogstatsd import DogStatsd

    listener = listen(tags=tags)
    client = DogStatsd(
        host="127.0.0.1",
        port=listener.address[1],
        disable_telemetry=True,
        origin_detection_enabled=False,
        disable_buffering=True,
    )
    try:
        _at_second_start()
        client.increment("rpc.calls", 2, tags=["env:prod"])
        client.increment("rpc.calls", 3, tags=["env:prod"])
        client.histogram("rpc.latency", 0.084, tags=["env:prod"])
        client.histogram("rpc.latency", 0.012, tags=["env:prod"])
        client.distribution("rpc.size", 512)
        client.gauge("queue.depth", 7)
        client.event("deploy", "v2 is out")  # an event: ignored, not malformed
        seconds = _closed_seconds(listener, 7)
    finally:
        client.close_socket()
    busy = [m for m in seconds if any(k.endswith(".max") for k in m)]
    assert len(busy) == 1, seconds
    suffix = ".env_prod" if tags == "name" else ""
    assert busy[0][f"rpc.calls{suffix}"] == 5.0
    assert busy[0][f"rpc.latency{suffix}.max"] == 0.084
    assert busy[0]["rpc.size.max"] == 512.0
    assert busy[0]["queue.depth"] == 7.0
    assert listener.aggregator.malformed == 0


def test_malformed_datagrams_are_counted_and_the_listener_lives_on(listen) -> None:
    listener = listen()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for packet in (b"\x00\xff" * 500, b"x:1|q", b"::::", b"a:b|c", b"", b"ok:1|c"):
            sock.sendto(packet, listener.address)
    seconds = _closed_seconds(listener, 6)
    assert listener.aggregator.malformed == 4
    assert sum(m.get("ok", 0.0) for m in seconds) == 1.0
