"""The push thread survives anything a server sends (issue 14, item 12): a Retry-After of
``inf``, ``1e400`` or the year 9999 is capped and jittered, never an OverflowError; arbitrary
header text never ends the loop. And the runner notices a push thread that died or hangs."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.http import HttpResponse
from agent.push import retry_after_seconds
from agent.runner import Agent

pytestmark = pytest.mark.unit

_NASTY = [
    "inf",
    "Infinity",
    "-inf",
    "1e400",
    "nan",
    "-5",
    "99999999999999999999999",
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "Sat, 01 Jan 0001 00:00:00 GMT",
    "Mon, 99 Foo 2026 99:99:99 GMT",
    "Thu, 01 Jan 1970 00:00:00 +9999",
    "\x00",
    "",
    "   ",
    "1" * 5000,
]


class _Stop:
    """A stop event that, like threading.Event.wait, refuses a timeout the platform cannot
    wait for (OverflowError, ValueError), without ever sleeping. It records every wait and
    sets itself after ``turns`` of them, or once ``done()``."""

    def __init__(self, turns: int, done: Callable[[], bool] = lambda: False) -> None:
        self.turns = turns
        self.done = done
        self.waits: list[float] = []

    def is_set(self) -> bool:
        return len(self.waits) >= self.turns or self.done()

    def wait(self, timeout: float | None = None) -> bool:
        # The real Event hands the timeout to Lock.acquire, which checks it before blocking:
        # a free lock checks the same way and never blocks.
        lock = threading.Lock()
        lock.acquire(True, -1 if timeout is None else timeout)
        lock.release()
        self.waits.append(float("inf") if timeout is None else timeout)
        return self.is_set()


@pytest.mark.parametrize("value", _NASTY)
def test_retry_after_is_bounded_whatever_the_text(value) -> None:
    seconds = retry_after_seconds(value, 1_763_800_000.0, 120.0)
    assert seconds is None or 0.0 <= seconds <= 120.0


@pytest.mark.parametrize("value", ["inf", "1e400", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_huge_retry_after_does_not_kill_the_push_thread(make_pusher, make_http, value) -> None:
    http = make_http(HttpResponse(503, {"retry-after": value}, b""))
    pusher = make_pusher(http)
    stop = _Stop(turns=3)
    pusher.run(stop)  # raised OverflowError before the fix, which ended the thread
    assert len(http.requests) >= 1
    assert all(0 <= w <= pusher.max_wait_s for w in stop.waits)
    assert pusher.spool.depth == 1


def test_the_hint_is_capped_and_jittered(make_pusher, make_http) -> None:
    delays = []
    for rand in (0.0, 0.5, 0.999):
        http = make_http(HttpResponse(503, {"retry-after": "inf"}, b""))
        delays.append(make_pusher(http, rand=lambda r=rand: r, retry_after_cap_s=120.0).push_once())
    assert delays[0] == pytest.approx(120.0)
    assert delays[1] == pytest.approx(132.0)
    assert 120.0 < delays[2] <= 144.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.one_of(st.text(), st.sampled_from(_NASTY), st.floats().map(repr)),
    status=st.sampled_from([503, 429, 408, 401, 302, 413, 422, 202]),
)
def test_the_push_loop_survives_any_retry_after_header(value, status) -> None:
    from agent.push import Pusher
    from agent.spool import Spool
    from agent.stats import AgentStats
    from apm.retry import Backoff

    from .conftest import FakeHttp

    with tempfile.TemporaryDirectory() as tmp:
        spool = Spool(Path(tmp) / "spool", fsync=False)
        for i in range(2):
            spool.append(b'{"server":"h","ts":%d,"metrics":{"m":1.0}}' % (1000 + i))
        http = FakeHttp([HttpResponse(status, {"retry-after": value}, b"")])
        pusher = Pusher(
            spool,
            http,
            "http://ingest/v1/metrics",
            "",
            Backoff(0.01, 30.0, 0.2),
            AgentStats(lambda: 1_763_800_000.0),
            rejected_path=Path(tmp) / "rejected.jsonl",
            wall_clock=lambda: 1_763_800_000.0,
        )
        stop = _Stop(turns=4, done=lambda: spool.depth == 0)
        pusher.run(stop)
        assert all(0 <= w <= pusher.max_wait_s for w in stop.waits)
        spool.close()


def _agent(make_settings, fake_psutil, make_http, clock) -> Agent:
    return Agent(
        make_settings(collectors=["load"], statsd_enabled=False),
        psutil=fake_psutil,
        clock=clock,
        http=make_http(),
    )


def test_the_watchdog_notices_a_dead_push_thread(
    make_settings, fake_psutil, make_http, clock, caplog
) -> None:
    agent = _agent(make_settings, fake_psutil, make_http, clock)
    alive = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    alive.start()
    assert agent.push_healthy(alive)
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    assert not agent.push_healthy(dead)
    assert agent.stats.push_thread_up == 0
    assert "push thread died" in caplog.text


def test_the_watchdog_notices_a_hung_push_thread(
    make_settings, fake_psutil, make_http, clock
) -> None:
    agent = _agent(make_settings, fake_psutil, make_http, clock)
    now = [100.0]
    agent.pusher.monotonic = lambda: now[0]
    agent.pusher.beat = 100.0
    alive = threading.Thread(target=threading.Event().wait, args=(5,), daemon=True)
    alive.start()
    assert agent.push_healthy(alive)
    now[0] += 3 * agent.settings.push_timeout_s + 12  # no beat for longer than one turn
    assert not agent.push_healthy(alive)
    agent.pusher.beat = now[0]  # beats again
    assert agent.push_healthy(alive) and agent.stats.push_thread_up == 1


def test_the_run_loop_pings_the_watchdog_only_while_the_push_thread_lives(
    make_settings, fake_psutil, make_http, tmp_path, monkeypatch
) -> None:
    import socket

    address = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(0)
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    agent = Agent(
        make_settings(collectors=["load"], statsd_enabled=False, interval_s=0.01, metrics_port=0),
        psutil=fake_psutil,
        http=make_http(),
    )

    def die(stop: threading.Event) -> None:
        return  # ends the thread, as an escaped OverflowError did

    agent.pusher.run = die  # type: ignore[method-assign]
    tick = agent.tick

    def tick_once_the_push_thread_is_gone(ts: float) -> object:
        for thread in threading.enumerate():
            if thread.name == "push":
                thread.join(5)
        return tick(ts)

    agent.tick = tick_once_the_push_thread_is_gone  # type: ignore[method-assign]
    agent.run(max_ticks=3)
    messages = []
    while True:
        try:
            messages.append(sock.recv(100).decode())
        except BlockingIOError:
            break
    sock.close()
    assert "READY=1" in messages
    assert "WATCHDOG=1" not in messages
