"""``apm run``'s restart policy: a component found dead is started again after a backoff.

The delays are :class:`apm.retry.Backoff`'s (``initial * 2**n`` with jitter, capped), so a
component that dies at once on every start is retried ever more slowly, never in a tight loop,
and one that stayed up for ``stable_s`` starts again from the initial delay. Every exit and
every restart is logged. The policy only decides *when*; checking liveness and starting a
process are the callables each :class:`Component` is given (``launch.run`` builds them from
the process table), and the clock is injected, so unit tests never sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from apm.retry import Backoff

__all__ = ["Component", "RestartPolicy", "Restarter"]


@dataclass(frozen=True)
class RestartPolicy:
    initial_s: float = 1.0  # the first restart's delay
    cap_s: float = 60.0  # no delay is longer
    jitter: float = 0.2  # each delay scaled by [1 - jitter, 1 + jitter]
    stable_s: float = 60.0  # up this long: the next failure starts from initial_s again


@dataclass(frozen=True)
class Component:
    name: str
    alive: Callable[[], bool]
    start: Callable[[], None]  # starts it again (raises when it cannot)
    log_hint: str = ""  # where its log is, for the messages


@dataclass
class _State:
    backoff: Backoff
    up_since: float
    due: float | None = None  # when the pending restart runs
    restarts: int = 0


@dataclass
class Restarter:
    components: Sequence[Component]
    say: Callable[[str], None]
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    clock: Callable[[], float] = time.monotonic
    rand: Callable[[], float] | None = None  # the backoff's jitter source (tests fix it)

    def __post_init__(self) -> None:
        now = self.clock()
        self._states = {c.name: _State(self._backoff(), now) for c in self.components}

    def _backoff(self) -> Backoff:
        p = self.policy
        if self.rand is None:
            return Backoff(initial=p.initial_s, cap=p.cap_s, jitter=p.jitter)
        return Backoff(initial=p.initial_s, cap=p.cap_s, jitter=p.jitter, rand=self.rand)

    def restarts(self, name: str) -> int:
        return self._states[name].restarts

    def tick(self) -> None:
        """One look at every component: schedule a restart for each newly dead one, run the
        restarts that are due, and forget the failures of those that stayed up."""
        for comp in self.components:
            state, now = self._states[comp.name], self.clock()
            if state.due is None and comp.alive():
                if now - state.up_since >= self.policy.stable_s:
                    state.backoff.reset()
                continue
            if state.due is None:
                delay = state.backoff.next_delay()
                state.due = now + delay
                self.say(f"{comp.name} is not running{_where(comp)}; restarting it in {delay:.1f}s")
                continue
            if now < state.due:
                continue
            state.due, state.up_since = None, now
            state.restarts += 1
            try:
                comp.start()
            except Exception as exc:  # any failure to start is logged and retried later
                self.say(f"{comp.name}: restart #{state.restarts} failed: {exc}")
                continue
            self.say(f"{comp.name}: restarted (restart #{state.restarts})")


def _where(comp: Component) -> str:
    return f" (log: {comp.log_hint})" if comp.log_hint else ""
