"""`apm run`'s restart policy over a fake clock: a dead component is started again after
apm.retry's backoff (growing, jittered, capped), reset once it stayed up; failures to start are
logged and retried. Nothing sleeps."""

from __future__ import annotations

import pytest

from launch.restarts import Component, Restarter, RestartPolicy

pytestmark = pytest.mark.unit


class Fake:
    def __init__(self, start_fails: int = 0) -> None:
        self.up = True
        self.starts = 0
        self.start_fails = start_fails

    def start(self) -> None:
        self.starts += 1
        if self.start_fails:
            self.start_fails -= 1
            raise OSError("port in use (fake)")
        self.up = True


def _restarter(fake: Fake, now: list[float], log: list[str], **policy: float) -> Restarter:
    return Restarter(
        [Component("ingest", lambda: fake.up, fake.start, log_hint="var/run/ingest.log")],
        log.append,
        RestartPolicy(
            **{"initial_s": 1.0, "cap_s": 8.0, "jitter": 0.2, "stable_s": 60.0, **policy}
        ),
        clock=lambda: now[0],
        rand=lambda: 0.5,  # the jitter's midpoint: delays are exactly initial * 2**n
    )


def _run_until_started(r: Restarter, fake: Fake, now: list[float], step: float = 0.25) -> float:
    """Advances the clock until the next start; returns how long that took."""
    began, before = now[0], fake.starts
    while fake.starts == before:
        r.tick()
        if fake.starts == before:
            now[0] += step
    return now[0] - began


def test_restarts_back_off_exponentially_up_to_the_cap() -> None:
    fake, now, log = Fake(), [0.0], []
    r = _restarter(fake, now, log)
    r.tick()
    assert fake.starts == 0 and log == []  # alive: nothing to do
    waits = []
    for _ in range(6):
        fake.up = False
        waits.append(_run_until_started(r, fake, now))
    assert waits == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert r.restarts("ingest") == 6
    assert "ingest is not running (log: var/run/ingest.log); restarting it in 1.0s" in log
    assert "ingest: restarted (restart #6)" in log


def test_the_jitter_spreads_the_delay() -> None:
    fake, now, log = Fake(), [0.0], []
    r = Restarter(
        [Component("ingest", lambda: fake.up, fake.start)],
        log.append,
        RestartPolicy(initial_s=10.0, cap_s=100.0, jitter=0.2),
        clock=lambda: now[0],
        rand=lambda: 0.0,
    )
    fake.up = False
    assert _run_until_started(r, fake, now) == 8.0  # 10 s scaled by 1 - 0.2


def test_staying_up_resets_the_backoff() -> None:
    fake, now, log = Fake(), [0.0], []
    r = _restarter(fake, now, log)
    for _ in range(3):
        fake.up = False
        _run_until_started(r, fake, now)
    now[0] += 61  # up longer than stable_s
    r.tick()
    fake.up = False
    assert _run_until_started(r, fake, now) == 1.0


def test_a_failed_start_is_logged_and_retried_later() -> None:
    fake, now, log = Fake(start_fails=2), [0.0], []
    r = _restarter(fake, now, log)
    fake.up = False
    assert _run_until_started(r, fake, now) == 1.0
    assert "ingest: restart #1 failed: port in use (fake)" in log
    assert _run_until_started(r, fake, now) == 2.0
    assert _run_until_started(r, fake, now) == 4.0
    assert fake.up and fake.starts == 3


def test_a_component_that_stays_up_is_never_restarted() -> None:
    fake, now, log = Fake(), [0.0], []
    r = _restarter(fake, now, log)
    for _ in range(1000):
        r.tick()
        now[0] += 1
    assert fake.starts == 0 and log == []
