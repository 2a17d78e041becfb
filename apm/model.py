"""What crosses stage boundaries: samples, snapshots, and the naming rules for metrics,
servers and topics. Every stage imports these; none re-declares them.

A *sample* is one value of one metric on one server at one second. A *snapshot* is one
server's metrics at one second, the unit the agent sends and the ingest validates.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

__all__ = [
    "MAX_NAME_LEN",
    "METRIC_NAME_RE",
    "SERVER_NAME_RE",
    "TOPIC_PATTERN",
    "TOPIC_PREFIX",
    "Sample",
    "Snapshot",
    "metric_for_topic",
    "metric_name_error",
    "server_name_error",
    "topic_for",
    "value_error",
]

# Kafka topic names allow [a-zA-Z0-9._-] up to 249 characters; the prefix takes 11 of them.
# The same alphabet keeps names free of the separators used by the record encoding (apm.wire).
MAX_NAME_LEN = 200
METRIC_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,199}")
SERVER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}")

TOPIC_PREFIX = "apm.metric."
# A Java regex for Kafka consumers that subscribe to every metric topic (Spark's subscribePattern).
TOPIC_PATTERN = r"apm\.metric\..+"


class Sample(NamedTuple):
    server: str
    metric: str
    ts: float  # epoch seconds
    value: float


class Snapshot(NamedTuple):
    server: str
    ts: float
    metrics: dict[str, float]

    def samples(self) -> list[Sample]:
        return [Sample(self.server, m, self.ts, v) for m, v in self.metrics.items()]

    def to_json(self) -> dict[str, object]:
        return {"server": self.server, "ts": self.ts, "metrics": self.metrics}


def metric_name_error(name: object) -> str | None:
    """Why ``name`` is not a valid metric name, or None when it is."""
    if not isinstance(name, str):
        return "metric name must be a string"
    if not METRIC_NAME_RE.fullmatch(name):
        return (f"metric name {name[:60]!r} must start with a letter and contain only letters, "
                f"digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)")
    return None


def server_name_error(name: object) -> str | None:
    """Why ``name`` is not a valid server name, or None when it is."""
    if not isinstance(name, str):
        return "server name must be a string"
    if not SERVER_NAME_RE.fullmatch(name):
        return (f"server name {name[:60]!r} must start with a letter or digit and contain only "
                f"letters, digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)")
    return None


def value_error(value: object) -> str | None:
    """Why ``value`` is not a valid sample value (a finite number, not a bool), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"value must be a number, got {type(value).__name__}"
    if not math.isfinite(value):
        return f"value must be finite, got {value}"
    return None


def topic_for(metric: str) -> str:
    """The Kafka topic that carries one metric (one topic per metric, as the design says)."""
    return TOPIC_PREFIX + metric


def metric_for_topic(topic: str) -> str | None:
    return topic[len(TOPIC_PREFIX):] if topic.startswith(TOPIC_PREFIX) else None
