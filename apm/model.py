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
    "BYTES_PER_SAMPLE",
    "DESIGN_SERVERS",
    "MAX_NAME_LEN",
    "METRIC_NAME_RE",
    "PARTITION_BYTES_PER_S",
    "SERVER_NAME_RE",
    "TOPIC_PARTITIONS",
    "TOPIC_PREFIX",
    "Sample",
    "Snapshot",
    "metric_for_topic",
    "metric_name_error",
    "partitions_for",
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

# Partitions per metric topic, sized by volume. A metric topic carries at most one sample per
# server per second, so its bytes/s are servers x bytes per sample, whatever the metric count.
# A deliberately conservative planning figure for what one partition takes: a Kafka partition
# sustains ~10 MB/s of appends on ordinary disks (the case study quotes ~100 MB/s per broker),
# so 1 MB/s leaves a tenfold margin for replication, catch-up reads and slow disks.
PARTITION_BYTES_PER_S = 1_000_000
# Measured bytes of one sample in a Kafka record (an apm.wire line: server, ts, value), before
# replication: 33.6 in the capacity section of docs/BENCHMARKS.md (make bench-pipeline).
BYTES_PER_SAMPLE = 34
# The fleet the design is sized for (the case study: 10,000 servers).
DESIGN_SERVERS = 10_000


def partitions_for(
    servers: int,
    bytes_per_sample: float = BYTES_PER_SAMPLE,
    partition_bytes_per_s: float = PARTITION_BYTES_PER_S,
) -> int:
    """Partitions one metric topic needs for ``servers`` servers sending one sample per second:
    ceil(servers x bytes_per_sample / partition_bytes_per_s), at least 1."""
    if isinstance(servers, bool) or not isinstance(servers, int) or servers < 1:
        raise ValueError(f"servers must be a whole number >= 1, got {servers!r}")
    if not bytes_per_sample > 0 or not partition_bytes_per_s > 0:
        raise ValueError(
            f"bytes_per_sample and partition_bytes_per_s must be > 0, got "
            f"{bytes_per_sample!r} and {partition_bytes_per_s!r}"
        )
    return max(1, math.ceil(servers * bytes_per_sample / partition_bytes_per_s))


# The default partition count of every metric topic the ingest (or the loadgen) creates:
# 10,000 x 34 B = 340 KB/s per topic, a third of one partition's planning figure -> 1.
# Topics keep the count they were created with; Kafka can add partitions, never remove them.
TOPIC_PARTITIONS = partitions_for(DESIGN_SERVERS)


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
        return (
            f"metric name {name[:60]!r} must start with a letter and contain only letters, "
            f"digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)"
        )
    return None


def server_name_error(name: object) -> str | None:
    """Why ``name`` is not a valid server name, or None when it is."""
    if not isinstance(name, str):
        return "server name must be a string"
    if not SERVER_NAME_RE.fullmatch(name):
        return (
            f"server name {name[:60]!r} must start with a letter or digit and contain only "
            f"letters, digits, '.', '_' or '-' (at most {MAX_NAME_LEN} characters)"
        )
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
    return topic[len(TOPIC_PREFIX) :] if topic.startswith(TOPIC_PREFIX) else None
