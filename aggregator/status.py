"""``apm aggregator status``: every job's published status (scope, the metrics it reads, lag),
with the lag recomputed from the job's own checkpoint when the job is not running.

Each job publishes its checkpoint path, so this reads the checkpoint that job really uses,
whatever ``--checkpoint-dir`` it was started with (``make run`` starts it under ``var/run``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aggregator.settings import AggregatorSettings
from aggregator.store import AggregatorStore
from apm.model import topic_for
from apm.query_state import JOB_PREFIX, STALE_AFTER_S, JobScope, live_jobs

__all__ = ["collect", "not_covered", "render", "render_not_covered"]

_SHOWN = (
    "active_queries",
    "batch_duration_s",
    "late_rows_dropped",
    "set_aside_total",
    "stream_failures",
    "last_stream_error",
    "watermark",
)


def _published(keyspace: str | None) -> dict[str, dict[str, Any]]:
    from aggregator.store import connect_store

    try:
        status = connect_store(keyspace).get_status()
    except Exception as exc:  # storage down: a named job's checkpoint still gives its lag
        print(f"apm aggregator: no published status ({exc})", file=sys.stderr)
        return {}
    return {k: v for k, v in status.items() if k.startswith(JOB_PREFIX)}


def _checkpoint_lag(
    settings: AggregatorSettings, checkpoint: Path, reads: list[str]
) -> dict[str, int]:
    from aggregator.lag import KafkaOffsets, checkpoint_offsets

    processed = checkpoint_offsets(checkpoint / "windows")
    topics = [topic_for(m) for m in reads] or sorted({t for t, _ in processed})
    offsets = KafkaOffsets(settings.kafka_bootstrap, settings.kafka_tls)
    try:
        return offsets.lag(processed, topics)
    finally:
        offsets.close()


def _job(
    identity: str,
    payload: Mapping[str, Any],
    settings: AggregatorSettings,
    checkpoint: Path | None,
    now: float,
) -> dict[str, Any]:
    updated = payload.get("updated_at")
    age = now - float(updated) if isinstance(updated, int | float) else None
    live = age is not None and age <= STALE_AFTER_S
    reads = [m for m in payload.get("reads") or [] if isinstance(m, str)]
    lag = {str(k): int(v) for k, v in (payload.get("lag") or {}).items()}
    source = "published" if payload else "none"
    if not live and checkpoint is not None and (checkpoint / "windows").is_dir():
        lag, source = _checkpoint_lag(settings, checkpoint, reads), "checkpoint"
    scope = (
        JobScope.from_json(payload["scope"])
        if "scope" in payload
        else settings.scope
        if identity == settings.identity
        else JobScope()
    )
    return {
        "identity": identity,
        "live": live,
        "age_s": age,
        "scope": scope.describe(),
        "reads": reads,
        "lag": lag,
        "lag_total": sum(lag.values()),
        "lag_from": source,
        "checkpoint": None if checkpoint is None else str(checkpoint),
        "set_aside": {
            str(m): dict(v)
            for m, v in (payload.get("set_aside") or {}).items()
            if isinstance(v, Mapping)
        },
        **{k: payload[k] for k in _SHOWN if k in payload},
    }


def collect(
    settings: AggregatorSettings, keyspace: str | None = None, only_named: bool = False
) -> list[dict[str, Any]]:
    """One dict per job. ``only_named``: just the job ``settings`` names (its identity and, if
    given, its checkpoint directory), even if it never published a status."""
    now = time.time()
    published = _published(keyspace)
    if only_named:
        published = {settings.identity: published.get(settings.identity, {})}
    jobs = []
    for identity, payload in sorted(published.items()):
        where = payload.get("checkpoint")
        checkpoint = (
            settings.checkpoint
            if only_named and not where
            else Path(where)
            if isinstance(where, str)
            else None
        )
        jobs.append(_job(identity, payload, settings, checkpoint, now))
    return jobs


def render(jobs: list[dict[str, Any]]) -> str:
    if not jobs:
        return "no aggregator job has published a status"
    lines = []
    for job in jobs:
        age = "never reported" if job["age_s"] is None else f"reported {job['age_s']:.0f}s ago"
        lines.append(
            f"{job['identity']}: {'live' if job['live'] else 'NOT RUNNING'} ({age}); "
            f"scope: {job['scope']}"
        )
        lines.append(
            f"  reads {len(job['reads'])} metrics; lag {job['lag_total']} records "
            f"({job['lag_from']})"
        )
        for metric in job["reads"]:
            lines.append(f"    {metric:<40} {job['lag'].get(topic_for(metric), '-')}")
        if job["set_aside"]:
            lines.append(
                "  samples set aside (too late: arrived past the lateness; ahead: clock skew):"
            )
            for metric, n in sorted(job["set_aside"].items()):
                lines.append(
                    f"    {metric:<40} too late {n.get('backlog', 0)}  ahead {n.get('future', 0)}"
                )
        for key in _SHOWN:
            if key in job:
                lines.append(f"  {key}: {job[key]}")
        if job["checkpoint"]:
            lines.append(f"  checkpoint: {job['checkpoint']}")
    return "\n".join(lines)


def not_covered(store: AggregatorStore, now: float) -> list[str]:
    """The metrics of active (not paused) queries that no live job's scope covers: nothing
    computes their windows (a shard that is down, say; the dashboard shows those queries as
    "not covered" for the same reason, apm.query_state)."""
    jobs = live_jobs(store.get_status(), now)
    metrics = {q.query.metric for q in store.list_queries(include_paused=False)}
    return sorted(m for m in metrics if not any(j.scope.covers(m) for j in jobs))


def render_not_covered(metrics: list[str]) -> str:
    return "\n".join(
        f"not covered: {m} (no running aggregator's scope includes it; its queries get no "
        "windows until one does)"
        for m in metrics
    )
