"""The health page's model, a pure function of what storage, Kafka and the ingest report.

The aggregator's status payload is read defensively: known keys get their own rows, mappings
whose name mentions ``lag`` become the per-topic consumer lag table, the rest is listed as is,
so a new field the aggregator adds shows up without a dashboard change. ``set_aside`` (per
metric, the samples a job did not aggregate because they were ahead of their arrival or
older than the lateness when they arrived: aggregator/skew.py) becomes its own table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from apm.query_state import JOB_PREFIX, STALE_AFTER_S, JobScope, live_jobs

__all__ = ["ComponentStatus", "HealthView", "ServerRow", "build_health"]

BATCH_KEYS = ("batch_duration_s", "batch_duration_seconds", "batch_seconds", "last_batch_s")
FRESHNESS_KEYS = ("freshness_s", "freshness_seconds", "freshness")
# Shown in columns of their own, or too long for the "other" column.
_SHOWN_APART = ("scope", "reads", "checkpoint", "identity")


@dataclass
class ServerRow:
    server: str
    last_seen: float
    age_s: float
    silent: bool


@dataclass
class ComponentStatus:
    component: str
    age_s: float | None  # since the component last published, None when unknown
    batch_duration_s: float | None
    freshness_s: float | None
    lag: dict[str, float] = field(default_factory=dict)  # metric topic -> records behind
    other: dict[str, object] = field(default_factory=dict)
    scope: str | None = None  # an aggregator job's scope, described ("every metric" ...)
    reads: list[str] = field(default_factory=list)  # the metrics an aggregator job reads
    # metric -> {"future": n, "backlog": n}: samples set aside or arrived too late
    set_aside: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.age_s is not None and self.age_s <= STALE_AFTER_S


@dataclass
class HealthView:
    components: list[ComponentStatus]
    lag: dict[str, float]  # merged over components, by topic
    servers: list[ServerRow]
    ingest: list[Mapping[str, object]]
    silent_after_s: float
    # merged over components: metric -> {"future": n, "backlog": n}
    set_aside: dict[str, dict[str, int]] = field(default_factory=dict)
    # Metrics of active queries that no live job's scope covers (a shard that is down).
    not_covered: list[str] = field(default_factory=list)

    @property
    def reporting(self) -> list[ServerRow]:
        return [s for s in self.servers if not s.silent]

    @property
    def silent(self) -> list[ServerRow]:
        return [s for s in self.servers if s.silent]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _first(payload: Mapping[str, object], keys: Sequence[str]) -> float | None:
    for key in keys:
        if key in payload and (n := _number(payload[key])) is not None:
            return n
    return None


def _epoch(value: object) -> float | None:
    """Epoch seconds from a number or an ISO 8601 string (Spark reports its watermark so)."""
    if (n := _number(value)) is not None:
        return n
    if isinstance(value, str) and value:
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    return None


def _component(name: str, payload: Mapping[str, object], now: float) -> ComponentStatus:
    updated = _number(payload.get("updated_at"))
    freshness = _first(payload, FRESHNESS_KEYS)
    if freshness is None and (mark := _epoch(payload.get("watermark"))) is not None and mark > 0:
        # How far event time lags the wall clock: windows older than this are final.
        freshness = max(0.0, now - mark)
    status = ComponentStatus(
        component=name,
        age_s=None if updated is None else max(0.0, now - updated),
        batch_duration_s=_first(payload, BATCH_KEYS),
        freshness_s=freshness,
    )
    if name.startswith(JOB_PREFIX):
        status.scope = JobScope.from_json(payload.get("scope")).describe()
        reads = payload.get("reads")
        status.reads = [m for m in reads if isinstance(m, str)] if isinstance(reads, list) else []
    for key, value in payload.items():
        if key in ("updated_at", *BATCH_KEYS, *FRESHNESS_KEYS, *_SHOWN_APART):
            continue
        if key == "set_aside" and isinstance(value, Mapping):
            for metric, reasons in value.items():
                if isinstance(reasons, Mapping):
                    status.set_aside[str(metric)] = {
                        str(r): int(n) for r, n in reasons.items() if _number(n) is not None
                    }
        elif "lag" in key and isinstance(value, Mapping):
            for topic, lag in value.items():
                if (n := _number(lag)) is not None:
                    status.lag[str(topic)] = n
        else:
            status.other[key] = value
    return status


def build_health(
    status: Mapping[str, Mapping[str, object]],
    servers: Mapping[str, float],
    ingest: Sequence[Mapping[str, object]],
    now: float,
    silent_after_s: float,
    query_metrics: Iterable[str] = (),
) -> HealthView:
    """``query_metrics``: the metrics of the active queries, to tell which are not covered."""
    components = [_component(name, payload, now) for name, payload in sorted(status.items())]
    lag: dict[str, float] = {}
    for c in components:
        for topic, n in c.lag.items():
            lag[topic] = lag.get(topic, 0.0) + n
    rows = [
        ServerRow(s, ts, max(0.0, now - ts), now - ts > silent_after_s) for s, ts in servers.items()
    ]
    # Silent first, longest silent first: what needs attention leads.
    rows.sort(key=lambda r: (not r.silent, -r.age_s if r.silent else 0.0, r.server))
    set_aside: dict[str, dict[str, int]] = {}
    for c in components:
        for metric, reasons in c.set_aside.items():
            mine = set_aside.setdefault(metric, {})
            for reason, n in reasons.items():
                mine[reason] = mine.get(reason, 0) + n
    return HealthView(
        components,
        dict(sorted(lag.items())),
        rows,
        list(ingest),
        silent_after_s,
        dict(sorted(set_aside.items())),
        _not_covered(status, query_metrics, now),
    )


def _not_covered(
    status: Mapping[str, Mapping[str, object]], metrics: Iterable[str], now: float
) -> list[str]:
    jobs = live_jobs(status, now)
    return sorted({m for m in metrics if not any(j.scope.covers(m) for j in jobs)})
