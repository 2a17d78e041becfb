"""The alert state machine: a pure function of the rule, the state before a window and that
window's value, in event time. No clock, no I/O: replaying the same windows from the same state
gives the same states, which is what makes a restart or a late-data refold exact.

States (each carries its reason, the value and the window that caused it):

- ``normal``: the value is on the safe side (or no window has been evaluated yet).
- ``pending``: the value crossed a threshold; the breach has not lasted ``for_s`` yet.
- ``firing``: the breach has lasted ``for_s`` (from its first window's start to this window's end).
- ``recovering``: a firing alert whose value went back past its recovery line, held firing for
  ``keep_firing_for_s`` so that a value flapping around the line neither resolves nor re-fires.
- ``nodata``: ``nodata_windows`` consecutive windows without samples, with the policy ``alert``.
- ``error``: the window could not be evaluated (the query was deleted, or lacks the function).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from alerting.fields import breaches
from alerting.rules import Rule

__all__ = ["ACTIVE", "STATES", "AlertState", "Observation", "fold", "step"]

STATES = ("normal", "pending", "firing", "recovering", "nodata", "error")
# The states a receiver is told about; leaving them sends a resolution.
ACTIVE = frozenset({"firing", "recovering", "nodata", "error"})
_LEVELS = ("warning", "critical")


@dataclass(frozen=True)
class Observation:
    window_start: float
    window_seconds: int
    value: float | None  # None: the window had no samples
    error: str | None = None

    @property
    def window_end(self) -> float:
        return self.window_start + self.window_seconds


@dataclass(frozen=True)
class AlertState:
    state: str = "normal"
    reason: str = "no window evaluated yet"
    value: float | None = None
    window_start: float | None = None
    window_end: float | None = None
    severity: str | None = None  # warning or critical while pending, firing or recovering
    since: float | None = None  # event time the current state (or the breach) began
    fired_at: float | None = None  # event time the alert fired: its identity while active
    missing: int = 0  # consecutive windows without samples

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def _level(rule: Rule, value: float, held: str | None) -> tuple[str | None, float | None]:
    """The highest level ``value`` reaches, and its line. A level already firing (``held``) is
    kept while the value has not crossed back over that level's recovery line (hysteresis)."""
    t, cmp = rule.thresholds, rule.comparison
    for level in reversed(_LEVELS):
        line = getattr(t, level)
        if breaches(cmp, value, line):
            return level, line
        back = getattr(t, f"{level}_recovery")
        holds = held is not None and _LEVELS.index(held) >= _LEVELS.index(level)
        if holds and back is not None and breaches(cmp, value, back):
            return level, back
    return None, None


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _at(state: AlertState, obs: Observation, value: float | None, missing: int) -> AlertState:
    """``state`` stamped with the window that caused it."""
    return replace(
        state,
        window_start=obs.window_start,
        window_end=obs.window_end,
        value=value,
        missing=missing,
    )


def _no_value(rule: Rule, prior: AlertState, obs: Observation) -> AlertState:
    if obs.error is not None:
        since = prior.since if prior.state == "error" else obs.window_start
        return _at(AlertState("error", obs.error, since=since, fired_at=since), obs, None, 0)
    missing = prior.missing + 1
    if missing < rule.nodata_windows or rule.nodata_policy == "keep":
        return replace(prior, missing=missing)
    why = f"no samples for {missing} windows (nodata_policy {rule.nodata_policy})"
    if rule.nodata_policy == "ok":
        return _at(AlertState("normal", why), obs, None, missing)
    since = prior.since if prior.state == "nodata" else obs.window_start
    return _at(AlertState("nodata", why, since=since, fired_at=since), obs, None, missing)


def step(rule: Rule, prior: AlertState, obs: Observation) -> AlertState:
    """The state after window ``obs``, given the state before it."""
    if obs.error is not None or obs.value is None:
        return _no_value(rule, prior, obs)
    value = obs.value
    was_firing = prior.state in ("firing", "recovering")
    level, line = _level(rule, value, prior.severity if was_firing else None)
    if level is None or line is None:
        safe = f"{rule.function} {_fmt(value)} is not {rule.comparison} any threshold"
        if was_firing and rule.keep_firing_for_s > 0:
            since = (
                prior.since
                if prior.state == "recovering" and prior.since is not None
                else obs.window_start
            )
            if obs.window_end - since < rule.keep_firing_for_s:
                why = f"{safe}; held firing for keep_firing_for {rule.keep_firing_for_s}s"
                return _at(
                    replace(prior, state="recovering", reason=why, since=since), obs, value, 0
                )
            safe += f" for keep_firing_for {rule.keep_firing_for_s}s"
        return _at(AlertState("normal", safe), obs, value, 0)
    why = f"{rule.function} {_fmt(value)} {rule.comparison} {level} {_fmt(line)}"
    if was_firing:
        held = replace(prior, state="firing", reason=why, severity=level, since=prior.fired_at)
        return _at(held, obs, value, 0)
    since = (
        prior.since if prior.state == "pending" and prior.since is not None else obs.window_start
    )
    if obs.window_end - since >= rule.for_s:
        fired = AlertState("firing", why, severity=level, since=since, fired_at=obs.window_start)
        return _at(fired, obs, value, 0)
    why += f" for {int(obs.window_end - since)}s of {rule.for_s}s"
    return _at(AlertState("pending", why, severity=level, since=since), obs, value, 0)


def fold(rule: Rule, prior: AlertState, windows: Iterable[Observation]) -> list[AlertState]:
    """The state after each window, in order."""
    out = []
    for obs in windows:
        prior = step(rule, prior, obs)
        out.append(prior)
    return out
