"""What each stored query is waiting for: the state a user sees on the dashboard, in its API and
in ``apm query list``, derived from what the aggregator jobs publish.

Every aggregator job publishes a status row (component ``aggregator...``) holding its *scope*
(every metric, a ``--metrics`` list, or ``--shard i/n`` of the metrics by a stable hash) and the
metrics it reads now; its servers stream records when each metric last had a sample. From
those, :func:`query_state` gives one of these states with a one-line reason:

``paused``
    the query is paused, so no job reads its metric for it;
``not-covered``
    no live job's scope includes the metric (a shard that is down, a ``--metrics`` job that
    leaves it out, or no job at all);
``no-data``
    a job covers the metric, but no sample of it arrived for ``quiet_after_s`` (the reason says
    when the last one did), or none since the query became active (after a grace of one window
    plus ``_FIRST_SAMPLE_GRACE_S``: a sample from before then, left by an earlier query on the
    metric, does not count, as the aggregator reads samples from that moment on);
``evaluated``
    windows are being written; the reason says when the newest was;
``waiting``
    covered and not silent, but no window of it has been written since it became active (or
    no covering job reads the metric yet: the reason says which of these).

A job is live while its status row is younger than ``STALE_AFTER_S``.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from apm.query import StoredQuery, format_duration

__all__ = [
    "JOB_PREFIX",
    "QUIET_AFTER_S",
    "STALE_AFTER_S",
    "STATES",
    "Job",
    "JobScope",
    "QueryState",
    "format_age",
    "format_time",
    "live_jobs",
    "parse_shard",
    "query_state",
    "query_states",
    "shard_of",
]

# Status rows whose component starts with this are aggregator jobs.
JOB_PREFIX = "aggregator"
# A job publishes every few seconds (APM_AGGREGATOR_STATUS_EVERY_SECONDS, 5 s); three missed
# reports and then some mean it is gone.
STALE_AFTER_S = 30.0
# A metric with no sample for this long is reported silent.
QUIET_AFTER_S = 300.0
# A query whose metric has not been seen since it became active is "waiting" for this long
# after that (plus one window), then "no-data": a typo in a metric name should not look like a
# slow start.
_FIRST_SAMPLE_GRACE_S = 30.0

STATES = ("evaluated", "waiting", "no-data", "not-covered", "paused")


def parse_shard(text: str) -> tuple[int, int] | None:
    """``"i/n"`` -> (i, n) with 0 <= i < n; empty -> None; anything else -> ValueError."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*", text)
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise ValueError(f"shard must be i/n with 0 <= i < n (e.g. 0/2), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def shard_of(metric: str, n: int) -> int:
    """The shard of ``n`` that owns ``metric``: crc32 of its name, mod n (stable everywhere)."""
    return zlib.crc32(metric.encode()) % n


@dataclass(frozen=True)
class JobScope:
    """Which metrics one job may read: ``metrics`` (empty: any) and then ``shard`` (i, n)."""

    metrics: frozenset[str] = frozenset()
    shard: tuple[int, int] | None = None

    def covers(self, metric: str) -> bool:
        if self.metrics and metric not in self.metrics:
            return False
        return self.shard is None or shard_of(metric, self.shard[1]) == self.shard[0]

    def describe(self) -> str:
        parts = []
        if self.metrics:
            parts.append("metrics " + ", ".join(sorted(self.metrics)))
        if self.shard is not None:
            parts.append(f"shard {self.shard[0]}/{self.shard[1]}")
        return " and ".join(parts) or "every metric"

    def to_json(self) -> dict[str, object]:
        return {
            "metrics": sorted(self.metrics),
            "shard": None if self.shard is None else list(self.shard),
        }

    @classmethod
    def from_json(cls, data: object) -> JobScope:
        """The published form back; anything malformed reads as the widest scope."""
        if not isinstance(data, Mapping):
            return cls()
        metrics = data.get("metrics")
        shard = data.get("shard")
        names = (
            frozenset(m for m in metrics if isinstance(m, str))
            if isinstance(metrics, list)
            else frozenset()
        )
        valid = (
            isinstance(shard, list)
            and len(shard) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in shard)
            and 0 <= shard[0] < shard[1]
        )
        return cls(names, (shard[0], shard[1]) if valid else None)  # type: ignore[index]


@dataclass(frozen=True)
class Job:
    identity: str
    scope: JobScope
    updated_at: float
    reads: tuple[str, ...] = ()


def live_jobs(
    status: Mapping[str, Mapping[str, object]], now: float, stale_after_s: float = STALE_AFTER_S
) -> list[Job]:
    """The aggregator jobs whose status row is fresh, from ``Repository.get_status()``."""
    out = []
    for component, payload in sorted(status.items()):
        if not component.startswith(JOB_PREFIX) or not isinstance(payload, Mapping):
            continue
        updated = payload.get("updated_at")
        if (
            not isinstance(updated, int | float)
            or isinstance(updated, bool)
            or not math.isfinite(updated)
        ):
            continue
        if now - float(updated) > stale_after_s:
            continue
        reads = payload.get("reads")
        out.append(
            Job(
                component,
                JobScope.from_json(payload.get("scope")),
                float(updated),
                tuple(r for r in reads if isinstance(r, str)) if isinstance(reads, list) else (),
            )
        )
    return out


class QueryState(NamedTuple):
    state: str  # one of STATES
    reason: str


def format_time(ts: float) -> str:
    """Epoch seconds as ``2026-11-23 07:02:17 UTC``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def format_age(seconds: float) -> str:
    """A readable age: 45s, 10m, 2h 5m, 3d 4h (ago)."""
    s = max(1, int(seconds))
    if s < 120:
        return f"{s}s ago"
    if s < 7200:
        return f"{s // 60}m ago"
    if s < 172_800:
        return f"{s // 3600}h {s % 3600 // 60}m ago"
    return f"{s // 86_400}d {s % 86_400 // 3600}h ago"


def query_state(
    stored: StoredQuery,
    *,
    now: float,
    jobs: Iterable[Job],
    last_result_at: float | None,
    metric_last_seen: float | None,
    quiet_after_s: float = QUIET_AFTER_S,
) -> QueryState:
    """The state of one query and why (the module docstring lists the states in order)."""
    q = stored.query
    if stored.paused:
        return QueryState("paused", "paused: resume it to evaluate it again")
    running = list(jobs)  # read twice below: an iterator would be empty the second time
    covering = [j for j in running if j.scope.covers(q.metric)]
    if not covering:
        return QueryState("not-covered", _uncovered(q.metric, running))
    job = next((j for j in covering if q.metric in j.reads), covering[0])
    since = stored.active_from
    # Only what happened since the query became active speaks for it: the aggregator reads
    # samples from then on, and a metric's or the query's older times are left from before
    # (an earlier query on that metric, the query before it was paused or redefined).
    seen = (
        metric_last_seen
        if metric_last_seen is not None and (since is None or metric_last_seen >= since)
        else None
    )
    result = (
        last_result_at
        if last_result_at is not None and (since is None or last_result_at >= since)
        else None
    )
    started_long_ago = since is not None and now - since > q.window_seconds + _FIRST_SAMPLE_GRACE_S
    if seen is not None and now - seen > quiet_after_s:
        return QueryState(
            "no-data",
            f"no sample of {q.metric} in the last "
            f"{format_duration(int(quiet_after_s))}; the last one was at "
            f"{format_time(seen)} ({format_age(now - seen)})",
        )
    if result is not None:
        return QueryState(
            "evaluated",
            f"evaluated by {job.identity}; last result "
            f"written at {format_time(result)} ({format_age(now - result)})",
        )
    if q.metric not in job.reads:
        # Only a job that reads the metric records its samples: until one does, "no sample"
        # would be a guess.
        return QueryState(
            "waiting",
            f"waiting for {job.identity}, whose scope covers "
            f"{q.metric}, to start reading it (it reloads the queries every few "
            "seconds)",
        )
    if seen is None and started_long_ago:
        assert since is not None
        before = (
            ""
            if metric_last_seen is None
            else f" (the last one before was at {format_time(metric_last_seen)})"
        )
        return QueryState(
            "no-data",
            f"no sample of {q.metric} has arrived since the query "
            f"became active at {format_time(since)} ({format_age(now - since)})"
            f"{before}: is anything sending this metric?",
        )
    window = format_duration(q.window_seconds)
    if seen is not None and started_long_ago:
        return QueryState(
            "waiting",
            f"no {window} window written yet although samples of "
            f"{q.metric} arrive (the last at {format_time(seen)}): does FROM "
            f"{', '.join(q.entries)} match a server that sends it? Is "
            f"{job.identity} behind (`apm aggregator status`)?",
        )
    return QueryState(
        "waiting",
        f"waiting for its first {window} window to close; {job.identity} reads {q.metric}",
    )


def query_states(
    queries: Iterable[StoredQuery],
    *,
    now: float,
    status: Mapping[str, Mapping[str, object]],
    metrics_seen: Mapping[str, float],
    last_result_at: Callable[[str], float | None],
) -> dict[str, tuple[QueryState, float | None]]:
    """query id -> (its state, its last result time), from one read of the status rows
    (``Repository.get_status``) and of the metrics' last samples (``list_metrics``), and
    ``last_result_at`` per query: what the dashboard and ``apm query list`` both show."""
    jobs = live_jobs(status, now)
    out = {}
    for q in queries:
        last = last_result_at(q.id)
        out[q.id] = (
            query_state(
                q,
                now=now,
                jobs=jobs,
                last_result_at=last,
                metric_last_seen=metrics_seen.get(q.query.metric) or None,
            ),
            last,
        )
    return out


def _uncovered(metric: str, jobs: Sequence[Job]) -> str:
    if not jobs:
        return (
            "no aggregator is running: start one with `apm aggregator run` (`make run` starts one)"
        )
    running = "; ".join(f"{j.identity} ({j.scope.describe()})" for j in jobs)
    return f"no running aggregator covers {metric}: {running}"
